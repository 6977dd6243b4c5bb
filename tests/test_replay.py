"""``oi-kernel replay``: record a session against the scripted server, stop the server,
replay the log in a fresh child kernel with the recorded replies and decisions."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from oi_kernel import Interpreter
from oi_kernel.api.replay import replay_log
from oi_kernel.cli import app as cli
from oi_kernel.llm.recorded import RecordedLLM, ReplayDivergedError
from oi_kernel.record.replay import RecordedTurn, parse_session
from oi_kernel.record.session_log import read_log
from tests import llm_server as S
from tests.kernel_client import KernelSession

KEY = "sk-test-not-a-real-key-123456"
SUM_CODE = "data = [int(x) for x in open('input.txt')]\nprint(sum(data))"


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, str]:
    """A two-turn API session (approve, edit, shell, skip, a direct cell) and a dead api_base."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "input.txt").write_text("3\n4\n5\n")
    answers = iter([True, "print(max(data) * 2)", True, False])
    with S.ScriptedLLMServer() as server:
        server.enqueue(
            S.tool_call(SUM_CODE),
            S.text("The sum is 12."),
            S.tool_calls(
                [
                    ("print(max(data))", "python"),
                    ("echo $((6 * 7))", "shell"),
                    ("import os\nos.remove('input.txt')", "python"),
                ]
            ),
            S.text("Done."),
        )
        with Interpreter(
            "openai/scripted",
            api_base=server.url,
            api_key=KEY,
            approve=lambda request: next(answers),
            log_dir=tmp_path / "logs",
            cwd=work,
        ) as it:
            list(it.chat("add up the numbers in input.txt"))
            list(it.chat("double the largest, and clean up"))
            assert it.run_code("print(len(data))").text == "3"
            log = it.log_path
        assert len(server.requests) == 4
        url = server.url
    return log, url  # the server is stopped: any LLM call would fail to connect


def rows(table: str) -> list[tuple[str, str, str]]:
    """(turn, step, status) of each row of a report table."""
    lines = table.strip().splitlines()[1:-1]
    return [tuple(line.split()[:3]) for line in lines]  # type: ignore[misc]


def rewrite(log: Path, change) -> None:
    """Apply ``change(record)`` to every record of a log, in place."""
    records = [change(r) or r for r in read_log(log)]
    log.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_replay_reproduces_without_the_llm(recorded):
    log, dead_url = recorded
    env = {**os.environ, "OI_MODEL": "openai/scripted", "OI_API_BASE": dead_url, "OI_API_KEY": KEY}
    out = subprocess.run(
        [sys.executable, "-m", "oi_kernel.cli", "replay", str(log)],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert rows(out.stdout) == [
        ("1", "1", "same"),
        ("2", "1", "same"),  # the recorded edit ran again
        ("2", "2", "same"),  # shell
        ("2", "3", "skipped"),  # skipped stays skipped
        ("-", "direct", "same"),
    ]
    assert out.stdout.strip().splitlines()[-1].startswith("OK: 4 of 4 checks")
    assert (log.parent.parent / "work" / "input.txt").exists()  # ran in a copy


def test_tampered_reply_is_reported(recorded, capsys):
    log, _ = recorded

    def tamper(r: dict) -> None:
        if r["event"] == "llm_response" and (r["turn"], r["step"]) == (1, 1):
            args = json.loads(r["tool_calls"][0]["arguments"])
            args["code"] = args["code"].replace("sum(data)", "sum(data) + 1")
            r["tool_calls"][0]["arguments"] = json.dumps(args)

    rewrite(log, tamper)
    report = replay_log(log)
    assert not report.ok
    first = report.checks[0]
    assert (first.turn, first.step, first.status) == (1, 1, "different")
    assert "proposed other code" in first.detail and "code differs" in first.detail
    assert "recorded '12', now '13'" in first.detail
    assert all(c.status in ("same", "skipped") for c in report.checks[1:])  # the rest still holds
    # the answer "The sum is 12." no longer traces: the replayed step printed 13
    assert [(a.turn, a.status, a.detail) for a in report.answers] == [
        (1, "different", "the answer's 12 no longer appear(s) in any output"), (2, "same", "")]

    assert cli.main(["replay", str(log)]) == 1
    printed = capsys.readouterr().out
    assert ("1", "1", "different") in rows(printed)
    assert "answer of instruction 1: different: the answer's 12 no longer appear(s)" in printed
    assert printed.strip().splitlines()[-1].startswith("FAILED")


def test_asking_for_more_replies_than_recorded_diverges(recorded):
    log, _ = recorded

    def tamper(r: dict) -> None:  # the final answer of turn 1 becomes a step in a missing language
        if r["event"] == "llm_response" and (r["turn"], r["step"]) == (1, 2):
            arguments = json.dumps({"language": "cobol", "code": "DISPLAY 1."})
            r["tool_calls"] = [{"id": "call_x", "name": "execute", "arguments": arguments}]
            r["text"] = ""

    rewrite(log, tamper)
    report = replay_log(log)
    diverged = [c for c in report.checks if c.status == "diverged"]
    assert len(diverged) == 1 and diverged[0].turn == 1
    assert diverged[0].detail.startswith("The replay diverged at turn 1 step 3")
    assert [c.status for c in report.checks if c.turn == 2] == ["same", "same", "skipped"]
    assert not report.ok


def test_a_turn_cut_by_the_step_cap_replays_the_same(tmp_path):
    with S.ScriptedLLMServer() as server:
        server.set_fallback(S.tool_call("print('again')"))
        with Interpreter(
            "openai/scripted",
            api_base=server.url,
            api_key=KEY,
            auto_run=True,
            max_steps=2,
            log_dir=tmp_path / "logs",
            cwd=tmp_path,
        ) as it:
            list(it.chat("loop"))
            assert it.turns[-1].end_reason == "max_steps"
            log = it.log_path
    report = replay_log(log)
    assert [(c.turn, c.step, c.status) for c in report.checks] == [(1, 1, "same"), (1, 2, "same")]
    assert report.ok, report.format()


def test_recorded_llm_refuses_unrecorded_replies():
    turn = RecordedTurn(4, "hi", replies=[{"event": "llm_response", "text": "Hello."}])
    llm = RecordedLLM(model="openai/scripted")
    llm.begin_turn(turn)
    deltas: list[str] = []
    reply = asyncio.run(llm.stream([], None, on_text=deltas.append))
    assert (reply.text, deltas) == ("Hello.", ["Hello."])
    with pytest.raises(ReplayDivergedError, match="diverged at turn 4 step 2"):
        asyncio.run(llm.stream([], None))


def test_replay_of_a_kernel_session(tmp_path):
    with S.ScriptedLLMServer() as server:
        env = {
            "OI_MODEL": "openai/scripted",
            "OI_API_BASE": server.url,
            "OI_API_KEY": KEY,
            "OI_LOG_DIR": str(tmp_path / "logs"),
            "OI_AUTO_RUN": "1",
        }
        server.enqueue(S.tool_call("import math\nmath.factorial(5)"), S.text("120."))
        with KernelSession(env=env, cwd=str(tmp_path)) as ks:
            assert ks.execute("what is 5 factorial").status == "ok"
            assert (
                ks.execute("%%python\nprint('direct', math.factorial(4))").stdout == "direct 24\n"
            )
    [log] = (tmp_path / "logs").glob("*.jsonl")
    session = parse_session(read_log(log))
    assert session.start["kernel"] == "open-interpreter"

    report = replay_log(log)
    assert [(c.turn, c.step, c.status) for c in report.checks] == [
        (1, 1, "same"),
        (None, "direct", "same"),
    ], report.format()
