"""The session's ``%`` commands from the Python API (``Interpreter.rebuild``,
``interpreter.states``): one run on the Interpreter's loop, what it said as text."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from oi_kernel.session.commands import CommandContext


def said(it: Any, step: Callable[[CommandContext], Awaitable[Any]]) -> str:
    """Run ``step(ctx)`` on the Interpreter ``it``'s loop as the kernel runs its ``%``
    commands (``it`` idle first, then busy until it ends), with a ``CommandContext`` that
    collects what it says; that text, paragraphs joined."""
    from oi_kernel.session.commands import CommandContext

    it._check_idle()
    lines: list[str] = []
    ctx = CommandContext(it.session, lines.append, lambda: lambda event: None)
    it._busy = True
    try:
        it._res.loop.call(step(ctx))
    finally:
        it._busy = False
    return "\n\n".join(lines)
