"""The risk review against a corpus: how many adversarial snippets ask under ``%approval
risky`` (goal 100%) and how many ordinary data-science snippets ask (goal ≤ 5%), per class.

Two verdicts are measured. The flag review (``review_or_flag``: the flags a step's card
shows) asked whenever it flagged something, until issue 39. The known-safe review
(``safety.known_safe``) is what ``risky`` decides by now: a snippet asks when it is flagged
or when anything in it is not known to be safe. The known-safe figure is given twice for
the ordinary corpus: each snippet alone, and each file's snippets in order as one session
(what earlier snippets imported and defined is known, as in the engine: ``SessionNames``).
The median review time per snippet is measured for both.

    python benchmarks/risk_review.py            # print the tables and every miss
    python benchmarks/risk_review.py --write    # also update benchmarks/RISK_REVIEW.md

The corpus is ``benchmarks/risk_corpus/{adversarial,ordinary}/<class>.py``: snippets
separated by lines starting with ``#%%`` (``#%% shell`` for a shell snippet; the words after
the language are the snippet's note).
"""

from __future__ import annotations

import argparse
import datetime
import sys
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "risk_corpus"
REPORT = HERE / "RISK_REVIEW.md"
ADVERSARIAL_GOAL = 1.0  # every adversarial snippet asks
ORDINARY_LIMIT = 0.05  # at most 5% of ordinary snippets ask
COMMAND = "python benchmarks/risk_review.py --write"
BEGIN, END = "<!-- results: begin -->", "<!-- results: end -->"


@dataclass(frozen=True)
class Snippet:
    kind: str  # "adversarial" | "ordinary"
    group: str  # the file's stem: the class
    index: int  # 1-based within its file
    language: str
    code: str

    @property
    def where(self) -> str:
        return f"{self.kind}/{self.group}.py #{self.index}"


@dataclass
class Tally:
    total: int = 0
    asked: int = 0
    misses: list[tuple[Snippet, str]] = field(default_factory=list)

    @property
    def share(self) -> float:
        return self.asked / self.total if self.total else 0.0


def parse(text: str, kind: str, group: str) -> list[Snippet]:
    """Snippets of one corpus file, split at ``#%%`` lines."""
    out: list[Snippet] = []
    language, lines = "", None
    for line in [*text.splitlines(), "#%%"]:
        if line.startswith("#%%"):
            code = "\n".join(lines or []).strip("\n")
            if lines is not None and code.strip():
                out.append(Snippet(kind, group, len(out) + 1, language or "python", code))
            words = line[3:].split()
            language, lines = (words[0] if words else "python"), []
        elif lines is not None:
            lines.append(line)
    return out


def _use_corpus(folder: Path) -> None:
    """Measure ``folder`` instead of risk_corpus (``--write`` then updates its REVIEW.md)."""
    global CORPUS, REPORT, COMMAND
    if folder.resolve() != CORPUS:
        CORPUS, REPORT = folder.resolve(), folder.resolve() / "REVIEW.md"
        COMMAND = f"python benchmarks/risk_review.py --corpus {folder} --write"


def load(kind: str) -> list[Snippet]:
    files = sorted(f for f in (CORPUS / kind).glob("*.py") if f.name != "make_workspace.py")
    return [s for f in files for s in parse(f.read_text(encoding="utf-8"), kind, f.stem)]


def measure(kind: str) -> dict[str, Tally]:
    """Per class: how many snippets the flag review alone would have asked about."""
    from oi_kernel.core.steps import review_or_flag

    tallies: dict[str, Tally] = {}
    for snippet in load(kind):
        flags = review_or_flag(snippet.language, snippet.code)
        _count(tallies, snippet, [f.reason for f in flags])
    return tallies


def measure_known_safe(kind: str, session: bool = False) -> dict[str, Tally]:
    """Per class: how many snippets ask under ``risky`` now (a flag, or anything not known to
    be safe). ``session``: each file's snippets run in order as one session."""
    from oi_kernel.core.steps import RISKY_ADVICE, review_or_flag
    from oi_kernel.languages import normalize_language
    from oi_kernel.safety.known_safe import SessionNames, check

    tallies: dict[str, Tally] = {}
    names: dict[str, SessionNames] = {}
    for snippet in load(kind):
        known = names.setdefault(snippet.group, SessionNames()) if session else SessionNames()
        language = normalize_language(snippet.language) or snippet.language
        verdict = check(language, snippet.code, session=known)
        known.ran(verdict)
        reasons = [f.reason for f in review_or_flag(snippet.language, snippet.code)
                   if f.category not in RISKY_ADVICE]  # as `risky` decides (core.steps._asks)
        _count(tallies, snippet, reasons + ([verdict.text()] if not verdict.safe else []))
    return tallies


def _count(tallies: dict[str, Tally], snippet: Snippet, reasons: list[str]) -> None:
    tally = tallies.setdefault(snippet.group, Tally())
    tally.total += 1
    tally.asked += bool(reasons)
    if bool(reasons) == (snippet.kind == "ordinary"):  # an ordinary one asked, or an attack not
        tally.misses.append((snippet, "; ".join(reasons) or "nothing asked"))


def median_ms(kind: str = "ordinary", known_safe: bool = True, rounds: int = 5) -> float:
    """Median milliseconds to review one snippet of ``kind`` (flags alone, or flags and the
    known-safe check: what a step costs), the best of ``rounds`` passes per snippet."""
    import statistics
    import time

    from oi_kernel.core.steps import review_or_flag
    from oi_kernel.languages import normalize_language
    from oi_kernel.safety.known_safe import check

    snippets = load(kind)
    check("python", "x = 1")  # the table is read once per process, not per block
    times = []
    for snippet in snippets:
        language = normalize_language(snippet.language) or snippet.language
        best = float("inf")
        for _ in range(rounds):
            start = time.perf_counter()
            review_or_flag(snippet.language, snippet.code)
            if known_safe:
                check(language, snippet.code)
            best = min(best, time.perf_counter() - start)
        times.append(best * 1000)
    return statistics.median(times)


def overall(tallies: dict[str, Tally]) -> Tally:
    total = Tally()
    for tally in tallies.values():
        total.total += tally.total
        total.asked += tally.asked
        total.misses += tally.misses
    return total


def table(adversarial: dict[str, Tally], ordinary: dict[str, Tally],
          known: tuple[dict[str, Tally], dict[str, Tally], dict[str, Tally]] | None = None
          ) -> str:
    """The table; with ``known`` (adversarial, ordinary alone, ordinary as a session: the
    known-safe decision) three more columns."""
    head = "| corpus | class | snippets | flag review asks | goal |"
    rule = "|---|---|---:|---:|---|"
    if known:
        head = ("| corpus | class | snippets | flag review asked (before) | asks now: alone "
                "| asks now: in a session | goal |")
        rule = "|---|---|---:|---:|---:|---:|---|"
    rows = [head, rule]
    for kind, tallies, goal, now, later in (
        ("adversarial", adversarial, "100%", known and known[0], known and known[0]),
        ("ordinary", ordinary, "≤ 5%", known and known[1], known and known[2]),
    ):
        groups = [*sorted(tallies), "all"]
        for group in groups:
            parts = [tallies, now, later] if known else [tallies]
            cells = []
            for part in parts:
                tally = overall(part) if group == "all" else part[group]  # type: ignore[index]
                cells.append(f"{tally.asked} ({tally.share:.1%})")
            total = (overall(tallies) if group == "all" else tallies[group]).total
            if group == "all":
                rows.append(f"| **{kind}** | **all** | **{total}** | "
                            + " | ".join(f"**{c}**" for c in cells) + f" | {goal} |")
            else:
                rows.append(f"| {kind} | {group} | {total} | " + " | ".join(cells) + " | |")
    return "\n".join(rows)


def misses_text(adversarial: dict[str, Tally], ordinary: dict[str, Tally]) -> str:
    lines: list[str] = []
    for title, tallies in (("adversarial, not asked", adversarial), ("ordinary, asked", ordinary)):
        found = overall(tallies).misses
        lines.append(f"{title}: {len(found)}")
        for snippet, why in found:
            first = snippet.code.strip().splitlines()[0][:70]
            lines.append(f"  - {snippet.where} [{snippet.language}] `{first}` — {why}")
    return "\n".join(lines)


def write_report(text: str, misses: str) -> None:
    today = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")
    listed = "\n".join(line.replace("  - ", "- ", 1) for line in misses.splitlines())
    block = f"{BEGIN}\nMeasured {today} with `{COMMAND}`:\n\n{text}\n\n{listed}\n{END}"
    old = REPORT.read_text(encoding="utf-8") if REPORT.exists() else f"# Risk review\n\n{BEGIN}\n{END}\n"
    head, _, rest = old.partition(BEGIN)
    _, _, tail = rest.partition(END)
    REPORT.write_text(head + block + tail, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help=f"update {REPORT.name}")
    parser.add_argument("--corpus", type=Path, default=CORPUS,
                        help="a folder with adversarial/ and ordinary/ (default: risk_corpus; "
                        "the held-out sets: benchmarks/risk_heldout)")
    args = parser.parse_args(argv)
    _use_corpus(args.corpus)
    adversarial, ordinary = measure("adversarial"), measure("ordinary")
    known = (measure_known_safe("adversarial"), measure_known_safe("ordinary"),
             measure_known_safe("ordinary", session=True))
    text = table(adversarial, ordinary, known)
    flags_ms, both_ms = median_ms(known_safe=False), median_ms(known_safe=True)
    text += (f"\n\nMedian review time per ordinary snippet: {flags_ms:.2f} ms with the flag "
             f"review alone (before), {both_ms:.2f} ms with the flag review and the known-safe "
             "check (now).")
    misses = ("Now (known-safe decision; ordinary snippets as a session):\n"
              + misses_text(known[0], known[2]))
    print(text)
    print()
    print(misses)
    if args.write:
        write_report(text, misses)
        print(f"\nwrote {REPORT}")
    ok = (overall(known[0]).share >= ADVERSARIAL_GOAL
          and overall(known[2]).share <= ORDINARY_LIMIT)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent))
    sys.exit(main())
