"""The session log's records as types: one frozen dataclass per kind of event, and
``parse_record``, which reads one line's JSON object into one.

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
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, TypeVar

from oi_kernel.core import events as E
from oi_kernel.core.recorded import Recorded, record_kinds

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
_R = TypeVar("_R", bound=type[Record])


def _kind(event: str | type[Recorded]) -> Callable[[_R], _R]:
    """Register a record type for ``event`` (a kind, or the event class that names it:
    ``core.events``), with the check of each of its fields (an annotation the parser has no
    check for fails here, at import)."""
    if not isinstance(event, str):
        event = event.record_kind

    def register(cls: _R) -> _R:
        cls.event = event
        _KINDS[event] = cls
        _FIELDS[cls] = {f.name: (f.name, _checker(str(f.type)))
                        for f in fields(cls) if f.name not in _NOT_FIELDS}
        return cls

    return register


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


@_kind(E.SessionStarted)
@dataclass(frozen=True, kw_only=True)
class SessionStartRecord(Record):
    kernel: str = ""
    model: str = ""
    child_kernel: str = ""
    cwd: str = ""
    oi_version: str = ""
    python: str = ""
    headless: bool = False


@_kind(E.SessionEnded)
@dataclass(frozen=True, kw_only=True)
class SessionEndRecord(Record):
    pass


@dataclass(frozen=True, kw_only=True)
class InTurnRecord(Record):
    """A record that belongs to an instruction (``turn`` numbers them from 1)."""

    turn: int | None = None


@dataclass(frozen=True, kw_only=True)
class AtStepRecord(InTurnRecord):
    """``step`` counts LLM calls in llm_* and draft_* records, code blocks in the others."""

    step: int | None = None


@_kind(E.TurnStarted)
@dataclass(frozen=True, kw_only=True)
class TurnStartRecord(InTurnRecord):
    instruction: str = ""
    replayed_from: str = ""  # %load --replay: the saved conversation's path


@_kind(E.TurnDone)
@dataclass(frozen=True, kw_only=True)
class TurnEndRecord(InTurnRecord):
    reason: str = ""
    steps: int | None = None
    usage: dict | None = None


@_kind(E.AnswerChecked)
@dataclass(frozen=True, kw_only=True)
class AnswerCheckRecord(InTurnRecord):
    """The numbers of an instruction's answer and where each was printed (``core.claims``):
    ``claims`` [{"text", "kind", "start", "end", "found": {"turn", "step", "printed", "how",
    "where"} or null}]."""

    answer: str = ""
    asked: bool = False
    claims: tuple[Any, ...] = ()
    note: str = ""
    quoted: int = 0


@_kind(E.LLMRequested)
@dataclass(frozen=True, kw_only=True)
class LLMRequestRecord(AtStepRecord):
    model: str = ""
    messages_before: int = 0
    messages: tuple[Any, ...] = ()
    tools: bool = True
    small: bool | None = None  # None: not recorded (older logs)


@_kind(E.ReplyDone)
@dataclass(frozen=True, kw_only=True)
class LLMResponseRecord(AtStepRecord):
    text: str = ""
    tool_calls: tuple[Any, ...] = ()
    usage: dict | None = None
    latency_s: float | None = None
    finish_reason: str | None = None
    reasoning: str = ""


@_kind(E.LLMFailed)
@dataclass(frozen=True, kw_only=True)
class LLMErrorRecord(AtStepRecord):
    error: str = ""
    partial_text: str = ""


@_kind(E.SampleDrawn)
@dataclass(frozen=True, kw_only=True)
class LLMSampleRecord(AtStepRecord):
    text: str = ""
    sampling: dict | None = None
    usage: dict | None = None
    latency_s: float | None = None


@_kind(E.DraftsSampled)
@dataclass(frozen=True, kw_only=True)
class DraftSamplesRecord(AtStepRecord):
    drawn: int | None = None
    seconds: float | None = None
    chosen: int | None = None
    drafts: tuple[Any, ...] = ()


@_kind("draft_samples_skipped")
@dataclass(frozen=True, kw_only=True)
class DraftSamplesSkippedRecord(AtStepRecord):
    reply_s: float | None = None
    budget_s: float | None = None


@_kind("draft_samples_error")
@dataclass(frozen=True, kw_only=True)
class DraftSamplesErrorRecord(AtStepRecord):
    error: str = ""


@_kind(E.DraftSetAside)
@dataclass(frozen=True, kw_only=True)
class DraftSetAsideRecord(AtStepRecord):
    code: str = ""
    problems: tuple[Any, ...] = ()


@_kind(E.ToolsUnsupported)
@dataclass(frozen=True, kw_only=True)
class ToolsUnsupportedRecord(AtStepRecord):
    error: str = ""


@dataclass(frozen=True, kw_only=True)
class _CodeStep(AtStepRecord):
    """What code_proposed, decision and execution share; the tool fields are set only for
    an MCP tool step (``language`` "json", ``code`` its JSON arguments)."""

    language: str = ""
    code: str = ""
    sha256: str = ""
    tool: str = ""
    tool_kind: str = ""
    server: str = ""
    server_tool: str = ""


@_kind(E.StepReviewed)
@dataclass(frozen=True, kw_only=True)
class CodeProposedRecord(_CodeStep):
    flags: tuple[Any, ...] = ()
    recognised_as_code: bool = False
    untrusted: tuple[Any, ...] = ()


@_kind(E.Decided)
@dataclass(frozen=True, kw_only=True)
class DecisionRecord(_CodeStep):
    action: str = ""  # approved, edited, skipped, stopped, auto
    reason: str = ""
    by: str = ""
    four_eyes: str = ""
    author: str = ""


@_kind(E.StepDone)
@dataclass(frozen=True, kw_only=True)
class ExecutionRecord(_CodeStep):
    status: str = ""
    outputs: tuple[Any, ...] = ()
    duration_s: float | None = None
    feedback: str = ""
    changes: dict | None = None


@_kind(E.DirectRun)
@dataclass(frozen=True, kw_only=True)
class DirectRecord(Record):
    """A cell the user ran in the child without the LLM."""

    kind: str = ""  # python or shell
    code: str = ""
    status: str = ""
    outputs: tuple[Any, ...] = ()
    duration_s: float | None = None


@_kind(E.CheckpointKept)
@dataclass(frozen=True, kw_only=True)
class CheckpointRecord(InTurnRecord):
    id: int | None = None
    fork: bool = False
    copy: bool = False  # the variables kept as an in-memory copy, not a fork (plain data)
    variables: int | None = None
    files: int | None = None
    cost_s: float | None = None


@_kind(E.RolledBack)
@dataclass(frozen=True, kw_only=True)
class RollbackRecord(InTurnRecord):
    variables: tuple[Any, ...] = ()
    removed_variables: tuple[Any, ...] = ()
    problems: tuple[Any, ...] = ()
    restored: tuple[Any, ...] = ()
    removed: tuple[Any, ...] = ()
    not_restored: tuple[Any, ...] = ()
    namespace_lost: bool = False


@_kind(E.ChildRestarted)
@dataclass(frozen=True, kw_only=True)
class ChildRestartRecord(Record):
    reason: str = ""


@_kind(E.Rebuilt)
@dataclass(frozen=True, kw_only=True)
class RebuildRecord(Record):
    """``%rebuild``: the steps of a lost child kernel re-run in a new one."""

    lost: str = ""
    planned: int | None = None
    ran: int | None = None
    failed: str = ""
    skipped: tuple[Any, ...] = ()
    files: dict | None = None
    done: int | None = None  # the plan's steps handled; below ``planned``: it stopped


@_kind(E.ConversationReset)
@dataclass(frozen=True, kw_only=True)
class ConversationResetRecord(Record):
    pass


@_kind(E.ConversationUndone)
@dataclass(frozen=True, kw_only=True)
class ConversationUndoRecord(Record):
    turns: int | None = None
    messages: int | None = None


@_kind(E.ConversationSaved)
@dataclass(frozen=True, kw_only=True)
class ConversationSavedRecord(Record):
    path: str = ""
    turns: int | None = None


@_kind(E.ConversationLoaded)
@dataclass(frozen=True, kw_only=True)
class ConversationLoadedRecord(Record):
    path: str = ""
    turns: int | None = None
    messages: int | None = None


@_kind(E.ToolsOffered)
@dataclass(frozen=True, kw_only=True)
class ToolsOfferedRecord(Record):
    functions: tuple[Any, ...] = ()


@_kind(E.GuardStopped)
@dataclass(frozen=True, kw_only=True)
class GuardStopRecord(InTurnRecord):
    step: int | None = None
    stops: tuple[Any, ...] = ()
    limit: str = ""
    limit_text: str = ""


@_kind(E.ToolNotice)
@dataclass(frozen=True, kw_only=True)
class ToolNoticeRecord(Record):
    text: str = ""


@_kind(E.ProfileApplied)
@dataclass(frozen=True, kw_only=True)
class ProfileRecord(Record):
    name: str | None = None
    path: str | None = None
    selected_by: str = ""
    settings: dict | None = None


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
