"""Edits to existing cells proposed by the model (``edit_cell``, issue 46), reviewed per cell
in real JupyterLab and Notebook 7 (headless Chromium) in a python3 notebook with ``%%oi``:
the card shows each cell's diff; one edit is accepted (written into the cell as an undoable
change: Ctrl+Z in the cell undoes it), the other rejected; the model is told which; the
session log records both. A cell the user changed after the proposal is not overwritten (a
fresh diff is shown), and an edit to a cell that does not exist is reported to the model.

The lab server loads this checkout's built extension (``oi_kernel/labextension``) through a
JUPYTER_PATH of its own. Screenshots go to test-artifacts/.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import llm_server as S
from tests.browser_support import ARTIFACTS, NB, Lab, LabServer, write_notebook
from tests.env import oi_env
from tests.test_browser import PY_KERNEL, UI_TIMEOUT, lab, llm  # noqa: F401  (fixtures)
from tests.test_tools import tool_messages

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]
REPO = Path(__file__).resolve().parents[1]
FINAL = "One edit was accepted, one rejected."
SOURCES = ["%load_ext oi_kernel", "x = 1\nprint(x)", "y = 2\nprint(y)",
           "%%oi\nmake cells 2 and 3 use bigger numbers"]
NEW_X, NEW_Y = "x = 10\nprint(x)", "y = 20\nprint(y)"


def edit(cell: Any, source: str) -> S.Call:
    return S.Call(json.dumps({"cell": cell, "new_source": source}), "edit_cell")


def serve(base: Path, llm: S.ScriptedLLMServer, app: str) -> LabServer:  # noqa: F811
    """A lab (or Notebook 7) server that serves this checkout's build of the extension."""
    paths = base / "jupyter-path" / "labextensions"
    paths.mkdir(parents=True)
    (paths / "oi-kernel").symlink_to(REPO / "oi_kernel" / "labextension")
    env = oi_env(llm, base, OI_LOG_DIR=str(base / "oi-logs"), OI_AUTO_RUN="0",
                 OI_APPROVAL="always", OI_PROFILE="", JUPYTER_PATH=str(base / "jupyter-path"))
    server = LabServer(base, env, {"oi-kernel:plugin": {"autoInsertCells": False}}, app=app)
    server.start()
    return server


@pytest.fixture(scope="module")
def lab_server(llm: S.ScriptedLLMServer, tmp_path_factory: pytest.TempPathFactory  # noqa: F811
               ) -> Iterator[LabServer]:
    server = serve(tmp_path_factory.mktemp("labedits"), llm, "lab")
    yield server
    server.stop()


def log_records(base: Path, event: str) -> list[dict[str, Any]]:
    records = []
    for path in sorted((base / "oi-logs").rglob("*.jsonl")):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            if record.get("event") == event:
                records.append(record)
    return records


def run_cells(page: Any, cell: Any, count: int) -> None:
    cell.locator(".jp-InputArea-editor").click()
    for _ in range(count):
        page.keyboard.press("Shift+Enter")


def review_two_edits(page: Any, cells: Any, shot: str, accept: str = "accept") -> Any:
    """The card of the two-cell proposal: check its diffs, accept In[2] (``accept``: the
    button, "accept" or "acceptRun"), reject In[3]."""
    card = cells.nth(3).locator(".oi-CellEdits")
    card.wait_for(timeout=UI_TIMEOUT * 2)
    first = card.locator('.oi-CellEdits-edit[data-cell="2"]')
    second = card.locator('.oi-CellEdits-edit[data-cell="3"]')
    first.locator(".oi-diff-add").first.wait_for()
    assert first.locator(".oi-diff-del").inner_text() == "- x = 1"
    assert first.locator(".oi-diff-add").inner_text() == "+ x = 10"
    assert second.locator(".oi-diff-add").inner_text() == "+ y = 20"
    assert card.locator("button.oi-CellEdits-acceptAll").count() == 1
    page.screenshot(path=str(ARTIFACTS / f"{shot}-diff.png"))
    card.locator("button.oi-CellEdits-layout").click()  # side by side
    assert first.locator("table.oi-diff-side td.oi-diff-add").inner_text() == "x = 10"
    page.screenshot(path=str(ARTIFACTS / f"{shot}-side-by-side.png"))
    first.locator(f"button.oi-CellEdits-{accept}").click()
    card.locator(".oi-CellEdits-reason").fill("keep y small")
    second.locator("button.oi-CellEdits-reject").click()
    assert first.locator('.oi-CellEdits-status[data-action="accepted"]').count() == 1
    assert second.locator('.oi-CellEdits-status[data-action="rejected"]').count() == 1
    return card


def check_told_and_logged(llm: S.ScriptedLLMServer, base: Path,  # noqa: F811
                          ran: bool = False) -> None:
    told = tool_messages(llm.requests[-1])
    assert told[0].startswith("The user accepted your edit: cell In[2]"), told
    assert ("chose to run it" if ran else "has not run") in told[0]
    assert told[1].startswith("The user rejected your edit to cell In[3]") and "keep y small" in told[1]
    assert [r["edits"][0]["cell"] for r in log_records(base, "cell_edit_proposed")][-1] == "2"
    decided = log_records(base, "cell_edit_decided")[-2:]
    assert [(r["cell"], r["action"]) for r in decided] == [("2", "accepted"), ("3", "rejected")]
    assert decided[1]["reason"] == "keep y small"


def undo_in_cell(page: Any, cell: Any) -> None:
    cell.locator(".jp-InputArea-editor .cm-content").click()
    page.keyboard.press("Control+z")


def test_two_cell_edit_accept_reject_and_undo(lab: Lab, lab_server: LabServer, llm):  # noqa: F811
    write_notebook(lab_server.root / "edits.ipynb", *PY_KERNEL, SOURCES)
    llm.enqueue(S.tool_calls([edit(2, NEW_X), edit("In[3]", NEW_Y)]), S.text(FINAL))
    lab.open_notebook("edits.ipynb")
    cells = lab.current_panel().locator(".jp-Notebook .jp-Cell")
    run_cells(lab.page, cells.nth(0), len(SOURCES))

    card = review_two_edits(lab.page, cells, "browser-cell-edits")
    cells.nth(3).get_by_text(FINAL).wait_for()
    lab.wait_kernel_idle()
    assert lab.cell_sources()[1:3] == [NEW_X, "y = 2\nprint(y)"]  # written by the frontend
    lab.screenshot("browser-cell-edits-decided.png")
    check_told_and_logged(llm, lab_server.base)
    assert "Ctrl+Z" in card.inner_text()

    undo_in_cell(lab.page, cells.nth(1))  # the accepted edit is one undo step
    lab.page.wait_for_function(f"() => {NB}.widgets[1].model.sharedModel.getSource() === 'x = 1\\nprint(x)'")
    assert lab.cell_sources()[1:3] == ["x = 1\nprint(x)", "y = 2\nprint(y)"]
    lab.screenshot("browser-cell-edits-undone.png")


def test_changed_cell_refused_with_fresh_diff_and_missing_cell(  # noqa: F811
        lab: Lab, lab_server: LabServer, llm):  # noqa: F811
    write_notebook(lab_server.root / "changed.ipynb", *PY_KERNEL, SOURCES)
    llm.enqueue(S.tool_calls([edit(2, NEW_X), edit(99, "z = 3")]), S.text("Noted."))
    lab.open_notebook("changed.ipynb")
    cells = lab.current_panel().locator(".jp-Notebook .jp-Cell")
    run_cells(lab.page, cells.nth(0), len(SOURCES))
    card = cells.nth(3).locator(".oi-CellEdits")
    card.wait_for(timeout=UI_TIMEOUT * 2)
    missing = card.locator('.oi-CellEdits-edit[data-cell="99"] .oi-CellEdits-status')
    missing.filter(has_text="No such cell").wait_for()

    # the user changes cell In[2] while the proposal waits
    lab.page.evaluate(f"() => {NB}.widgets[1].model.sharedModel.setSource('x = 5\\nprint(x)')")
    first = card.locator('.oi-CellEdits-edit[data-cell="2"]')
    first.locator("button.oi-CellEdits-accept").click()
    first.get_by_text("changed since the edit was proposed").wait_for()
    assert first.locator(".oi-diff-del").inner_text() == "- x = 5"  # the fresh diff
    assert lab.cell_sources()[1] == "x = 5\nprint(x)"  # not overwritten
    lab.screenshot("browser-cell-edits-refused.png")
    card.locator("button.oi-CellEdits-acceptAll").click()  # the open one, against what is there now
    cells.nth(3).get_by_text("Noted.").wait_for()
    assert lab.cell_sources()[1] == NEW_X
    told = tool_messages(llm.requests[-1])
    assert told[0].startswith("The user accepted your edit")
    assert told[1].startswith("There is no cell In[99] in this notebook") and "In[2]" in told[1]
    actions = [r["action"] for r in log_records(lab_server.base, "cell_edit_decided")[-3:]]
    assert sorted(actions) == ["accepted", "missing", "refused"]



def test_notebook_closed_mid_proposal_is_recorded_not_applied(  # noqa: F811
        lab: Lab, lab_server: LabServer, llm):  # noqa: F811
    """Closing the notebook while the card waits: the kernel (still running) is told, the
    proposal ends recorded as not applied, the model is told, and the file is untouched."""
    import time

    write_notebook(lab_server.root / "closed.ipynb", *PY_KERNEL, SOURCES)
    llm.enqueue(S.tool_calls([edit(2, NEW_X)]), S.text("The notebook was closed."))
    lab.open_notebook("closed.ipynb")
    cells = lab.current_panel().locator(".jp-Notebook .jp-Cell")
    run_cells(lab.page, cells.nth(0), len(SOURCES))
    cells.nth(3).locator(".oi-CellEdits .oi-diff-add").first.wait_for(timeout=UI_TIMEOUT * 2)
    lab.page.evaluate("() => window.jupyterapp.shell.currentWidget.dispose()")  # closed unsaved
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any(
            r["action"] == "not_applied" for r in log_records(lab_server.base, "cell_edit_decided")):
        time.sleep(0.2)
    decided = log_records(lab_server.base, "cell_edit_decided")[-1]
    assert (decided["cell"], decided["action"]) == ("2", "not_applied"), decided
    assert "notebook was closed" in decided["reason"]
    while time.monotonic() < deadline and len(llm.requests) < 2:
        time.sleep(0.2)
    assert "was not applied: the notebook was closed" in tool_messages(llm.requests[-1])[0]
    import nbformat

    on_disk = nbformat.read(lab_server.root / "closed.ipynb", as_version=4)
    assert on_disk.cells[1].source == "x = 1\nprint(x)"  # the file was never touched

# ---------------------------------------------------------------- Notebook 7


@pytest.fixture(scope="module")
def nb7_server(llm: S.ScriptedLLMServer, tmp_path_factory: pytest.TempPathFactory  # noqa: F811
               ) -> Iterator[LabServer]:
    server = serve(tmp_path_factory.mktemp("nb7edits"), llm, "notebook")
    yield server
    server.stop()


def test_notebook7_two_cell_edit_accept_and_run_reject_and_undo(browser: Any, nb7_server,
                                                                llm):  # noqa: F811
    from tests.test_notebook7 import open_notebook

    llm.reset()
    write_notebook(nb7_server.root / "nb7-edits.ipynb", *PY_KERNEL, SOURCES)
    llm.enqueue(S.tool_calls([edit(2, NEW_X), edit("In[3]", NEW_Y)]), S.text(FINAL))
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    page.set_default_timeout(UI_TIMEOUT)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    try:
        open_notebook(page, nb7_server, "nb7-edits.ipynb")
        cells = page.locator(".jp-Notebook .jp-Cell")
        run_cells(page, cells.nth(0), len(SOURCES))
        review_two_edits(page, cells, "notebook7-cell-edits", accept="acceptRun")
        cells.nth(3).get_by_text(FINAL).wait_for()
        # "Accept and run": the cell ran with its new source once the instruction ended
        cells.nth(1).locator(".jp-OutputArea-output", has_text="10").wait_for()
        sources = page.evaluate(f"{NB}.widgets.map(c => c.model.sharedModel.getSource())")
        assert sources[1:3] == [NEW_X, "y = 2\nprint(y)"]
        page.screenshot(path=str(ARTIFACTS / "notebook7-cell-edits-decided.png"))
        check_told_and_logged(llm, nb7_server.base, ran=True)
        undo_in_cell(page, cells.nth(1))
        page.wait_for_function(
            f"() => {NB}.widgets[1].model.sharedModel.getSource() === 'x = 1\\nprint(x)'")
        page.screenshot(path=str(ARTIFACTS / "notebook7-cell-edits-undone.png"))
    finally:
        page.close()
        nb7_server.shutdown_kernels()
    assert [e for e in errors if "oi-kernel" in e or "oi_kernel" in e] == []
