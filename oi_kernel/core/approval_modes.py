"""The approval modes: the one declaration of every value ``approval`` may take.

``c.Engine.approval``, ``OI_APPROVAL``, ``%approval``, a profile's ``approval:``, the
administrator's policy floor (``session.policy``), four-eyes (``core.four_eyes``), when a step
asks (``core.steps``), ``oi-kernel run --approval`` (the modes that need nobody to approve) and
the JupyterLab extension's status bar (``labextension/src/approvalModes.ts``, generated from this
module: ``python -m oi_kernel.core.approval_modes > labextension/src/approvalModes.ts``; a test
fails when it is stale) all read this table. Adding a mode is one row here (and its test).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

Asks = Literal["every", "unsafe", "none"]
SecondPerson = Literal["", "high-risk", "every"]


@dataclass(frozen=True)
class ApprovalMode:
    """One value of ``approval``.

    ``rank``: strictness, for the administrator's floor (a floor allows its mode and every
    stricter one). ``asks``: which steps ask ("every"; "unsafe": a step not known to be safe,
    or one the risk review flags; "none"). ``second_person``: which steps must be run by
    someone other than the instruction's author. ``unattended``: usable where nobody can
    approve (``oi-kernel run``). ``label``: the status bar's words. ``help``: what it does.
    """

    name: str
    rank: int
    asks: Asks
    second_person: SecondPerson
    unattended: bool
    label: str
    help: str


MODES: tuple[ApprovalMode, ...] = (
    ApprovalMode("always", 2, "every", "", False, "ask each", "every block"),
    ApprovalMode("risky", 1, "unsafe", "", True, "ask if risky",
                 "every block that is not known to be safe or that the risk review flags: "
                 "see Engine.known_safe"),
    ApprovalMode("never", 0, "none", "", True, "auto-run", "run everything: auto-run"),
    ApprovalMode("four-eyes", 3, "every", "high-risk", False, "four-eyes",
                 "every block asks, and one with a high risk flag must be run by someone "
                 "other than the person who sent the instruction"),
    ApprovalMode("four-eyes-all", 4, "every", "every", False, "four-eyes (all)",
                 "every block needs that second person"),
)
BY_NAME = {mode.name: mode for mode in MODES}
NAMES = tuple(BY_NAME)  # in the order people read them: always, risky, never, ...
RANK = {mode.name: mode.rank for mode in MODES}
ORDER = " > ".join(m.name for m in sorted(MODES, key=lambda m: -m.rank))  # strictest first
SECOND_PERSON = tuple(m.name for m in MODES if m.second_person)  # the four-eyes modes
UNATTENDED = tuple(m.name for m in sorted(MODES, key=lambda m: m.rank) if m.unattended)  # run
DEFAULT = "always"
AUTO_RUN = "never"  # what OI_AUTO_RUN=1 / %auto_run on mean


def asks_unsafe(*modes: str) -> bool:
    """Whether any of ``modes`` asks only about steps that are not known to be safe (so the
    known-safe review's verdict is a flag)."""
    return any(m in BY_NAME and BY_NAME[m].asks == "unsafe" for m in modes)


def help_text() -> str:
    """``c.Engine.approval``'s help: every mode and what it does."""
    modes = ", ".join(f"'{m.name}' ({m.help})" for m in MODES)
    return (f"When to ask before running code: {modes}. Env: OI_APPROVAL; OI_AUTO_RUN=1 "
            f"means '{AUTO_RUN}'.")


def typescript() -> str:
    """The extension's copy of the table (``labextension/src/approvalModes.ts``)."""
    names = json.dumps(list(NAMES), indent=2).replace('"', "'")
    labels = "\n".join(f"  {json.dumps(m.name).replace(chr(34), chr(39))}: "
                       f"{json.dumps(m.label).replace(chr(34), chr(39))}," for m in MODES)
    return (
        "// Generated from oi_kernel/core/approval_modes.py: do not edit. Regenerate with\n"
        "//   python -m oi_kernel.core.approval_modes > labextension/src/approvalModes.ts\n"
        "// (tests/test_approval_modes.py fails when this file is stale).\n\n"
        f"export const APPROVAL_MODES = {names} as const;\n\n"
        "export type ApprovalPolicy = (typeof APPROVAL_MODES)[number];\n\n"
        "export const APPROVAL_LABELS: Record<ApprovalPolicy, string> = {\n"
        f"{labels.rstrip(',')}\n}};\n"
    )


if __name__ == "__main__":
    print(typescript(), end="")
