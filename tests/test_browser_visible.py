"""What you see is what runs, in JupyterLab (headless Chromium, real kernels, the scripted
model): under ``%approval risky`` a Trojan Source block (bidi controls in a string, which a
browser textarea shows reordered) is asked about; its card shows the high flag and the
code with each hidden character as a marker, not the reordering textarea; Edit opens the
real code; the decided record shows the markers and keeps the real code for the extension.
Screenshots: test-artifacts/browser-visible-card.png, browser-visible-record.png.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests import llm_server as S
from tests.browser_support import Lab, LabServer, launch_chromium, write_notebook
from tests.env import oi_env

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

OI_KERNEL = ("open-interpreter", "Open Interpreter")
CODE = ('access_level = "user\u202e \u2066# Check if admin\u2069 \u2066"\n'
        "if access_level != \"user\":\n    print('you are an admin')\n"
        "print('level:', ascii(access_level))")
MARKED = 'access_level = "user⟦U+202E RLO⟧ ⟦U+2066 LRI⟧# Check if admin⟦U+2069 PDI⟧ ⟦U+2066 LRI⟧"'


@pytest.fixture(scope="module")
def llm() -> Iterator[S.ScriptedLLMServer]:
    with S.ScriptedLLMServer() as server:
        yield server


@pytest.fixture(scope="module")
def lab_server(llm: S.ScriptedLLMServer, tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("lab-visible")
    env = oi_env(llm, base, OI_AUTO_RUN="0", OI_APPROVAL="risky")
    server = LabServer(base, env, {})
    server.start()
    yield server
    server.stop()


@pytest.fixture
def lab(browser_page: Any, lab_server: LabServer, llm: S.ScriptedLLMServer) -> Iterator[Lab]:
    llm.reset()
    yield Lab(browser_page, lab_server)
    lab_server.shutdown_kernels()


@pytest.fixture(scope="module")
def browser_page() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = launch_chromium(p)
        context = chromium.new_context(viewport={"width": 1300, "height": 800})
        page = context.new_page()
        page.set_default_timeout(60_000)
        yield page
        context.close()
        chromium.close()


def stdout_with(lab: Lab, text: str) -> Any:
    return lab.cell(0).locator(
        '.jp-RenderedText[data-mime-type="application/vnd.jupyter.stdout"]', has_text=text)


def ask(lab: Lab, name: str) -> Any:
    write_notebook(lab.server.root / name, *OI_KERNEL, [])
    lab.open_notebook(name)
    lab.type_in_cell(0, "check the access level")
    lab.page.keyboard.press("Control+Enter")
    card = lab.current_panel().locator(".oi-card.oi-card-pending")
    card.wait_for()
    return card


def test_the_card_shows_the_flag_and_the_markers_not_the_reordered_code(lab, llm):
    llm.enqueue(S.tool_call(CODE), S.text("The level is printed above."))
    card = ask(lab, "trojan.ipynb")
    flags = card.locator(".oi-flags").inner_text()
    assert "high · hidden-characters — line 1: U+202E RIGHT-TO-LEFT OVERRIDE (RLO)" in flags
    marked = card.locator("pre.oi-code-visible")
    assert marked.inner_text().split("\n")[0] == MARKED
    assert "what runs" in card.locator(".oi-hidden-note").inner_text()
    assert not card.locator(".oi-code textarea").is_visible()  # (a browser reorders it)
    lab.screenshot("browser-visible-card.png")

    card.locator("button.oi-run").click()
    cell = lab.cell(0)
    cell.get_by_text("level: 'user\\u202e").wait_for()
    record = cell.locator(".oi-card-decided")
    assert record.locator("pre.oi-code-visible").inner_text().split("\n")[0] == MARKED
    ran = record.locator("pre.oi-code-ran")
    assert not ran.is_visible() and ran.text_content() == CODE  # the real code, kept
    stdout_with(lab, "you are an admin").wait_for()  # what ran is what the markers showed
    lab.wait_kernel_idle()
    lab.screenshot("browser-visible-record.png")


def test_edit_opens_the_real_code(lab, llm):
    llm.enqueue(S.tool_call(CODE), S.text("ok"))
    card = ask(lab, "trojan-edit.ipynb")
    card.locator("button.oi-edit").click()
    area = card.locator(".oi-code textarea")
    area.wait_for(state="visible")
    assert area.input_value() == CODE and area.is_editable()
    assert card.locator("pre.oi-code-visible").is_visible()  # the marked view stays beside it
    card.locator("button.oi-skip").click()
    lab.cell(0).locator(".oi-card-decided").wait_for()
