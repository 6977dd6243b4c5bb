"""Fit a conversation into a token budget. Pure: messages in, messages out.

The conversation is cut into units, each starting at a user message (a tool
call and its results never straddle two units). The system prompt and the
protected tail (the current instruction and the turn before it) are never cut.
Everything older is condensed in order of least value: long outputs first,
then long code, then whole units, which are replaced by a one-line summary
each in a single "earlier in this session" message.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Sequence
from typing import Any

Message = dict[str, Any]
Count = Callable[[str], int]

_PER_MESSAGE = 4  # role and framing tokens per message
SHORT_OUTPUT = 400
SHORT_CODE = 600
SUMMARY_HEAD = "Earlier in this session (condensed to fit the context budget):"


def message_tokens(message: Message, count: Count) -> int:
    """Tokens of one message: its text, tool-call arguments and a small overhead."""
    total = _PER_MESSAGE
    content = message.get("content")
    if isinstance(content, str):
        total += count(content)
    elif isinstance(content, list):  # multimodal parts
        for part in content:
            if part.get("type") == "text":
                total += count(part.get("text", ""))
            else:
                total += 800  # an image costs roughly this much for most vision models
    for call in message.get("tool_calls") or []:
        total += count(call["function"].get("arguments", "")) + _PER_MESSAGE
    return total


def total_tokens(messages: Sequence[Message], count: Count) -> int:
    return sum(message_tokens(m, count) for m in messages)


def shorten(text: str, limit: int) -> str:
    """Head and tail of ``text`` with the cut marked; unchanged when short."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 5
    tail = limit - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n[... {cut:,} characters condensed ...]\n{text[-tail:]}"


def _units(messages: Sequence[Message], start: int) -> list[tuple[int, int]]:
    """(begin, end) index ranges of units from ``start``; a unit begins at a user message."""
    bounds = [i for i in range(start, len(messages)) if messages[i].get("role") == "user"]
    if not bounds or bounds[0] != start:
        bounds.insert(0, start)
    return [(b, bounds[k + 1] if k + 1 < len(bounds) else len(messages))
            for k, b in enumerate(bounds)]


def _summary_line(unit: Sequence[Message]) -> str:
    first = unit[0].get("content")
    text = first if isinstance(first, str) else json.dumps(first)[:200]
    steps = sum(len(m.get("tool_calls") or []) for m in unit)
    line = "- " + " ".join(text.split())[:160]
    return line + (f" ({steps} code step{'s' if steps != 1 else ''} ran)" if steps else "")


def _shorten_code_args(arguments: str) -> str:
    try:
        args = json.loads(arguments)
    except (ValueError, TypeError):
        return shorten(arguments, SHORT_CODE)
    if isinstance(args, dict) and isinstance(args.get("code"), str):
        args["code"] = shorten(args["code"], SHORT_CODE)
        return json.dumps(args)
    return shorten(arguments, SHORT_CODE)


def fit_messages(
    messages: Sequence[Message], budget: int, count: Count, protect_from: int | None = None,
) -> list[Message]:
    """A copy of ``messages`` within ``budget`` tokens (the input is not modified).

    ``messages[0]`` is the system prompt; messages from ``protect_from`` on (default:
    the last two units) are kept whole while older ones can be condensed. If even the
    protected part is over budget, its outputs are shortened as a last resort.
    """
    out = [_copy(m) for m in messages]
    if total_tokens(out, count) <= budget or len(out) < 2:
        return out
    units = _units(out, 1)
    if protect_from is None:
        protect_from = units[-2][0] if len(units) >= 2 else units[-1][0]
    old = [u for u in units if u[1] <= protect_from]
    over = total_tokens(out, count) - budget
    # 1. long outputs, then 2. long code, in old units, oldest first
    for begin, end in old:
        for msg in out[begin:end]:
            if over <= 0:
                break
            over -= _condense_message(msg, count)
    if over <= 0:
        return out
    # 3. whole old units, oldest first, replaced by summary lines (whose cost counts too)
    kept = total_tokens(out, count)
    dropped: list[str] = []
    keep_from = 1
    summary = _summary([])
    for begin, end in old:
        if kept + message_tokens(summary, count) <= budget:
            break
        kept -= sum(message_tokens(m, count) for m in out[begin:end])
        dropped.append(_summary_line(out[begin:end]))
        summary = _summary(dropped)
        keep_from = end
    result = [out[0], summary, *out[keep_from:]] if dropped else out
    most = 30
    while dropped and most and total_tokens(result, count) > budget:  # a shorter summary
        most //= 2
        result[1] = _summary(dropped, most)
    if total_tokens(result, count) > budget:  # last resort: the protected outputs too
        for msg in result[1:]:
            if msg.get("role") != "user":
                _condense_message(msg, count, limit_scale=0.25)
    return result


def _copy(value: Any) -> Any:
    """A deep copy of a message: dicts and lists rebuilt, strings and numbers shared (they
    cannot change), anything else through ``copy.deepcopy``. Every request copies the whole
    conversation, so this is 2-3x cheaper than ``copy.deepcopy`` where it matters."""
    kind = type(value)
    if kind is dict:
        return {k: v if type(v) is str else _copy(v) for k, v in value.items()}
    if kind is list:
        return [v if type(v) is str else _copy(v) for v in value]
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value
    return copy.deepcopy(value)


def _summary(lines: list[str], most: int = 30) -> Message:
    shown = lines[-most:]
    more = len(lines) - len(shown)
    head = SUMMARY_HEAD + (f"\n- ({more} earlier instructions not listed)" if more else "")
    return {"role": "user", "content": head + "\n" + "\n".join(shown)}


def _condense_message(msg: Message, count: Count, limit_scale: float = 1.0) -> int:
    """Shorten one message's output or code in place; returns the tokens saved."""
    before = message_tokens(msg, count)
    content = msg.get("content")
    if msg.get("role") in ("tool", "user") and isinstance(content, str):
        msg["content"] = shorten(content, int(SHORT_OUTPUT * limit_scale) or 100)
    for call in msg.get("tool_calls") or []:
        call["function"]["arguments"] = _shorten_code_args(call["function"].get("arguments", ""))
    return before - message_tokens(msg, count)
