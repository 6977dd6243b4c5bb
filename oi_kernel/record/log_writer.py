"""The session log as a subscriber of the engine's events.

Every event names its record (``core.recorded.Recorded``: ``record_kind`` and
``to_record``); ``LogWriter`` writes the record of each event that has one and passes
over the others (streamed text, a card being shown, a plain notice). It keeps one piece of
state: the messages of the ``llm_request`` logged before, so each request logs only what
is new.
"""

from __future__ import annotations

from typing import Any

from oi_kernel.core import events as E
from oi_kernel.core.recorded import tool_fields

__all__ = ["LogWriter", "record_of", "tool_fields"]

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
        self._last_request: list[dict[str, Any]] = []

    @property
    def path(self) -> Any:
        return getattr(self.log, "path", None)

    def __call__(self, event: Any) -> None:
        if isinstance(event, E.LLMRequested):
            record: Record | None = ("llm_request", event.to_record(self._last_request))
            self._last_request = list(event.messages)
        else:
            record = record_of(event)
        if record is not None:
            name, fields = record
            self.log.write(name, **fields)
