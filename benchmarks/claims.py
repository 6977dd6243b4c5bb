"""Answer checking against a corpus: how many planted wrong numbers are marked "not in any
output" (goal ≥ 95%), how many correct numbers are marked wrongly (goal ≤ 2%), per kind of
number and per kind of planted error, and what tracing one answer costs in a session of
2,000 words (goal < 5 ms). The tracer is the engine's own (``core.claims.trace``).

    python benchmarks/claims.py            # print the tables and every miss
    python benchmarks/claims.py --write    # also update benchmarks/CLAIMS.md

The corpus is ``benchmarks/claims_corpus.jsonl`` (written by ``claims_corpus.py``): each
pair is an instruction, the outputs its steps printed, the answer, and the numbers of the
answer planted wrong (in a third of the pairs).
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from oi_kernel.core.claims import Check, Source, trace  # noqa: E402

CORPUS = HERE / "claims_corpus.jsonl"
REPORT = HERE / "CLAIMS.md"
MARKED_GOAL = 0.95  # planted wrong numbers marked
FALSE_LIMIT = 0.02  # correct numbers marked wrongly
COST_LIMIT_MS = 5.0  # one answer, in a 2,000-word session
SESSION_WORDS = 2000
COMMAND = "python benchmarks/claims.py --write"
BEGIN, END = "<!-- results: begin -->", "<!-- results: end -->"


@dataclass
class Tally:
    total: int = 0
    marked: int = 0
    misses: list[str] = field(default_factory=list)

    @property
    def share(self) -> float:
        return self.marked / self.total if self.total else 0.0


@dataclass
class Result:
    planted: dict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))
    correct: dict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))
    unprinted: Tally = field(default_factory=Tally)  # true but printed nowhere: apart
    session: Tally = field(default_factory=Tally)  # planted, traced after a busy session
    cost_ms: list[float] = field(default_factory=list)
    pairs: int = 0

    def overall(self, table: dict[str, Tally]) -> Tally:
        total = Tally()
        for t in table.values():
            total.total += t.total
            total.marked += t.marked
            total.misses += t.misses
        return total


def load(path: Path = CORPUS) -> list[dict]:
    """The generated corpus, then the hand-written pairs (``claims_hand.py``)."""
    from benchmarks.claims_hand import PAIRS

    generated = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
                 if line]
    return [*generated, *PAIRS]


def check_pair(pair: dict, earlier: list[Source] | None = None) -> Check:
    sources = [Source(1, i + 1, text) for i, text in enumerate(pair["outputs"])]
    return trace(pair["answer"], pair["instruction"], sources, earlier or [], turn=1)


def measure(pairs: list[dict]) -> Result:
    result = Result(pairs=len(pairs))
    for pair in pairs:
        check = check_pair(pair)
        wrong = {_bare(p["text"]): p["error"] for p in pair["planted"]}
        unprinted = {_bare(t) for t in pair.get("unprinted", [])}
        seen = set()
        for claim in check.claims:
            bare = _bare(claim.text)
            planted = wrong.get(bare)
            marked = claim.found is None
            if bare in unprinted:
                result.unprinted.total += 1
                result.unprinted.marked += marked
                continue
            if planted is not None and bare not in seen:
                seen.add(bare)
                tally = result.planted[planted]
                tally.total += 1
                tally.marked += marked
                if not marked:
                    tally.misses.append(f"{pair['id']}: {claim.text} traced to {claim.found}")
                continue
            tally = result.correct[claim.kind]
            tally.total += 1
            tally.marked += marked
            if marked:
                tally.misses.append(f"{pair['id']}: {claim.text} marked in {pair['answer']!r}")
        for text, error in wrong.items():
            if text not in seen:  # the tracer did not even read it as a number
                result.planted[error].total += 1
                result.planted[error].misses.append(f"{pair['id']}: {text} not read")
    in_session(pairs, result)
    return result


def _bare(text: str) -> str:
    """The digits part of a claim's text as the corpus names planted numbers."""
    import re

    m = re.search(r"[-−]?\d(?:[\d.,]*\d)?", text)
    return m.group().replace("−", "-") if m else text


def session_of(pairs: list[dict], i: int) -> list[Source]:
    """The outputs of the pairs before pair ``i`` (wrapping round), as an earlier session of
    ``SESSION_WORDS`` words (outputs and answers) before pair ``i``'s instruction."""
    earlier, words, j = [], len(pairs[i]["answer"].split()), i
    while words < SESSION_WORDS:
        j = (j - 1) % len(pairs)
        other = pairs[j]
        for k, text in enumerate(other["outputs"]):
            earlier.append(Source(0, k + 1, text))
            words += len(text.split())
        words += len(other["answer"].split())
    return earlier


def in_session(pairs: list[dict], result: Result, rounds: int = 5) -> None:
    """Each answer traced after a 2,000-word session of other analyses: its cost (best of
    ``rounds``), and whether its planted numbers are still marked (a busy session prints
    many numbers a wrong one may equal by chance)."""
    for i, pair in enumerate(pairs):
        earlier = session_of(pairs, i)
        best, check = float("inf"), None
        for _ in range(rounds):
            started = time.perf_counter()
            check = check_pair(pair, earlier)
            best = min(best, time.perf_counter() - started)
        result.cost_ms.append(best * 1000)
        wrong = {_bare(p["text"]) for p in pair["planted"]}
        for claim in check.claims if check else []:
            if _bare(claim.text) in wrong:
                wrong.discard(_bare(claim.text))
                result.session.total += 1
                result.session.marked += claim.found is None
                if claim.found is not None:
                    result.session.misses.append(
                        f"{pair['id']} (in a session): {claim.text} traced to {claim.found}")


def table(result: Result) -> str:
    planted, correct = result.overall(result.planted), result.overall(result.correct)
    lines = [f"{result.pairs} pairs; {planted.total} planted wrong numbers; "
             f"{correct.total} correct numbers", "",
             "| planted error | numbers | marked | share |", "|---|---:|---:|---:|"]
    for name, t in sorted(result.planted.items()):
        lines.append(f"| {name} | {t.total} | {t.marked} | {t.share:.1%} |")
    lines.append(f"| **all** (goal ≥ {MARKED_GOAL:.0%}) | {planted.total} | {planted.marked} "
                 f"| **{planted.share:.1%}** |")
    t = result.session
    lines.append(f"| all, after a {SESSION_WORDS:,}-word session of other analyses "
                 f"(goal ≥ {MARKED_GOAL:.0%}) | {t.total} | {t.marked} | **{t.share:.1%}** |")
    lines += ["", "| kind of correct number | numbers | wrongly marked | share |",
              "|---|---:|---:|---:|"]
    for name, t in sorted(result.correct.items()):
        lines.append(f"| {name} | {t.total} | {t.marked} | {t.share:.1%} |")
    lines.append(f"| **all** (goal ≤ {FALSE_LIMIT:.0%}) | {correct.total} | {correct.marked} "
                 f"| **{correct.share:.1%}** |")
    cost = result.cost_ms
    u = result.unprinted
    lines += ["", f"Numbers true or harmless but printed by no step (counts of listed things, "
              f"thresholds, head arithmetic; hand-written pairs): {u.marked} of {u.total} "
              "marked \"not in any output\", as the rule says (counted in neither line above)."]
    lines += ["", f"Cost per answer in a {SESSION_WORDS:,}-word session (best of 5 each): "
              f"median {statistics.median(cost):.2f} ms, p90 "
              f"{sorted(cost)[int(len(cost) * 0.9)]:.2f} ms, max {max(cost):.2f} ms "
              f"(goal: p90 < {COST_LIMIT_MS:.0f} ms)."]
    return "\n".join(lines)


def misses_text(result: Result) -> str:
    lines = [m for t in result.planted.values() for m in t.misses] + result.session.misses
    lines += [m for t in result.correct.values() for m in t.misses]
    return "\n".join(lines)


def failures(result: Result) -> list[str]:
    """What falls short of the goals (empty when all are met)."""
    planted, correct = result.overall(result.planted), result.overall(result.correct)
    problems = []
    if planted.share < MARKED_GOAL:
        problems.append(f"planted wrong numbers marked: {planted.share:.1%} < {MARKED_GOAL:.0%}")
    if result.session.share < MARKED_GOAL:
        problems.append(f"planted wrong numbers marked after a session: "
                        f"{result.session.share:.1%} < {MARKED_GOAL:.0%}")
    if correct.share > FALSE_LIMIT:
        problems.append(f"correct numbers marked: {correct.share:.1%} > {FALSE_LIMIT:.0%}")
    p90 = sorted(result.cost_ms)[int(len(result.cost_ms) * 0.9)]
    if p90 >= COST_LIMIT_MS:  # (p90: one slow answer on a loaded machine is noise)
        problems.append(f"p90 cost per answer {p90:.2f} ms >= {COST_LIMIT_MS} ms")
    return problems


def write_report(text: str) -> None:
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    body = f"{BEGIN}\nMeasured {stamp} with `{COMMAND}`:\n\n{text}\n{END}"
    old = REPORT.read_text(encoding="utf-8") if REPORT.exists() else ""
    if BEGIN in old and END in old:
        new = old[: old.index(BEGIN)] + body + old[old.index(END) + len(END):]
    else:
        new = old + "\n" + body + "\n"
    REPORT.write_text(new, encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="update benchmarks/CLAIMS.md")
    args = parser.parse_args()
    result = measure(load())
    text = table(result)
    print(text)
    if misses := misses_text(result):
        print("\nmisses:\n" + misses)
    if args.write:
        write_report(text)
    problems = failures(result)
    for p in problems:
        print("BELOW GOAL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
