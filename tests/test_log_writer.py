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

import pytest

from tests.golden import record as golden

GOLDEN = Path(__file__).parent / "golden" / "session_v1.jsonl"
VARY = ("oi_version", "python")  # session_start fields that name the machine's versions
CALL_ID = re.compile(r"call_[0-9a-f]{24}")


def comparable(path: Path) -> list[dict]:
    """The records of a recorded log with the fields that may vary made equal."""
    ids: dict[str, str] = {}
    text = CALL_ID.sub(lambda m: ids.setdefault(m.group(0), f"call_{len(ids)}"), path.read_text())
    records = [json.loads(line) for line in text.splitlines() if line.strip()]
    for record in records:
        if record.get("event") == "session_start":
            for field in VARY:
                record.pop(field, None)
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
