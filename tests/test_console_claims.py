"""The answer's numbers in the real ``jupyter console`` (tmux), read from the screen: the
answer, then the compact list (untraced numbers in words, traced ones naming their step).
The screen is kept in test-artifacts/console-claims.txt."""

from __future__ import annotations

import os
import shutil
import sys

import pytest

from tests import llm_server as S
from tests.browser_support import ARTIFACTS
from tests.env import oi_env
from tests.test_console import Terminal

pytestmark = pytest.mark.timeout(300)


def test_the_console_shows_which_numbers_no_output_printed(tmp_path):
    if shutil.which("tmux") is None:
        pytest.fail("tmux is not installed: `apt-get install tmux` (scripts/test does it).",
                    pytrace=False)
    with S.ScriptedLLMServer() as server:
        server.enqueue(S.tool_call("print(0.2304, 1200)"),
                       S.text("Revenue grew 23% across 1,200 orders; the margin is 41%.",
                              chunk_size=7))
        env = oi_env(server, tmp_path, OI_AUTO_RUN="1", OI_PROFILE="",
                     LITELLM_LOCAL_MODEL_COST_MAP="True",
                     JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
                     PATH=os.environ.get("PATH", ""), TERM="xterm-256color")
        term = Terminal([sys.executable, "-m", "jupyter_console", "--kernel",
                         "open-interpreter"], env, tmp_path)
        try:
            term.wait_for(r"In \[1\]:", timeout=120)
            start = len(term.screen())
            term.type("how did revenue grow?")
            out = term.wait_for(r"In \[2\]:", after=start)
        finally:
            ARTIFACTS.mkdir(exist_ok=True)
            (ARTIFACTS / "console-claims.txt").write_text(term.screen())
            term.close()
    answer = out.index("Revenue grew 23% across 1,200 orders; the margin is 41%.")
    after = out[answer:]
    assert "41% — not in any output" in after, out
    assert "traced: 23% ← step 1 · 1,200 ← step 1" in after, out
    assert after.index("41% — not in any output") < after.index("In [2]:")
