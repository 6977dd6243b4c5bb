"""Named states in words (``session.states``): the tree ``%states`` shows, what a restore
brought back, sizes. Pure functions."""

from __future__ import annotations

import time
from typing import Any

_SHOWN = 12


def size_text(n: int | float) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:,.0f} {unit}" if unit == "bytes" else f"{n:,.1f} {unit}"
        n /= 1000
    return f"{n:,.1f} GB"  # (not reached)


def _names(items: list[str]) -> str:
    shown = ", ".join(f"`{n}`" for n in items[:_SHOWN])
    return shown + (f" and {len(items) - _SHOWN} more" if len(items) > _SHOWN else "")


def restore_text(name: str, report: dict[str, Any], prefix: str) -> str:
    """What ``%state restore NAME`` changed, variables then files."""
    parts = [f"Restored state `{name}`."]
    if not report.get("namespace_lost"):
        problems = report.get("problems") or []
        failed = {p["name"] for p in problems}
        back = [n for n in report.get("variables") or [] if n not in failed]
        said = f"Variables as the state has them: {len(back)} put back"
        if report.get("removed_variables"):
            said += f"; removed {_names(report['removed_variables'])} (newer than the state)"
        parts.append(said + ".")
        if problems:
            listed = "; ".join(f"`{p['name']}` ({p['why']})" for p in problems)
            parts.append(f"**Not restored**: {listed}.")
    restored, removed = report.get("restored") or [], report.get("removed") or []
    if restored:
        parts.append(f"Files put back: {_names(restored)}.")
    if removed:
        parts.append(f"Files removed (not in the state): {_names(removed)}.")
    if not restored and not removed:
        parts.append("Files: none had changed.")
    if report.get("not_restored"):
        parts.append(f"**Files not restored**: {_names(report['not_restored'])}.")
    if report.get("changed_during_save"):
        parts.append(f"**Changed while the state was being saved** (kept as they were when "
                     f"copied, not as at the save): {_names(report['changed_during_save'])}.")
    return " ".join(parts)


def _line(state: Any, current: str | None) -> str:
    info = state.info
    when = time.strftime("%H:%M:%S", time.localtime(state.created))
    where = f"after {state.instruction}" if state.instruction else "before any instruction"
    kept = "on disk" if info.get("plain") else "fork"
    here = " **← you are here**" if state.name == current else ""
    return (f"`{state.name}`{here} — {when}, {where}; {plural(info.get('variables', 0), 'variable')} "
            f"({kept}), {plural(info.get('files', 0), 'file')}, {size_text(info.get('bytes', 0))}")


def tree_markdown(states: list[Any], current: str | None, prefix: str) -> str:
    """``%states``: each state under the one it grew from, oldest first."""
    if not states:
        return (f"No named states yet. `{prefix}state save NAME` keeps the variables and "
                "files as they are now.")
    children: dict[str | None, list[Any]] = {}
    names = {s.name for s in states}
    for state in sorted(states, key=lambda s: s.created):
        parent = state.parent if state.parent in names else None
        children.setdefault(parent, []).append(state)
    lines = ["**States** (each under the one it grew from):", ""]
    stack = [(s, 0) for s in reversed(children.get(None, []))]
    while stack:
        state, depth = stack.pop()
        lines.append(f"{'  ' * depth}- {_line(state, current)}")
        stack += [(c, depth + 1) for c in reversed(children.get(state.name, []))]
    lines += ["", f"`{prefix}state restore NAME` goes back to one (the others stay); "
              f"`{prefix}state drop NAME` deletes one."]
    return "\n".join(lines)


def plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"
