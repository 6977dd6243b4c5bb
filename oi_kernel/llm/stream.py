"""One streamed attempt: consume litellm's chunks into a ``Reply`` (answer text, reasoning,
tool calls, usage), passing answer and reasoning deltas on as they arrive.

Reasoning comes as a ``reasoning_content`` delta field (litellm's name for DeepSeek's
``reasoning_content``, vLLM's ``reasoning``, Anthropic thinking blocks and Ollama's
``thinking``; the attribute is absent, not None, on chunks without it) or as
``<think>...</think>`` at the start of the text (``core.reasoning``): both go to
``on_reasoning``, never to ``on_text``, and into ``Reply.reasoning``, never ``Reply.text``."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

from oi_kernel.core.codeblocks import first_block_end
from oi_kernel.core.reasoning import ThinkSplitter, split_reasoning
from oi_kernel.core.types import Reply, ToolCall, Usage
from oi_kernel.llm import boundary, fastpath


class CallbackError(Exception):
    """Wraps an exception raised by the caller's on_text, so it is not retried or mapped."""

    def __init__(self, original: Exception) -> None:
        super().__init__(repr(original))
        self.original = original


class Stream:
    """One attempt: consume litellm's stream, collecting text, reasoning, tool calls and
    usage. ``stop_after_block``: end the reply after its first complete fenced code block
    (what a small model writes after it is made-up output and chatter)."""

    def __init__(self, on_text: Callable[[str], None] | None,
                 on_reasoning: Callable[[str], None] | None = None,
                 stop_after_block: bool = False) -> None:
        self.on_text = on_text
        self.on_reasoning = on_reasoning
        self.stop_after_block = stop_after_block
        self.parts: list[str] = []  # the text as sent, <think> included
        self.reasoning_parts: list[str] = []  # the reasoning_content field
        self.answer = ""  # the answer text passed on so far
        self.splitter = ThinkSplitter()
        self.calls: dict[int, ToolCall] = {}
        self.usage: Any = None
        self.finish_reason: str | None = None
        self.stopped = False  # ended on purpose after the first code block
        self.model = ""

    @property
    def text(self) -> str:
        """The answer so far (reasoning left out)."""
        return split_reasoning("".join(self.parts))[1]

    @property
    def started(self) -> bool:
        return bool(self.parts or self.calls or self.reasoning_parts)

    async def run(self, litellm: ModuleType, kwargs: dict) -> Reply:
        started = time.monotonic()
        response = await litellm.acompletion(**kwargs)
        skip_logging = boundary.owns_process() and fastpath.logs_nothing(litellm)
        try:
            async for chunk in response:
                self._take(chunk)
                if self.stopped or (skip_logging and fastpath.usage_was_last(response)):
                    break
            if not self.stopped:
                self._pass_on(self.splitter.finish())
        finally:
            await response.aclose()  # prompt close on cancellation too
        if not self.stopped and _was_cut(response):
            raise StreamEndedEarly("the connection closed before the reply finished")
        inline, answer = split_reasoning("".join(self.parts))
        reasoning = "\n\n".join(p for p in ("".join(self.reasoning_parts).strip(), inline) if p)
        return Reply(
            text=answer,
            tool_calls=_with_unique_ids([self.calls[i] for i in sorted(self.calls)]),
            usage=self._usage(litellm, kwargs, answer),
            model=kwargs["model"],
            latency_s=time.monotonic() - started,
            finish_reason="stop" if self.stopped else self.finish_reason,
            reasoning=reasoning,
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
            reasoning = getattr(delta, "reasoning_content", None)
            if isinstance(reasoning, str) and reasoning:
                reasoning = _valid_text(reasoning)
                self.reasoning_parts.append(reasoning)
                self._call(self.on_reasoning, reasoning)
            if delta.content:
                content = _valid_text(delta.content)
                self.parts.append(content)
                self._pass_on(self.splitter.feed(content))
            for call in getattr(delta, "tool_calls", None) or []:
                self._take_call(call)

    def _pass_on(self, pieces: list[tuple[str, str]]) -> None:
        for kind, piece in pieces:
            if kind == "thinking":
                self._call(self.on_reasoning, piece)
                continue
            if self.stop_after_block and not self.calls:
                end = first_block_end(self.answer + piece)
                if end is not None:  # cut here: the text after the block is not the reply
                    over = len(self.answer) + len(piece) - end
                    piece = piece[: len(piece) - over]
                    raw = "".join(self.parts)
                    self.parts = [raw[: len(raw) - over]]
                    self.stopped = True
            self.answer += piece
            self._call(self.on_text, piece)
            if self.stopped:
                return

    @staticmethod
    def _call(callback: Callable[[str], None] | None, text: str) -> None:
        if callback is None or not text:
            return
        try:
            callback(text)
        except Exception as exc:
            raise CallbackError(exc) from exc

    def _take_call(self, delta: Any) -> None:
        index = delta.index
        if index is None:  # some providers omit it: a new id starts a new call
            known = [i for i, c in self.calls.items() if c.id == delta.id]
            index = (
                known[0] if known else (len(self.calls) if delta.id else max(self.calls, default=0))
            )
        call = self.calls.get(index, ToolCall(id="", name="", arguments=""))
        function = delta.function
        name, arguments = call.name, call.arguments
        if function is not None and function.name and function.name != name:
            name += _valid_text(function.name)
        if function is not None and function.arguments:
            arguments += _valid_text(function.arguments)
        self.calls[index] = ToolCall(delta.id or call.id, name, arguments)

    def _usage(self, litellm: ModuleType, kwargs: dict, answer: str) -> Usage:
        if self.usage is None:  # none sent (a stream ended early, some local servers)
            prompt, completion = _estimate(litellm, kwargs, answer)
        else:
            prompt = int(getattr(self.usage, "prompt_tokens", 0) or 0)
            completion = int(getattr(self.usage, "completion_tokens", 0) or 0)
        try:
            costs = litellm.cost_per_token(
                model=kwargs["model"], prompt_tokens=prompt, completion_tokens=completion
            )
            cost: float | None = float(sum(costs))
        except Exception:
            cost = None
        return Usage(prompt, completion, cost)


def _estimate(litellm: ModuleType, kwargs: dict, answer: str) -> tuple[int, int]:
    """Prompt and completion tokens counted here, when the stream carried no usage."""
    try:
        prompt = int(litellm.token_counter(model=kwargs["model"], messages=kwargs["messages"]))
        completion = int(litellm.token_counter(model=kwargs["model"], text=answer)) if answer else 0
    except Exception:
        return 0, 0
    return prompt, completion


def _with_unique_ids(calls: list[ToolCall]) -> list[ToolCall]:
    """Every call with an id of its own: each tool result must name the call it answers,
    and some servers send none (or the same one twice) for parallel calls."""
    seen: set[str] = set()
    unique = []
    for index, call in enumerate(calls):
        if not call.id or call.id in seen:
            base = call.id or "call"
            call = ToolCall(next(f"{base}_{index + n}" for n in range(len(calls) + 1)
                                 if f"{base}_{index + n}" not in seen), call.name, call.arguments)
        seen.add(call.id)
        unique.append(call)
    return unique


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
