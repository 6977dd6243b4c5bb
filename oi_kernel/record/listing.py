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
from oi_kernel.record.records import (
    AtStepRecord,
    CodeProposedRecord,
    DecisionRecord,
    DirectRecord,
    ExecutionRecord,
    InTurnRecord,
    LLMResponseRecord,
    Record,
    TurnEndRecord,
    TurnStartRecord,
    parse_record,
)
from oi_kernel.safety.visible import first_line, visible

TAIL_BYTES = 256 * 1024  # read at most this much of the end of the log
LINE_CHARS = 90  # a summary longer than this is cut


def recent_events(path: str | Path, count: int) -> list[Record]:
    """The last ``count`` complete events of the log at ``path`` (fewer if it is short)."""
    with open(path, "rb") as f:
        size = f.seek(0, os.SEEK_END)
        start = max(0, size - TAIL_BYTES)
        f.seek(start)
        data = f.read()
    lines = data.split(b"\n")
    if start:
        lines = lines[1:]  # (the first one is cut)
    records: list[Record] = []
    for raw in reversed(lines):
        if len(records) >= count:
            break
        try:
            line = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            continue
        if isinstance(line, dict) and "event" in line:
            records.append(parse_record(line))
    return records[::-1]


def _first_line(text: Any) -> str:
    return first_line(str(text or ""), LINE_CHARS)


def summary(r: Record) -> str:
    """One line for one event: what it says, hidden characters marked."""
    match r:
        case TurnStartRecord():
            return _first_line(r.instruction)
        case CodeProposedRecord() | ExecutionRecord():
            return _step_summary(r.tool or r.language, r)
        case DirectRecord():
            return _step_summary(r.kind, r)
        case DecisionRecord():
            sha = r.sha256[:12]
            return f"{r.action} by {r.by}" + (f" · sha256 {sha}…" if sha else "")
        case LLMResponseRecord():
            return _first_line(r.text) if r.text else f"{len(r.tool_calls)} tool call(s)"
        case TurnEndRecord():
            return r.reason
    return ""


def _step_summary(what: str, r: CodeProposedRecord | ExecutionRecord | DirectRecord) -> str:
    parts = [f"{visible(what)}: {_first_line(r.code)}"]
    if isinstance(r, CodeProposedRecord) and r.flags:
        high = sum(1 for f in r.flags if isinstance(f, dict) and f.get("severity") == "high")
        parts.append(f"[{len(r.flags)} flags, {high} high]")
    if isinstance(r, (ExecutionRecord, DirectRecord)) and r.status:
        parts.append(f"→ {r.status}")
    return " ".join(parts)


def tail_text(path: str | Path, count: int) -> str:
    """The last ``count`` events, one line each: seq, time, event, turn.step, summary."""
    lines = []
    for r in recent_events(path, count):
        seq = "" if r.seq is None else r.seq
        lines.append(f"{seq:>4} {r.time[11:19]} {r.event:<14} {_where(r):<5} "
                     f"{summary(r)}".rstrip())
    return "\n".join(lines)


def _where(r: Record) -> str:
    """"turn.step", "turn", or "" for a record outside any instruction."""
    numbers = [r.turn] if isinstance(r, InTurnRecord) else []
    if isinstance(r, AtStepRecord):
        numbers.append(r.step)
    return ".".join(str(n) for n in numbers if n is not None)


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
