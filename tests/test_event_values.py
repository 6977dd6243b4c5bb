"""Events are plain immutable values (``core.recorded``, ``core.values``): every field of
every event class is annotated with an immutable type, an event built from lists and dicts
holds tuples and read-only mappings all the way down, it hashes, and no field can be set,
so a subscriber cannot change a published event under the others.

The examples are built from each field's annotation (``example``), so a new event class
is checked without a line here."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest

from oi_kernel.core import events as E
from oi_kernel.core.claims import Check, Claim
from oi_kernel.core.guard import GuardStop
from oi_kernel.core.preview import PreviewResult
from oi_kernel.core.recorded import Recorded
from oi_kernel.core.tools import ToolSpec
from oi_kernel.core.types import (
    ApprovalRequest,
    CodeBlock,
    Decision,
    Reply,
    StepRecord,
    ToolCall,
    Turn,
    Usage,
)
from oi_kernel.core.values import FrozenDict, freeze, thaw
from oi_kernel.record.log_writer import LogWriter, read_events
from oi_kernel.safety.risk import Flag

# Fields that hold a live object on purpose, and why (each is a known exception).
LIVE = {
    ("TurnDone", "turn"): "the turn's record as its events built it (the fold's result)",
    ("CodeProposed", "request"): "the question asked: its preview runs in the child",
    ("Decided", "request"): "the question asked: its preview runs in the child",
    ("Decided", "tool"): "the tool, kept up to date by its provider (its trust flags)",
    ("StepDone", "tool"): "the tool, kept up to date by its provider (its trust flags)",
    ("StepReviewed", "tool"): "the tool, kept up to date by its provider (its trust flags)",
}
PLAIN = re.compile(r"^(str|int|float|bool|None|Any|Literal\[.*\])( \| (str|int|float|None))?$")
FROZEN_TYPES = ("CodeBlock", "Reply", "StepRecord", "GuardStop", "Check", "PreviewResult")


def event_classes() -> list[type[Recorded]]:
    found: list[type[Recorded]] = []
    todo: list[type] = [Recorded]
    while todo:
        for sub in todo.pop(0).__subclasses__():
            if sub not in found:
                found.append(sub)
                todo.append(sub)
    return found


def immutable_annotation(annotation: str) -> bool:
    if PLAIN.match(annotation) or annotation.startswith(("tuple[", "Mapping[")):
        return "list[" not in annotation and "dict[" not in annotation
    return annotation.removesuffix(" | None") in FROZEN_TYPES


def _samples() -> dict[str, Any]:
    block = CodeBlock("python", "print(1)")
    outputs = [{"output_type": "stream", "name": "stdout", "text": "1\n", "x": [1, {"y": 2}]}]
    return {
        "str": "x", "int": 1, "float": 1.5, "bool": True,
        "Mapping[str, Any]": {"a": [1, {"b": [2]}]},
        "tuple[str, ...]": ["a", "b"],
        "tuple[Mapping[str, Any], ...]": [{"step": 1, "source": "s", "kind": "file",
                                          "phrase": "p", "verb": "read", "x": [1]}],
        "tuple[CodeBlock, ...]": [block],
        "tuple[Flag, ...]": [Flag(1, "network", "high", "line 1: network")],
        "CodeBlock": block,
        "Reply": Reply("hi", [ToolCall("c1", "execute", "{}")], Usage(1, 2, 0.5)),
        "StepRecord": StepRecord(1, block, Decision("run", block.code), "ok", outputs,
                                 changes={"variables": [{"name": "x"}]}),
        "GuardStop": GuardStop([{"event": "socket.connect", "what": "a connection"}]),
        "Check": Check(1, [Claim("1", "number", 0, 1)]),
        "Turn": Turn(1, "go"),
        "ApprovalRequest": ApprovalRequest(1, 1, block),
        "ToolSpec": ToolSpec("t", "a tool", {"type": "object"}),
        "PreviewResult": PreviewResult("print(1)", "ok", outputs, {"files": []}),
    }


def example(cls: type[Recorded]) -> Recorded:
    """An instance of ``cls`` with every field set from its annotation (lists and dicts
    where a tuple or mapping is expected: the event must freeze them)."""
    samples = _samples()
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        annotation = str(f.type).removesuffix(" | None")
        if annotation.startswith("Literal["):
            values[f.name] = annotation.split("'")[1]
        elif annotation in samples:
            values[f.name] = samples[annotation]
        else:
            raise AssertionError(f"{cls.__name__}.{f.name}: no example for {annotation!r}: "
                                 "annotate it with an immutable type (or add one here)")
    return cls(**values)


def mutable_parts(value: Any, where: str) -> list[str]:
    """Where ``value`` holds something that can be changed in place."""
    if value is None or isinstance(value, (str, int, float, bool, bytes)):
        return []
    if isinstance(value, FrozenDict):
        return [p for k, v in value.items() for p in mutable_parts(v, f"{where}[{k!r}]")]
    if isinstance(value, (tuple, frozenset)):
        return [p for i, v in enumerate(value) for p in mutable_parts(v, f"{where}[{i}]")]
    if dataclasses.is_dataclass(value) and value.__dataclass_params__.frozen:  # type: ignore[union-attr]
        return [p for f in dataclasses.fields(value)
                for p in mutable_parts(getattr(value, f.name), f"{where}.{f.name}")]
    return [f"{where}: {type(value).__name__}"]


CLASSES = event_classes()


@pytest.mark.unit
def test_every_event_class_is_found() -> None:
    names = {c.__name__ for c in CLASSES}
    assert {"TextDelta", "StepDone", "SessionStarted", "Previewed", "UntrustedNotice"} <= names
    assert len(CLASSES) >= 38


@pytest.mark.unit
@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_every_field_is_annotated_immutable(cls: type[Recorded]) -> None:
    assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
    wrong = [f"{f.name}: {f.type}" for f in dataclasses.fields(cls)  # type: ignore[arg-type]
             if (cls.__name__, f.name) not in LIVE and not immutable_annotation(str(f.type))]
    assert not wrong, f"{cls.__name__} has fields of a mutable type: {wrong}"


@pytest.mark.unit
@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_an_event_holds_only_immutable_values(cls: type[Recorded]) -> None:
    event = example(cls)
    parts = [p for f in dataclasses.fields(event)  # type: ignore[arg-type]
             if (cls.__name__, f.name) not in LIVE
             for p in mutable_parts(getattr(event, f.name), f.name)]
    assert not parts, f"{cls.__name__} holds mutable values: {parts}"
    name = dataclasses.fields(event)[0].name if dataclasses.fields(event) else "x"  # type: ignore[arg-type]
    with pytest.raises((dataclasses.FrozenInstanceError, AttributeError)):
        setattr(event, name, "changed")
    if not any(k[0] == cls.__name__ for k in LIVE):
        assert hash(event) == hash(example(cls))


@pytest.mark.unit
def test_a_subscriber_cannot_change_what_others_see() -> None:
    outputs = [{"output_type": "stream", "name": "stdout", "text": "1\n"}]
    event = E.DirectRun("python", "print(1)", "ok", outputs)  # type: ignore[arg-type]
    outputs.append({"later": True})  # the producer's list changes after publishing
    assert len(event.outputs) == 1 and isinstance(event.outputs, tuple)
    with pytest.raises(TypeError, match="read-only"):
        event.outputs[0]["text"] = "2\n"
    with pytest.raises(AttributeError):
        event.outputs.append({})  # type: ignore[attr-defined]
    assert json.loads(json.dumps(event.to_record()))["outputs"] == outputs[:1]


@pytest.mark.unit
def test_freeze_and_thaw() -> None:
    value = {"a": [1, {"b": {2, 3}}], "c": ("d",)}
    frozen = freeze(value)
    assert frozen == {"a": (1, {"b": frozenset({2, 3})}), "c": ("d",)}
    assert isinstance(frozen["a"][1], FrozenDict) and hash(frozen) == hash(freeze(value))
    assert freeze(frozen) is frozen
    for change in (lambda: frozen.update(x=1), lambda: frozen.pop("a"),
                   lambda: frozen.setdefault("x", 1), frozen.clear):
        with pytest.raises(TypeError):
            change()
    thawed = thaw(frozen)
    thawed["a"].append(2)
    assert thawed["a"] == [1, {"b": frozenset({2, 3})}, 2] and frozen["a"] == (1, {"b": frozenset({2, 3})})


# ----------------------------------------------------------------------------- parsing
RECORDED = [c for c in CLASSES if c.record_kind]
GOLDEN = Path(__file__).resolve().parent / "golden" / "session_v1.jsonl"
# what a record does not keep of its event (the event read back differs in these)
NOT_RECORDED = {
    "ReplyDone": "blocks (found again in the text), the reply's model",
    "Decided": "the decision's time, the request but for four-eyes, the tool's description",
    "StepDone": "the step's decision (in its decision record), the outside text",
    "StepReviewed": "the tool's description and parameters",
    "TurnDone": "the turn's steps and answer (their own records, folded: EventReader)",
    "TurnStarted": "when it started, its place in the conversation",
    "SampleDrawn": "the reply's tool calls, finish reason and model",
    "CheckpointKept": "the probe's answer but for the fields a checkpoint record keeps",
}


def as_json(value: Any) -> Any:
    return json.loads(json.dumps(value))


@pytest.mark.unit
@pytest.mark.parametrize("cls", RECORDED, ids=lambda c: c.__name__)
def test_every_event_reads_back_from_its_record(cls: type[Recorded]) -> None:
    event = example(cls)
    record = event.to_record()
    assert record is not None, cls.__name__
    again = cls.from_record(as_json(record), event.written_kind())
    assert type(again) is cls and again.written_kind() == event.written_kind()
    assert as_json(again.to_record()) == as_json(record)
    if cls.__name__ not in NOT_RECORDED:
        assert again == event


@pytest.mark.unit
def test_a_format_1_log_reads_back_into_the_events_that_write_it_again() -> None:
    lines = [json.loads(line) for line in GOLDEN.read_text().splitlines()]
    events, problems = read_events(lines)
    assert problems == [] and len(events) == len(lines)
    written: list[tuple[str, dict[str, Any]]] = []

    class Log:
        def write(self, name: str, /, **fields: Any) -> None:
            written.append((name, as_json(fields)))

    writer = LogWriter(Log())
    for event in events:
        writer(event)
    envelope = {"v", "seq", "t", "session", "event"}
    assert written == [(line["event"], {k: v for k, v in line.items() if k not in envelope})
                       for line in lines]
    assert any(isinstance(e, E.TurnDone) and e.turn.steps for e in events)


@pytest.mark.unit
def test_an_unreadable_or_newer_record_is_reported_not_fatal() -> None:
    lines = [{"v": 1, "seq": 1, "event": "turn_start", "turn": 1, "instruction": "go"},
             {"v": 1, "seq": 2, "event": "no_such_kind"},
             {"v": 1, "seq": 3, "event": "turn_start"},  # no turn
             {"v": 9, "seq": 4, "event": "turn_end", "turn": 1, "reason": "done",
              "steps": 0, "usage": {"prompt_tokens": 1}, "new_field": [1]}]
    events, problems = read_events(lines)
    assert [type(e).__name__ for e in events] == ["TurnStarted", "TurnDone"]
    assert len(problems) == 3
    assert "no_such_kind" in problems[0] and "record 3" in problems[1]
    assert "format 9" in problems[2] and events[1].turn.end_reason == "done"
