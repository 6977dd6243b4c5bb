"""The Python API end to end: a real child IPython kernel, and litellm talking HTTP to
the scripted server. Plus the event -> chunk mapping as a table."""

from __future__ import annotations

import asyncio
import copy
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from oi_kernel import Interpreter
from oi_kernel.api.chunks import (
    ApprovalChunk,
    CodeChunk,
    MessageChunk,
    NoticeChunk,
    OutputChunk,
    TextChunk,
    UsageChunk,
    to_chunks,
)
from oi_kernel.core import events as E
from oi_kernel.core.types import ApprovalRequest, CodeBlock, Decision, StepRecord, Turn, Usage
from oi_kernel.errors import ApprovalUnavailableError, OIError
from oi_kernel.record.session_log import read_log
from tests import llm_server as S

KEY = "sk-test-not-a-real-key-123456"


def make(server: S.ScriptedLLMServer, tmp: Path, **kw) -> Interpreter:
    return Interpreter(
        "openai/scripted",
        api_base=server.url,
        api_key=KEY,
        log_dir=tmp / "logs",
        cwd=tmp,
        **kw,
    )


def kinds(chunks: list) -> list[str]:
    """Chunk class names in order, runs of TextChunk collapsed to one."""
    names: list[str] = []
    for c in chunks:
        name = type(c).__name__
        if not (name == "TextChunk" and names and names[-1] == name):
            names.append(name)
    return names


def user_texts(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "user"]


def tool_results(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


def test_two_turns_with_approval_callback(llm_server, tmp_path):
    asked: list[ApprovalRequest] = []

    def approve(request: ApprovalRequest) -> bool | str:
        asked.append(request)
        return True if request.turn == 1 else "print(x * 100)"  # turn 2: an edit

    llm_server.enqueue(
        S.tool_call("x = 2 + 3\nprint(x)"),
        S.text("It is 5."),
        S.tool_call("print(x * 10)"),
        S.text("Done."),
    )
    with make(llm_server, tmp_path, approve=approve) as it:
        first = list(it.chat("compute 2+3"))
        second = list(it.chat("multiply it by ten"))
        log_path = it.log_path

    assert [(r.turn, r.step, r.block.code) for r in asked] == [
        (1, 1, "x = 2 + 3\nprint(x)"),
        (2, 1, "print(x * 10)"),
    ]
    assert kinds(first) == [
        "CodeChunk",
        "ApprovalChunk",
        "OutputChunk",
        "TextChunk",
        "ClaimsChunk",  # the answer's number, traced to the step that printed it
        "MessageChunk",
        "UsageChunk",
    ]
    code, decision, output = first[0], first[1], first[2]
    assert code == CodeChunk(1, "python", "x = 2 + 3\nprint(x)", [], True)
    assert decision == ApprovalChunk(1, "approved", "x = 2 + 3\nprint(x)")
    assert (output.step, output.status, output.text) == (1, "ok", "5")
    assert output.outputs == [{"output_type": "stream", "name": "stdout", "text": "5\n"}]
    assert "".join(c.text for c in first if isinstance(c, TextChunk)) == "It is 5."
    assert first[-2] == MessageChunk("It is 5.")
    assert first[-1].prompt_tokens > 0 and first[-1].completion_tokens > 0

    # the edited code ran, and x survived from the first turn
    assert ApprovalChunk(1, "edited", "print(x * 100)") in second
    [out] = [c for c in second if isinstance(c, OutputChunk)]
    assert (out.status, out.text) == ("ok", "500")
    assert tool_results(llm_server.requests[3]) == [  # it saw the edit's output
        "5\n\nWhat the code changed:\n- x: int 5 (new)", "500"]
    assert user_texts(llm_server.requests[3])[:2] == ["compute 2+3", "multiply it by ten"]

    records = read_log(log_path)
    assert records[0]["event"] == "session_start" and records[0]["kernel"] == "api"
    decisions = [r for r in records if r["event"] == "decision"]
    assert [(d["action"], d["code"]) for d in decisions] == [
        ("approved", "x = 2 + 3\nprint(x)"),
        ("edited", "print(x * 100)"),
    ]
    assert KEY not in log_path.read_text()
    assert records[-1]["event"] == "session_end"


def test_skip_and_no_approver(llm_server, tmp_path):
    llm_server.enqueue(S.tool_call("print('never')"), S.text("Skipped, fine."))
    with make(llm_server, tmp_path, approve=lambda request: False) as it:
        chunks = list(it.chat("print something"))
    assert ApprovalChunk(1, "skipped", "") in chunks
    assert not [c for c in chunks if isinstance(c, OutputChunk)]
    assert "declined" in tool_results(llm_server.requests[1])[0]

    llm_server.reset()
    llm_server.enqueue(S.tool_call("print('never')"))
    seen = []
    with make(llm_server, tmp_path) as it:  # neither approve nor auto_run
        with pytest.raises(ApprovalUnavailableError):
            for chunk in it.chat("print something"):
                seen.append(chunk)
        assert it.turns[-1].end_reason == "approval_unavailable"
    assert kinds(seen) == ["CodeChunk", "UsageChunk"]  # nothing ran


def test_messages_fork_independently(llm_server, tmp_path):
    llm_server.set_fallback(lambda body: S.text(f"re: {S.last_user_text(body)}"))
    with (
        make(llm_server, tmp_path, auto_run=True) as one,
        make(llm_server, tmp_path, auto_run=True) as two,
    ):
        list(one.chat("remember the number 7"))
        two.messages = copy.deepcopy(one.messages)
        list(one.chat("branch A"))
        list(two.chat("branch B"))
        list(two.chat("branch B again"))

        bodies = llm_server.requests
        assert [user_texts(b) for b in bodies] == [
            ["remember the number 7"],
            ["remember the number 7", "branch A"],
            ["remember the number 7", "branch B"],
            ["remember the number 7", "branch B", "branch B again"],
        ]
        assert bodies[3]["messages"][1:4] == [  # two's history includes its own replies
            {"role": "user", "content": "remember the number 7"},
            {"role": "assistant", "content": "re: remember the number 7"},
            {"role": "user", "content": "branch B"},
        ]
        assert len(one.messages) == 4 and len(two.messages) == 6
        with pytest.raises(OIError, match="role"):
            one.messages = [{"content": "no role"}]


def _children() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True)}


def test_close_leaves_no_child_process(llm_server, tmp_path):
    before = _children()
    llm_server.enqueue(S.tool_call("import os\nprint(os.getpid())"), S.text("ok"))
    it = make(llm_server, tmp_path, auto_run=True)
    [out] = [c for c in it.chat("what is your pid") if isinstance(c, OutputChunk)]
    started = [psutil.Process(pid) for pid in _children() - before]
    assert int(out.text) in {p.pid for p in started}  # the code ran in our child kernel
    it.close()
    _gone, alive = psutil.wait_procs(started, timeout=10)
    assert not alive
    assert not _children() - before
    assert not [t for t in threading.enumerate() if t.name == "oi-interpreter"]
    assert it.closed
    it.close()  # idempotent
    with pytest.raises(OIError, match="closed"):
        list(it.chat("again"))


def wait_for_file(path: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} did not appear in {timeout} s")
        time.sleep(0.05)


def test_leaving_the_loop_interrupts_the_step(llm_server, tmp_path):
    llm_server.enqueue(
        S.tool_call("kept = 41\nopen('started', 'w').close()\nimport time\ntime.sleep(60)"),
        S.tool_call("print('after')"),
        S.text("ok"),
    )
    with make(llm_server, tmp_path, auto_run=True) as it:
        for chunk in it.chat("sleep a minute"):
            if isinstance(chunk, ApprovalChunk):
                wait_for_file(tmp_path / "started")  # the step is running in the child
                started = time.monotonic()
                break  # closes the generator: the turn is cancelled, the child interrupted
        assert time.monotonic() - started < 15  # hang detection (cleanup waits up to 20 s)
        assert it.turns[-1].end_reason == "interrupted"
        assert it.turns[-1].steps[0].status == "interrupted"
        assert len(llm_server.requests) == 1  # the turn did not go on
        # interrupted, not restarted: the child kernel still has its variables
        out = it.run_code("print(kept + 1)")
        assert (out.status, out.text) == ("ok", "42")


def test_run_code_runs_directly_with_a_time_limit(llm_server, tmp_path):
    with make(llm_server, tmp_path, timeout=1) as it:
        first = it.run_code("n = 6\nprint(n * 7)")
        assert (first.status, first.text) == ("ok", "42")
        slow = it.run_code("import time\ntime.sleep(60)")
        assert slow.status == "interrupted" and "Interrupted after 1 s" in slow.text
        assert it.run_code("echo shell $((6 * 7))", language="shell").text == "shell 42"
        assert it.run_code("print(n)").text == "6"  # interrupted, not restarted
        log = it.log_path
    assert not llm_server.requests
    directs = [r for r in read_log(log) if r["event"] == "direct"]
    assert [(d["kind"], d["status"]) for d in directs] == [
        ("python", "ok"),
        ("python", "interrupted"),
        ("shell", "ok"),
        ("python", "ok"),
    ]
    assert directs[2]["code"] == "%%bash\necho shell $((6 * 7))"


def test_achat_streams_the_same_chunks(llm_server, tmp_path):
    llm_server.enqueue(S.tool_call("y = 6 * 7\ny"), S.text("42"))

    async def run(it: Interpreter) -> list:
        return [chunk async for chunk in it.achat("six times seven")]

    with make(llm_server, tmp_path, auto_run=True) as it:
        chunks = asyncio.run(run(it))
    assert kinds(chunks) == [
        "CodeChunk",
        "ApprovalChunk",
        "OutputChunk",
        "TextChunk",
        "ClaimsChunk",  # the answer's number, traced to the step that printed it
        "MessageChunk",
        "UsageChunk",
    ]
    out = chunks[2]
    assert out.outputs[0]["output_type"] == "execute_result"
    assert out.text == "42"


def test_achat_left_early_then_again(llm_server, tmp_path):
    llm_server.enqueue(
        S.tool_call("open('started', 'w').close()\nimport time\ntime.sleep(60)"),
        S.tool_call("print('later')"),
        S.text("ok"),
    )

    async def run(it: Interpreter) -> list:
        async for chunk in it.achat("sleep"):
            if isinstance(chunk, ApprovalChunk):
                wait_for_file(tmp_path / "started")
                break  # the abandoned generator is closed by asyncio; the turn stops
        return [chunk async for chunk in it.achat("print later")]  # waits for the stop

    with make(llm_server, tmp_path, auto_run=True) as it:
        chunks = asyncio.run(run(it))
        assert [t.end_reason for t in it.turns] == ["interrupted", "done"]
    assert [c.text for c in chunks if isinstance(c, OutputChunk)] == ["later"]


def test_import_is_cheap():
    code = (
        "import sys; from oi_kernel import Interpreter; "
        "print(sorted(m for m in ('litellm', 'jupyter_client', 'zmq', 'IPython') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_kernel_starts_without_the_log_reader():
    """The kernel's modules leave the session log's typed records (built from every event
    class at import, ~30 ms) to the commands that read a log (``%log``, ``%history``)."""
    code = ("import sys, oi_kernel.kernel.app, oi_kernel.kernel.kernel; "
            "print('oi_kernel.record.records' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ----------------------------------------------------------------------------- mapping

_BLOCK = CodeBlock("python", "print(1)", "call_1")


def _record(status: str = "ok", decision: Decision | None = None) -> StepRecord:
    return StepRecord(
        2,
        _BLOCK,
        decision,
        status,  # type: ignore[arg-type]
        [{"output_type": "stream", "name": "stdout", "text": "1\n"}],
    )


def _turn(final: str, calls: int) -> Turn:
    return Turn(1, "x", final_text=final, usage=Usage(10, 3, 0.5), llm_calls=calls)


@pytest.mark.parametrize(
    ("event", "chunks"),
    [
        (E.TextDelta("hi"), [TextChunk("hi")]),
        (E.ReplyDone(1, None, []), []),  # type: ignore[arg-type]
        (
            E.CodeProposed(ApprovalRequest(1, 2, _BLOCK, ["flag"]), False),
            [CodeChunk(2, "python", "print(1)", ["flag"], False)],
        ),
        (E.Decided(_record(decision=Decision("skip"))), [ApprovalChunk(2, "skipped", "")]),
        (
            E.Decided(_record(decision=Decision("run", "print(2)", edited=True))),
            [ApprovalChunk(2, "edited", "print(2)")],
        ),
        (
            E.StepDone(_record("error")),
            [OutputChunk(2, "error", list(_record().outputs), "1")],
        ),
        (E.Notice("careful", "warning"), [NoticeChunk("careful", "warning")]),
        (E.TurnDone(_turn("All done.", 2)), [MessageChunk("All done."), UsageChunk(10, 3, 0.5)]),
        (E.TurnDone(_turn("", 0)), []),
    ],
)
def test_event_to_chunks(event, chunks):
    assert to_chunks(event) == chunks


SCRIPT = """
from oi_kernel import Interpreter
with Interpreter({args}auto_run=True, log=False) as it:
    for chunk in it.chat("how many primes are there below 10,000?"):
        print(chunk)
"""


@pytest.mark.parametrize(("args", "error"), [
    ("", "NotConfiguredError: No language model is configured for this Interpreter."),
    ('model="gpt-4o-mini", ', "LLMAuthError: No API key was found for model 'gpt-4o-mini'"),
])
def test_a_script_without_a_model_or_key_gets_one_clear_error(args, error, tmp_path):
    """The first call of a script with nothing configured: one error, raised at its chat()
    call, saying how to point the Interpreter at a model (never the notebook's advice)."""
    (tmp_path / "script.py").write_text(SCRIPT.format(args=args))
    keep = ("PATH", "PYTHONPATH", "LANG")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update(HOME=str(tmp_path), OI_DISABLE_LOCAL_MODEL="1", LITELLM_LOCAL_MODEL_COST_MAP="True",
               JUPYTER_DATA_DIR=str(tmp_path / "data"))
    done = subprocess.run([sys.executable, "script.py"], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=120)
    assert done.returncode == 1
    err = done.stderr
    assert error in err, err
    assert err.count("Traceback") == 1 and "direct cause" not in err  # one error
    assert 'script.py", line 4' in err  # where the script called chat()
    assert "oi_kernel/core" not in err and "litellm" not in err.split(error)[0]
    assert "Interpreter(api_key=" in err or 'Interpreter(model="gpt-4o-mini", api_key=' in err
    assert "before starting Jupyter" not in err and "%model" not in err
