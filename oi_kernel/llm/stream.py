"""One streamed attempt: consume litellm's chunks into a ``Reply`` (text, tool calls, usage),
passing text deltas on as they arrive."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

from oi_kernel.core.types import Reply, ToolCall, Usage


class CallbackError(Exception):
    """Wraps an exception raised by the caller's on_text, so it is not retried or mapped."""

    def __init__(self, original: Exception) -> None:
        super().__init__(repr(original))
        self.original = original


class Stream:
    """One attempt: consume litellm's stream, collecting text, tool calls and usage."""

    def __init__(self, on_text: Callable[[str], None] | None) -> None:
        self.on_text = on_text
        self.parts: list[str] = []
        self.calls: dict[int, ToolCall] = {}
        self.usage: Any = None
        self.finish_reason: str | None = None
        self.model = ""

    @property
    def text(self) -> str:
        return "".join(self.parts)

    @property
    def started(self) -> bool:
        return bool(self.parts or self.calls)

    async def run(self, litellm: ModuleType, kwargs: dict) -> Reply:
        started = time.monotonic()
        response = await litellm.acompletion(**kwargs)
        try:
            async for chunk in response:
                self._take(chunk)
        finally:
            await response.aclose()  # prompt close on cancellation too
        if _was_cut(response):
            raise StreamEndedEarly("the connection closed before the reply finished")
        return Reply(
            text=self.text,
            tool_calls=[self.calls[i] for i in sorted(self.calls)],
            usage=self._usage(litellm, kwargs["model"]),
            model=kwargs["model"],
            latency_s=time.monotonic() - started,
            finish_reason=self.finish_reason,
        )

    def _take(self, chunk: Any) -> None:
        if getattr(chunk, "usage", None) is not None:
            self.usage = chunk.usage
        for choice in getattr(chunk, "choices", None) or []:
            if choice.finish_reason:
                self.finish_reason = choice.finish_reason
            delta = choice.delta
            if delta is None:
                continue
            if delta.content:
                content = _valid_text(delta.content)
                self.parts.append(content)
                if self.on_text is not None:
                    try:
                        self.on_text(content)
                    except Exception as exc:
                        raise CallbackError(exc) from exc
            for call in getattr(delta, "tool_calls", None) or []:
                self._take_call(call)

    def _take_call(self, delta: Any) -> None:
        index = delta.index
        if index is None:  # some providers omit it: a new id starts a new call
            known = [i for i, c in self.calls.items() if c.id == delta.id]
            index = (
                known[0] if known else (len(self.calls) if delta.id else max(self.calls, default=0))
            )
        call = self.calls.setdefault(index, ToolCall(id="", name="", arguments=""))
        if delta.id:
            call.id = delta.id
        function = delta.function
        if function is None:
            return
        if function.name and function.name != call.name:
            call.name += _valid_text(function.name)
        if function.arguments:
            call.arguments += _valid_text(function.arguments)

    def _usage(self, litellm: ModuleType, model: str) -> Usage:
        prompt = int(getattr(self.usage, "prompt_tokens", 0) or 0)
        completion = int(getattr(self.usage, "completion_tokens", 0) or 0)
        try:
            costs = litellm.cost_per_token(
                model=model, prompt_tokens=prompt, completion_tokens=completion
            )
            cost: float | None = float(sum(costs))
        except Exception:
            cost = None
        return Usage(prompt, completion, cost)


_LONE_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def _valid_text(text: str) -> str:
    """``text`` with lone surrogates (a JSON "\\ud83d" without its pair) made U+FFFD: they
    cannot be encoded as UTF-8, so the Jupyter message, the log line and the next request
    that carried them would fail."""
    return _LONE_SURROGATE_RE.sub("\ufffd", text)


class StreamEndedEarly(Exception):
    """The stream finished without the provider ever sending a finish_reason."""


def _was_cut(response: Any) -> bool:
    # litellm's default aiohttp transport swallows an incomplete chunked body and then
    # invents finish_reason "stop"; its wrapper still records whether one really arrived.
    received = getattr(response, "received_finish_reason", "unknown")
    intermittent = getattr(response, "intermittent_finish_reason", None)
    return received is None and intermittent is None
