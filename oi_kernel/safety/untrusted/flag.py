"""The flag of a step proposed after text from outside the user's instruction entered the
conversation: it names the source and, for code, why the step is not one whose effects stay
in the namespace (the known-safe review's verdict). Pure."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from oi_kernel.safety.risk import MEDIUM, Flag

if TYPE_CHECKING:
    from oi_kernel.safety.known_safe import Verdict

UNTRUSTED = "untrusted-content"  # the flag of a step that follows text from outside


def untrusted_note(followed: list[dict[str, Any]]) -> str:
    """"follows the text of notes.txt read in step 1" (up to three sources)."""
    parts = list(dict.fromkeys(f"{u['phrase']} {u['verb']} in step {u['step']}"
                               for u in followed))
    return "follows " + "; ".join(parts[:3]) + (
        f" (and {len(parts) - 3} more)" if len(parts) > 3 else "")


def untrusted_flag(followed: list[dict[str, Any]], verdict: Verdict | None = None,
                   named: bool = False) -> Flag:
    """The flag of a step proposed after outside text entered the instruction, naming it
    (and, for code, why it is not a step whose effects stay in the namespace; ``named``: the
    card already lists what is not known to be safe)."""
    why = ""
    if verdict is not None and verdict.safe and verdict.writes:
        why = "; it writes a file (" + ", ".join(verdict.writes[:3]) + ")"
    elif verdict is not None and not verdict.safe:
        why = "; it is not known to be safe" + (
            "" if named else " (" + ", ".join(verdict.unknown[:4]) + ")")
    return Flag(0, UNTRUSTED, MEDIUM, f"{untrusted_note(followed)}: content from outside "
                f"your instruction, which may carry instructions of its own{why}")
