"""Issue 31 as a user lives it, in JupyterLab (headless Chromium): the notebook server started
in a directory that looks like a home (tools' dot-folders; IPython's history and JupyterLab's
workspaces really written there), an ordinary analysis of sales.csv with a wrong column name
the model then fixes, and a bar chart. The cell's visible text has no pandas internals and
no tools' files in the change lists; the full traceback is one click away."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests import llm_server as S
from tests.browser_support import Lab, LabServer, launch_chromium, write_notebook
from tests.env import oi_env
from tests.test_browser import OI_KERNEL, UI_TIMEOUT

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

WRONG = ("import pandas as pd\n"
         "sales = pd.read_csv('sales.csv')\n"
         "by_month = sales.groupby('Month')['total'].sum()")
FIXED = ("import matplotlib.pyplot as plt\n"
         "by_month = sales.groupby('month')['total'].sum()\n"
         "by_month.to_csv('by_month.csv')\n"
         "by_month.plot.bar(title='Sales by month')\nplt.show()")


@pytest.fixture(scope="module")
def llm() -> Iterator[S.ScriptedLLMServer]:
    with S.ScriptedLLMServer() as server:
        yield server


@pytest.fixture(scope="module")
def home_lab(llm: S.ScriptedLLMServer, tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("home-lab")
    root = base / "root"  # the notebook server's root: a home directory
    for folder in (".cache/pip", ".config/app", ".local/share", ".ipynb_checkpoints"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    (root / ".config/app/settings.toml").write_text("theme = 'dark'\n")
    (root / "sales.csv").write_text("month,total\n1,10\n2,20\n3,30\n")
    env = oi_env(llm, base, OI_LOG_DIR=str(root / ".local/share/oi-logs"), OI_AUTO_RUN="1",
                 IPYTHONDIR=str(root / ".ipython"), HOME=str(root))
    server = LabServer(base, env, {})
    server.env["JUPYTER_CONFIG_DIR"] = str(root / ".jupyter")
    workspaces = f"--LabApp.workspaces_dir={root / '.jupyter/lab/workspaces'}"
    server.args = [workspaces if a.startswith("--LabApp.workspaces_dir=") else a
                   for a in server.args]
    server.start()
    yield server
    server.stop()


@pytest.fixture
def lab(home_lab: LabServer, llm: S.ScriptedLLMServer) -> Iterator[Lab]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = launch_chromium(p)
        context = chromium.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        page.set_default_timeout(UI_TIMEOUT)
        yield Lab(page, home_lab)
        context.close()
        chromium.close()
    home_lab.shutdown_kernels()


def outputs_text(lab: Lab, cell: int) -> Any:
    return lab.cell(cell).locator(".jp-Cell-outputArea").inner_text()


def test_an_analysis_in_a_home_directory_is_compact_and_quiet(
        lab: Lab, home_lab: LabServer, llm: S.ScriptedLLMServer):
    write_notebook(home_lab.root / "analysis.ipynb", *OI_KERNEL, [])
    llm.enqueue(S.tool_call(WRONG), S.tool_call(FIXED),
                S.text("Here are the sales by month: March is the best."))
    lab.open_notebook("analysis.ipynb")
    lab.type_in_cell(0, "load sales.csv and plot the total by month as a bar chart")
    lab.page.keyboard.press("Control+Enter")
    lab.cell(0).get_by_text("March is the best").wait_for()
    lab.wait_kernel_idle()
    lab.cell(0).locator(".jp-OutputArea-output img").first.wait_for()  # the chart
    lab.page.keyboard.press("Control+s")  # the frontend saves the notebook, as autosave does
    lab.page.wait_for_timeout(1000)
    lab.screenshot("browser-issue31-session.png")

    visible = outputs_text(lab, 0)
    assert "KeyError: 'Month'" in visible and "groupby('Month')" in visible
    assert "site-packages" not in visible and "pandas/core" not in visible
    for tool in (".ipython", ".jupyter", ".local", ".config", ".cache", "history.sqlite",
                 "workspace", "analysis.ipynb"):
        assert tool not in visible, (tool, visible)
    assert "by_month.csv (created" in visible
    assert (home_lab.root / ".ipython/profile_default/history.sqlite").exists()

    error = lab.cell(0).locator(".oi-error")
    error.locator("summary").click()  # the full traceback, one click away
    full = error.locator("details").inner_text()
    assert "site-packages/pandas" in full
    lab.screenshot("browser-issue31-full-traceback.png")
