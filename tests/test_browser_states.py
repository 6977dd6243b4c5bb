"""Issue 45 in JupyterLab: the "States" toolbar button beside Undo: save a named state from
its dialog, change a variable and a file, open the dialog again (the tree lists the state,
marked current) and restore it (real lab serving this worktree's extension, headless
Chromium, a real kernel)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from tests import llm_server as S
from tests.browser_support import REPO, Lab, LabServer, write_notebook
from tests.env import oi_env
from tests.test_browser import OI_KERNEL, lab, llm  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def lab_server(llm: S.ScriptedLLMServer, tmp_path_factory: pytest.TempPathFactory):  # noqa: F811
    base = tmp_path_factory.mktemp("states-lab")
    ours = base / "jupyter-path" / "labextensions"
    ours.mkdir(parents=True)
    (ours / "oi-kernel").symlink_to(REPO / "oi_kernel" / "labextension")  # this worktree's
    venv_data = Path(sys.prefix) / "share" / "jupyter"
    env = oi_env(llm, base, OI_LOG_DIR=str(base / "oi-logs"), OI_AUTO_RUN="0",
                 PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
                 JUPYTER_PATH=os.pathsep.join([str(base / "jupyter-path"), str(venv_data)]))
    server = LabServer(base, env, {"oi-kernel:plugin": {"autoInsertCells": False}})
    server.start()
    yield server
    server.stop()


def _run(ui: Lab, index: int, code: str, file: Path, text: str) -> None:
    """Run a cell that writes ``text`` to ``file``; wait until it did."""
    ui.type_in_cell(index, code)
    ui.page.keyboard.press("Control+Enter")
    deadline = time.monotonic() + 120
    while not (file.exists() and file.read_text() == text):
        assert time.monotonic() < deadline, f"cell {index} did not write {file}"
        time.sleep(0.2)
    ui.wait_kernel_idle()


def _open_states(ui: Lab):
    ui.current_panel().locator(".oi-StatesButton").click()
    dialog = ui.page.locator(".jp-Dialog-content:has(.oi-StatesPanel)")
    dialog.wait_for()
    return dialog


def test_the_states_button_saves_lists_and_restores(
    lab: Lab, lab_server: LabServer  # noqa: F811 (the fixtures)
):
    write_notebook(lab_server.root / "states.ipynb", *OI_KERNEL, [])
    data = lab_server.root / "data.txt"
    lab.open_notebook("states.ipynb")
    _run(lab, 0, "%%python\nrows = 3\n_ = open('data.txt', 'w').write('raw')", data, "raw")

    dialog = _open_states(lab)
    assert "No named states yet" in dialog.inner_text()
    dialog.locator(".oi-StatesName").fill("raw-data")
    dialog.locator(".oi-StatesSaveButton").click()
    saved = lab.page.locator(".Toastify__toast", has_text="Saved state `raw-data`")
    saved.wait_for()
    saved.locator(".jp-Notification-Toast-Close").click()
    saved.wait_for(state="detached")

    lab.page.keyboard.press("Escape")
    lab.command("notebook:insert-cell-below")
    _run(lab, 1, "%%python\nrows = 0\n_ = open('data.txt', 'w').write('cleaned')", data,
         "cleaned")

    dialog = _open_states(lab)
    row = dialog.locator(".oi-StatesRow", has_text="raw-data")
    row.wait_for()
    assert "oi-mod-current" in (row.get_attribute("class") or "")
    assert "1 variable" in row.inner_text() and "1 file" in row.inner_text()
    lab.screenshot("browser-states-dialog.png")
    row.locator(".oi-StatesRestore").click()
    toast = lab.page.locator(".Toastify__toast", has_text="Restored state `raw-data`")
    toast.wait_for()
    lab.page.wait_for_timeout(1000)  # (the toast slides in)
    lab.screenshot("browser-states-restored.png")
    assert data.read_text() == "raw"
    lab.page.keyboard.press("Escape")
    lab.command("notebook:insert-cell-below")
    lab.type_in_cell(2, "%%python\nprint(rows * 14)")
    lab.page.keyboard.press("Control+Enter")
    lab.cell(2).get_by_text("42").first.wait_for()  # rows is 3 again
    assert lab.page.evaluate("window.jupyterapp.commands.hasCommand('oi-kernel:states')")
