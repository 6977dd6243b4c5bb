"""The real ``jupyter console`` in a real terminal (tmux) under ``%approval risky``, with a
model whose code hides terminal escape sequences (erase the line, move the cursor up) and
a bidi override: the screen must show the whole code, each hidden character as a marker,
and the risk flag naming it, before the question; raw, the sequences would erase what was
shown. Both ways a model proposes code are tried (a tool call, a fenced reply that is also
streamed as text). The screen is kept in test-artifacts/console-visible-screen.txt.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Iterator

import pytest

from tests import llm_server as S
from tests.browser_support import ARTIFACTS
from tests.env import oi_env
from tests.test_console import Terminal

pytestmark = [pytest.mark.kernel, pytest.mark.timeout(300)]

ERASE = "\x1b[2K\x1b[1A" * 4  # erase the line and go up, four times
CODE = (f"# tidy up{ERASE}\n"
        "import os\n"
        "label = 'safe\u202e'\n"
        "print('listed', len(os.listdir('.')))")
SHOWN = ["    # tidy up" + "⟦U+001B ESC⟧[2K⟦U+001B ESC⟧[1A" * 4,
         "    import os",
         "    label = 'safe⟦U+202E RLO⟧'",
         "    print('listed', len(os.listdir('.')))"]


def answer(body: dict) -> S.Response:
    messages = body["messages"]
    last, before = messages[-1], messages[-2] if len(messages) > 1 else {}
    if last["role"] == "tool" or (
        before.get("role") == "assistant" and "```" in str(before.get("content") or "")
    ):
        return S.text("Done.", chunk_size=6)
    if "fence" in S.last_user_text(body):
        return S.text(f"Tidying{ERASE} now:\n```python\n{CODE}\n```\n", chunk_size=7)
    return S.tool_call(CODE, text=f"Tidying{ERASE} now.", args_chunk_size=9)


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Terminal]:
    if shutil.which("tmux") is None:
        pytest.fail("tmux is not installed: `apt-get install tmux` (scripts/test does it).",
                    pytrace=False)
    tmp = tmp_path_factory.mktemp("console-visible")
    with S.ScriptedLLMServer() as server:
        server.set_fallback(answer)
        env = oi_env(
            server, tmp, OI_AUTO_RUN="0", OI_APPROVAL="risky", OI_PROFILE="",
            LITELLM_LOCAL_MODEL_COST_MAP="True", JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
            PATH=os.environ.get("PATH", ""), TERM="xterm-256color",
        )
        term = Terminal([sys.executable, "-m", "jupyter_console", "--kernel",
                         "open-interpreter"], env, tmp)
        try:
            term.wait_for(r"In \[1\]:", timeout=120)
            yield term
        finally:
            ARTIFACTS.mkdir(exist_ok=True)
            (ARTIFACTS / "console-visible-screen.txt").write_text(term.screen())
            term.close()


@pytest.mark.parametrize("kind", ["tool", "fence"])
def test_the_screen_shows_the_whole_code_and_its_markers_before_the_question(console, kind):
    start = len(console.screen())
    prompt = re.findall(r"In \[(\d+)\]:", console.screen())[-1]
    console.type(f"tidy up the folder ({kind})")
    shown = console.wait_for(r"Run this code\? \[y/N", after=start)
    asked = shown[: shown.rindex("Run this code?")]
    head = asked.rindex("── Step 1 · python · 4 lines")
    lines = asked[head:].split("\n")
    for line in SHOWN:  # every line of the code, in order, with the markers
        assert line in lines, asked
    assert [lines.index(x) for x in SHOWN] == sorted(lines.index(x) for x in SHOWN)
    assert "[high] hidden-characters: line 1: U+001B ESCAPE (ESC) in a comment" in asked
    assert "line 3: U+202E RIGHT-TO-LEFT OVERRIDE (RLO) in a string" in asked
    assert "Tidying⟦U+001B ESC⟧[2K" in asked  # the reply's own text, streamed, is marked too
    console.type("y")
    out = console.wait_for(rf"In \[{int(prompt) + 1}\]:", after=start)
    assert re.search(r"listed \d+\n", out) and "Done." in out
