"""JupyterLab with Jupyter AI 3.2 installed next to oi-kernel (issue 32 item 4, issue 33
items 3-4): a real lab server from an environment with both (tests/jupyter_ai_support.py),
headless Chromium, real kernels, the scripted LLM server.

A notebook on the Open Interpreter kernel works as without Jupyter AI (card, Run, output)
while Jupyter AI's chat is there too; and Jupyter AI's persona manager loads our persona
from its entry point: a chat offers "Open Interpreter" with our logo, and choosing it starts
our ACP agent, ``python -m oi_kernel.cli acp``, with the server's Python.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests import llm_server as S
from tests.browser_support import Lab, LabServer, write_notebook
from tests.env import oi_env
from tests.jupyter_ai_support import CHAT_PLUGIN, jupyter_ai_lab
from tests.test_browser import (
    FINAL,
    OI_KERNEL,
    UI_TIMEOUT,
    expect_step_ran,
    run_instruction_until_card,
)

# The first run builds the venv (several minutes); later ones reuse it.
pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(1200)]

CHAT_TAB = '.jp-SideBar .lm-TabBar-tab[data-id="JupyterlabChat:sidepanel"]'
PERSONA_BUTTON = ".jp-jai-personaControls-persona-btn"


@pytest.fixture(scope="module")
def llm() -> Iterator[S.ScriptedLLMServer]:
    with S.ScriptedLLMServer() as server:
        yield server


@pytest.fixture(scope="module")
def jai_lab(llm: S.ScriptedLLMServer, tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("jupyter-ai-lab")
    env = oi_env(llm, base, OI_LOG_DIR=str(base / "oi-logs"), OI_AUTO_RUN="0",
                 OI_APPROVAL="always")
    server = jupyter_ai_lab(base, env, {"oi-kernel:plugin": {"autoInsertCells": True}})
    server.start(timeout=180)
    yield server
    server.stop()


@pytest.fixture
def lab(browser: Any, jai_lab: LabServer, llm: S.ScriptedLLMServer,
        request: pytest.FixtureRequest) -> Iterator[Lab]:
    llm.reset()
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.set_default_timeout(UI_TIMEOUT)
    lab = Lab(page, jai_lab)
    yield lab
    lab.screenshot(f"last-{request.node.name}.png")  # the state at the end, to debug failures
    context.close()
    jai_lab.shutdown_kernels()
    ours = [e for e in lab.errors if "oi-kernel" in e or "oi_kernel" in e]
    assert ours == [], ours  # our extension logged no errors


def open_chat_in_side_panel(lab: Lab, path: str) -> Any:
    """Open the chat file ``path`` in Jupyter AI's chat side panel; returns the panel."""
    (lab.server.root / path).touch()
    lab.command("jupyterlab-chat:open", {"filepath": path, "inSidePanel": True})
    side = lab.page.locator("#jp-left-stack")
    side.locator(".jp-chat-input-container").wait_for()
    return side


def test_a_notebook_on_our_kernel_next_to_jupyter_ai(lab: Lab, jai_lab: LabServer, llm):
    assert jai_lab.has_labextension("oi-kernel:plugin")
    assert jai_lab.has_labextension(CHAT_PLUGIN)
    write_notebook(jai_lab.root / "together.ipynb", *OI_KERNEL, [])
    llm.enqueue(S.tool_call("print(6 * 7)"), S.text(FINAL))
    lab.open_notebook("together.ipynb")
    assert lab.page.locator(CHAT_TAB).count() == 1  # Jupyter AI's chat is in the sidebar

    card = run_instruction_until_card(lab, "multiply six by seven")
    card.locator("button.oi-run").click()
    expect_step_ran(lab, 0)
    lab.cell(0).get_by_text(FINAL).wait_for()
    lab.wait_kernel_idle()

    side = open_chat_in_side_panel(lab, "together.chat")
    side.locator(PERSONA_BUTTON, has_text="Open Interpreter").wait_for()
    assert lab.current_panel().locator(".oi-card-decided").count() == 1  # still there
    shot = lab.screenshot("browser-jupyter-ai-notebook-and-chat.png")
    assert shot.stat().st_size > 10_000


def wait_for_log(lab: Lab, line: str, timeout: float = 60) -> str:
    """The lab server's log once it has ``line``."""
    deadline = time.monotonic() + timeout
    while line not in (text := lab.server.log_path.read_text(errors="replace")):
        assert time.monotonic() < deadline, f"no {line!r} in the log:\n{lab.server.log_tail(60)}"
        lab.page.wait_for_timeout(200)
    return text


def agent_processes(server: LabServer) -> list[Any]:
    """The server's child processes running our ACP agent, ``python -m oi_kernel.cli acp``."""
    import psutil

    found = []
    for child in psutil.Process(server.proc.pid).children(recursive=True):
        try:
            if child.cmdline()[-3:] == ["-m", "oi_kernel.cli", "acp"]:
                found.append(child)
        except psutil.Error:
            continue
    return found


def test_the_persona_is_offered_in_a_chat_and_starts_our_agent(lab: Lab, jai_lab: LabServer):
    (jai_lab.root / "ask.chat").touch()
    lab.page.goto(f"{jai_lab.url}/lab/tree/ask.chat?reset")
    persona = lab.page.locator(PERSONA_BUTTON)
    persona.filter(has_text="Open Interpreter").wait_for()
    avatar = persona.locator("img.jp-jai-personaControls-avatar")
    assert "oi_kernel%3A%3AOpenInterpreterPersona" in avatar.get_attribute("src")
    lab.page.wait_for_function("img => img.complete && img.naturalWidth > 0",
                               arg=avatar.element_handle())  # our logo, served by Jupyter AI
    persona.click()
    choice = lab.page.get_by_role("menuitem").filter(has_text="Open Interpreter")
    choice.wait_for()
    lab.page.wait_for_function(  # the menu has faded in, for the screenshot
        "() => { let e = document.querySelector('[role=menu]'); if (!e) return false;"
        " for (; e; e = e.parentElement) if (getComputedStyle(e).opacity !== '1') return false;"
        " return true; }")
    lab.screenshot("browser-jupyter-ai-persona-menu.png")
    choice.click()

    text = wait_for_log(lab, "Spawned ACP agent subprocess for 'OpenInterpreterPersona'")
    assert "Initialized persona 'Open Interpreter' (ID: " \
           "'jupyter-ai-personas::oi_kernel::OpenInterpreterPersona')" in text
    assert "Unable to load AI persona from entry point `open-interpreter`" not in text


TOOL_CALL = ".jp-jupyter-ai-acp-client-tool-call"
# the Run button (Preview is an allow_once option too: it is told apart by its label)
ALLOW_ONCE = '.jp-jupyter-ai-acp-client-permission-btn-allow-once:text-is("Run")'


def send_chat(lab: Lab, text: str) -> None:
    box = lab.page.locator(".jp-chat-input-container textarea:not([aria-hidden])").first
    box.click()
    box.fill(text)
    lab.page.locator(".jp-chat-input-container .jp-chat-send-button").first.click()


def test_a_chat_instruction_is_approved_in_the_chat_and_exported(
        lab: Lab, jai_lab: LabServer, llm: S.ScriptedLLMServer):
    (jai_lab.root / "work.chat").touch()
    llm.enqueue(S.tool_call("print(6 * 7)"), S.text(FINAL))
    lab.page.goto(f"{jai_lab.url}/lab/tree/work.chat?reset")
    lab.page.locator(PERSONA_BUTTON, has_text="Open Interpreter").wait_for()
    send_chat(lab, "multiply six by seven")

    allow = lab.page.locator(ALLOW_ONCE)
    allow.wait_for()  # the step waits for the chat's decision
    step = lab.page.locator(TOOL_CALL).last
    assert "print(6 * 7)" in step.inner_text()  # the code is shown before the decision
    buttons = lab.page.locator(".jp-jupyter-ai-acp-client-permission-btn").all_inner_texts()
    assert [b.strip() for b in buttons] == [
        "Run", "Preview (in a disposable copy first)", "Run all", "Skip", "Stop"]
    assert len(llm.requests) == 1  # nothing ran, the model was asked once
    lab.screenshot("browser-jupyter-ai-chat-permission.png")
    allow.click()

    done = lab.page.locator(f"{TOOL_CALL}-completed").last
    done.wait_for()
    done.locator("summary").click()  # the output, one click away
    done.get_by_text("42").wait_for()
    lab.page.locator(".jp-chat-message", has_text=FINAL).wait_for()
    assert len(llm.requests) == 2  # the output went back, the model answered once more
    lab.screenshot("browser-jupyter-ai-chat-ran.png")
    assert agent_processes(jai_lab)  # our agent, started by the persona, is still there
    # Jupyter AI's own MCP server needs an MCP SDK 2.x client, and Jupyter AI 3.2 brings 1.x:
    # the persona leaves it out (and says so in the server's log), no failure in the chat
    assert "MCP server" not in lab.page.locator(".jp-chat-messages-container").inner_text()
    assert "are not passed to Open Interpreter" in jai_lab.log_path.read_text()

    exported = jai_lab.root / "oi-session-export.ipynb"
    send_chat(lab, "/export")
    lab.page.locator(".jp-chat-message", has_text="oi-session-export.ipynb").wait_for()
    lab.screenshot("browser-jupyter-ai-chat-export.png")
    verify = subprocess.run(
        [jai_lab.args[0], "-m", "oi_kernel.cli", "verify", str(exported)], env=jai_lab.env,
        cwd=jai_lab.root, capture_output=True, text=True, timeout=300)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert "print(6 * 7)" in exported.read_text()


def test_a_flagged_step_shows_its_flags_and_skip_leaves_it_unrun(
        lab: Lab, jai_lab: LabServer, llm: S.ScriptedLLMServer):
    (jai_lab.root / "skip.chat").touch()
    (jai_lab.root / "results").mkdir()
    llm.enqueue(S.tool_call("import shutil\nshutil.rmtree('results')"),
                S.text("Nothing was deleted, as you chose."))
    lab.page.goto(f"{jai_lab.url}/lab/tree/skip.chat?reset")
    lab.page.locator(PERSONA_BUTTON, has_text="Open Interpreter").wait_for()
    send_chat(lab, "clean up the results folder")
    skip = lab.page.locator(".jp-jupyter-ai-acp-client-permission-btn-reject-once")
    skip.wait_for()
    asked = lab.page.locator(TOOL_CALL).last.inner_text()
    assert "shutil.rmtree('results')" in asked and "risk flag" in asked, asked  # before deciding
    lab.screenshot("browser-jupyter-ai-chat-flagged.png")
    skip.click()

    lab.page.locator(".jp-chat-message", has_text="Nothing was deleted").wait_for()
    skipped = lab.page.locator(f"{TOOL_CALL}-failed").last
    assert "— Skip" in skipped.inner_text()
    skipped.locator("summary").click()
    skipped.get_by_text("the code was not run").wait_for()
    assert (jai_lab.root / "results").is_dir()
    lab.screenshot("browser-jupyter-ai-chat-skip.png")
