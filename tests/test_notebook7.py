"""Jupyter Notebook 7 (the ``notebook`` package) in headless Chromium, on the Open
Interpreter kernel with the scripted LLM server: type an instruction, see the approval
card, click Run, see the output; the lab extension's export button works there too.

Notebook 7 has no status bar, so the extension's status item has nowhere to go (docs/index.md
says so); its toolbar export button, commands and keyboard approval do work. Screenshots
are left in test-artifacts/.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests import llm_server as S
from tests.browser_support import LabServer, launch_chromium, write_notebook
from tests.env import oi_env

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

CODE = "print(6 * 7)"
FINAL = "Done: the product is printed above."
REPLY = f"I will multiply them.\n```python\n{CODE}\n```\n"
UI_TIMEOUT = 60_000
CURRENT = "window.jupyterapp.shell.currentWidget"


@pytest.fixture(scope="module")
def llm() -> Iterator[S.ScriptedLLMServer]:
    with S.ScriptedLLMServer() as server:
        yield server


@pytest.fixture(scope="module")
def server(llm: S.ScriptedLLMServer, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[LabServer]:
    base = tmp_path_factory.mktemp("nb7")
    env = oi_env(llm, base, OI_LOG_DIR=str(base / "oi-logs"), OI_AUTO_RUN="0",
                 OI_APPROVAL="always", OI_PROFILE="")
    nb7 = LabServer(base, env, {}, app="notebook")
    nb7.start()
    try:
        if not nb7.has_labextension("oi-kernel:plugin"):
            pytest.fail("The oi-kernel extension is not installed here: `pip install -e .`.",
                        pytrace=False)
        yield nb7
    finally:
        nb7.stop()


@pytest.fixture
def page(server: LabServer, llm: S.ScriptedLLMServer) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    llm.reset()
    errors: list[str] = []
    with sync_playwright() as p:
        browser = launch_chromium(p)
        page = browser.new_page(viewport={"width": 1300, "height": 900})
        page.set_default_timeout(UI_TIMEOUT)
        page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        try:
            yield page
        finally:
            browser.close()
            server.shutdown_kernels()
    assert [e for e in errors if "oi-kernel" in e or "oi_kernel" in e] == []


def open_notebook(page: Any, server: LabServer, name: str) -> None:
    """Open ``name`` in Notebook 7 and wait until its kernel is connected and idle."""
    page.goto(f"{server.url}/notebooks/{name}")
    page.wait_for_function(
        f"""name => {{
            const w = window.jupyterapp && {CURRENT};
            const kernel = w && w.sessionContext && w.sessionContext.session
                && w.sessionContext.session.kernel;
            return !!w && !!w.context && w.context.path === name && !!kernel
                && kernel.connectionStatus === 'connected' && kernel.status === 'idle';
        }}""",
        arg=name, timeout=120_000)


def test_instruction_card_run_output_and_export(page, server, llm):
    import nbformat

    write_notebook(server.root / "nb7.ipynb", "open-interpreter", "Open Interpreter", [])
    llm.enqueue(S.text(REPLY, chunk_size=6), S.text(FINAL))
    open_notebook(page, server, "nb7.ipynb")

    cell = page.locator(".jp-Notebook .jp-Cell").first
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.type("multiply six by seven")
    page.keyboard.press("Control+Enter")
    card = cell.locator(".oi-card.oi-card-pending")
    card.wait_for()
    assert card.locator(".oi-code textarea").input_value() == CODE
    # the reply streamed above the card; its copy of the code is folded to one line
    cell.get_by_text("I will multiply them.").wait_for()
    cell.get_by_text("▸ python, 1 line: step 1, below").wait_for()
    stdout = cell.locator('.jp-RenderedText[data-mime-type="application/vnd.jupyter.stdout"]')
    assert stdout.count() == 0  # nothing ran before the click
    page.screenshot(path=str(_artifact("notebook7-card.png")))

    card.locator("button.oi-run").click()
    stdout.filter(has_text="42").wait_for()
    ran = cell.locator(".oi-card-decided pre.oi-code-ran")
    ran.wait_for()
    assert ran.inner_text().strip() == CODE
    cell.get_by_text(FINAL).wait_for()
    assert cell.locator(".oi-card-pending").count() == 0
    shown = cell.locator(".jp-OutputArea").inner_text()
    assert shown.count(CODE) == 1, shown  # the proposal is on screen once
    page.screenshot(path=str(_artifact("notebook7-ran.png")))

    # The lab extension's toolbar export button works in Notebook 7 too.
    button = page.locator(".oi-ExportButton")
    button.wait_for()
    button.click()
    path_input = page.locator(".jp-Dialog input")
    path_input.wait_for()
    assert path_input.input_value() == "nb7-export.ipynb"
    page.keyboard.press("Enter")
    page.locator(".jp-Dialog", has_text="Export complete").wait_for()
    page.screenshot(path=str(_artifact("notebook7-export.png")))
    nb = nbformat.read(server.root / "nb7-export.ipynb", as_version=4)
    assert [c.source for c in nb.cells if c.cell_type == "code"] == [CODE]
    assert page.locator(".oi-StatusItem").count() == 0  # no status bar in Notebook 7


def test_oi_magic_in_a_python3_notebook_shows_the_card(page, server, llm):
    """``%%oi`` in an ordinary python3 notebook: Notebook 7's widget manager is there, so the
    card shows (a batch run without one is refused at once: tests/test_magic_unattended.py)."""
    sources = ["%load_ext oi_kernel", "%%oi\nmultiply six by seven"]
    write_notebook(server.root / "magic7.ipynb", "python3", "Python 3", sources)
    llm.enqueue(S.tool_call(CODE), S.text(FINAL))
    open_notebook(page, server, "magic7.ipynb")
    cells = page.locator(".jp-Notebook .jp-Cell")
    cells.first.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")
    page.keyboard.press("Shift+Enter")
    cell = cells.nth(1)
    card = cell.locator(".oi-card.oi-card-pending")
    card.wait_for()
    assert card.locator(".oi-code textarea").input_value() == CODE
    stdout = cell.locator('.jp-RenderedText[data-mime-type="application/vnd.jupyter.stdout"]')
    assert stdout.filter(has_text="42").count() == 0
    page.screenshot(path=str(_artifact("notebook7-magic-card.png")))
    card.locator("button.oi-run").click()
    stdout.filter(has_text="42").wait_for()
    cell.get_by_text(FINAL).wait_for()
    assert cell.locator(".oi-card-pending").count() == 0
    assert "ApprovalUnavailableError" not in cell.locator(".jp-OutputArea").inner_text()


def _artifact(name: str) -> Any:
    from tests.browser_support import ARTIFACTS

    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS / name
