"""Known safe, or it asks (issue 39), through the Open Interpreter kernel with the scripted
model and stdin approval, as a new user meets it: a three-row sales.csv, looked at and then
summed under ``%approval risky`` (both steps run unasked, though the first put the file's
text in front of the model); a step after that which writes a file asks and names the file
whose text it follows; a block with something not known to be safe asks and says what; one
profile entry makes a workspace helper known safe."""

from __future__ import annotations

import pytest

from tests import llm_server as S
from tests.env import oi_env
from tests.kernel_client import KernelSession
from tests.test_untrusted_kernel import logged

pytestmark = pytest.mark.kernel

SALES = "region,revenue\nnorth,10\nsouth,20\neast,30\n"
LOAD = "import pandas as pd\ndf = pd.read_csv('sales.csv')\n"
HELPERS = "def total(frame):\n    return frame['revenue'].sum()\n"


@pytest.fixture(scope="module")
def kernel(_server, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("known-safe")
    (tmp / "sales.csv").write_text(SALES)
    (tmp / "helpers.py").write_text(HELPERS)
    profiles = tmp / ".oi" / "profiles"
    profiles.mkdir(parents=True)
    (profiles / "mine.yaml").write_text('known_safe: ["helpers.*"]\n')
    env = oi_env(_server, tmp, OI_AUTO_RUN="0", OI_APPROVAL_UI="stdin")
    with KernelSession(env=env, cwd=str(tmp)) as ks:
        ks.tmp = tmp
        yield ks


@pytest.fixture
def oi(kernel, _server):
    _server.reset()
    assert kernel.execute("%reset").status == "ok"
    assert kernel.execute("%approval risky").status == "ok"
    return kernel


@pytest.mark.parametrize("look", ["print(df.head())", "print(df.revenue.describe())"])
def test_looking_at_the_data_does_not_make_the_next_step_ask(oi, _server, look):
    write = "df.to_csv('copy.csv', index=False)"
    _server.enqueue(S.tool_call(LOAD + look), S.tool_call("print(df.revenue.sum())"),
                    S.tool_call(write), S.text("Done."))
    result = oi.execute("How much revenue is in sales.csv?", stdin=["n"], timeout=120)
    assert result.status == "ok", result.text
    assert "north" in result.stdout or "mean" in result.stdout  # step 1 showed the file
    assert "60" in result.stdout  # step 2 ran without asking
    assert len(result.prompts) == 1, result.prompts  # only step 3, which writes, asked
    question = result.prompts[0]
    assert write in question
    assert "follows the text of sales.csv read in step 1" in question
    assert "it writes a file (`.to_csv`)" in question
    assert not (oi.tmp / "copy.csv").exists()
    assert "it is known safe and its effects stay in the namespace" in result.text
    # the model still read the file's text as outside content, fenced
    told = [m["content"] for m in _server.requests[1]["messages"] if m["role"] == "tool"]
    assert "Untrusted content: the text of sales.csv" in told[0]
    summed = [r for r in logged(oi.tmp, "code_proposed")
              if r["code"] == "print(df.revenue.sum())"][-1]
    assert summed["untrusted"] and not summed["flags"]


def test_a_block_not_known_safe_asks_and_says_what_was_not_known(oi, _server):
    code = "import socket\nsocket.create_connection(('127.0.0.1', 9))"
    _server.enqueue(S.tool_call(code), S.text("Done."))
    result = oi.execute("check the port", stdin=["n"], timeout=90)
    assert len(result.prompts) == 1, result.prompts
    assert "not known to be safe: import socket, `socket.create_connection`" in result.prompts[0]
    proposed = [r for r in logged(oi.tmp, "code_proposed") if r["code"] == code][-1]
    assert any(f["category"] == "not-known-safe" for f in proposed["flags"])


def test_process_creation_asks_whatever_the_command_says(oi, _server):
    code = "from os import system as plot_summary\nplot_summary('ls')"
    _server.enqueue(S.tool_call(code), S.text("Done."))
    result = oi.execute("plot a summary", stdin=["n"], timeout=90)
    assert len(result.prompts) == 1, result.prompts
    assert "`os.system` (it starts a process)" in result.prompts[0]


def test_one_profile_entry_makes_a_helper_known_safe(oi, _server):
    code = "import helpers\nprint('total', helpers.total(df))"
    _server.enqueue(S.tool_call(LOAD + code), S.text("Done."))
    asked = oi.execute("total with my helper", stdin=["n"], timeout=90)
    assert len(asked.prompts) == 1 and "import helpers" in asked.prompts[0], asked.prompts
    assert oi.execute("%profile mine").status == "ok"
    assert oi.execute("%approval risky").status == "ok"
    _server.enqueue(S.tool_call(LOAD + code), S.text("Done."))
    result = oi.execute("total with my helper", stdin=[], timeout=90)
    assert result.prompts == [] and "total 60" in result.stdout, result.text
    assert oi.execute("%profile --clear").status == "ok"
