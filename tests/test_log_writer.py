"""The session log written today is record for record the golden log.

tests/golden/session_v1.jsonl was written by an earlier version (tests/golden/record.py) and
is never re-recorded. Recording the same session again with the current code must give the
same records: the same event names in the same order, the same fields and the same values.
This is the guard for changing how the log is written (from the engine's typed events).

Only these may differ, because they vary from machine to machine or run to run:
- ``oi_version`` and ``python`` of ``session_start`` (the package and interpreter versions);
- the ids of tool calls (``call_`` + 24 hex digits, drawn at random by the scripted server):
  they are renamed by order of first appearance, so the same call keeps the same name.
Times, session ids, durations, the working directory and the server's address are already
fixed by the recorder's own ``normalise``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from oi_kernel.core import events as E
from oi_kernel.core.types import CodeBlock, Reply, StepRecord, code_hash
from oi_kernel.record.log_writer import LogWriter
from oi_kernel.safety.risk import Flag
from tests.golden import record as golden

GOLDEN = Path(__file__).parent / "golden" / "session_v1.jsonl"
VARY = ("oi_version", "python")  # session_start fields that name the machine's versions
CALL_ID = re.compile(r"call_[0-9a-f]{24}")


def comparable(path: Path) -> list[dict]:
    """The records of a recorded log with the fields that may vary made equal (and without
    ``answer_check`` records, which the golden log predates: ``answer_checks`` reads them)."""
    ids: dict[str, str] = {}
    text = CALL_ID.sub(lambda m: ids.setdefault(m.group(0), f"call_{len(ids)}"), path.read_text())
    records = [r for r in (json.loads(line) for line in text.splitlines() if line.strip())
               if r.get("event") != "answer_check"]
    for i, record in enumerate(records):  # (positions again, without those records)
        record["seq"], record["t"] = i + 1, f"2026-11-27T03:00:{i:02d}.000Z"
        if record.get("event") == "session_start":
            for field in VARY:
                record.pop(field, None)
        if record.get("event") == "checkpoint":  # (since the golden log: plain data is
            copied = record.pop("copy", False)    # copied instead of forked, and says so)
            record["fork"] = record.get("fork", False) or copied
    return records


@pytest.mark.kernel
def test_a_fresh_session_log_is_the_golden_log(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh.jsonl"
    golden.record(fresh)
    want, got = comparable(GOLDEN), comparable(fresh)
    assert [r["event"] for r in got] == [r["event"] for r in want]
    for i, (w, g) in enumerate(zip(want, got, strict=True)):
        assert sorted(g) == sorted(w), f"record {i + 1} ({w['event']}): fields differ"
        assert g == w, f"record {i + 1} ({w['event']}): values differ"
    # (since the golden log: each answer's numbers are traced to the step that printed them)
    checks = [json.loads(line) for line in fresh.read_text().splitlines()
              if '"answer_check"' in line]
    assert [(c["turn"], [(x["text"], x["found"]["step"]) for x in c["claims"]])
            for c in checks] == [(1, [("12", 1), ("5", 3)]), (2, [("10", 1)])]


@pytest.mark.unit
def test_the_comparison_can_fail(tmp_path: Path) -> None:
    """A changed field, a missing field or a renamed event is noticed."""
    lines = GOLDEN.read_text().splitlines()
    base = comparable(GOLDEN)
    changed = [json.loads(line) for line in lines]
    changed[1]["instruction"] = "something else"
    del changed[2]["model"]
    changed[3]["event"] = "llm_reply"
    path = tmp_path / "changed.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in changed))
    got = comparable(path)
    assert got[1] != base[1] and sorted(got[2]) != sorted(base[2])
    assert got[3]["event"] != base[3]["event"]


# ----------------------------------------------------------------------------- the writer
def _record_only_events() -> list[Any]:
    """One of each event that only the session log shows."""
    block = CodeBlock("python", "x = 1")
    return [
        E.TurnStarted(1, "go", {"replayed_from": "a.json"}),
        E.LLMRequested(1, 1, "m", True, False, [{"role": "user", "content": "go"}]),
        E.LLMFailed(1, 1, "boom", "par"),
        E.ToolsUnsupported(1, 1, "no tools"),
        E.SampleDrawn(1, 1, Reply("t", latency_s=0.123456), {"seed": 1}),
        E.DraftSetAside(1, 1, "x = (", ["unclosed"]),
        E.DraftsSampled(1, 1, {"drawn": 3}),
        E.StepReviewed(1, 1, block, [Flag(1, "delete-files", "high", "rm")]),
        E.CheckpointKept(1, {"id": 1, "files": 0}),
        E.RolledBack(1, {"restored": []}),
        E.ConversationReset(),
        E.ConversationUndone(1, 2),
        E.ConversationSaved("a.json", 1),
        E.ConversationLoaded("a.json", 1, 2),
        E.ProfileApplied(None, None, "default", {}),
        E.ToolsOffered(["f"]),
        E.ChildRestarted("died", {"by": "user"}),
        E.DirectRun("python", "x", "ok", [], 0.5),
    ]


class _Log:
    def __init__(self) -> None:
        self.records: list[tuple[str, dict[str, Any]]] = []

    def write(self, event: str, **fields: Any) -> None:
        self.records.append((event, fields))


@pytest.mark.unit
def test_each_record_only_event_is_one_record() -> None:
    log = _Log()
    writer = LogWriter(log)
    for event in _record_only_events():
        writer(event)
    assert [name for name, _ in log.records] == [
        "turn_start", "llm_request", "llm_error", "tools_unsupported", "llm_sample",
        "draft_set_aside", "draft_samples", "code_proposed", "checkpoint", "rollback",
        "conversation_reset", "conversation_undo", "conversation_saved", "conversation_loaded",
        "profile", "tools_offered", "child_restart", "direct",
    ]
    fields = dict(log.records)
    assert fields["turn_start"] == {"turn": 1, "instruction": "go", "replayed_from": "a.json"}
    assert fields["llm_sample"]["latency_s"] == 0.1235
    assert fields["child_restart"] == {"reason": "died", "by": "user"}
    assert fields["code_proposed"]["flags"][0]["category"] == "delete-files"
    assert fields["code_proposed"]["sha256"] == code_hash("x = 1")
    assert fields["direct"]["duration_s"] == 0.5


@pytest.mark.unit
def test_shown_events_are_logged_only_where_they_have_a_record() -> None:
    """A notice is not logged, a tool's notice is; a front door's own StepDone (no block
    that ran) and a Decided without a decision write nothing."""
    log = _Log()
    writer = LogWriter(log)
    record = StepRecord(1, CodeBlock("python", "x = 1"))
    for event in (E.TextDelta("hi"), E.ReasoningDelta("hm"), E.Notice("n"),
                  E.StepDone(record), E.Decided(record)):
        writer(event)
    assert log.records == []
    writer(E.ToolNotice("server x did not start", "warning"))
    assert log.records == [("tool_notice", {"text": "server x did not start"})]


@pytest.mark.unit
def test_requests_are_logged_as_what_is_new_since_the_last() -> None:
    log = _Log()
    writer = LogWriter(log)
    first = [{"role": "system", "content": "s"}, {"role": "user", "content": "a"}]
    second = [*first, {"role": "assistant", "content": "b"}]
    condensed = [{"role": "system", "content": "s"}, {"role": "user", "content": "z"}]
    for messages in (first, second, condensed):
        writer(E.LLMRequested(1, 1, "m", False, False, messages))
    sent = [(f["messages_before"], list(f["messages"])) for _, f in log.records]
    assert sent == [(0, first), (2, second[2:]), (0, condensed)]


@pytest.mark.unit
def test_front_doors_pass_over_record_only_events() -> None:
    """The cell view, the API's chunks and the ACP updates show nothing for an event only
    the log records, and none of them raises on one."""
    from oi_kernel.acp.updates import TurnUpdates
    from oi_kernel.api.chunks import NoticeChunk, to_chunks
    from oi_kernel.session.view import TurnView

    sent: list[Any] = []
    view = TurnView(lambda kind, content: sent.append((kind, content)), coalesce_s=0)
    updates = TurnUpdates()
    for event in _record_only_events():
        view(event)
        assert to_chunks(event) == [], event
        assert updates.updates(event) == [], event
    assert sent == []
    # a tool's notice is a notice to every front door
    assert to_chunks(E.ToolNotice("t", "warning")) == [NoticeChunk("t", "warning")]
    assert len(updates.updates(E.ToolNotice("t", "warning"))) == 1
