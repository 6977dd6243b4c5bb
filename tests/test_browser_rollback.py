"""Issue 20 in JupyterLab: the change summary under a step, and the "Undo" toolbar button
rolling the step back (real lab, headless Chromium, the scripted LLM server)."""

from __future__ import annotations

import pytest

from tests import llm_server as S
from tests.browser_support import Lab, LabServer, write_notebook
from tests.test_browser import OI_KERNEL, lab, lab_server, llm, pending_card  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

STEP = "alpha_var = 2\nbeta_var = [1, 2, 3]\n_ = open('made.txt', 'w').write('new file')"


def test_change_summary_in_the_cell_and_the_undo_button(
    lab: Lab, lab_server: LabServer, llm: S.ScriptedLLMServer  # noqa: F811 (the fixtures)
):
    write_notebook(lab_server.root / "undo.ipynb", *OI_KERNEL, [])
    made = lab_server.root / "made.txt"
    made.unlink(missing_ok=True)
    llm.enqueue(S.tool_call(STEP), S.text("Set up, nothing printed."))
    lab.open_notebook("undo.ipynb")
    lab.type_in_cell(0, "set things up quietly")
    lab.page.keyboard.press("Control+Enter")
    card = pending_card(lab)
    card.wait_for()
    card.locator("button.oi-run").click()
    # in the decided record itself (one output), so the saved notebook keeps it with the step
    summary = lab.cell(0).locator(".jp-OutputArea-output:has(.oi-card-decided) details.oi-changes")
    summary.wait_for()
    text = summary.inner_text()
    assert "3 variables" not in text  # alpha_var is new here, beta_var too: 2 variables
    assert "beta_var: list[3] (new)" in text and "made.txt (created, 8 bytes)" in text
    lab.cell(0).get_by_text("Set up, nothing printed.").wait_for()
    lab.wait_kernel_idle()
    lab.screenshot("browser-change-summary.png")
    assert made.exists()

    button = lab.current_panel().locator(".oi-UndoButton")
    button.wait_for()
    button.click()
    toast = lab.page.locator(".Toastify__toast", has_text="Undone: rolled back to before")
    toast.wait_for()
    lab.screenshot("browser-undo-button.png")
    toast.get_by_role("button", name="Details").click()
    dialog = lab.page.locator(".jp-Dialog-content")
    dialog.wait_for()
    assert "Files removed: `made.txt`" in dialog.inner_text()
    lab.screenshot("browser-undo-details.png")
    assert not made.exists()
    assert lab.page.evaluate("window.jupyterapp.commands.hasCommand('oi-kernel:undo-last')")
