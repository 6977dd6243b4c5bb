"""An answer's traced numbers in an exported notebook, and their check when it is re-run.

``%export`` / ``oi-kernel export`` write each checked answer (an ``answer_check`` record)
as a markdown cell: the answer, then a footnote line where each traced number names the
step and links to the code cell that printed it, and each untraced one reads ``23% — not
in any output``. The cell's metadata (``oi_kernel.answer_check``) keeps every claim with
the id of its cell and the number as printed. ``oi-kernel verify`` re-runs the notebook and
``claim_problems`` names each traced number whose printed value no longer appears in its
cell's new output.
"""

from __future__ import annotations

import html
from typing import Any

from oi_kernel.core.answer_check import NOT_FOUND, output_text
from oi_kernel.core.numbers import output_numbers

Key = tuple[int | None, int | None]


def answer_cell(answer: str, turn: int | None, claims: list[Any], note: str) -> Any:
    """The markdown cell of a checked answer (its footnote and the cells' ids are added once
    every cell has its id: ``link_claims``)."""
    import nbformat

    kept = []
    for c in claims:
        if not isinstance(c, dict):
            continue
        found = c.get("found") if isinstance(c.get("found"), dict) else None
        kept.append({"text": str(c.get("text", "")), "kind": c.get("kind"), "found": found})
    cell = nbformat.v4.new_markdown_cell(answer.strip())
    cell.metadata["oi_kernel"] = {"answer_check": {"turn": turn, "claims": kept, "note": note}}
    return cell


def link_claims(cells: list[Any], step_cells: dict[Key, Any]) -> None:
    """Once every cell has its id: each claim names its cell (``step_cells``: (turn, step)
    -> the code cell of that step), and the answer cell's footnote links to it."""
    for cell in cells:
        check = cell.get("metadata", {}).get("oi_kernel", {}).get("answer_check")
        if cell.cell_type != "markdown" or not check:
            continue
        parts = []
        for claim in check["claims"]:
            text = html.escape(claim["text"])
            found = claim.get("found")
            if found is None:
                parts.append(f"**{text} — {NOT_FOUND}**")
                continue
            place = (f"step {found.get('step')}" if found.get("turn") == check.get("turn")
                     else f"instruction {found.get('turn')}, step {found.get('step')}")
            target = step_cells.get((found.get("turn"), found.get("step")))
            if target is not None:
                claim["cell"] = target["id"]
                count = target.get("execution_count")
                parts.append(f"{text} → [{place} (In [{count}])](#{target['id']})")
            else:
                parts.append(f"{text} → {place}")
        if check.get("note"):
            parts.append(f"*{html.escape(check['note'])}*")
        if parts:
            cell.source += "\n\n<sub>" + " · ".join(parts) + "</sub>"


def claim_problems(nb: Any, fresh: dict[int, Any]) -> list[str]:
    """One sentence per traced number whose printed value is no longer in the re-run output
    of the cell it was traced to (``fresh``: cell index -> new outputs)."""
    index_of = {c.get("id"): i for i, c in enumerate(nb.cells)}
    problems = []
    for cell in nb.cells:
        check = cell.get("metadata", {}).get("oi_kernel", {}).get("answer_check")
        if cell.cell_type != "markdown" or not check:
            continue
        for claim in check.get("claims") or []:
            found, cell_id = claim.get("found"), claim.get("cell")
            if not found or found.get("where", "output") != "output" or cell_id not in index_of:
                continue  # (a number from a change summary or the code is not an output)
            new = fresh.get(index_of[cell_id])
            if not isinstance(new, list):
                continue  # not run, or the run failed: the cell's own check says so
            text = output_text(new)
            if not _still_there(str(found.get("printed", "")), text):
                now = text.strip().splitlines()[:1]
                problems.append(
                    f"the answer's {claim.get('text')} was traced to {found.get('printed')} "
                    f"in cell {cell_id}, which no longer prints it"
                    + (f" (now: {now[0][:60]!r})" if now else " (now: no output)"))
    return problems


def _still_there(printed: str, text: str) -> bool:
    try:
        value = float(printed.replace(",", "").replace("−", "-"))
    except ValueError:
        return printed in text
    return any(abs(v - value) <= 1e-12 * max(1.0, abs(value)) for v, _ in output_numbers(text))


def answer_replayed(recorded: Any, turn: Any) -> tuple[str, str] | None:
    """Replay: the recorded answer's traced numbers (an ``AnswerCheckRecord``) against the
    replayed turn's check (traced to the new outputs). ("same", "") when each number traced
    then traces now, else ("different", the numbers that no longer do); None when the
    recording has no check."""
    if recorded is None:
        return None
    was = {c.get("text") for c in recorded.claims if isinstance(c, dict) and c.get("found")}
    check = getattr(turn, "answer_check", None) or {}
    now = {c.get("text") for c in check.get("claims") or [] if c.get("found")}
    lost = sorted(was - now)
    if not lost:
        return "same", f"the answer's {len(was)} traced number(s) still trace" if was else ""
    return "different", ("the answer's " + ", ".join(lost)
                         + " no longer appear(s) in any output")
