"""Four-eyes approval: some steps need a decision by someone other than the instruction's author.

``approval`` (``%approval``, the administrator's policy) may be ``four-eyes``: every step asks,
as with ``always``, and a step with a high risk flag must be run (Run, Run all, Edit then
Run) by someone other than the person who sent the instruction; or ``four-eyes-all``: every
step needs that second person. The author may always Skip or Stop. A step that needs a second
person asks even after "Run all" and under auto-run. Pure rules and the sentences that say
them; the card, the stdin question and the engine's backstop share them.
"""

from __future__ import annotations

from typing import Any

from oi_kernel.core.approval_modes import BY_NAME, NAMES, SECOND_PERSON

MODES = SECOND_PERSON  # the modes that need a second person (core.approval_modes)
APPROVALS = NAMES  # every ``approval`` value, for messages


def _needs(mode: str) -> str:
    """Which steps ``mode`` hands to a second person: "every", "high-risk" or ""."""
    return BY_NAME[mode].second_person if mode in BY_NAME else ""


def describe(mode: str) -> str:
    """What a four-eyes mode means, as a sentence after its name ("" for the others)."""
    if _needs(mode) == "high-risk":
        return (" Every step asks; a step with a high risk flag must be run by someone other "
                "than the person who sent the instruction (they may Skip or Stop it).")
    if _needs(mode) == "every":
        return (" Every step must be run by someone other than the person who sent the "
                "instruction (they may Skip or Stop it).")
    return ""


def required(modes: tuple[str, ...], flags: list[Any]) -> bool:
    """Whether a step with ``flags`` needs a second person under any of ``modes``."""
    needs = {_needs(mode) for mode in modes}
    if "every" in needs:
        return True
    return "high-risk" in needs and any(getattr(f, "severity", "") == "high" for f in flags)


def why(mode: str) -> str:
    return ("every step needs" if _needs(mode) == "every"
            else "this step has a high risk flag, so it needs")


def yes_kept_text(mode: str) -> str:
    """What ``%%oi -y`` says when the session uses four-eyes approval: ``-y`` (run without
    asking) never lowers it, since the second person is the point of the setting."""
    return (f"🔐 `-y` does not turn off four-eyes approval (`{mode}`, this session's setting): "
            f"every step asks as usual.{describe(mode)} To let this session's steps run "
            "without asking, set `%oi approval never` (or `risky`) first.")


def waiting_text(author: str, mode: str, source: str) -> str:
    """What the card says while it waits: the rule, and whom it waits for."""
    return (f"🔐 Four-eyes approval ({source}): {why(mode)} a decision by someone other "
            f"than {author}, who sent the instruction. Waiting for a collaborator to Run it; "
            f"{author} may Skip or Stop.")


def how_to_proceed(source: str) -> str:
    """Alone in a session: what can be done."""
    if source == "policy":
        return ("Ask a collaborator to open this notebook and decide, or Skip / Stop. The "
                "administrator's policy requires four-eyes approval, so it cannot be turned "
                "off here.")
    return ("Ask a collaborator to open this notebook and decide, or Skip / Stop; to allow "
            "running your own flagged steps, set `%approval risky` (or `always`).")


def refusal_text(author: str, mode: str, source: str) -> str:
    """What an author's own Run is told."""
    return (f"⛔ {author} sent this instruction, so {author}'s Run does not count here: "
            f"{why(mode)} someone else's decision. {how_to_proceed(source)}")
