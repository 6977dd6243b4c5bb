"""Reasoning ("thinking") that models write before their answer, told apart from the answer.

Reasoning arrives two ways: in a separate ``reasoning_content`` field of the stream
(DeepSeek-R1, Qwen3 and o-series models through litellm, Anthropic thinking blocks,
Ollama's ``message.thinking``), which ``oi_kernel.llm.stream`` keeps apart, or inline as
``<think>...</think>`` at the start of the text (servers without a reasoning parser).
The inline form is split off here: ``split_reasoning`` on a complete reply (the
authority), ``ThinkSplitter`` while it streams (so the cell can show the thinking
collapsed as it arrives). Reasoning is shown, never run, never counted as code and never
sent back to the model as its answer. Pure: no I/O.

Forms handled: ``<think>`` (or ``<thinking>``) opening the reply, possibly after blank
space, closed by its closing tag (or not closed: everything is reasoning, no answer yet);
and a reply with only a closing ``</think>`` (DeepSeek-R1 templates put the opening tag in
the prompt), where everything before it is reasoning.
"""

from __future__ import annotations

import re

_OPEN_RE = re.compile(r"\A\s*<(think|thinking)>", re.IGNORECASE)
_LONE_CLOSE_RE = re.compile(r"</(think|thinking)>", re.IGNORECASE)
_TAGS = ("<think>", "<thinking>")


def split_reasoning(text: str) -> tuple[str, str]:
    """``(reasoning, answer)`` of a complete reply; reasoning is "" when there is none.

    The answer keeps its text as written except the leading blank lines after the
    reasoning."""
    opened = _OPEN_RE.match(text)
    if opened:
        tag = opened[1].lower()
        close = re.compile(rf"</{tag}>", re.IGNORECASE).search(text, opened.end())
        if close is None:
            return text[opened.end():].strip(), ""
        return text[opened.end():close.start()].strip(), text[close.end():].lstrip()
    lone = _LONE_CLOSE_RE.search(text)
    if lone is not None:
        return text[:lone.start()].strip(), text[lone.end():].lstrip()
    return "", text


class ThinkSplitter:
    """Splits a streamed reply into ("thinking", text) and ("answer", text) pieces as the
    deltas arrive; tags split across deltas are handled by holding back what could still
    become one. The pieces are for display: the complete reply is split again by
    ``split_reasoning`` (only it can see a lone ``</think>``)."""

    def __init__(self) -> None:
        self._state = "start"  # start (nothing but blank space yet), thinking, answer
        self._close = ""  # the closing tag while thinking
        self._held = ""  # text not yet passed on: it may be (part of) a tag

    def feed(self, delta: str) -> list[tuple[str, str]]:
        """The pieces ``delta`` completes, in order."""
        self._held += delta
        out: list[tuple[str, str]] = []
        while self._held:
            if self._state == "start" and not self._start(out):
                break
            if self._state == "thinking" and not self._thinking(out):
                break
            if self._state == "answer":
                out.append(("answer", self._held))
                self._held = ""
        return [piece for piece in out if piece[1]]

    def finish(self) -> list[tuple[str, str]]:
        """What was held back, once the reply is complete."""
        held, self._held = self._held, ""
        if not held:
            return []
        kind = "thinking" if self._state == "thinking" else "answer"
        return [(kind, held)]

    def _start(self, out: list[tuple[str, str]]) -> bool:
        """Before any visible text: an opening tag starts thinking, anything else is the
        answer. False when more text is needed to tell."""
        stripped = self._held.lstrip()
        if not stripped:
            return False
        lower = stripped.lower()
        for tag in _TAGS:
            if lower.startswith(tag):
                self._state, self._close = "thinking", "</" + tag[1:]
                self._held = stripped[len(tag):]
                return True
            if tag.startswith(lower):
                return False  # "<thi" may still become "<think>"
        self._state = "answer"
        return True

    def _thinking(self, out: list[tuple[str, str]]) -> bool:
        lower = self._held.lower()
        at = lower.find(self._close)
        if at >= 0:
            out.append(("thinking", self._held[:at]))
            self._held = self._held[at + len(self._close):].lstrip()
            self._state = "answer"
            return True
        keep = _partial_suffix(lower, self._close)
        out.append(("thinking", self._held[:len(self._held) - keep]))
        self._held = self._held[len(self._held) - keep:]
        return False


def _partial_suffix(text: str, tag: str) -> int:
    """Length of the longest end of ``text`` that is a proper start of ``tag``."""
    for n in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-n:]):
            return n
    return 0
