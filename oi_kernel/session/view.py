"""Renders engine events as Jupyter display messages, for any frontend.

The view knows nothing about kernels: it is handed a ``publish(msg_type,
content)`` callable. Streaming text goes into one display per LLM reply that is
updated in place; updates are coalesced so a fast stream costs a handful of
messages per second, not one per token.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any

from oi_kernel.core import changes
from oi_kernel.core import events as E
from oi_kernel.core.types import StepRecord, Turn

Publish = Callable[[str, dict[str, Any]], None]


def markdown_bundle(text: str, plain: str | None = None) -> dict[str, Any]:
    return {"text/markdown": text, "text/plain": plain if plain is not None else text}


def code_markdown(language: str, code: str) -> str:
    fence = "````" if "```" in code else "```"
    return f"{fence}{language}\n{code}\n{fence}"


class TurnView:
    """One cell's rendering of a turn."""

    def __init__(self, publish: Publish, *, coalesce_s: float = 0.05, shows_code: bool = True):
        self.publish = publish
        self.coalesce_s = coalesce_s
        self.shows_code = shows_code  # False when the approver displays the code itself
        self._text = ""
        self._display_id: str | None = None
        self._flush_handle: asyncio.TimerHandle | None = None
        self.updates_sent = 0

    # ------------------------------------------------------------ streaming text
    def _send_text(self) -> None:
        self._flush_handle = None
        if not self._text:
            return
        content = {"data": markdown_bundle(self._text), "metadata": {}}
        if self._display_id is None:
            self._display_id = uuid.uuid4().hex
            content["transient"] = {"display_id": self._display_id}
            self.publish("display_data", content)
        else:
            content["transient"] = {"display_id": self._display_id}
            self.publish("update_display_data", content)
        self.updates_sent += 1

    def _on_delta(self, text: str) -> None:
        self._text += text
        if self._display_id is None:
            self._send_text()  # the first words show at once
        elif self._flush_handle is None:
            loop = asyncio.get_running_loop()
            self._flush_handle = loop.call_later(self.coalesce_s, self._send_text)

    def _end_reply(self) -> None:
        if self._flush_handle is not None:
            self._flush_handle.cancel()
        self._send_text()
        self._text = ""
        self._display_id = None

    def _show_changes(self, record: StepRecord) -> None:
        """What the step changed: added to the decided record when a card showed one (it
        stays in the saved notebook), else shown under the step."""
        shown = changes.for_cell(record.changes)
        if shown is None:
            return
        markup, plain = shown
        metadata = {"oi": {"changes": record.changes}}
        at = record.decision.shown if record.decision is not None else None
        if at:
            self.publish("update_display_data", {
                "data": {"text/html": at["html"] + markup, "text/plain": f"{at['plain']}\n{plain}"},
                "metadata": metadata, "transient": {"display_id": at["display_id"]}})
        else:
            self.publish("display_data", {"data": {"text/html": markup, "text/plain": plain},
                                          "metadata": metadata})

    # ------------------------------------------------------------ other events
    def show_markdown(self, text: str, plain: str | None = None) -> None:
        self.publish("display_data", {"data": markdown_bundle(text, plain), "metadata": {}})

    def __call__(self, event: E.Event) -> None:
        if isinstance(event, E.TextDelta):
            self._on_delta(event.text)
        elif isinstance(event, E.ReplyDone):
            self._end_reply()
        elif isinstance(event, E.CodeProposed):
            req = event.request
            if self.shows_code or not event.needs_approval:
                auto = "" if event.needs_approval else " · ▶️ **runs without asking**"
                self.show_markdown(
                    f"**Step {req.step}** · {req.block.language}{auto}\n\n"
                    + code_markdown(req.block.language, req.block.code),
                    f"[step {req.step}: {req.block.language}]\n{req.block.code}",
                )
        elif isinstance(event, E.Decided) and self.shows_code:
            d = event.record.decision
            if d is not None and d.by != "auto":
                self.show_markdown(f"*Step {event.record.index}: {d.label}*")
        elif isinstance(event, E.StepDone):
            self._show_changes(event.record)
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
