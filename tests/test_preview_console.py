"""Preview in the real ``jupyter console`` (tmux), as a terminal user meets it: ``p`` at the
question shows what the step would print and change (in the question itself: the console
draws a question before earlier output), nothing real changes, then ``y`` runs it."""

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
CODE = "import pathlib\npathlib.Path('report.txt').write_text('x' * 1500)\nprint('written')"


def test_p_at_the_console_question_previews_then_y_runs(tmp_path):
    if shutil.which("tmux") is None:
        pytest.fail("tmux is not installed: `apt-get install tmux`.", pytrace=False)
    work = tmp_path / "work"
    work.mkdir()
    with S.ScriptedLLMServer() as server:
        server.enqueue(S.tool_call(CODE), S.text("The report is written."))
        env = oi_env(server, tmp_path, OI_AUTO_RUN="0", OI_APPROVAL="always", OI_PROFILE="",
                     LITELLM_LOCAL_MODEL_COST_MAP="True",
                     JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
                     PATH=os.environ.get("PATH", ""), TERM="xterm-256color")
        term = Terminal([sys.executable, "-m", "jupyter_console", "--kernel",
                         "open-interpreter"], env, work)
        try:
            term.wait_for(r"In \[1\]:", timeout=120)
            term.type("write the report")
            asked = term.wait_for(r"p\(review\)\] $")
            assert "Run this code? [y/N/e(dit)/a(ll)/s(top)/p(review)]" in asked
            start = len(term.screen())
            term.type("p")
            shown = term.wait_for(r"nothing real changed[\s\S]*p\(review\)\] $", after=start)
            assert "  output:\n    written" in shown, shown
            assert "report.txt (created, 1.5 kB)" in shown, shown
            assert not (work / "report.txt").exists()
            term.type("y")
            term.wait_for(r"In \[2\]:", after=start)
            assert (work / "report.txt").read_text() == "x" * 1500
        finally:
            ARTIFACTS.mkdir(exist_ok=True)
            (ARTIFACTS / "console-preview-screen.txt").write_text(term.screen())
            term.close()
