"""The session log's records as types: a frozen dataclass per kind of event, and
``parse_record``, which reads one line's JSON object into one.

Each type is a view of the event class that writes its kind (``core.events``): its fields,
their types and defaults are the class's ``reads``, declared there once, next to the
``to_record`` that writes them; this module makes the dataclass from them (``_view``) and
keeps the names readers import (``ExecutionRecord``, ``DecisionRecord``, ...).

Every record has the envelope every line carries (``v`` → ``version``, ``seq``, ``t`` →
``time``, ``session``) and ``extra``: the fields this reader does not know (a newer writer
added them), kept as they were. Versions 1 (today's logs) and 2 (the same events and fields)
read the same. A kind this reader does not know becomes an ``UnknownRecord``; a version
newer than ``READS_UP_TO`` is read with the fields it knows (``read_log_report`` warns).

Reading never raises for what a line holds: a missing or ``null`` field reads as its
default, and a field of the wrong type reads as its default too, with a sentence in
``defects`` that ``read_records_report`` (``record.session_log``) reports. The field
names are the log's keys (docs/session-log.md); ``to_dict`` gives the line back (a
field the line did not have at its default).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields, make_dataclass
from typing import Any, ClassVar

from oi_kernel.core import events  # noqa: F401  (every event class defined)
from oi_kernel.core.recorded import record_kinds

READS_UP_TO = 2  # the newest log version whose records this module reads

_NOT_FIELDS = frozenset({"version", "seq", "time", "session", "extra", "defects"})

@dataclass(frozen=True, kw_only=True)
class Record:
    """One line of a session log."""

    event: ClassVar[str] = ""
    version: int = 1
    seq: int | None = None
    time: str = ""
    session: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)
    defects: tuple[str, ...] = field(default=(), compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The record as a log line's JSON object (known fields, then the unknown ones)."""
        line: dict[str, Any] = {"v": self.version, "seq": self.seq, "t": self.time,
                                "session": self.session, "event": self.event}
        for f in fields(self):
            if f.name not in _NOT_FIELDS:
                value = getattr(self, f.name)
                line[f.name] = list(value) if isinstance(value, tuple) else value
        return {**line, **self.extra}


_Check = Callable[[Any], tuple[bool, Any]]  # a value -> (of the right type?, as read)
_CHECKS: dict[str, tuple[str, _Check]] = {  # annotation -> (what it should be, its check)
    "str": ("a string", lambda v: (isinstance(v, str), v)),
    "int": ("an integer", lambda v: (isinstance(v, int) and not isinstance(v, bool), v)),
    "float": ("a number", lambda v: (isinstance(v, (int, float)) and not isinstance(v, bool),
                                     float(v) if isinstance(v, (int, float)) else v)),
    "bool": ("true or false", lambda v: (isinstance(v, bool), v)),
    "dict": ("an object", lambda v: (isinstance(v, dict), v)),
    "tuple[Any, ...]": ("a list", lambda v: (isinstance(v, (list, tuple)),
                                             tuple(v) if isinstance(v, (list, tuple)) else v)),
}
_ENVELOPE = {"v": ("version", _CHECKS["int"]), "seq": ("seq", _CHECKS["int"]),
             "t": ("time", _CHECKS["str"]), "session": ("session", _CHECKS["str"])}

_KINDS: dict[str, type[Record]] = {}
_FIELDS: dict[type[Record], dict[str, tuple[str, tuple[str, _Check]]]] = {}


def _checker(annotation: str) -> tuple[str, _Check]:
    try:
        return _CHECKS[annotation.removesuffix(" | None")]
    except KeyError:
        raise TypeError(f"records.py: no check for a field annotated {annotation!r}") from None


def kinds() -> dict[str, type[Record]]:
    """Every event name this module reads field by field, with its record type (the other
    kinds the events write read as an ``EventRecord``)."""
    return dict(_KINDS)


@dataclass(frozen=True, kw_only=True)
class UnknownRecord(Record):
    """An event this reader does not know (written by a newer oi_kernel, or by hand): its
    name and envelope, every other field in ``extra``."""

    event: str = ""  # type: ignore[misc]  (a field here, the kind's name elsewhere)


@dataclass(frozen=True, kw_only=True)
class EventRecord(Record):
    """A kind an event class writes (``core.events``) that no type here reads field by
    field: its fields are in ``extra``, as written."""

    event: str = ""  # type: ignore[misc]  (a field here, the kind's name elsewhere)


# ----------------------------------------------------------------------------- the kinds


@dataclass(frozen=True, kw_only=True)
class InTurnRecord(Record):
    """A record that belongs to an instruction (``turn`` numbers them from 1)."""

    turn: int | None = None


@dataclass(frozen=True, kw_only=True)
class AtStepRecord(InTurnRecord):
    """``step`` counts LLM calls in llm_* and draft_* records, code blocks in the others."""

    step: int | None = None



_DEFAULTS = {"str": "", "bool": False, "int": 0, "float": 0.0, "tuple[Any, ...]": ()}


def _view(kind: str, name: str) -> type[Record]:
    """The record type of ``kind``, made from the ``reads`` of the event class that writes
    it, and registered (its fields checked: an annotation the parser has no check for
    fails here, at import)."""
    spec = record_kinds()[kind].reads_of(kind)
    if spec is None:
        raise TypeError(f"records.py: {kind!r} declares no fields to read (``reads``)")
    base = (AtStepRecord if {"turn", "step"} <= set(spec) else
            InTurnRecord if "turn" in spec else Record)
    inherited = {f.name for f in fields(base)}
    own = []
    for field_name, declared in spec.items():
        annotation, default = (declared if isinstance(declared, tuple) else
                               (declared, None if declared.endswith(" | None")
                                else _DEFAULTS[declared]))
        _checker(annotation)
        if field_name not in inherited:
            own.append((field_name, annotation, field(default=default)))
    cls = make_dataclass(name, own, bases=(base,), frozen=True, kw_only=True)
    cls.__module__, cls.event = __name__, kind
    _KINDS[kind] = cls
    _FIELDS[cls] = {f.name: (f.name, _checker(str(f.type)))
                    for f in fields(cls) if f.name not in _NOT_FIELDS}
    return cls


SessionStartRecord = _view("session_start", "SessionStartRecord")
SessionEndRecord = _view("session_end", "SessionEndRecord")
TurnStartRecord = _view("turn_start", "TurnStartRecord")
TurnEndRecord = _view("turn_end", "TurnEndRecord")
AnswerCheckRecord = _view("answer_check", "AnswerCheckRecord")
LLMRequestRecord = _view("llm_request", "LLMRequestRecord")
LLMResponseRecord = _view("llm_response", "LLMResponseRecord")
LLMErrorRecord = _view("llm_error", "LLMErrorRecord")
LLMSampleRecord = _view("llm_sample", "LLMSampleRecord")
DraftSamplesRecord = _view("draft_samples", "DraftSamplesRecord")
DraftSamplesSkippedRecord = _view("draft_samples_skipped", "DraftSamplesSkippedRecord")
DraftSamplesErrorRecord = _view("draft_samples_error", "DraftSamplesErrorRecord")
DraftSetAsideRecord = _view("draft_set_aside", "DraftSetAsideRecord")
ToolsUnsupportedRecord = _view("tools_unsupported", "ToolsUnsupportedRecord")
CodeProposedRecord = _view("code_proposed", "CodeProposedRecord")
DecisionRecord = _view("decision", "DecisionRecord")
ExecutionRecord = _view("execution", "ExecutionRecord")
DirectRecord = _view("direct", "DirectRecord")
CheckpointRecord = _view("checkpoint", "CheckpointRecord")
RollbackRecord = _view("rollback", "RollbackRecord")
ChildRestartRecord = _view("child_restart", "ChildRestartRecord")
RebuildRecord = _view("rebuild", "RebuildRecord")
StateRecord = _view("state", "StateRecord")
ConversationResetRecord = _view("conversation_reset", "ConversationResetRecord")
ConversationUndoRecord = _view("conversation_undo", "ConversationUndoRecord")
ConversationSavedRecord = _view("conversation_saved", "ConversationSavedRecord")
ConversationLoadedRecord = _view("conversation_loaded", "ConversationLoadedRecord")
ToolsOfferedRecord = _view("tools_offered", "ToolsOfferedRecord")
GuardStopRecord = _view("guard_stop", "GuardStopRecord")
ToolNoticeRecord = _view("tool_notice", "ToolNoticeRecord")
ProfileRecord = _view("profile", "ProfileRecord")
for _k, _cls in record_kinds().items():  # a kind added since: its view, by its name alone
    if _k not in _KINDS and _cls.reads_of(_k) is not None:
        _view(_k, "".join(w.upper() if w == "llm" else w.title() for w in _k.split("_")) + "Record")


# ----------------------------------------------------------------------------- the parser

def parse_record(line: Mapping[str, Any]) -> Record:
    """The typed record of one log line's JSON object; never raises for what it holds.

    Raises ``TypeError`` only when ``line`` is not a mapping at all."""
    if not isinstance(line, Mapping):
        raise TypeError(f"A session-log record is a JSON object, not {type(line).__name__}.")
    event = line.get("event")
    cls = _KINDS.get(event) if isinstance(event, str) else None
    known = _FIELDS.get(cls, {}) if cls is not None else {}
    values: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    defects: list[str] = []
    for key, value in line.items():
        if key == "event":
            continue
        spec = _ENVELOPE.get(key) or known.get(key)  # (attribute, (what it should be, check))
        if spec is None:
            extra[key] = value
            continue
        if value is None:  # null reads as the default
            continue
        name, (expected, check) = spec
        ok, value = check(value)
        if ok:
            values[name] = value
        else:
            defects.append(f"{event or 'record'} field {key!r} should be {expected}, not "
                           f"{_shown(value)}; read as its default")
    if cls is None:
        written = isinstance(event, str) and event in record_kinds()
        return (EventRecord if written else UnknownRecord)(
            event=str(event or ""), extra=extra, defects=tuple(defects), **values)
    return cls(extra=extra, defects=tuple(defects), **values)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def as_records(items: Iterable[Record | Mapping[str, Any]]) -> list[Record]:
    """``items`` as typed records: dicts (``read_log``'s, or made by hand) are parsed."""
    return [i if isinstance(i, Record) else parse_record(i) for i in items]
