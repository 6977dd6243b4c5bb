"""Short listings of what happened: the instructions and steps (``%history``) and the last
events of a session log (``%log``).

Only the end of a log file is read (a log of a long session holds every LLM request). Text
from the model or the user is shown through ``safety.visible``: a hidden character in a
block appears as its marker, never raw in a terminal or reordered by a browser.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from oi_kernel.core.types import Turn
from oi_kernel.safety.visible import first_line, visible

TAIL_BYTES = 256 * 1024  # read at most this much of the end of the log
LINE_CHARS = 90  # a summary longer than this is cut


def recent_events(path: str | Path, count: int) -> list[dict[str, Any]]:
    """The last ``count`` complete events of the log at ``path`` (fewer if it is short)."""
    with open(path, "rb") as f:
        size = f.seek(0, os.SEEK_END)
        start = max(0, size - TAIL_BYTES)
        f.seek(start)
        data = f.read()
    lines = data.split(b"\n")
    if start:
        lines = lines[1:]  # (the first one is cut)
    records = []
    for raw in reversed(lines):
        if len(records) >= count:
            break
        try:
            record = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            continue
        if isinstance(record, dict) and "event" in record:
            records.append(record)
    return records[::-1]


def _first_line(text: Any) -> str:
    return first_line(str(text or ""), LINE_CHARS)


def summary(r: dict[str, Any]) -> str:
    """One line for one event: what it says, hidden characters marked."""
    event = r.get("event")
    if event == "turn_start":
        return _first_line(r.get("instruction"))
    if event in ("code_proposed", "execution", "direct"):
        what = r.get("tool") or r.get("language") or r.get("kind") or ""
        parts = [f"{visible(str(what))}: {_first_line(r.get('code'))}"]
        if event == "code_proposed" and r.get("flags"):
            high = sum(1 for f in r["flags"] if isinstance(f, dict) and f.get("severity") == "high")
            parts.append(f"[{len(r['flags'])} flags, {high} high]")
        if r.get("status"):
            parts.append(f"→ {r['status']}")
        return " ".join(parts)
    if event == "decision":
        sha = str(r.get("sha256") or "")[:12]
        return f"{r.get('action')} by {r.get('by')}" + (f" · sha256 {sha}…" if sha else "")
    if event == "llm_response":
        return _first_line(r.get("text")) if r.get("text") else \
            f"{len(r.get('tool_calls') or [])} tool call(s)"
    if event == "turn_end":
        return str(r.get("reason") or "")
    return ""


def tail_text(path: str | Path, count: int) -> str:
    """The last ``count`` events, one line each: seq, time, event, turn.step, summary."""
    lines = []
    for r in recent_events(path, count):
        where = ".".join(str(r[k]) for k in ("turn", "step") if r.get(k) is not None)
        when = str(r.get("t") or "")[11:19]
        lines.append(f"{r.get('seq', ''):>4} {when} {r.get('event', ''):<14} {where:<5} "
                     f"{summary(r)}".rstrip())
    return "\n".join(lines)


def fenced(text: str) -> str:
    """``text`` as a markdown code block (its markers and spacing shown as they are)."""
    fence = "````" if "```" in text else "```"
    return f"{fence}\n{text}\n{fence}"


def log_markdown(path: str | Path, count: int) -> str:
    """What ``%log`` shows: the log's path, then its last ``count`` events."""
    events = tail_text(path, count)
    return f"Session log: `{path}`" + (
        f"\n\nLast events (seq, time, event, turn.step):\n{fenced(events)}" if events else "")


def history_markdown(turns: list[Turn]) -> str:
    """What ``%history`` shows: each instruction, then each step with the first line of the
    code it ran (or proposed)."""
    lines = []
    for turn in turns:
        first = visible((turn.instruction.split("\n") or [""])[0][:100])
        lines.append(f"{turn.index}. {first} — {turn.end_reason or 'running'}")
        for step in turn.steps:
            label = step.decision.label if step.decision else step.status
            if step.decision and step.decision.by != "auto":
                label += f" by {visible(step.decision.by)}"
            ran = step.decision.code if step.decision and step.decision.code else step.block.code
            lines.append(f"   - step {step.index} ({visible(step.block.language)}): {label}, "
                         f"{step.status} · {first_line(ran, 70)}")
    return fenced("\n".join(lines))
