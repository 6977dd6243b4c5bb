"""Cost of a preview (issue 44): the time from asking for a preview to having its effects
(output, change summary, blocked connections), over the step's own time measured in the same
run, in a real child kernel (``ChildRunner``); and the memory a preview leaves behind.

1. A small step (``x = 1``): the step run for real (baseline) and previewed (goal: the
   preview adds at most 150 ms).
2. The same with a 1 GB namespace (eight 128 MB numpy arrays: the fork copies page tables;
   goal: at most 400 ms added).
3. The same in a workspace of 10,000 files (the copy scans them before and after).
4. Memory: the child's RSS and its processes after one preview (the probe loaded) and after
   all of them (goal: nothing held once a preview ends; the fork exits).

    python benchmarks/preview.py [--quick] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

BIG = ("import numpy as _np\n"
       "big = [_np.ones(16 * 1024 * 1024) for _ in range(8)]")  # 8 × 128 MB of float64


def make_tree(root: Path, files: int) -> None:
    for i in range(files):
        d = root / f"d{i // 100:03d}"
        d.mkdir(exist_ok=True)
        (d / f"f{i}.txt").write_text("x" * (i % 50))


def memory_of(pid: int) -> dict:
    import psutil

    proc = psutil.Process(pid)
    return {"rss_mb": proc.memory_info().rss / 1e6, "children": len(proc.children())}


async def timed(runner, runs: int) -> dict:
    """Medians of the step run for real and previewed, interleaved."""
    base, previewed, inside, statuses = [], [], [], set()
    for i in range(runs + 1):
        t0 = time.perf_counter()
        assert (await runner.run_code("x = 1")).status == "ok"
        step = time.perf_counter() - t0
        t0 = time.perf_counter()
        answer = await runner.probe("preview", "x = 1", "python", 30.0)
        took = time.perf_counter() - t0
        statuses.add(answer["status"])
        if i:  # the first of each is a warm-up
            base.append(step)
            previewed.append(took)
            inside.append(answer.get("duration_s", 0.0))
    b, p = statistics.median(base), statistics.median(previewed)
    return {"step_ms": round(b * 1e3, 1), "preview_ms": round(p * 1e3, 1),
            "added_ms": round((p - b) * 1e3, 1), "in_child_ms":
            round(statistics.median(inside) * 1e3, 1), "status": sorted(statuses)}


async def case(name: str, files: int, setup: str, runs: int) -> dict:
    from oi_kernel.execution.child import ChildKernel
    from oi_kernel.execution.runner import ChildRunner

    with tempfile.TemporaryDirectory() as tmp:
        make_tree(Path(tmp), files)
        child = ChildKernel(cwd=tmp)
        runner = ChildRunner(child)
        try:
            assert (await runner.run_code(setup or "pass")).status == "ok"
            pid = json.loads((await runner.run_code(
                "import os; print(os.getpid())")).outputs[0]["text"])
            await runner.probe("preview", "x = 1", "python", 30.0)  # the probe is loaded
            before = memory_of(pid)
            result = await timed(runner, runs)
            await asyncio.sleep(0.2)
            after = memory_of(pid)
        finally:
            await child.shutdown()
    return {"case": name, "files": files, **result,
            "rss_before_mb": round(before["rss_mb"], 1), "rss_after_mb": round(after["rss_mb"], 1),
            "processes_after": after["children"]}


async def main(quick: bool) -> list[dict]:
    runs = 3 if quick else 15
    return [await case("small step", 0, "", runs),
            await case("1 GB namespace", 0, BIG, runs),
            await case("10,000-file workspace", 1_000 if quick else 10_000, "", runs)]


def report(rows: list[dict]) -> str:
    goals = {"small step": 150, "1 GB namespace": 400}
    lines = ["| case | step | preview | added | goal | RSS before → after | processes after |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        goal = goals.get(r["case"])
        verdict = "" if goal is None else (" ✓" if r["added_ms"] <= goal else " ✗")
        lines.append(f"| {r['case']} ({r['files']} files) | {r['step_ms']} ms | "
                     f"{r['preview_ms']} ms | {r['added_ms']} ms | "
                     f"{f'≤ {goal} ms' if goal else '—'}{verdict} | "
                     f"{r['rss_before_mb']} → {r['rss_after_mb']} MB | {r['processes_after']} |")
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="few runs, 1,000 files")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args()
    rows = asyncio.run(main(args.quick))
    print(json.dumps(rows, indent=1) if args.json else report(rows))
