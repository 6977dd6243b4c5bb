"""A model for unit tests of the engine: a plain class with the members of
``oi_kernel.core.model.Model`` whose replies come from a list (no litellm, no server)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

from oi_kernel.core.types import Reply


@dataclass(frozen=True)
class FrozenName:
    model: str


class FakeModel:
    """Replies from a list, in order; records each request and its sampling.

    ``small``: whether the engine treats it as a small model (small models get fenced code,
    capable ones the execute tool, as ``LLM`` decides for real ones)."""

    def __init__(self, replies: Iterable[str | Reply] = (), model: str = "fake",
                 small: bool = False) -> None:
        self.model = model
        self.small = small
        self.replies = list(replies)
        self.requests: list[list[dict[str, Any]]] = []
        self.samplings: list[dict[str, Any] | None] = []

    @property
    def is_small_model(self) -> bool:
        return self.small

    def freeze(self) -> Any:
        return FrozenName(self.model)

    def pinned(self, settings: Any) -> AbstractContextManager[None]:
        return nullcontext()

    def check_configured(self) -> None:
        pass

    async def prepare(self) -> None:
        pass

    def take_notice(self) -> str:
        return ""

    def uses_tools(self) -> bool:
        return not self.small

    def count_tokens(self, text: str) -> int:
        return len(text) // 4 + 1

    def context_window(self) -> int | None:
        return 4096

    def supports_vision(self) -> bool:
        return False

    def secrets(self) -> list[str]:
        return []

    async def stream(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        on_text: Callable[[str], None] | None = None,
        on_retry: Callable[[str], None] | None = None,
        sampling: dict[str, Any] | None = None,
        on_reasoning: Callable[[str], None] | None = None,
    ) -> Reply:
        self.requests.append(messages)
        self.samplings.append(sampling)
        reply = self.replies.pop(0)
        reply = reply if isinstance(reply, Reply) else Reply(reply)
        if on_text is not None and reply.text:
            on_text(reply.text)
        return reply

    async def sample(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                     sampling: dict[str, Any]) -> Reply:
        return await self.stream(messages, tools, sampling=sampling)
