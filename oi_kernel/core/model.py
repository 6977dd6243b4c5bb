"""The engine's third seam: the model it talks to (``Model``).

Everything the turn loop (``core.engine``, ``core.steps``), the model policy
(``core.small_model``) and the session's secrets (``safety.redact.SecretSet``) ask of the LLM.
``oi_kernel.llm.client.LLM`` implements it through litellm, ``oi_kernel.llm.recorded.RecordedLLM``
from a session log; a test can hand the engine any small class with these members (see
``tests/fake_model.py``). Front doors that built the ``LLM`` themselves use more of it (its
configuration traits, ``observe``); the engine never does.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Protocol

from oi_kernel.core.types import Reply


class Model(Protocol):
    """One model, as the engine asks it: what it is, what it can take, and a request."""

    #: The model's name as configured (logged with every request; a front door may change it).
    model: str

    @property
    def is_small_model(self) -> bool:
        """Whether the engine gives it small-model help (``core.small_model``); no I/O."""
        ...

    def freeze(self) -> Any:
        """Its settings now, frozen (a turn's ``TurnSettings.llm``; at least ``model``)."""
        ...

    def pinned(self, settings: Any) -> AbstractContextManager[None]:
        """A block in which it is asked with ``settings`` (from ``freeze``), whatever is
        changed meanwhile: the running turn's."""
        ...

    def check_configured(self) -> None:
        """Raise ``NotConfiguredError`` (saying how to configure one) when there is no model."""
        ...

    async def prepare(self) -> None:
        """Get ready for a turn's first request without blocking the event loop (e.g. import
        litellm, ask the model's server what it is)."""
        ...

    def take_notice(self) -> str:
        """A message to show the user once (e.g. that small-model mode turned itself on), or
        ""."""
        ...

    def uses_tools(self) -> bool:
        """Whether to offer tools (the execute tool) or expect fenced code in the text."""
        ...

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text``, approximately (the context budget)."""
        ...

    def context_window(self) -> int | None:
        """The model's input limit in tokens, or None when it is not known."""
        ...

    def supports_vision(self) -> bool:
        """Whether images in outputs may be sent to it."""
        ...

    def secrets(self) -> list[str]:
        """Key values to mask in everything the model reads and the session records."""
        ...

    async def stream(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        on_text: Callable[[str], None] | None = None,
        on_retry: Callable[[str], None] | None = None,
        sampling: dict[str, Any] | None = None,
        on_reasoning: Callable[[str], None] | None = None,
    ) -> Reply:
        """Send one request (chat messages and function tools in OpenAI's shape; no tools:
        None) and return the whole reply; text deltas go to ``on_text``,
        reasoning deltas to ``on_reasoning``, a retry's reason to ``on_retry``; ``sampling``
        overrides request parameters (``temperature``, ``seed``). Failures raise ``LLMError``
        (``LLMToolsUnsupportedError`` when the server refuses tools)."""
        ...

    async def sample(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                     sampling: dict[str, Any]) -> Reply:
        """Another reply to a request already answered, shown to no one (small-model
        consensus, ``core.consensus``)."""
        ...
