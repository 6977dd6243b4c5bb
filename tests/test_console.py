"""The real ``jupyter console`` on the Open Interpreter kernel, in a real terminal (tmux),
read from the screen as a user reads it.

jupyter console shows a stdin question before the output sent just before it, and never
shows display updates: what is being approved must be on screen when the question is.
One console runs 20 instructions in a row, alternating a model that calls the execute
tool and one that writes fenced markdown, answering ``y`` (and every fifth time ``e`` with
an edit), to give that race 20 chances. The screen of the last run is kept in
test-artifacts/console-screen.txt.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import llm_server as S
from tests.browser_support import ARTIFACTS
from tests.env import oi_env

pytestmark = pytest.mark.timeout(300)
ROUNDS = 20
WAIT_S = 60


def answer(body: dict) -> S.Response:
    """The scripted model: `item N tool` -> an execute call, `item N fence` -> a fenced
    block (streamed in small pieces); after the step's output, a closing sentence."""
    messages = body["messages"]
    last, before = messages[-1], messages[-2] if len(messages) > 1 else {}
    if last["role"] == "tool" or (
        before.get("role") == "assistant" and "```" in str(before.get("content") or "")
    ):
        return S.text("Done: the result is printed above.", chunk_size=6)
    m = re.search(r"item (\d+) (tool|fence)", S.last_user_text(body))
    if m is None:
        return S.text("I only know `item N tool` and `item N fence`.")
    n = int(m[1])
    code = f"value_{n} = {n} * 7\nprint('result', {n}, value_{n})"
    if m[2] == "tool":
        return S.tool_call(code, text=f"Computing item {n}.", args_chunk_size=9)
    return S.text(f"Here is item {n}:\n```python\n{code}\n```\n", chunk_size=5)


class Terminal:
    """A tmux session of its own (private server socket) running one command."""

    def __init__(self, command: list[str], env: dict[str, str], cwd: Path) -> None:
        self.socket = f"oi-test-{uuid.uuid4().hex[:8]}"
        env_args = [arg for name, value in env.items() for arg in ("-e", f"{name}={value}")]
        self.tmux("new-session", "-d", "-s", "oi", "-x", "200", "-y", "50", "-c", str(cwd),
                  *env_args, subprocess.list2cmdline(command))
        self.tmux("set-option", "-t", "oi", "history-limit", "20000")

    def tmux(self, *args: str) -> str:
        done = subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True,
                              text=True, timeout=30, check=True)
        return done.stdout

    def screen(self) -> str:
        """Everything the terminal shows and scrolled past, wrapped lines joined (without the
        empty lines below the cursor, so an offset into it stays valid as output grows)."""
        return self.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "oi").rstrip("\n")

    def type(self, text: str) -> None:
        self.tmux("send-keys", "-t", "oi", "-l", text)
        self.tmux("send-keys", "-t", "oi", "Enter")

    def wait_for(self, pattern: str, after: int = 0, timeout: float = WAIT_S) -> str:
        """The screen from offset ``after`` once ``pattern`` (a regex) appears there."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.screen()[after:]
            if re.search(pattern, text):
                return text
            time.sleep(0.05)
        raise AssertionError(f"{pattern!r} did not appear on the screen:\n{self.screen()[-3000:]}")

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True,
                       timeout=30)


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Terminal, S.ScriptedLLMServer]]:
    if shutil.which("tmux") is None:
        pytest.fail("tmux is not installed: `apt-get install tmux` (scripts/test does it).",
                    pytrace=False)
    tmp = tmp_path_factory.mktemp("console")
    with S.ScriptedLLMServer() as server:
        server.set_fallback(answer)
        env = oi_env(
            server, tmp, OI_AUTO_RUN="0", OI_APPROVAL="always", OI_PROFILE="",
            LITELLM_LOCAL_MODEL_COST_MAP="True", JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
            PATH=os.environ.get("PATH", ""), TERM="xterm-256color",
        )
        command = [sys.executable, "-m", "jupyter_console", "--kernel", "open-interpreter"]
        term = Terminal(command, env, tmp)
        try:
            term.wait_for(r"In \[1\]:", timeout=120)
            yield term, server
        finally:
            ARTIFACTS.mkdir(exist_ok=True)
            (ARTIFACTS / "console-screen.txt").write_text(term.screen())
            term.close()


def test_the_code_is_on_screen_before_the_question_and_y_runs_it(console):
    term, server = console
    for i in range(1, ROUNDS + 1):
        kind = "tool" if i % 2 else "fence"
        start = len(term.screen())
        term.type(f"compute item {i} {kind}")
        shown = term.wait_for(r"Run this code\? \[y/N", after=start)
        asked = shown[: shown.index("Run this code?")]
        # What is being approved is on the screen above the question, whatever came first.
        assert "── Step 1 · python · 2 lines" in asked, shown
        assert f"    value_{i} = {i} * 7\n    print('result', {i}, value_{i})\n" in asked, shown
        if i % 5 == 0:
            term.type("e")
            edit = term.wait_for(r"Replacement code \(one line", after=start)
            replaced = edit[edit.rindex("Editing. The code now:"):]
            assert f"    value_{i} = {i} * 7\n    print('result', {i}, value_{i})\n" in replaced
            term.type(f"print('edited', {i} * 100)")
            out = term.wait_for(rf"In \[{i + 1}\]:", after=start)
            assert f"edited {i * 100}\n" in out
        else:
            term.type("y")
            out = term.wait_for(rf"In \[{i + 1}\]:", after=start)
            assert f"result {i} {i * 7}\n" in out
        assert "Done: the result is printed above." in out, out
    assert sum(1 for body in server.requests if body["messages"][-1]["role"] == "tool") == 10


def test_a_cell_magic_waits_for_its_body(console):
    term, _ = console
    start = len(term.screen())
    prompt = re.findall(r"In \[(\d+)\]:", term.screen())[-1]
    term.type("%%python")
    term.wait_for(r"\.\.\.:", after=start)  # a continuation line, not a run
    term.type("for k in range(2):")
    term.type("print('looped', k)")
    term.type("")
    out = term.wait_for(rf"In \[{int(prompt) + 1}\]:", after=start)
    assert "looped 0\nlooped 1\n" in out, out


def test_log_is_plain_text_in_the_console(console):
    """``%log`` in a terminal: the path and the events as text, not raw Markdown fences."""
    term, _ = console
    start = len(term.screen())
    prompt = re.findall(r"In \[(\d+)\]:", term.screen())[-1]
    term.type("%log 3")
    out = term.wait_for(rf"In \[{int(prompt) + 1}\]:", after=start)
    assert "Session log: `" in out and ".jsonl`" in out, out
    assert "Last events (seq, time, event, turn.step):" in out
    assert "```" not in out, out
    listed = out.split("turn.step):\n", 1)[1].split("\n\n", 1)[0].split("\n")
    events = [line for line in listed if line.strip()]  # (a fresh console has one: its start)
    assert events and all(line.startswith("    ") for line in events), out  # indented, as code


@pytest.mark.parametrize("word", ["exit", "quit", "exit()", "quit()"])
def test_exit_or_quit_leaves_without_asking_the_model(word, tmp_path):
    """As in IPython: the banner says how to leave; the word leaves; no LLM request is made."""
    with S.ScriptedLLMServer() as server:
        server.set_fallback(answer)
        env = oi_env(server, tmp_path, OI_AUTO_RUN="0", OI_PROFILE="",
                     JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
                     PATH=os.environ.get("PATH", ""), TERM="xterm-256color")
        command = [sys.executable, "-m", "jupyter_console", "--kernel", "open-interpreter"]
        term = Terminal(command, env, tmp_path)
        try:
            term.tmux("set-option", "-t", "oi", "remain-on-exit", "on")
            banner = term.wait_for(r"In \[1\]:", timeout=120)
            assert "exit (or Ctrl-D) leaves" in banner
            term.type(word)
            deadline = time.monotonic() + WAIT_S
            while term.tmux("list-panes", "-t", "oi", "-F", "#{pane_dead}").strip() != "1":
                assert time.monotonic() < deadline, term.screen()[-2000:]
                time.sleep(0.1)
            screen = term.screen()
            assert "In [2]:" not in screen  # it left instead of running an instruction
            # typed at once, while the child kernel may still be starting: a quiet exit
            assert "Traceback" not in screen and "KeyboardInterrupt" not in screen, screen
            assert server.requests == []
        finally:
            term.close()
