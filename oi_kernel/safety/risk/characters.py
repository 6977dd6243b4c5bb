"""Risk flags for what a block hides from the person approving it: bidi controls, control
characters, zero-width and other invisible characters, identifiers that mix scripts, odd
spaces and lines too long to see whole (found by ``safety.visible``). Every language gets
them, and so do an MCP tool's JSON arguments: the code may not read as it is shown."""

from __future__ import annotations

from oi_kernel.safety.risk.common import HIGH, MEDIUM, Flag
from oi_kernel.safety.visible import hidden_findings

SEVERITY = {"hidden-characters": HIGH, "mixed-script": HIGH, "odd-whitespace": MEDIUM,
            "long-line": MEDIUM}
WHY = {
    "hidden-characters": "the code may not be what it looks like (shown as ⟦…⟧ markers)",
    "mixed-script": "it may look like another name",
    "odd-whitespace": "it looks like a space but is not one",
    "long-line": "",
}


def character_flags(code: str, language: str = "") -> list[Flag]:
    """One flag per line and category, naming each character found there; [] when none."""
    grouped: dict[tuple[int, str], list[str]] = {}
    for finding in hidden_findings(code, language):
        grouped.setdefault((finding.line, finding.category), []).append(finding.text)
    flags = []
    for (line, category), texts in grouped.items():
        why = WHY[category]
        reason = f"line {line}: " + "; ".join(texts) + (f": {why}" if why else "")
        flags.append(Flag(line, category, SEVERITY[category], reason))
    return flags
