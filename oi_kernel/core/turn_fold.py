"""The record of each turn, derived from the turn's events: a pure fold.

The engine reports what happened only as events (``core.events``); a ``Turn`` and its
``StepRecord`` list are what those events add up to. ``TurnBuilder`` is that sum: given the
events of one or more turns in order, it builds their ``Turn`` records. The engine's turn loop
makes each turn's record itself and its sink folds the turn's events into it (``fold_into``)
before the session log or a front door sees them; what is recorded outside a turn's sink
(``Engine.publish``) is folded into the latest turn; anyone else holding the events (the API,
an ACP client, a replay of a recorded turn) gets the same records by folding them again.

Each event adds its own part (``Recorded.fold``): ``ReplyDone`` counts an LLM call and its
usage, ``StepReviewed`` adds a ``StepRecord``, ``Decided`` and ``StepDone`` fill it in,
``TurnDone`` ends the turn, and so on (``core.events``). Events outside a turn, and turn
events before any ``TurnStarted``, change nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

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


def fold_into(turn: Turn) -> Callable[[E.Event], None]:
    """Folds the events of one turn into ``turn``, a record its loop made (its
    ``TurnStarted`` is already in it)."""

    def fold(event: E.Event) -> None:
        if isinstance(event, E.Recorded) and not isinstance(event, E.TurnStarted):
            event.fold(turn)

    return fold


def rebuild(events: Iterable[E.Event]) -> list[Turn]:
    """The turns ``events`` tell of (a fresh fold)."""
    builder = TurnBuilder()
    for event in events:
        builder(event)
    return builder.turns
