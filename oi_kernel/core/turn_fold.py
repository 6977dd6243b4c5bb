"""The record of each turn, derived from the turn's events: a pure fold.

The engine reports what happened only as events (``core.events``); a ``Turn`` and its
``StepRecord`` list are what those events add up to. ``TurnBuilder`` is that sum: given the
events of one or more turns in order, it builds their ``Turn`` records. The engine's turn loop
makes each turn's record itself and its sink folds the turn's events into it (``fold_into``)
before the session log or a front door sees them; what is recorded outside a turn's sink
(``Engine.publish``) is folded into the latest turn; anyone else holding the events (the API,
an ACP client, a replay of a recorded turn) gets the same records by folding them again.

Which event sets what:

===================  ============================================================
``TurnStarted``      a new ``Turn`` (index, instruction, started, conversation_index)
``LLMRequested``     the outside text noted so far is ``read`` (the model is sent it)
``ReplyDone``        ``llm_calls`` + 1, ``usage`` + the reply's
``SampleDrawn``      ``samples`` + 1, ``usage`` + the sample's
``StepReviewed``     a new ``StepRecord`` (index, proposed block)
``Decided``          the step's ``decision``; a step that ends there: status, feedback
``UntrustedNotice``  ``untrusted_noticed``
``StepDone``         status, outputs, feedback, duration_s, changes; ``untrusted``
``AnswerChecked``    ``answer_check`` (the answer's numbers and where each was found)
``TurnDone``         ``end_reason``, ``final_text``
===================  ============================================================

Events outside a turn, and turn events before any ``TurnStarted``, change nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from oi_kernel.core import events as E
from oi_kernel.core.types import CodeBlock, StepRecord, Turn


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
        apply = _APPLY.get(type(event))
        if apply is not None and self.turns:
            apply(self.turns[-1], event)


def fold_into(turn: Turn) -> Callable[[E.Event], None]:
    """Folds the events of one turn into ``turn``, a record its loop made (its
    ``TurnStarted`` is already in it)."""

    def fold(event: E.Event) -> None:
        apply = _APPLY.get(type(event))
        if apply is not None:
            apply(turn, event)

    return fold


def rebuild(events: Iterable[E.Event]) -> list[Turn]:
    """The turns ``events`` tell of (a fresh fold)."""
    builder = TurnBuilder()
    for event in events:
        builder(event)
    return builder.turns


def _step(turn: Turn, index: int, block: CodeBlock) -> StepRecord:
    """The turn's step ``index``, added when this is the first event of it."""
    for record in reversed(turn.steps):
        if record.index == index:
            return record
    record = StepRecord(index=index, block=block)
    turn.steps.append(record)
    return record


def _requested(turn: Turn, event: E.LLMRequested) -> None:
    for entry in turn.untrusted:
        entry["read"] = True


def _replied(turn: Turn, event: E.ReplyDone) -> None:
    turn.llm_calls += 1
    turn.usage = turn.usage + event.reply.usage


def _sampled(turn: Turn, event: E.SampleDrawn) -> None:
    turn.samples += 1
    turn.usage = turn.usage + event.reply.usage


def _reviewed(turn: Turn, event: E.StepReviewed) -> None:
    _step(turn, event.step, event.block)


def _decided(turn: Turn, event: E.Decided) -> None:
    told = event.record
    record = _step(turn, told.index, told.block)
    record.decision = told.decision
    if told.decision is None or told.decision.action != "run":  # the step ends here
        record.status, record.feedback = told.status, told.feedback


def _noticed(turn: Turn, event: E.UntrustedNotice) -> None:
    turn.untrusted_noticed = True


def _done(turn: Turn, event: E.StepDone) -> None:
    told = event.record
    record = _step(turn, told.index, told.block)
    record.status, record.outputs, record.feedback = told.status, told.outputs, told.feedback
    record.duration_s, record.changes = told.duration_s, told.changes
    turn.untrusted += [{"step": told.index, **source, "read": False} for source in event.outside]


def _checked(turn: Turn, event: E.AnswerChecked) -> None:
    turn.answer_check = event.check.to_dict()


def _ended(turn: Turn, event: E.TurnDone) -> None:
    turn.end_reason, turn.final_text = event.reason, event.final_text


_APPLY: dict[type, Callable[[Turn, Any], None]] = {
    E.LLMRequested: _requested,
    E.ReplyDone: _replied,
    E.SampleDrawn: _sampled,
    E.StepReviewed: _reviewed,
    E.Decided: _decided,
    E.UntrustedNotice: _noticed,
    E.StepDone: _done,
    E.AnswerChecked: _checked,
    E.TurnDone: _ended,
}
