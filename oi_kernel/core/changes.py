"""Pure text for what a step changed and what an undo restored.

A step's changes come from the executor's probe (``oi_kernel.execution.probe``) as a
JSON-ready dict: ``variables`` (name, change new/changed/deleted, before/after
descriptions), ``files`` (path, change created/modified/deleted, sizes) and
``scan_complete``. Here they become lines such as ``df: DataFrame 1000×5 (new)``,
``x: int 1 → 2``, ``tmp deleted``, ``out.csv (created, 1.2 kB)``, for the cell, the
model and the log.
"""

from __future__ import annotations

import html
from typing import Any

MAX_LINES_FOR_MODEL = 25
MAX_LINE = 200  # characters of one line the model reads
SHORT = 6  # more lines than this: the cell shows them collapsed


def size_text(n: int | None) -> str:
    if n is None:
        return "?"
    for unit in ("bytes", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:,} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1000  # type: ignore[assignment]
    return str(n)


def _variable_line(v: dict[str, Any]) -> str:
    name, change = v.get("name", "?"), v.get("change")
    if change == "new":
        return f"{name}: {v.get('after', '')} (new)"
    if change == "deleted":
        return f"{name} deleted"
    before, after = str(v.get("before", "")), str(v.get("after", ""))
    if before == after:
        return f"{name}: {after} (changed in place)"
    kind_b, _, rest_b = before.partition(" ")
    kind_a, _, rest_a = after.partition(" ")
    if kind_a == kind_b and rest_a and rest_b:
        return f"{name}: {kind_a} {rest_b} → {rest_a}"
    return f"{name}: {before} → {after}"


def _file_line(f: dict[str, Any]) -> str:
    path, change = f.get("path", "?"), f.get("change")
    if change == "created":
        return f"{path} (created, {size_text(f.get('size'))})"
    if change == "deleted":
        return f"{path} (deleted)"
    return f"{path} (modified, {size_text(f.get('before_size'))} → {size_text(f.get('size'))})"


def change_lines(changes: dict[str, Any] | None) -> list[str]:
    """One line per changed variable, then per changed file, then the scan's caveat."""
    if not changes:
        return []
    lines = [_variable_line(v) for v in changes.get("variables", [])]
    lines += [_file_line(f) for f in changes.get("files", [])]
    if changes.get("scan_complete") is False:
        lines.append("(file scan cut short: the working directory has too many files to "
                     "check them all quickly; files beyond it are not listed)")
    return lines


def headline(changes: dict[str, Any] | None) -> str:
    """``2 variables, 1 file changed`` (empty when nothing changed)."""
    if not changes:
        return ""
    nv, nf = len(changes.get("variables", [])), len(changes.get("files", []))
    parts = []
    if nv:
        parts.append(f"{nv} variable{'s' if nv != 1 else ''}")
    if nf:
        parts.append(f"{nf} file{'s' if nf != 1 else ''}")
    return ", ".join(parts) + " changed" if parts else ""


def for_model(changes: dict[str, Any] | None, max_lines: int = MAX_LINES_FOR_MODEL) -> str:
    """The summary the model reads after the step's output (bounded: ``max_lines``)."""
    lines = change_lines(changes)
    if not lines:
        return ""
    shown = [line if len(line) <= MAX_LINE else line[: MAX_LINE - 3] + "..."
             for line in lines[:max_lines]]
    if len(lines) > max_lines:
        shown.append(f"... and {len(lines) - max_lines} more changes")
    return "What the code changed:\n" + "\n".join(f"- {line}" for line in shown)


def for_cell(changes: dict[str, Any] | None) -> tuple[str, str] | None:
    """(html, plain) for the cell: a short list, collapsed under a headline when long."""
    lines = change_lines(changes)
    if not lines:
        return None
    head = headline(changes) or "Changes"
    plain = f"{head}:\n" + "\n".join(f"  {line}" for line in lines)
    items = "".join(f"<li><code>{html.escape(line)}</code></li>" for line in lines)
    body = f"<ul style='margin:2px 0'>{items}</ul>"
    opened = "" if len(lines) > SHORT else " open"
    markup = (f"<details class='oi-changes'{opened}><summary>{html.escape(head)}</summary>"
              f"{body}</details>")
    return markup, plain


def restore_message(report: dict[str, Any], what: str) -> str:
    """Markdown for an undo or restore: what came back, what did not, and why."""
    parts = [f"Rolled back to {what}."]
    problems = report.get("problems") or []
    if report.get("namespace_lost"):
        parts.append("**Variables were not restored**: " + report["namespace_lost"])
    else:
        removed = report.get("removed_variables") or []
        failed = {p["name"] for p in problems}
        back = [n for n in report.get("variables") or [] if n not in failed]
        text = "Variables are as they were at the checkpoint"
        if removed:
            text += f": removed {_names(removed)}"
        if back:
            text += f"{';' if removed else ':'} {len(back)} put back"
        if removed or back or not failed:
            parts.append(text + ".")
    held = [p for p in problems if p["type"] != "?"]
    gone = [p for p in problems if p["type"] == "?"]  # (its name was removed)
    if held:
        listed = "; ".join(f"`{p['name']}` ({p['type']}: {p['why']})" for p in held)
        parts.append(f"**Not restored** (put back as the same object, whose own changes "
                     f"since cannot be undone): {listed}.")
    if gone:
        listed = "; ".join(f"`{p['name']}` ({p['why']})" for p in gone)
        parts.append(f"**Not restored, removed**: {listed}.")
    if report.get("restored"):
        parts.append(f"Files restored: {_names(report['restored'])}.")
    if report.get("removed"):
        parts.append(f"Files removed: {_names(report['removed'])}.")
    if report.get("not_restored"):
        parts.append(f"**Files not restored**: {_names(report['not_restored'])}.")
    if report.get("kept"):
        parts.append(f"Files left in place (new since the checkpoint, not written "
                     f"by the kernel: yours, such as an export): {_names(report['kept'])}.")
    return " ".join(parts)


def _names(items: list[str], limit: int = 20) -> str:
    shown = ", ".join(f"`{n}`" for n in items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def undo_message(removed: list[str], rolled: str, checkpoints_enabled: bool) -> str:
    """Markdown for ``undo``: what was forgotten, then what was rolled back."""
    if not removed:
        return "Nothing to undo: the conversation is empty."
    first = removed[-1].splitlines()[0][:80] if removed[-1].strip() else ""
    one = len(removed) == 1
    what = f"the last instruction (“{first}”)" if one else f"the last {len(removed)} instructions"
    it = "it" if one else "them"
    text = f"Removed {what} from the conversation: the model will not see {it}."
    if rolled:
        return f"{text} {rolled}"
    if checkpoints_enabled:
        return f"{text} Nothing to roll back: no code ran for {it}."
    return (f"{text} Nothing was rolled back: checkpoints are off "
            f"(c.Engine.checkpoints_enabled); side effects stay as they are.")


def checkpoints_markdown(checkpoints: list[Any], prefix: str) -> str:
    """The ``checkpoints`` table: number, time, the instruction, variables held."""
    import time

    if not checkpoints:
        return "No checkpoints yet: one is kept before each instruction that runs code."
    rows = []
    for cp in checkpoints:
        first = (cp.instruction.splitlines() or [""])[0][:60].replace("|", "\\|")
        when = time.strftime("%H:%M:%S", time.localtime(cp.created))
        rows.append(f"| {cp.number} | {when} | {first} | {cp.info.get('variables', '?')} |")
    return ("| checkpoint | kept at | before instruction | variables |\n|---|---|---|---|\n"
            + "\n".join(rows) + f"\n\n`{prefix}restore K` goes back to checkpoint K; "
            f"`{prefix}undo [N]` to before the last N instructions.")
