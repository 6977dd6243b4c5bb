"""The recorded LLM: answers with the replies a session log holds, in order, and never
calls a model. Replay (``oi_kernel.api.replay``) runs a session through it."""

from __future__ import annotations

import dataclasses
from typing import Any

from oi_kernel.core.types import Reply, ToolCall, Usage
from oi_kernel.errors import LLMError, OIError
from oi_kernel.llm.client import LLM


class ReplayDivergedError(OIError):
    """The replayed session asked for something the log does not hold."""


class RecordedLLM(LLM):
    """An LLM that answers with a recorded turn's replies, in order; never calls a model."""

    is_recorded = True  # no model is called: the policy's allowed models do not apply

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.turn: Any = None  # a RecordedTurn: .index, .tools, .replies
        self.used = 0  # replies of the current turn given so far
        self.sampled = 0  # and samples (small-model consensus)

    def begin_turn(self, turn: Any) -> None:
        self.turn, self.used, self.sampled = turn, 0, 0

    def check_configured(self) -> None:
        """Always configured: the replies are in the log."""

    def secrets(self) -> list[str]:
        return []

    def uses_tools(self) -> bool:
        return self.turn.tools if self.turn is not None else True

    def small_model_verdict(self) -> tuple[bool, str]:
        """Small-model mode as recorded for the turn (older logs: decided by the name)."""
        small = getattr(self.turn, "small", None)
        if small is None:
            return super().small_model_verdict()
        return bool(small), "as recorded in the session log"

    def take_notice(self) -> str:
        return ""

    async def prepare(self) -> None:
        """Nothing to load: litellm is never imported by a replay."""

    def count_tokens(self, text: str) -> int:
        return len(text) // 4 + 1

    def context_window(self) -> int | None:
        return 10**9  # the replies are recorded: nothing needs to fit

    def supports_vision(self) -> bool:
        return False

    async def sample(self, messages: list[dict], tools: list[dict] | None,
                     sampling: dict[str, Any]) -> Reply:
        """The turn's next recorded sample; past the last one, an LLMError, which ends the
        sampling as it ended when recorded (by time or by an error)."""
        recorded = getattr(self.turn, "samples", [])
        if self.sampled >= len(recorded):
            raise LLMError("no more samples were recorded for this instruction")
        self.sampled += 1
        return _reply(recorded[self.sampled - 1])

    async def stream(
        self,
        messages: list[dict],
        tools: list[dict] | None,
        on_text: Any = None,
        on_retry: Any = None,
        sampling: dict[str, Any] | None = None,  # a recorded reply is what it was
        on_reasoning: Any = None,
    ) -> Reply:
        turn = self.turn
        recorded = turn.replies if turn is not None else []
        if self.used >= len(recorded):
            index = turn.index if turn is not None else 0
            raise ReplayDivergedError(
                f"The replay diverged at turn {index} step {self.used + 1}: the session asked "
                f"the LLM for reply {self.used + 1}, but the log recorded {len(recorded)} for "
                "this instruction."
            )
        record = recorded[self.used]
        self.used += 1
        if record.get("event") == "llm_error":
            raise LLMError(
                str(record.get("error") or "LLM error"), str(record.get("partial_text") or "")
            )
        reply = dataclasses.replace(_reply(record), model=self.model)
        if on_reasoning is not None and reply.reasoning:
            on_reasoning(reply.reasoning)
        if on_text is not None and reply.text:
            on_text(reply.text)
        return reply


def _reply(r: dict[str, Any]) -> Reply:
    usage = r.get("usage") or {}
    return Reply(
        text=str(r.get("text") or ""),
        tool_calls=[
            ToolCall(
                str(c.get("id") or ""), str(c.get("name") or ""), str(c.get("arguments") or "")
            )
            for c in r.get("tool_calls") or []
        ],
        usage=Usage(
            int(usage.get("prompt_tokens") or 0),
            int(usage.get("completion_tokens") or 0),
            usage.get("cost"),
        ),
        latency_s=float(r.get("latency_s") or 0.0),
        finish_reason=r.get("finish_reason"),
        reasoning=str(r.get("reasoning") or ""),
    )
