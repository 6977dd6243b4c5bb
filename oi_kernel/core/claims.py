"""Every number in an answer traced to the output that printed it. Pure: stdlib only.

When an instruction ends with prose, ``trace`` reads the numbers it states
(``core.numbers``) and looks for each one among the numbers the session's steps printed:
first the steps of this instruction, then those of earlier instructions, then the values
the change summaries list (``total: int 3``), and last the code that ran (``head(5)``). A
number is found when it equals a printed one, or equals it rounded to the precision the
answer shows (``41.3`` for ``41.27``; ``23%`` for ``0.2304`` as a share; ``3.2 GB`` for
``3,215,000,000`` bytes), whatever separators either side used. Numbers quoted from the
user's instruction, and bare years not printed anywhere, are not claims.

A ``Check`` is the result: one ``Claim`` per number, ``found`` naming the step (or None),
and a ``note`` when tracing stopped early (too many numbers, over the time limit) or a step's
output was cut before the session kept it (then numbers from the cut part can't be found).
"""

from __future__ import annotations

import bisect
import math
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from oi_kernel.core.numbers import Written, numbers_in, output_numbers, prose_numbers
from oi_kernel.core.values import freeze

MAX_CLAIMS = 400  # numbers traced per answer; more are named as not traced, and why
TIME_LIMIT_S = 0.25  # matching stops here (a 2,000-word session takes ~1 ms)
MAX_SOURCE_CHARS = 100_000  # of one output, its head and tail are searched
MAX_TOTAL_CHARS = 400_000  # of all outputs (this instruction's first, then the latest)
CUT_MARK = "characters cut ...]"  # how output_text / outputs mark a cut (head … tail)
CUT_MARK_LINES = "lines) cut ...]"
_EPS = 1e-12


@dataclass(frozen=True)
class Source:
    """A text the answer's numbers may come from: a step's output, the variables and files a
    step changed, or its code."""

    turn: int
    step: int
    text: str
    where: str = "output"  # output | changes | code
    cut: bool = False  # the output was cut before it was kept


@dataclass(frozen=True)
class Found:
    """Where a number was printed, and how it matches (exact, rounded, share, converted)."""

    turn: int
    step: int
    printed: str
    how: str
    where: str = "output"


@dataclass(frozen=True)
class Claim:
    text: str
    kind: str
    start: int
    end: int
    found: Found | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Check:
    """The numbers of one answer and where each was found."""

    turn: int
    claims: list[Claim] = field(default_factory=list)
    note: str = ""  # tracing stopped early, or outputs were cut
    quoted: int = 0  # numbers left out as the user's own

    def __post_init__(self) -> None:
        object.__setattr__(self, "claims", freeze(self.claims))

    @property
    def untraced(self) -> list[Claim]:
        return [c for c in self.claims if c.found is None]

    def to_dict(self) -> dict[str, Any]:
        return {"turn": self.turn, "claims": [c.to_dict() for c in self.claims],
                "note": self.note, "quoted": self.quoted}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Check:
        claims = []
        for c in data.get("claims") or []:
            found = c.get("found")
            claims.append(Claim(str(c.get("text", "")), str(c.get("kind", "")),
                                int(c.get("start", 0)), int(c.get("end", 0)),
                                Found(**found) if isinstance(found, dict) else None))
        return cls(int(data.get("turn") or 0), claims, str(data.get("note") or ""),
                   int(data.get("quoted") or 0))


class _Index:
    """The numbers of some sources, sorted by magnitude for range look-ups."""

    def __init__(self, sources: Iterable[Source]) -> None:
        rows: list[tuple[float, float, str, Source]] = []
        for source in sources:
            for value, printed in output_numbers(source.text):
                rows.append((abs(value), value, printed, source))
        rows.sort(key=lambda r: r[0])
        self.keys = [r[0] for r in rows]
        self.rows = rows

    def best(self, target: float, half: float, negative: bool, exact: bool
             ) -> tuple[float, str, Source] | None:
        """The printed number nearest ``target`` within ``half`` (magnitudes)."""
        reach = _EPS * max(1.0, target) if exact else half + _EPS * max(1.0, target)
        lo = bisect.bisect_left(self.keys, target - reach)
        hi = bisect.bisect_right(self.keys, target + reach)
        best = None
        for _, value, printed, source in self.rows[lo:hi]:
            if negative and value >= 0:
                continue
            if best is None or abs(abs(value) - target) < abs(abs(best[0]) - target):
                best = (value, printed, source)
        return best


def trace(answer: str, instruction: str, current: list[Source], earlier: list[Source],
          *, turn: int = 0, limit: int = MAX_CLAIMS, time_limit_s: float = TIME_LIMIT_S
          ) -> Check:
    """Trace each number of ``answer`` (see the module's docstring). ``current``: the
    sources of the instruction's own steps; ``earlier``: those of the session before it,
    latest first. What is searched is bounded (``_bounded``), so is the time spent."""
    written = prose_numbers(answer)
    quoted = numbers_in(instruction) if instruction else set()
    current, earlier, unsearched = _bounded(current, earlier)
    levels = [
        _Index(s for s in current if s.where != "code"),
        _Index(s for s in earlier if s.where != "code"),
    ]
    code = _Index(s for s in [*current, *earlier] if s.where == "code")
    started = time.perf_counter()
    claims: list[Claim] = []
    dropped, note = 0, ""
    for i, w in enumerate(written):
        if i >= limit or time.perf_counter() - started > time_limit_s:
            rest = len(written) - i
            why = (f"the answer has more than {limit} numbers" if i >= limit
                   else f"tracing took longer than {time_limit_s * 1000:.0f} ms")
            note = f"stopped tracing after {i} of {len(written)} numbers: {why}; " \
                   f"{rest} not traced"
            break
        found = _find(w, levels)
        if found is None and (w.year_like or any(v in quoted for v in w.values)):
            dropped += 1  # the user's own number (or a year) that no output printed
            continue
        found = found or _in_code(w, code)
        claims.append(Claim(w.text, w.kind, w.start, w.end, found))
    if not note and any(c.found is None for c in claims):
        note = "; ".join(n for n in (_cut_note([*current, *earlier]), unsearched) if n)
    return Check(turn, claims, note, dropped)


def _bounded(current: list[Source], earlier: list[Source]
             ) -> tuple[list[Source], list[Source], str]:
    """The sources cut to what is searched: of each, its first and last
    ``MAX_SOURCE_CHARS`` / 2 characters (marked cut); in all, ``MAX_TOTAL_CHARS``, this
    instruction's first, then the latest earlier ones. Returns them and what was left out."""
    budget, skipped = MAX_TOTAL_CHARS, 0
    kept: tuple[list[Source], list[Source]] = ([], [])
    for bucket, sources in zip(kept, (current, earlier), strict=True):
        for s in sources:
            text = s.text
            if len(text) > MAX_SOURCE_CHARS:
                half = MAX_SOURCE_CHARS // 2
                text = f"{text[:half]}\n[... {len(text) - 2 * half:,} {CUT_MARK}\n{text[-half:]}"
            if len(text) > budget:
                skipped += 1
                continue
            budget -= len(text)
            bucket.append(s if text is s.text else Source(s.turn, s.step, text, s.where, True))
    left = (f"{skipped} earlier output{'s' if skipped != 1 else ''} not searched (more than "
            f"{MAX_TOTAL_CHARS:,} characters of outputs)") if skipped else ""
    return kept[0], kept[1], left


def _find(w: Written, levels: list[_Index]) -> Found | None:
    """Where ``w`` was printed: this instruction's steps first, then earlier ones."""
    negative = any(v < 0 for v in w.values)
    for level, index in enumerate(levels):
        hit = _in(index, w, negative)
        if hit is not None and (level == 0 or _close_enough(w, hit)):
            return hit
    return None


def _in_code(w: Written, code: _Index) -> Found | None:
    """A plain number written in the code that ran (``head(5)``), exactly."""
    if w.kind not in ("integer", "decimal", "separated") or w.factors != (1.0,):
        return None
    negative = any(v < 0 for v in w.values)
    for v in w.values:
        found = code.best(abs(v), 0.0, negative, exact=True)
        if found is not None:
            _, printed, source = found
            return Found(source.turn, source.step, printed, "exact", "code")
    return None


def _close_enough(w: Written, hit: Found) -> bool:
    """Whether a match in an earlier instruction's output is likely the same number: an
    earlier session holds many numbers, and a short one (two digits) matches some of them
    by chance, so there it must be printed as written, or shown with 3 significant digits."""
    if hit.how == "exact":
        return True
    shown = abs(w.values[0]) / (2 * w.half) if w.half else math.inf
    return hit.how in ("rounded", "share") and shown >= 100


def _in(index: _Index, w: Written, negative: bool) -> Found | None:
    best: tuple[float, Found] | None = None
    for v in w.values:
        for f in w.factors:
            target = abs(v) * f
            hit = index.best(target, w.half * f, negative, exact=False)
            if hit is None:
                continue
            value, printed, source = hit
            off = abs(abs(value) - target) / max(abs(target), 1e-300)
            how = _how(w, f, off)
            candidate = Found(source.turn, source.step, printed, how, source.where)
            if best is None or off < best[0]:
                best = (off, candidate)
    return best[1] if best else None


def _how(w: Written, factor: float, off: float) -> str:
    if w.kind == "percent" and factor != 1.0:
        return "share"
    if factor != 1.0:
        return "converted"
    return "exact" if off < 1e-9 else "rounded"


def _cut_note(sources: list[Source]) -> str:
    cut = sorted({(s.turn, s.step) for s in sources if s.cut})
    if not cut:
        return ""
    where = ", ".join(f"step {s}" if t == cut[-1][0] else f"instruction {t} step {s}"
                      for t, s in cut[:4])
    return (f"traced from what the session kept: the output of {where} was too large "
            "and was cut, so a number from the cut part can't be found")


def source_of(turn: int, step: int, text: str, where: str = "output") -> Source:
    """A source, marked as cut when the text carries the mark of a cut."""
    return Source(turn, step, text, where, CUT_MARK in text or CUT_MARK_LINES in text)
