"""How a decision is asked: the stdin prompt, and a callback for the Python API.

The widget approval card lives in ``card.py``; every approver here only turns a
question into a ``Decision`` and knows nothing about LLMs or kernels.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from oi_kernel.core.types import ApprovalRequest, Decision
from oi_kernel.errors import ApprovalUnavailableError

Ask = Callable[[str], Awaitable[str]]

STDIN_PROMPT = "Run this code? [y/N/e(dit)/a(ll)/s(top)] "
# Before the question when the model's reply was nothing but code (small-model mode).
RECOGNISED_PROMPT = "The reply had no code fence; it was recognised as code. "
EDIT_PROMPT = "Replacement code (one line; write \\n for a newline): "


def parse_answer(answer: str) -> str:
    """Map a typed answer to run / skip / edit / all / stop."""
    word = answer.strip().lower()
    if word in {"y", "yes", "r", "run"}:
        return "run"
    if word in {"e", "edit"}:
        return "edit"
    if word in {"a", "all", "run all"}:
        return "all"
    if word in {"s", "stop", "q", "quit"}:
        return "stop"
    return "skip"


class StdinApprover:
    """Asks on the frontend's stdin; refuses when there is none."""

    shows_code = False

    def __init__(self, ask: Ask, has_stdin: Callable[[], bool]) -> None:
        self.ask = ask
        self.has_stdin = has_stdin

    async def decide(self, request: ApprovalRequest) -> Decision:
        if not self.has_stdin():
            raise ApprovalUnavailableError()
        code = request.block.code
        prompt = (RECOGNISED_PROMPT if request.block.bare else "") + STDIN_PROMPT
        choice = parse_answer(await self.ask(prompt))
        if choice == "edit":
            edited = (await self.ask(EDIT_PROMPT)).replace("\\n", "\n")
            if not edited.strip():
                return Decision("skip", reason="the user cleared the code")
            return Decision("run", edited, edited=edited != code)
        if choice in {"run", "all"}:
            return Decision("run", code, run_all=choice == "all")
        if choice == "stop":
            return Decision("stop")
        return Decision("skip")


class CallbackApprover:
    """Wraps ``approve(request) -> bool | str | Decision`` (sync or async) for the API.

    True runs the code, False skips it, a string runs that string instead.
    """

    shows_code = False

    def __init__(self, approve: Callable[[ApprovalRequest], Any]) -> None:
        self.approve = approve

    async def decide(self, request: ApprovalRequest) -> Decision:
        answer = self.approve(request)
        if inspect.isawaitable(answer):
            answer = await answer
        if isinstance(answer, Decision):
            return answer
        if isinstance(answer, str):
            return Decision("run", answer, edited=answer != request.block.code)
        if answer:
            return Decision("run", request.block.code)
        return Decision("skip")


class RefuseApprover:
    """No way to ask (the API without ``approve``): code that needs approval is not run."""

    async def decide(self, request: ApprovalRequest) -> Decision:
        raise ApprovalUnavailableError()
