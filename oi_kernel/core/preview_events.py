"""The events of a preview (``core.preview``): a step run in a disposable copy, and the real
run compared with it. Each names its record (``core.recorded.Recorded``); ``core.events``
re-exports them with the turn's events.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from oi_kernel.core.preview_result import PreviewResult
from oi_kernel.core.recorded import Recorded

__all__ = ["Previewed", "PreviewCompared"]


@dataclass(frozen=True)
class Previewed(Recorded):
    """A step was previewed in a disposable copy (``core.preview``): what it would do."""

    record_kind: ClassVar[str] = "preview"
    doc: ClassVar[str] = ("`turn`, `step`, `language`, `code` (what was previewed), "
                          "`sha256` (of that code: a `decision` with the same hash ran "
                          "it byte for byte), `status` (`\"ok\"`, `\"error\"`, "
                          "`\"timeout\"`, `\"unavailable\"`), `outputs`, `changes` "
                          "(as an `execution` record's), `network` (`HOST:PORT` tried, "
                          "blocked), `why` (when unavailable), `copy` (`\"overlay\"` "
                          "or `\"scratch copy\"`), `duration_s`")
    turn: int
    step: int
    language: str
    result: PreviewResult

    def to_record(self) -> dict[str, Any]:
        return {"turn": self.turn, "step": self.step, "language": self.language,
                "code": self.result.code, **self.result.record()}

    @classmethod
    def from_record(cls, fields: Mapping[str, Any], kind: str = "") -> Previewed:
        names = ("status", "outputs", "changes", "network", "why", "duration_s", "copy")
        result = PreviewResult(fields.get("code", ""), **{k: fields[k] for k in names if k in fields})
        return cls(fields["turn"], fields["step"], fields.get("language", ""), result)


@dataclass(frozen=True)
class PreviewCompared(Recorded):
    """A previewed step ran for real: whether it ran the previewed code (byte for byte) and
    which of its changes differed from the preview's (``differed``: lines)."""

    record_kind: ClassVar[str] = "preview_compared"
    doc: ClassVar[str] = ("`turn`, `step`, `sha256` (of the code that ran), `same_code` "
                          "(it is the previewed code), `differed` (lines: `only in the "
                          "real run: …`, `only in the preview: …`; empty when the "
                          "changes matched)")
    turn: int
    step: int
    sha256: str
    same_code: bool
    differed: tuple[str, ...] = ()
