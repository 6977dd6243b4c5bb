"""The risk review against a corpus: how many adversarial snippets ask under ``%approval
risky`` (any flag; goal 100%) and how many ordinary data-science snippets ask (goal ≤ 5%),
per class. The flags are the engine's own (``review_or_flag``: what a step gets).

    python benchmarks/risk_review.py            # print the table and every miss
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


def load(kind: str) -> list[Snippet]:
    files = sorted((CORPUS / kind).glob("*.py"))
    return [s for f in files for s in parse(f.read_text(encoding="utf-8"), kind, f.stem)]


def measure(kind: str) -> dict[str, Tally]:
    """Per class: how many snippets the engine would ask about under ``risky``."""
    from oi_kernel.core.steps import review_or_flag

    tallies: dict[str, Tally] = {}
    for snippet in load(kind):
        flags = review_or_flag(snippet.language, snippet.code)
        tally = tallies.setdefault(snippet.group, Tally())
        tally.total += 1
        tally.asked += bool(flags)
        asked_wrongly = bool(flags) if kind == "ordinary" else not flags
        if asked_wrongly:
            shown = "; ".join(f.reason for f in flags) or "no flag"
            tally.misses.append((snippet, shown))
    return tallies


def overall(tallies: dict[str, Tally]) -> Tally:
    total = Tally()
    for tally in tallies.values():
        total.total += tally.total
        total.asked += tally.asked
        total.misses += tally.misses
    return total


def table(adversarial: dict[str, Tally], ordinary: dict[str, Tally]) -> str:
    rows = ["| corpus | class | snippets | ask under `risky` | goal |", "|---|---|---:|---:|---|"]
    for kind, tallies, goal in (
        ("adversarial", adversarial, "100%"),
        ("ordinary", ordinary, "≤ 5%"),
    ):
        for group, tally in sorted(tallies.items()):
            rows.append(f"| {kind} | {group} | {tally.total} | {tally.asked} ({tally.share:.1%}) | |")
        total = overall(tallies)
        rows.append(f"| **{kind}** | **all** | **{total.total}** | "
                    f"**{total.asked} ({total.share:.1%})** | {goal} |")
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
    args = parser.parse_args(argv)
    adversarial, ordinary = measure("adversarial"), measure("ordinary")
    text = table(adversarial, ordinary)
    print(text)
    print()
    print(misses_text(adversarial, ordinary))
    if args.write:
        write_report(text, misses_text(adversarial, ordinary))
        print(f"\nwrote {REPORT}")
    ok = overall(adversarial).share >= ADVERSARIAL_GOAL and overall(ordinary).share <= ORDINARY_LIMIT
    return 0 if ok else 1


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent))
    sys.exit(main())
