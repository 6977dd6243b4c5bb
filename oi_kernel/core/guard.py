"""The runtime guard, seen from the engine: which steps run under it, with which limits,
and what a stop means for the step (the flags its card shows when it is asked about, the
model's feedback). The guard itself runs where the code runs (``execution/probe/guard.py``);
an executor that can guard offers ``arm_guard(settings)`` and ``guard_report()``.

Guarded are the steps nobody was asked about because the review let them through under
``%approval risky`` (``guard = "risky"``, the default), or every step that runs without a
person deciding it, auto-run and "Run all" included (``"unasked"``); ``"off"`` guards none.
A step a person approved runs unguarded, as approved.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from oi_kernel.core.executor import ExecResult
from oi_kernel.core.types import ApprovalRequest, Decision
from oi_kernel.core.values import freeze
from oi_kernel.safety.risk import HIGH, Flag

GUARD_MODES = ("risky", "unasked", "off")
STOP_CATEGORY = "guard-stop"
LIMIT_CATEGORY = "limit-stop"


@dataclass(frozen=True)
class GuardStop:
    """What stopped a guarded step: the guard's stops (``{"event", "what"}``), or a default
    limit (``limit``: "time" or "memory", with ``limit_text`` saying which)."""

    stops: list[dict[str, str]] = field(default_factory=list)
    limit: str = ""
    limit_text: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "stops", freeze(self.stops))

    def summary(self) -> str:
        """One line: "network connection to 10.0.0.5:443; deleting data.csv"."""
        if self.limit:
            return self.limit_text
        whats = list(dict.fromkeys(s["what"] for s in self.stops))
        more = f" (and {len(whats) - 3} more)" if len(whats) > 3 else ""
        return "; ".join(whats[:3]) + more

    def flags(self) -> list[Flag]:
        """The flags of the question asked after the stop (shown on the card, in the stdin
        question, to an API callback and ACP client)."""
        if self.limit:
            return [Flag(0, LIMIT_CATEGORY, HIGH, f"{self.limit_text}. Run it again without "
                         "the limits of steps that run without asking?")]
        return [Flag(0, STOP_CATEGORY, HIGH, f"the runtime guard stopped this step: {what}. "
                     "Run it again without the guard?")
                for what in dict.fromkeys(s["what"] for s in self.stops)][:5]

    def declined(self) -> str:
        """The model's feedback when the user does not run it again."""
        why = ("a limit of steps that run without asking" if self.limit
               else "the runtime guard")
        return (f"{why[0].upper()}{why[1:]} stopped this step ({self.summary()}), and the user "
                "chose not to run it without that protection. Do not try to get around it; "
                "continue without it or say what you would need.")

    def record(self) -> dict[str, Any]:
        """The session log's fields."""
        return {"stops": self.stops, **({"limit": self.limit, "limit_text": self.limit_text}
                                        if self.limit else {})}


def guarded(mode: str, approval: str, request: ApprovalRequest, decision: Decision) -> bool:
    """Whether a step decided ``decision`` runs under the guard (see the module)."""
    if mode == "off" or decision.by != "auto" or request.block.tool:
        return False
    if mode == "unasked":
        return True
    return approval == "risky" and not request.flags


def settings(root: str, memory: str) -> dict[str, Any]:
    """What the executor's ``arm_guard`` is given (``memory``: a size such as "2G"; the
    executor turns it into bytes for the probe)."""
    return {"root": root, "memory": memory}


def stop_of(report: dict[str, Any] | None, result: ExecResult | None,
            time_limit: float, memory_text: str, timed_out: bool) -> GuardStop | None:
    """The stop of a guarded step from the guard's ``report`` and its result (None: the
    step ran to its end within its limits and the guard stopped nothing)."""
    stops = list((report or {}).get("stops") or [])
    if stops:
        return GuardStop(stops)
    if timed_out:
        return GuardStop(limit="time", limit_text=f"stopped after {time_limit:g} s, the time "
                         "limit of steps that run without asking (OI_GUARD_TIME_LIMIT)")
    if result is not None and memory_text and any(
            o.get("output_type") == "error" and str(o.get("ename", "")).endswith("MemoryError")
            for o in result.outputs):
        return GuardStop(limit="memory", limit_text=f"ran out of the {memory_text} memory "
                         "limit of steps that run without asking (OI_GUARD_MEMORY_LIMIT)")
    return None
