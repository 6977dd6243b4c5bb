"""The event classes are the session log's format (``oi_kernel.core.events``).

- the table of records in docs/session-log.md is the one generated from the classes;
- each class writes one record kind, and its documentation names the fields readers read;
- a log with a line that cannot be read and a record of a newer format still exports and
  replays: both are reported (a warning), neither is fatal.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import nbformat
import pytest

from oi_kernel.core import events as E
from oi_kernel.core.recorded import record_kinds, recorded_classes
from oi_kernel.record import records as R
from oi_kernel.record.export import export_notebook
from oi_kernel.record.log_writer import record_of

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden" / "session_v1.jsonl"
sys.path.insert(0, str(ROOT / "docs" / "_ext"))

import event_table  # noqa: E402

ENVELOPE = {"version", "seq", "time", "session", "extra", "defects", "event"}


@pytest.mark.unit
def test_the_committed_table_of_records_is_the_generated_one() -> None:
    page = event_table.PAGE.read_text()
    assert event_table.updated(page) == page, (
        "docs/session-log.md is stale: run python docs/_ext/event_table.py")


@pytest.mark.unit
def test_the_check_fails_on_a_stale_table(tmp_path: Path, monkeypatch) -> None:
    stale = tmp_path / "session-log.md"
    stale.write_text(event_table.PAGE.read_text().replace("| `SessionEnded` |", "| `Old` |"))
    monkeypatch.setattr(event_table, "PAGE", stale)
    assert event_table.main(["--check"]) == 1
    assert event_table.main([]) == 0 and event_table.main(["--check"]) == 0


@pytest.mark.unit
@pytest.mark.parametrize("cls", recorded_classes(), ids=lambda c: c.__name__)
def test_each_recorded_event_documents_the_fields_readers_read(cls: type[E.Recorded]) -> None:
    assert cls.doc, f"{cls.__name__}: say what its record holds in ``doc``"
    for kind in (cls.record_kind, *cls.also_kinds):
        reader = R.kinds().get(kind, R.EventRecord)  # EventRecord: read without a type
        fields = {f for f in reader.__dataclass_fields__ if f not in ENVELOPE}
        if kind in ("draft_samples_skipped", "draft_samples_error"):
            continue  # documented with draft_samples
        missing = [f for f in sorted(fields)
                   if f"`{f}`" not in cls.doc and f"`{f}`" not in event_table.PAGE.read_text()]
        assert not missing, (kind, missing)


@pytest.mark.unit
def test_every_kind_in_the_golden_log_is_written_by_one_event_class() -> None:
    golden = {json.loads(line)["event"] for line in GOLDEN.read_text().splitlines()}
    assert golden <= set(record_kinds())
    assert record_kinds()["code_proposed"] is E.StepReviewed
    assert record_kinds()["session_end"] is E.SessionEnded


@pytest.mark.unit
def test_an_event_writes_its_own_record() -> None:
    assert record_of(E.SessionEnded()) == ("session_end", {})
    assert record_of(E.ConversationSaved("/tmp/c.json", 2)) == (
        "conversation_saved", {"path": "/tmp/c.json", "turns": 2})
    assert record_of(E.DraftsSampled(1, 2, {"error": "x"}, "error")) == (
        "draft_samples_error", {"turn": 1, "step": 2, "error": "x"})
    assert record_of(E.Notice("shown, not recorded")) is None
    assert record_of(E.ToolNotice("srv did not start")) == (
        "tool_notice", {"text": "srv did not start"})


@pytest.mark.unit
def test_a_kind_an_event_writes_reads_without_a_reader_type() -> None:
    record = R.parse_record({"v": 1, "event": "conversation_saved", "path": "p", "turns": 1})
    assert not isinstance(record, R.UnknownRecord) and not record.defects
    assert record.to_dict()["path"] == "p"


def _damaged(tmp_path: Path) -> Path:
    """The golden log with a line that is not JSON and a record of a newer format."""
    lines = GOLDEN.read_text().splitlines()
    newer = {"v": 3, "seq": 99, "t": "2026-11-27T03:00:09.000Z", "session": "golden-0",
             "event": "plan_update", "plan": ["a", "b"]}
    lines[3:3] = ["{this is not json", json.dumps(newer)]
    path = tmp_path / "damaged.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.unit
def test_an_unreadable_and_a_newer_record_are_reported_when_exporting(tmp_path: Path) -> None:
    with pytest.warns(UserWarning) as caught:
        out = export_notebook(_damaged(tmp_path), tmp_path / "out.ipynb")
    said = " ".join(str(w.message) for w in caught)
    assert "line 4" in said and "newer" in said, said
    nb = nbformat.read(out, as_version=4)
    assert sum(c.cell_type == "code" for c in nb.cells) >= 6


@pytest.mark.kernel
def test_an_unreadable_and_a_newer_record_do_not_stop_a_replay(tmp_path: Path) -> None:
    from oi_kernel.api.replay import replay_log

    with pytest.warns(UserWarning):
        report = replay_log(_damaged(tmp_path))
    assert report.ok, report.format()
    assert [c.status for c in report.checks].count("same") == 7, report.format()
