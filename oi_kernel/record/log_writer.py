"""The session log as a subscriber of the engine's events, and read back as events.

Every event names its record (``core.recorded.Recorded``: ``record_kind`` and
``to_record``); ``LogWriter`` writes the record of each event that has one and passes
over the others (streamed text, a card being shown, a plain notice). It keeps one piece of
state: the messages of the ``llm_request`` logged before, so each request logs only what
is new.

``EventReader`` is its inverse: it reads a log's records back into the events that wrote
them (``Recorded.from_record``; an ``llm_request``'s messages joined again with those it
did not repeat) and folds them with the engine's own fold (``core.turn_fold``), so a
``turn_end`` event holds its turn as the log tells it. A record it cannot read (a kind no
event writes, a field missing) is passed over with a sentence in ``problems``; one of a
newer format is read with the fields it knows, and said so.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from oi_kernel.core import events as E
from oi_kernel.core.recorded import record_kinds, tool_fields
from oi_kernel.core.turn_fold import TurnBuilder
from oi_kernel.core.types import Turn

__all__ = ["EventReader", "LogWriter", "event_of", "read_events", "record_of", "tool_fields"]

READS_UP_TO = 2  # the newest log format whose records are read (``record.records`` too)

Record = tuple[str, dict[str, Any]]


def record_of(event: Any) -> Record | None:
    """The session-log record of ``event`` (kind, fields), or None when it has none."""
    kind = event.written_kind() if isinstance(event, E.Recorded) else ""
    fields = event.to_record() if kind else None
    return (kind, fields) if fields is not None else None


class LogWriter:
    """Writes the records of events to one session log (a ``SessionLog``).

    ``llm_request`` records carry only the messages that are new since the request logged
    before (``messages_before`` of them are as logged then), so a long session's log grows
    linearly, not quadratically; the full list after any condensing.
    """

    def __init__(self, log: Any) -> None:
        self.log = log
        self._last_request: tuple[Any, ...] = ()

    @property
    def path(self) -> Any:
        return getattr(self.log, "path", None)

    def __call__(self, event: Any) -> None:
        if isinstance(event, E.LLMRequested):
            record: Record | None = ("llm_request", event.to_record(self._last_request))
            self._last_request = event.messages
        else:
            record = record_of(event)
        if record is not None:
            name, fields = record
            self.log.write(name, **fields)


def event_of(line: Mapping[str, Any]) -> E.Recorded:
    """The event one record (a log line's object) tells of; raises ``LookupError`` for a
    kind no event writes, ``KeyError`` / ``TypeError`` / ``ValueError`` for fields it
    cannot be read from."""
    kind = line.get("event")
    cls = record_kinds().get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise LookupError(f"no event writes {kind!r} records")
    return cls.from_record(line, kind)  # type: ignore[arg-type]


class EventReader:
    """Reads records, in their order, into events (``problems``: what it passed over or
    read only in part) and folds them into ``turns``, as the engine did."""

    def __init__(self) -> None:
        self.problems: list[str] = []
        self.fold = TurnBuilder()
        self._last_request: tuple[Any, ...] = ()

    @property
    def turns(self) -> list[Turn]:
        return self.fold.turns

    def __call__(self, line: Mapping[str, Any]) -> E.Recorded | None:
        where = f"record {line.get('seq', '?')} ({line.get('event', 'no kind')})"
        try:
            event = event_of(line)
        except (LookupError, TypeError, ValueError) as exc:
            self.problems.append(f"{where} was passed over: {exc}")
            return None
        version = line.get("v")
        if isinstance(version, int) and version > READS_UP_TO:
            self.problems.append(f"{where} is of log format {version} (this reader knows up to"
                                 f" {READS_UP_TO}): read with the fields it knows")
        if isinstance(event, E.LLMRequested):
            kept = self._last_request[: line.get("messages_before") or 0]
            event = dataclasses.replace(event, messages=(*kept, *event.messages))
            self._last_request = event.messages
        self.fold(event)
        if isinstance(event, E.TurnDone) and self.turns and self.turns[-1].index == event.turn.index:
            event = dataclasses.replace(event, turn=self.turns[-1])  # as its events built it
        return event


def read_events(lines: Iterable[Mapping[str, Any]]) -> tuple[list[E.Recorded], list[str]]:
    """The events a log's records tell of, and the problems met reading them."""
    reader = EventReader()
    events = [e for e in map(reader, lines) if e is not None]
    return events, reader.problems
