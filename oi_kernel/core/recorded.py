"""The base of every event (``core.events``): what makes an event a session-log record
(its kind, the format version, its fields), a part of its turn's record and a line shown.

Kept apart from ``core.events`` so that ``core.session_events`` can build on it too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar, Self

from oi_kernel.core.types import CodeBlock, Decision, Reply, StepRecord, ToolCall, Turn, Usage
from oi_kernel.core.values import freeze

Reads = Mapping[str, "str | tuple[str, Any]"]  # a record's field -> its type (and default)
TURN: Reads = {"turn": "int | None"}  # the fields records of an instruction share
STEP: Reads = {**TURN, "step": "int | None"}  # (``step``: LLM calls or code blocks, from 1)
CODE_STEP: Reads = {  # a code step's; the tool fields only for an MCP tool step
    **STEP, **dict.fromkeys(("language", "code", "sha256", "tool", "tool_kind", "server",
                             "server_tool"), "str")}


class Recorded:
    """What every event can be: a session-log record (``kind`` "" : not recorded), a part
    of its turn's record (``fold``), a line shown to the user (``shown``)."""

    record_kind: ClassVar[str] = ""  # the record kind in the log, as old logs and readers know it
    also_kinds: ClassVar[tuple[str, ...]] = ()  # further kinds this class writes (see record_kind)
    version: ClassVar[int] = 1  # the log format its records belong to
    doc: ClassVar[str] = ""  # its fields, as docs/session-log.md lists them (generated)
    # its record's fields as the log's readers read them (``record.records`` makes a typed
    # view of each from this): a type each, or (type, default); None: read as written
    reads: ClassVar[Reads | None] = None
    also_reads: ClassVar[Mapping[str, Reads]] = {}  # those of ``also_kinds`` (by kind)

    def __post_init__(self) -> None:
        """Freeze what the event was given (lists to tuples, dicts to read-only mappings,
        all the way down: ``core.values``), so no subscriber can change it for the others."""
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            frozen = freeze(value)
            if frozen is not value:
                object.__setattr__(self, f.name, frozen)

    @classmethod
    def reads_of(cls, kind: str) -> Reads | None:
        """The fields readers read in a record of ``kind`` (one this class writes)."""
        return cls.also_reads.get(kind, cls.reads)

    def written_kind(self) -> str:
        """The kind of this event's record (``kind`` unless it writes one of ``also``)."""
        return self.record_kind

    def to_record(self) -> dict[str, Any] | None:
        """The record's fields (None: this one is not recorded). By default the event's
        own fields, as they are."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}  # type: ignore[arg-type]

    @classmethod
    def from_record(cls, fields: Mapping[str, Any], kind: str = "") -> Self:
        """The event a record's ``fields`` tell of (``kind``: the kind it was written
        under; the envelope, ``v``, ``seq``, ``t``, ``session`` and ``event``, is passed
        over). The inverse of ``to_record``: ``cls.from_record(e.to_record())`` writes the
        same record again. By default the fields are the event's own, a missing one at its
        default; raises ``TypeError`` when one it needs is missing (``read_event`` reports
        it)."""
        names = {f.name for f in dataclasses.fields(cls)} - ENVELOPE  # type: ignore[arg-type]
        return cls(**{k: v for k, v in fields.items() if k in names})

    def fold(self, turn: Turn) -> None:
        """Add what this event tells to the record of its turn (most events add nothing)."""

    def shown(self) -> str:
        """A line to show the user ("" : none); front doors show it like a notice."""
        return ""


def tool_fields(spec: Any) -> dict[str, Any]:
    """The fields of a tool step's records (none for code)."""
    if spec is None:
        return {}
    return {"tool": spec.name, "tool_kind": spec.kind, "server": spec.server,
            "server_tool": spec.tool}


ENVELOPE = frozenset({"v", "seq", "t", "session", "event"})  # what every log line adds


def rest(fields: Mapping[str, Any], *named: str) -> dict[str, Any]:
    """A record's fields but the envelope and ``named`` (those an event holds by name)."""
    return {k: v for k, v in fields.items() if k not in ENVELOPE and k not in named}


def tool_of(fields: Mapping[str, Any]) -> Any:
    """The tool a tool step's record names (``core.tools.ToolSpec``; None for code): what
    the record keeps of it (its description and parameters are not recorded)."""
    if not fields.get("tool"):
        return None
    from oi_kernel.core.tools import ToolSpec

    return ToolSpec(fields["tool"], "", {}, kind=fields.get("tool_kind", "mcp"),
                    server=fields.get("server", ""), tool=fields.get("server_tool", ""))


def reply_of(fields: Mapping[str, Any]) -> Reply:
    """The reply an ``llm_response`` or ``llm_sample`` record tells of."""
    usage = fields.get("usage") or {}
    return Reply(fields.get("text", ""), tuple(ToolCall(**c) for c in fields.get("tool_calls") or ()),
                 Usage(**usage), latency_s=fields.get("latency_s") or 0.0,
                 finish_reason=fields.get("finish_reason"), reasoning=fields.get("reasoning", ""))


def decision_of(fields: Mapping[str, Any]) -> Decision:
    """The decision a ``decision`` record tells of (by its ``action``: the label)."""
    action, code = fields.get("action", ""), fields.get("code", "")
    how = {"skipped": "skip", "stopped": "stop"}.get(action, "run")
    return Decision(how, code, edited=action == "edited", reason=fields.get("reason", ""),
                    by=fields.get("by", "user"))  # type: ignore[arg-type]


def block_of(fields: Mapping[str, Any]) -> CodeBlock:
    """The code a step's record holds (its language, its code, how it was recognised)."""
    return CodeBlock(fields.get("language", ""), fields.get("code", ""),
                     bare=bool(fields.get("recognised_as_code")), tool=fields.get("tool", ""))


def usage_fields(usage: Any) -> dict[str, Any]:
    return dataclasses.asdict(usage)


def step_of(turn: Turn, index: int, block: CodeBlock) -> StepRecord:
    """The turn's step ``index``, added when this is the first event of it."""
    for record in reversed(turn.steps):
        if record.index == index:
            return record
    record = StepRecord(index=index, block=block)
    turn.steps.append(record)
    return record


def set_step(turn: Turn, index: int, block: CodeBlock, **changes: Any) -> None:
    """Change the turn's step ``index`` (added when this is the first event of it): step
    records are values, so its place in ``turn.steps`` gets a changed copy."""
    step = step_of(turn, index, block)
    at = len(turn.steps) - 1 - turn.steps[::-1].index(step)
    turn.steps[at] = dataclasses.replace(step, **changes)


def recorded_classes() -> list[type[Recorded]]:
    """Every event class that writes a record, in the order docs/session-log.md lists
    them (the classes defined: ``core.events`` imported, as its readers do)."""
    found: list[type[Recorded]] = []
    todo: list[type] = [Recorded]
    while todo:
        cls = todo.pop(0)
        for sub in cls.__subclasses__():
            if sub not in found and "record_kind" in vars(sub) and sub.record_kind:
                found.append(sub)
            todo.append(sub)
    return sorted(found, key=lambda c: DOC_ORDER.index(c.record_kind) if c.record_kind in DOC_ORDER
                  else len(DOC_ORDER))


def record_kinds() -> dict[str, type[Recorded]]:
    """Every record kind the events write, with the class that writes it."""
    return {k: cls for cls in recorded_classes() for k in (cls.record_kind, *cls.also_kinds)}


DOC_ORDER = (  # how docs/session-log.md orders the records: as a session meets them
    "session_start", "turn_start", "llm_request", "llm_response", "llm_error", "llm_sample",
    "draft_samples", "draft_set_aside", "tools_unsupported", "code_proposed", "preview",
    "decision", "execution", "preview_compared", "cell_edit_proposed", "cell_edit_decided",
    "answer_check", "guard_stop", "turn_end", "tools_offered", "tool_notice",
    "direct", "checkpoint", "rollback", "child_restart", "rebuild", "profile",
    "conversation_reset", "conversation_undo", "conversation_saved", "conversation_loaded",
    "session_end",
)
