"""The answer's numbers under the answer in JupyterLab (headless Chromium, the real kernel,
the scripted model): a footnote line where an untraced number reads "— not in any output"
in bold and each traced one names its step, with what that step printed on hover.
Screenshot: test-artifacts/browser-claims.png."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests import llm_server as S
from tests.browser_support import Lab, LabServer, launch_chromium, write_notebook
from tests.env import oi_env

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]


@pytest.fixture(scope="module")
def llm() -> Iterator[S.ScriptedLLMServer]:
    with S.ScriptedLLMServer() as server:
        yield server


@pytest.fixture(scope="module")
def lab_server(llm: S.ScriptedLLMServer, tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("lab-claims")
    server = LabServer(base, oi_env(llm, base, OI_AUTO_RUN="1"), {})
    server.start()
    yield server
    server.stop()


@pytest.fixture
def lab(lab_server: LabServer, llm: S.ScriptedLLMServer) -> Iterator[Lab]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = launch_chromium(p)
        page = chromium.new_page(viewport={"width": 1100, "height": 700})
        page.set_default_timeout(60_000)
        yield Lab(page, lab_server)
        chromium.close()
    lab_server.shutdown_kernels()


def test_the_marks_read_under_the_answer(lab: Any, llm: S.ScriptedLLMServer) -> None:
    llm.enqueue(
        S.tool_call("import pandas as pd\n"
                    "df = pd.DataFrame({'price': [38.1, 41.27, 44.44], 'qty': [3, 5, 4]})\n"
                    "print(df.describe().loc[['count', 'mean']])"),
        S.tool_call("print(f'growth: {0.2304:.4f}')"),
        S.text("The **3** orders have a mean price of **41.27 EUR** and revenue grew **23%**; "
               "the margin is 14.5%."))
    write_notebook(lab.server.root / "claims.ipynb", "open-interpreter", "Open Interpreter", [])
    lab.open_notebook("claims.ipynb")
    lab.type_in_cell(0, "summarise the orders")
    lab.page.keyboard.press("Control+Enter")
    cell = lab.cell(0)
    missing = cell.locator("b.oi-claim-missing")
    missing.wait_for()
    assert missing.inner_text() == "14.5% — not in any output"
    traced = cell.locator("span.oi-claim")
    assert traced.all_inner_texts() == ["3 → step 1", "41.27 EUR → step 1", "23% → step 2"]
    assert traced.nth(2).get_attribute("title") == "step 2 printed the share 0.2304"
    # the footnote sits under the answer, in small type
    answer_box = cell.get_by_text("the margin is 14.5%").bounding_box()
    assert answer_box is not None and missing.bounding_box()["y"] > answer_box["y"]
    lab.wait_kernel_idle()
    traced.nth(2).hover()
    lab.screenshot("browser-claims.png")
    assert not [e for e in lab.errors if "oi" in e.lower()], lab.errors
