"""What the front door knows of the request a turn answers, travelling with its event sink.

A front door starts a turn with a sink for its events; when the turn answers a request of its
own (a kernel cell, a ``%%oi`` cell) the sink carries that request's ``TurnContext``:
``with_context(sink, context)``. Everything below the front door reads the request's facts from
there, never from the front door's (or the engine's) state: the engine hands the context to the
executor with each block it runs (``Executor.run(block, context=...)``), so where code runs
learns which request its output belongs to and whether the user may be asked for input; each
approval request carries who sent the instruction and whether stdin may be used. So two turns
(two front doors, two collaborators) never read each other's. A command that runs code outside
a turn hands on the context of its cell's sink the same way. A sink without one (the API, ACP, a
test) has ``NO_CONTEXT``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# ``core.events.EventSink`` (not imported: events -> tools -> executor -> here would be a cycle)
EventSink = Callable[[Any], None]


@dataclass(frozen=True)
class TurnContext:
    """The request a turn answers: ``parent_id`` is its msg_id (the code's output is routed
    to it, and widgets' Output capture follows it), None when there is none; ``allow_stdin``:
    the user may be asked on stdin (the code's ``input()``, the approval question);
    ``author``: who sent it (``core.identity``), "" when the front door cannot tell (the
    engine then names the process's user)."""

    parent_id: str | None = None
    allow_stdin: bool = False
    author: str = ""


NO_CONTEXT = TurnContext()


@dataclass(frozen=True)
class ContextSink:
    """An event sink that carries the context of its turn."""

    emit: EventSink
    context: TurnContext

    def __call__(self, event: Any) -> None:
        self.emit(event)


def with_context(emit: EventSink, context: TurnContext) -> ContextSink:
    return ContextSink(emit, context)


def context_of(emit: EventSink) -> TurnContext:
    """The context a sink carries (``NO_CONTEXT`` for a plain callable)."""
    return emit.context if isinstance(emit, ContextSink) else NO_CONTEXT
