"""Risk review of a proposed code block, before the user approves it.

``review(language, code)`` returns ``Flag``s that the approval card shows and
that the LLM reads back: what a block might delete, overwrite, download, run,
reveal or install, and what it hides (``characters``: bidi controls, control and invisible
characters, mixed-script identifiers, for every language). Python is read through its syntax tree (imports and aliases
resolved), shell through ``shlex`` one command at a time; JavaScript and R get
a light scan for obvious shell-outs and deletes. A flag is advice for a person
who still decides; reviewing never runs anything. Pure: stdlib only, no I/O.
"""

from __future__ import annotations

from oi_kernel.languages import normalize_language
from oi_kernel.safety.risk.characters import character_flags
from oi_kernel.safety.risk.common import _RANK, HIGH, MEDIUM, REVIEWERS, Flag, _flag
from oi_kernel.safety.risk.ipython import _python_findings
from oi_kernel.safety.risk.light import _light_findings_fn
from oi_kernel.safety.risk.shell import _shell_findings

__all__ = ["HIGH", "MEDIUM", "Flag", "character_flags", "format_flags", "review", "review_or_flag"]

REVIEWERS.update(
    python=_python_findings,
    shell=_shell_findings,
    javascript=_light_findings_fn("javascript"),
    r=_light_findings_fn("r"),
)

def _dedupe(flags: list[Flag]) -> list[Flag]:
    """One flag per (line, category): the most severe, first seen; sorted by line."""
    best: dict[tuple[int, str], Flag] = {}
    for flag in flags:
        key = (flag.line, flag.category)
        if key not in best or _RANK[flag.severity] < _RANK[best[key].severity]:
            best[key] = flag
    return sorted(best.values(), key=lambda f: (f.line, _RANK[f.severity]))


def review(language: str, code: str) -> list[Flag]:
    """Risk flags for ``code`` in ``language``, by line; [] when nothing stands out."""
    lang = normalize_language(language)
    hidden = character_flags(code, lang or language)  # whatever the language
    if not code.strip() or lang in ("html", "markdown"):
        return hidden
    reviewer = REVIEWERS.get(lang or "")
    if reviewer is None:
        text = (
            f"the language {language!r} is not one oi_kernel reviews, so the code was not reviewed"
        )
        return _dedupe([*hidden, Flag(0, "unparseable", MEDIUM, text)])
    try:
        found = reviewer(code, 0)
    except RecursionError:
        found = []
        hidden.append(Flag(0, "unparseable", MEDIUM, "the code is nested too deeply to review"))
    return _dedupe([*hidden, *(_flag(line, f) for line, f in found)])


def format_flags(flags: list[Flag]) -> str:
    """Compact text for the approval card and the LLM; "" when there are no flags."""
    if not flags:
        return ""
    high = sum(f.severity == HIGH for f in flags)
    head = f"Risk review: {high} high, {len(flags) - high} medium"
    ordered = sorted(flags, key=lambda f: (_RANK.get(f.severity, 2), f.line))
    return "\n".join([head, *(f"- [{f.severity}] {f.category}: {f.reason}" for f in ordered)])


def review_or_flag(language: str, code: str) -> list[Flag]:
    """The risk review's flags; when the review itself fails, one high flag saying the code
    is unreviewed (it fails closed: under the ``risky`` policy such a block asks)."""
    try:
        return review(language, code)
    except Exception as exc:
        text = (f"the risk review failed ({type(exc).__name__}: {exc}), so this code was not "
                "reviewed: read it yourself before running it")
        return [Flag(0, "unreviewed", HIGH, text)]
