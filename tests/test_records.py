"""The session log's typed records (``record.records``): every kind the engine writes reads
into its own type, versions 1 and 2 alike; unknown kinds, fields a newer writer added,
missing fields and fields of the wrong type are read without an exception."""

from __future__ import annotations

import dataclasses
import json
import re
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from oi_kernel.core.recorded import record_kinds, recorded_classes
from oi_kernel.record import records as R
from oi_kernel.record.export import build_notebook
from oi_kernel.record.listing import tail_text
from oi_kernel.record.replay import parse_session
from oi_kernel.record.session_log import read_log, read_records, read_records_report

pytestmark = pytest.mark.unit

PACKAGE = Path(R.__file__).resolve().parents[1]
GOLDEN = Path(__file__).parent / "golden" / "session_v1.jsonl"
SAMPLES = {  # a value of each field type as a log line holds it, and as the record holds it
    "str": ("some text", "some text"),
    "int": (3, 3),
    "float": (2, 2.0),
    "bool": (True, True),
    "dict": ({"prompt_tokens": 1}, {"prompt_tokens": 1}),
    "tuple[Any, ...]": ([{"a": 1}, "b"], ({"a": 1}, "b")),
}
WRONG = {"str": 7, "int": "7", "float": "fast", "bool": "yes", "dict": [1],
         "tuple[Any, ...]": {"a": 1}}


def own_fields(cls: type[R.Record]) -> list[dataclasses.Field]:
    envelope = {"version", "seq", "time", "session", "extra", "defects"}
    return [f for f in dataclasses.fields(cls) if f.name not in envelope]


def base_type(f: dataclasses.Field) -> str:
    return str(f.type).removesuffix(" | None")


def full_line(event: str, version: int) -> dict[str, Any]:
    """A line of ``event`` with every field the reader knows set."""
    line = {"v": version, "seq": 5, "t": "2026-11-27T03:00:00.000Z", "session": "s1",
            "event": event}
    line.update({f.name: SAMPLES[base_type(f)][0] for f in own_fields(R.kinds()[event])})
    return line


def written_event_names() -> set[str]:
    """The event names the package writes with a literal name (log_event / write / log)."""
    pattern = re.compile(r"""(?:log_event|\.write|\blog|_log_later)\(\s*["']([a-z_]+)["']""")
    found: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        found |= set(pattern.findall(path.read_text()))
    # the events name the records they write (``core.recorded.Recorded.record_kind``)
    return found | set(record_kinds())


def write_lines(path: Path, lines: list[Any]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


# ----------------------------------------------------------------------------- the kinds


def test_every_event_the_package_writes_has_a_record_type() -> None:
    assert {"turn_start", "llm_request", "checkpoint", "direct"} <= written_event_names()
    golden = {json.loads(line)["event"] for line in GOLDEN.read_text().splitlines()}
    missing = (written_event_names() | golden) - set(R.kinds()) - set(record_kinds())
    assert not missing, f"no record type for {sorted(missing)}: add one to record/records.py"


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("event", sorted(R.kinds()))
def test_each_kind_reads_every_field(event: str, version: int) -> None:
    record = R.parse_record(full_line(event, version))
    assert type(record) is R.kinds()[event] and record.event == event
    assert (record.version, record.seq, record.time, record.session) == (
        version, 5, "2026-11-27T03:00:00.000Z", "s1")
    assert record.extra == {} and record.defects == ()
    for f in own_fields(type(record)):
        assert getattr(record, f.name) == SAMPLES[base_type(f)][1], f.name
    assert record.to_dict() == full_line(event, version)  # the line back
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.seq = 6  # type: ignore[misc]


@pytest.mark.parametrize("event", sorted(R.kinds()))
def test_missing_and_null_fields_read_as_defaults(event: str) -> None:
    cls = R.kinds()[event]
    bare = R.parse_record({"event": event})
    nulls = R.parse_record({"event": event, **{f.name: None for f in own_fields(cls)}})
    assert bare == nulls == cls()
    assert (bare.version, bare.seq, bare.time, bare.defects) == (1, None, "", ())


@pytest.mark.parametrize("event", sorted(R.kinds()))
def test_a_field_of_the_wrong_type_reads_as_its_default_and_says_so(event: str) -> None:
    cls = R.kinds()[event]
    line = {"event": event, **{f.name: WRONG[base_type(f)] for f in own_fields(cls)}}
    record = R.parse_record(line)
    assert record == cls()
    assert len(record.defects) == len(own_fields(cls))
    for f in own_fields(cls):
        assert any(f"{event} field {f.name!r} should be" in d and "read as its default" in d
                   for d in record.defects), (f.name, record.defects)


def test_type_checks_are_exact() -> None:
    r = R.parse_record({"event": "execution", "turn": True, "step": 2.0, "duration_s": 1,
                        "status": None, "changes": None})
    assert (r.turn, r.step, r.duration_s, r.status, r.changes) == (None, None, 1.0, "", None)
    assert [d.split(" should")[0] for d in r.defects] == ["execution field 'turn'",
                                                         "execution field 'step'"]
    env = R.parse_record({"event": "turn_start", "v": "1", "seq": "3", "t": 9, "turn": 1})
    assert (env.version, env.seq, env.time, env.turn) == (1, None, "", 1)
    assert len(env.defects) == 3 and "'v' should be an integer, not '1'" in env.defects[0]


def test_a_record_that_is_not_an_object_is_a_clear_error() -> None:
    with pytest.raises(TypeError, match="is a JSON object, not list"):
        R.parse_record([1, 2])  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- versions, unknowns


def test_golden_log_reads_typed_and_gives_its_lines_back() -> None:
    lines = read_log(GOLDEN)
    records = read_records(GOLDEN)
    assert not [r for r in records if isinstance(r, R.UnknownRecord) or r.defects]
    for line, record in zip(lines, records, strict=True):
        assert line.items() <= record.to_dict().items(), line["event"]
        assert record.extra == {}


def test_version_2_reads_exactly_like_version_1() -> None:
    for line in read_log(GOLDEN):
        v1, v2 = R.parse_record(line), R.parse_record({**line, "v": 2})
        assert v2.version == 2 and dataclasses.replace(v2, version=1) == v1
        assert v2.to_dict() == {**v1.to_dict(), "v": 2}


def test_version_2_log_is_read_without_a_warning(tmp_path: Path) -> None:
    log = write_lines(tmp_path / "v2.jsonl", [{**r, "v": 2} for r in read_log(GOLDEN)])
    records, problems = read_records_report(log)
    assert problems == [] and {r.version for r in records} == {2}
    assert len(parse_session(records).turns) == 2


def test_unknown_kind_is_kept_with_its_fields() -> None:
    line = {"v": 2, "seq": 9, "t": "x", "session": "s", "event": "plan_update", "turn": 1,
            "entries": [{"content": "read the file"}]}
    record = R.parse_record(line)
    assert isinstance(record, R.UnknownRecord) and record.event == "plan_update"
    assert record.extra == {"turn": 1, "entries": [{"content": "read the file"}]}
    assert record.to_dict() == line
    assert R.parse_record({"v": 1}).event == ""  # not even a name: still a record


def test_fields_added_later_are_kept_in_extra_and_known_ones_read() -> None:
    r = R.parse_record({"event": "decision", "turn": 1, "step": 2, "action": "approved",
                        "by": "ada", "confidence": 0.9, "extra": "a field named extra"})
    assert (r.turn, r.step, r.action, r.by) == (1, 2, "approved", "ada")
    assert r.extra == {"confidence": 0.9, "extra": "a field named extra"}


def test_a_newer_version_is_read_with_its_known_fields_and_warned(tmp_path: Path) -> None:
    lines = read_log(GOLDEN)
    log = write_lines(tmp_path / "v3.jsonl", [{**lines[0], "v": 3}, *lines[1:]])
    records, problems = read_records_report(log)
    assert isinstance(records[0], R.SessionStartRecord) and records[0].cwd
    assert problems == ["line 1: schema version 3 is newer than this oi_kernel reads (2); "
                        "upgrade oi_kernel"]


def test_wrong_types_in_a_log_are_reported_and_the_rest_is_read(tmp_path: Path) -> None:
    lines = read_log(GOLDEN)
    broken = [{**r, "outputs": "12\n"} if r["event"] == "execution" and r["seq"] == 8 else r
              for r in lines]
    log = write_lines(tmp_path / "broken.jsonl", broken)
    records, problems = read_records_report(log)
    assert problems == ["event 8: execution field 'outputs' should be a list, not '12\\n'; "
                        "read as its default"]
    with pytest.warns(UserWarning, match="event 8: execution field 'outputs'"):
        read_records(log)
    nb = build_notebook(records)  # the step is exported, without its output
    first = next(c for c in nb.cells if c.cell_type == "code")
    assert first.outputs == [] and first.source == "data = [3, 4, 5]\nprint(sum(data))"


# ----------------------------------------------------------------------------- the readers


def test_readers_take_typed_records_or_lines_alike() -> None:
    lines, records = read_log(GOLDEN), read_records(GOLDEN)
    assert R.as_records(records) == records and R.as_records(lines) == records
    typed, raw = parse_session(records), parse_session(lines)
    assert typed.header == raw.header and typed.timeline == raw.timeline
    assert typed.start == raw.start and typed.start["session"] == "golden-0"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a, b = build_notebook(records, title=""), build_notebook(lines, title="")
    assert [c.source for c in a.cells] == [c.source for c in b.cells]


def test_parse_session_groups_typed_records() -> None:
    session = parse_session(read_records(GOLDEN))
    assert isinstance(session.header, R.SessionStartRecord)
    assert session.header.model == "openai/scripted"
    first, second, direct = session.timeline
    assert isinstance(direct, R.DirectRecord) and direct.kind == "python"
    assert sorted(first.executions) == [1, 2, 3]
    assert all(isinstance(e, R.ExecutionRecord) for e in first.executions.values())
    assert second.decisions[1].action == "edited" and second.decisions[4].action == "skipped"
    assert [r["event"] for r in first.replies] == ["llm_response"] * 4  # as RecordedLLM reads


def test_log_tail_lines_come_from_typed_records() -> None:
    lines = tail_text(GOLDEN, 41).splitlines()
    assert lines[0] == "   1 03:00:00 session_start"
    assert lines[1] == "   2 03:00:01 turn_start     1     make a small table of numbers " \
                       "and summarise it"
    assert lines[5] == "   6 03:00:05 decision       1.1   approved by user · sha256 " \
                       "48027ed0f3df…"
    assert lines[6] == "   7 03:00:06 checkpoint     1"
    assert lines[7].endswith("execution      1.1   python: data = [3, 4, 5] (+1 lines) → ok")


def test_requests_are_rebuilt_from_typed_records_or_lines() -> None:
    from oi_kernel.record.session_log import llm_requests

    typed, raw = llm_requests(read_records(GOLDEN)), llm_requests(read_log(GOLDEN))
    assert typed == raw and len(typed) == 6
    assert typed[0][0]["role"] == "system" and len(typed[1]) > len(typed[0])


# ----------------------------------------------------------------------------- one declaration


@pytest.mark.parametrize("cls", [c for c in recorded_classes() if c.reads is not None],
                         ids=lambda c: c.__name__)
def test_a_record_type_is_the_view_of_its_event_class(cls: type) -> None:
    """A record's fields are declared once, in its event class's ``reads``: the record type
    is made from them, and what the class writes reads back typed, field for field."""
    from tests.test_event_values import as_json, example

    event = example(cls)
    kind = event.written_kind()
    view = R.kinds()[kind]
    assert [f.name for f in own_fields(view)] == list(cls.reads_of(kind))
    record = R.parse_record({"v": 1, "seq": 1, "event": kind, **as_json(event.to_record())})
    assert type(record) is view and record.defects == ()
    passed_on = {k for f in dataclasses.fields(event) if isinstance(v := getattr(event, f.name),
                                                                  Mapping) for k in v}
    written = set(as_json(event.to_record())) - passed_on  # (fields a mapping passes on)
    assert written <= set(cls.reads_of(kind)), f"{cls.__name__} writes fields it does not read"


def test_a_kind_without_reads_is_an_event_record() -> None:
    assert not [k for k, c in record_kinds().items() if c.reads_of(k) is None and k in R.kinds()]
    assert type(R.parse_record({"event": "preview", "turn": 1})) is R.EventRecord
