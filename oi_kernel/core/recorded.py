"""The base of every event (``core.events``): what makes an event a session-log record
(its kind, the format version, its fields), a part of its turn's record and a line shown.

Kept apart from ``core.events`` so that ``core.session_events`` can build on it too.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from oi_kernel.core.types import CodeBlock, StepRecord, Turn


class Recorded:
    """What every event can be: a session-log record (``kind`` "" : not recorded), a part
    of its turn's record (``fold``), a line shown to the user (``shown``)."""

    record_kind: ClassVar[str] = ""  # the record kind in the log, as old logs and readers know it
    also_kinds: ClassVar[tuple[str, ...]] = ()  # further kinds this class writes (see record_kind)
    version: ClassVar[int] = 1  # the log format its records belong to
    doc: ClassVar[str] = ""  # its fields, as docs/session-log.md lists them (generated)

    def written_kind(self) -> str:
        """The kind of this event's record (``kind`` unless it writes one of ``also``)."""
        return self.record_kind

    def to_record(self) -> dict[str, Any] | None:
        """The record's fields (None: this one is not recorded). By default the event's
        own fields, as they are."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}  # type: ignore[arg-type]

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
