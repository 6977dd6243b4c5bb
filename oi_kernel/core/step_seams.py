"""What a step runner (``core.steps``) is given and gives back: the settings it reads when a
step runs (``StepSettings``), the languages a session offers, and how a step ended
(``StepEnd``), which the turn loop keeps instead of reading the turn's record back."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from oi_kernel.core.types import StepRecord
from oi_kernel.languages import available_languages, normalize_language


class StepSettings(Protocol):
    """The settings a step reads when it runs (``c.Engine.*``, ``core.settings``, and the
    administrator's floors set by the policy): plain values, nothing else, from the running
    turn's frozen ``TurnSettings`` (``core.settings``)."""

    approval: str
    approval_floor: str
    untrusted_content: str
    known_safe: Sequence[str]  # the user's entries for the known-safe review
    known_safe_denied: Sequence[str]  # the administrator's
    step_timeout: float
    guard: str
    preview: str  # core.preview's mode, the administrator's floor, the copy's time limit
    preview_floor: str
    preview_timeout: float
    guard_time_limit: float
    guard_memory_limit: str
    max_output_chars: int
    languages: Sequence[str]
    tools: Any  # the turn's ``c.Tools.*`` (``core.tools.ToolSettings``): the tool call timeout


def offered_languages(wanted: Sequence[str]) -> list[str]:
    """The available languages, limited to ``wanted`` when that is not empty."""
    names = {normalize_language(name) for name in wanted}
    return [n for n in available_languages() if not wanted or n in names]


@dataclass(frozen=True)
class StepEnd:
    """How a step ended, as its own events told it (the loop's local state, never read back
    from the turn's fold): ``record`` is the step's last ``Decided``/``StepDone`` record."""

    run_all: bool
    stop: bool
    record: StepRecord
