"""What the engine reports while a turn runs: one event type per thing that happened.

Front doors turn events into what their user sees (``session.view.TurnView`` for
notebooks and terminals, ``api.chunks`` for the Python API); the engine never renders.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from oi_kernel.core.types import ApprovalRequest, CodeBlock, Reply, StepRecord, Turn


@dataclass
class TextDelta:
    """A piece of the model's reply as it streams."""

    text: str


@dataclass
class ReasoningDelta:
    """A piece of the model's reasoning ("thinking") as it streams: shown, never run."""

    text: str


@dataclass
class ReplyDone:
    """The model's reply of one LLM call is complete, with the blocks found in it."""

    step: int
    reply: Reply
    blocks: list[CodeBlock]


@dataclass
class CodeProposed:
    """A block is about to be decided (``needs_approval`` False: it runs without asking)."""

    request: ApprovalRequest
    needs_approval: bool = True


@dataclass
class Decided:
    """The decision about a step is known."""

    record: StepRecord


@dataclass
class StepDone:
    """A step ran; its record holds the status and outputs."""

    record: StepRecord


@dataclass
class Notice:
    """Something the user should know (a retry, a refused language, a cap, a restart)."""

    text: str
    level: Literal["info", "warning", "error"] = "info"


@dataclass
class TurnDone:
    """The instruction finished (in any way)."""

    turn: Turn


Event = (
    TextDelta | ReasoningDelta | ReplyDone | CodeProposed | Decided | StepDone | Notice | TurnDone
)
EventSink = Callable[[Event], None]
