"""Replay's reading of a log (``record.replay.parse_session``) folds the log's events with
the engine's fold (``core.turn_fold``, through ``record.log_writer.EventReader``): what it
gives is compared, field by field, with what the former parser (its own grouping of records
into turns) gave for the same logs, kept in tests/golden/replay_sessions.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from oi_kernel.record.replay import RecordedSession, RecordedTurn, parse_session
from oi_kernel.record.session_log import read_log, read_records

pytestmark = pytest.mark.unit

HERE = Path(__file__).parent / "golden"
GOLDEN = HERE / "session_v1.jsonl"
SNAPSHOT = HERE / "replay_sessions.json"


def busy_log() -> list[dict[str, Any]]:
    """The golden log and what it lacks: a guard's second decision and execution, a failed
    and a sampled reply, small-model mode, an older request without ``small``, a reset, an
    asked-for and an automatic restart, a record of a turn that never started."""
    lines = read_log(GOLDEN)
    end = lines.pop()  # session_end
    seq = len(lines)

    def add(event: str, **fields: Any) -> None:
        nonlocal seq
        seq += 1
        lines.append({"v": 1, "seq": seq, "t": "2026-11-27T04:00:00.000Z",
                      "session": "golden-0", "event": event, **fields})

    add("conversation_reset")
    add("child_restart", reason="the previous child kernel died")
    add("child_restart", reason="%reset --restart")
    add("turn_start", turn=3, instruction="count to three")
    add("llm_request", turn=3, step=1, model="m", messages_before=0, messages=[], tools=False,
        small=True)
    add("llm_sample", turn=3, step=1, text="x", sampling={"seed": 1}, latency_s=0.1)
    add("llm_response", turn=3, step=1, text="", tool_calls=[], latency_s=0.1)
    step = {"turn": 3, "step": 1, "language": "python", "code": "print(1)", "sha256": ""}
    add("code_proposed", **step, flags=[])
    add("decision", **step, action="auto", reason="", by="auto")
    add("execution", **step, status="error", outputs=[], duration_s=0.1, feedback="stopped")
    add("guard_stop", turn=3, step=1, stops=[{"event": "socket.connect", "what": "net"}])
    add("decision", **step, action="approved", reason="", by="ann")
    add("execution", **step, status="ok", outputs=[{"output_type": "stream", "name": "stdout",
                                                     "text": "1\n"}], duration_s=0.2)
    add("llm_request", turn=3, step=2, model="m", messages_before=0, messages=[])
    add("llm_error", turn=3, step=2, error="boom", partial_text="pa")
    add("execution", turn=9, step=1, code="lost", status="ok", outputs=[])
    add("turn_end", turn=3, reason="llm_error", steps=1)
    lines.append({**end, "seq": seq + 1})
    return lines


def summary(session: RecordedSession) -> dict[str, Any]:
    """Everything replay, rebuild and the approver read of a parsed session, as JSON."""
    def turn(t: RecordedTurn) -> dict[str, Any]:
        by_step = {name: {str(k): v.to_dict() for k, v in sorted(getattr(t, name).items())}
                   for name in ("proposals", "decisions", "executions")}
        return {"index": t.index, "instruction": t.instruction, "replies": t.replies,
                "samples": t.samples, "tools": t.tools, "small": t.small,
                "end_reason": t.end_reason, **by_step}

    return {"start": session.start,
            "timeline": [turn(a) if isinstance(a, RecordedTurn) else a.to_dict()
                         for a in session.timeline]}


def logs() -> dict[str, list[dict[str, Any]]]:
    return {"golden": read_log(GOLDEN), "busy": busy_log()}


def test_parse_session_gives_what_the_former_parser_gave() -> None:
    expected = json.loads(SNAPSHOT.read_text())
    for name, lines in logs().items():
        assert summary(parse_session(lines)) == expected[name], name


def test_typed_records_and_lines_parse_alike() -> None:
    assert summary(parse_session(read_records(GOLDEN))) == summary(parse_session(read_log(GOLDEN)))


def test_a_turn_is_the_fold_of_its_events() -> None:
    """The turn replay holds is the one the engine's fold builds from the log's events."""
    first, second = parse_session(busy_log()).turns[:2]
    assert [s.index for s in first.turn.steps] == [1, 2, 3]
    assert [s.status for s in first.turn.steps] == ["ok", "error", "ok"]
    assert first.turn.end_reason == first.end_reason == "done"
    assert second.turn.steps[0].decision.edited


def test_a_turn_start_missing_its_number_still_opens_a_turn() -> None:
    """Fields missing or of the wrong type read as their defaults, as the former parser
    read them, and the events are folded all the same."""
    lines = [{"event": "turn_start", "instruction": "hi"},
             {"event": "llm_response", "text": "Hello.", "turn": "one", "step": 1}]
    (turn,) = parse_session(lines).turns
    assert (turn.index, turn.instruction) == (1, "hi")
    assert [r["text"] for r in turn.replies] == ["Hello."]
    assert turn.turn is not None and turn.turn.llm_calls == 1


if __name__ == "__main__":  # record the snapshot (only with the former parser)
    SNAPSHOT.write_text(json.dumps({n: summary(parse_session(ls)) for n, ls in logs().items()},
                                   indent=1, sort_keys=True) + "\n")
