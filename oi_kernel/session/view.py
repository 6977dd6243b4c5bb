"""Renders engine events as Jupyter display messages, for any frontend.

The view knows nothing about kernels: it is handed a ``publish(msg_type,
content)`` callable. Streaming text goes into one display per LLM reply that is
updated in place; updates are coalesced so a fast stream costs a handful of
messages per second, not one per token. The model's reasoning goes into a display of its
own, collapsed under "thinking" (one line in plain-text frontends).
"""

from __future__ import annotations

import asyncio
import html
import uuid
from collections.abc import Callable
from typing import Any

from oi_kernel.core import events as E
from oi_kernel.core.types import Turn

Publish = Callable[[str, dict[str, Any]], None]


def markdown_bundle(text: str, plain: str | None = None) -> dict[str, Any]:
    return {"text/markdown": text, "text/plain": plain if plain is not None else text}


def code_markdown(language: str, code: str) -> str:
    fence = "````" if "```" in code else "```"
    return f"{fence}{language}\n{code}\n{fence}"


RECOGNISED_NOTE = "recognised as code (the reply had no code fence or tool call)"


def thinking_bundle(text: str, done: bool) -> dict[str, Any]:
    """The reasoning, collapsed under a "thinking" summary (HTML); one line as plain text."""
    words = len(text.split())
    label = f"thinking · {words:,} words" if done else f"thinking… · {words:,} words"
    body = (f'<details class="oi-thinking"><summary style="cursor:pointer;color:#777">'
            f'{label}</summary><pre style="white-space:pre-wrap;color:#777;margin:4px 0">'
            f"{html.escape(text.strip())}</pre></details>")
    return {"text/html": body, "text/plain": f"[{label}]" if done else "[thinking…]"}


class _Display:
    """One display updated in place: created on the first flush, then updated."""

    def __init__(self, publish: Publish) -> None:
        self.publish = publish
        self.display_id: str | None = None
        self.sent = 0

    def show(self, data: dict[str, Any]) -> None:
        content: dict[str, Any] = {"data": data, "metadata": {}}
        if self.display_id is None:
            self.display_id = uuid.uuid4().hex
            content["transient"] = {"display_id": self.display_id}
            self.publish("display_data", content)
        else:
            content["transient"] = {"display_id": self.display_id}
            self.publish("update_display_data", content)
        self.sent += 1


class TurnView:
    """One cell's rendering of a turn."""

    def __init__(self, publish: Publish, *, coalesce_s: float = 0.05, shows_code: bool = True):
        self.publish = publish
        self.coalesce_s = coalesce_s
        self.shows_code = shows_code  # False when the approver displays the code itself
        self._text = ""
        self._thinking = ""
        self._answer = _Display(publish)
        self._thought = _Display(publish)
        self._flush_handle: asyncio.TimerHandle | None = None

    @property
    def updates_sent(self) -> int:
        return self._answer.sent + self._thought.sent

    # ------------------------------------------------------------ streaming text
    def _send(self) -> None:
        self._flush_handle = None
        if self._thinking.strip():
            self._thought.show(thinking_bundle(self._thinking, done=bool(self._text.strip())))
        if self._text.strip():
            self._answer.show(markdown_bundle(self._text))

    def _on_delta(self, text: str, thinking: bool = False) -> None:
        if thinking:
            self._thinking += text
            first = self._thought.display_id is None and bool(self._thinking.strip())
        else:
            self._text += text
            first = self._answer.display_id is None and bool(self._text.strip())
        if first:
            self._send()  # the first words show at once
        elif self._flush_handle is None:
            loop = asyncio.get_running_loop()
            self._flush_handle = loop.call_later(self.coalesce_s, self._send)

    def _end_reply(self, text: str | None = None, reasoning: str | None = None) -> None:
        """Flush the reply's displays; with the complete reply, show its final split (a
        lone ``</think>`` turns what streamed as answer into reasoning)."""
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        if reasoning is not None and reasoning.strip() != self._thinking.strip():
            self._thinking = reasoning
        if text is not None and text.strip() != self._text.strip() and (
                text.strip() or self._answer.display_id is not None):
            self._text = text
        if self._thinking.strip():
            self._thought.show(thinking_bundle(self._thinking, done=True))
        if self._text.strip():
            self._answer.show(markdown_bundle(self._text))
        self._text = self._thinking = ""
        self._answer, self._thought = _Display(self.publish), _Display(self.publish)

    # ------------------------------------------------------------ other events
    def show_markdown(self, text: str, plain: str | None = None) -> None:
        self.publish("display_data", {"data": markdown_bundle(text, plain), "metadata": {}})

    def __call__(self, event: E.Event) -> None:
        if isinstance(event, E.TextDelta):
            self._on_delta(event.text)
        elif isinstance(event, E.ReasoningDelta):
            self._on_delta(event.text, thinking=True)
        elif isinstance(event, E.ReplyDone):
            self._end_reply(event.reply.text, event.reply.reasoning)
        elif isinstance(event, E.CodeProposed):
            req = event.request
            if self.shows_code or not event.needs_approval:
                auto = "" if event.needs_approval else " · ▶️ **runs without asking**"
                bare = f" · 🔎 {RECOGNISED_NOTE}" if req.block.bare else ""
                plain_bare = f" ({RECOGNISED_NOTE})" if req.block.bare else ""
                self.show_markdown(
                    f"**Step {req.step}** · {req.block.language}{auto}{bare}\n\n"
                    + code_markdown(req.block.language, req.block.code),
                    f"[step {req.step}: {req.block.language}]{plain_bare}\n{req.block.code}",
                )
        elif isinstance(event, E.Decided) and self.shows_code:
            d = event.record.decision
            if d is not None and d.by != "auto":
                self.show_markdown(f"*Step {event.record.index}: {d.label}*")
        elif isinstance(event, E.Notice):
            icon = {"info": "ℹ️", "warning": "⚠️", "error": "❌"}[event.level]
            self.show_markdown(f"{icon} {event.text}", event.text)
        elif isinstance(event, E.TurnDone):
            self._end_reply()
            footer = turn_footer(event.turn)
            if footer:
                self.show_markdown(f"<sub>{footer}</sub>", footer)


def turn_footer(turn: Turn) -> str:
    """One line of totals for a finished turn: calls, tokens, cost, time."""
    if not turn.llm_calls:
        return ""
    import time

    u = turn.usage
    parts = [
        f"{turn.llm_calls} LLM call{'s' if turn.llm_calls != 1 else ''}",
        f"{u.prompt_tokens:,} in / {u.completion_tokens:,} out tokens",
    ]
    if u.cost is not None:
        parts.append(f"${u.cost:.4f}")
    parts.append(f"{time.time() - turn.started:.1f} s")
    return " · ".join(parts)
