"""Run every benchmark and write one Markdown report.

    python benchmarks/run_all.py [--quick] [-o benchmarks/RESULTS.md] [--only 1,3]

``--quick`` uses tiny iteration counts (a smoke run: the numbers mean nothing). Every
figure is a ratio against a baseline measured in the same run, or a median / p90 over
many runs; the load average is printed next to them because the machine is shared.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import SectionResult, load_average  # noqa: E402

SECTIONS: dict[str, str] = {
    "1": "benchmarks.overhead",
    "2": "benchmarks.throughput",
    "3": "benchmarks.streaming",
    "4": "benchmarks.startup",
    "5": "benchmarks.memory",
    "6": "benchmarks.tokens",
    "7": "benchmarks.vs_open_interpreter",
    "8": "benchmarks.sandbox_start",
}


def run_section(key: str, quick: bool) -> SectionResult:
    import importlib

    module = importlib.import_module(SECTIONS[key])
    try:
        return module.run(quick=quick)
    except Exception as exc:  # one broken section must not hide the others
        result = SectionResult(getattr(module, "TITLE", f"Section {key}"))
        result.skipped = f"failed: {type(exc).__name__}: {exc}"
        result.notes.append("```\n" + traceback.format_exc()[-3000:] + "```")
        return result


def table(results: list[SectionResult]) -> str:
    lines = [
        "| section | metric | Open Interpreter kernel | baseline | ratio | target | |",
        "|---|---|---|---|---|---|---|",
    ]
    for res in results:
        if res.skipped:
            lines.append(f"| {res.title} | skipped: {res.skipped} | | | | | |")
        for r in res.rows:
            lines.append(
                f"| {r.section} | {r.metric} | {r.ours} | {r.baseline} | {r.ratio} "
                f"| {r.target} | {r.verdict} |"
            )
    return "\n".join(lines)


def report(
    results: list[SectionResult], quick: bool, started: float, load_before: str, load_after: str
) -> str:
    now = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    head = [
        "# oi_kernel benchmarks",
        "",
        f"- Date: {now}; command: `python benchmarks/run_all.py"
        f"{' --quick' if quick else ''}`"
        + (" (QUICK: smoke run, numbers meaningless)" if quick else ""),
        f"- Machine: {platform.platform()}, Python {platform.python_version()}",
        f"- Load average before: {load_before}; after: {load_after}",
        f"- Total time: {time.perf_counter() - started:.0f} s",
        "",
        "## Summary",
        "",
        table(results),
        "",
    ]
    body = []
    for res in results:
        body += [f"## {res.title}", ""]
        if res.skipped:
            body += [f"Skipped: {res.skipped}", ""]
        for note in res.notes:
            body += [note, ""]
    return "\n".join(head + body)


def print_section(result: SectionResult) -> None:
    print(
        report(
            [result],
            quick=False,
            started=time.perf_counter(),
            load_before=load_average(),
            load_after=load_average(),
        )
    )


def main(argv: list[str] | None = None, progress: Callable[[str], None] = print) -> Path | None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny iteration counts (smoke)")
    parser.add_argument("-o", "--output", help="write the Markdown report here")
    parser.add_argument("--only", help="comma-separated section numbers, e.g. 1,3")
    args = parser.parse_args(argv)
    keys = args.only.split(",") if args.only else list(SECTIONS)
    started, load_before = time.perf_counter(), load_average()
    results = []
    for key in keys:
        progress(f"== section {key} ({SECTIONS[key]}), load {load_average()}")
        t0 = time.perf_counter()
        results.append(run_section(key.strip(), args.quick))
        progress(f"   done in {time.perf_counter() - t0:.0f} s")
    text = report(results, args.quick, started, load_before, load_average())
    if args.output:
        out = Path(args.output)
        out.write_text(text, encoding="utf-8")
        progress(f"wrote {out}")
        return out
    print(text)
    return None


if __name__ == "__main__":
    main()
