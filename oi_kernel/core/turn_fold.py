"""The record of each turn, derived from the turn's events: a pure fold.

The engine reports what happened only as events (``core.events``); a ``Turn`` and its
``StepRecord`` list are what those events add up to. ``TurnBuilder`` is that sum: given the
events of one or more turns in order, it builds their ``Turn`` records. The engine holds one
as the first subscriber of its own events (``Engine.publish``), so its ``turns`` are current
when the session log or a front door sees an event; anyone else holding the events (the API,
an ACP client, a replay of a recorded turn) gets the same records by folding them again.

Each event adds its own part (``Recorded.fold``): ``ReplyDone`` counts an LLM call and its
usage, ``StepReviewed`` adds a ``StepRecord``, ``Decided`` and ``StepDone`` fill it in,
``TurnDone`` ends the turn, and so on (``core.events``). Events outside a turn, and turn
events before any ``TurnStarted``, change nothing.
"""

from __future__ import annotations

from collections.abc import Iterable

from oi_kernel.core import events as E
from oi_kernel.core.types import Turn


class TurnBuilder:
    """Folds events, in the order they were sent, into ``turns`` (a list it appends to;
    pass the list to keep in step with, or get a new one)."""

    def __init__(self, turns: list[Turn] | None = None) -> None:
        self.turns: list[Turn] = [] if turns is None else turns

    def __call__(self, event: E.Event) -> None:
        if isinstance(event, E.TurnStarted):
            self.turns.append(Turn(index=event.turn, instruction=event.instruction,
                                   started=event.started,
                                   conversation_index=event.conversation_index))
            return
        if self.turns and isinstance(event, E.Recorded):
            event.fold(self.turns[-1])


def rebuild(events: Iterable[E.Event]) -> list[Turn]:
    """The turns ``events`` tell of (a fresh fold)."""
    builder = TurnBuilder()
    for event in events:
        builder(event)
    return builder.turns
