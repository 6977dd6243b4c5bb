"""The engine's two seams: where approved code runs (``Executor``) and how a decision is
asked (``Approver``). Every front door plugs its own implementations in."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from oi_kernel.core.turn_context import NO_CONTEXT, TurnContext
from oi_kernel.core.types import ApprovalRequest, CodeBlock, Decision

ExecStatus = Literal["ok", "error", "interrupted", "died"]


@dataclass
class ExecResult:
    """What running one block produced."""

    status: ExecStatus
    outputs: list[dict[str, Any]] = field(default_factory=list)
    message: str = ""  # for "died": what happened and what it means


class Executor(Protocol):
    """Where approved code runs: a child kernel (``ChildRunner``) or the user's own IPython
    shell (``ShellExecutor``, for ``%%oi``)."""

    #: The change-tracking probe (``probe(name, *args, settings=...)``, see core.rollback and
    #: execution.probe), or None: then no change summaries, checkpoints or undo of effects.
    probe: Callable[..., Awaitable[dict[str, Any]]] | None

    @property
    def sandboxed(self) -> bool:
        """Whether the code runs confined (shown on the card and told to the model)."""
        ...

    @property
    def cwd(self) -> str:
        """The working directory the code runs in (for the system prompt)."""
        ...

    async def run(self, block: CodeBlock, context: TurnContext = NO_CONTEXT) -> ExecResult:
        """Run one approved block; cancellation interrupts it. ``context`` is the request
        the turn answers (``core.turn_context``): its output belongs there."""
        ...

    async def namespace_summary(self) -> str:
        """The user's variables, briefly, when the code shares the user's namespace (the
        model is told about them); "" for an executor with a namespace of its own."""
        ...


class Approver(Protocol):
    """How a decision is asked: widget card, stdin prompt, a callback, or a refusal."""

    async def decide(self, request: ApprovalRequest) -> Decision: ...
