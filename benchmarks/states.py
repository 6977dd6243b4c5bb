"""Named states (issue 45): ``%state save`` and ``%state restore`` against today's checkpoint,
in a real child kernel (``ChildRunner``), measured in the same run.

1. 1,000 variables (builtin data) and 1,000 files: a checkpoint (what every instruction
   takes today), a first state save (every file copied into the pool), a second save with
   10 files changed (only those copied), and a restore after 100 variables and 10 files
   changed, and after 10 files were deleted.
2. A 1 GB pandas DataFrame (held by a fork, as a checkpoint holds it): checkpoint, save,
   and restore (the fork pickles it to disk, the kernel loads it).

Goal: save <= the checkpoint's time; restore <= 1 s plus the file copies.

    python benchmarks/states.py [--repeat 5] [--gb 1.0]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

SETUP_VARS = ("for _i in range(1000):\n"
              "    globals()[f'v{_i}'] = [_i, str(_i)] if _i % 2 else _i\n")
CHANGE = ("for _i in range(100):\n    globals()[f'v{_i}'] = -1\n"
          "for _i in range(10):\n    open(f'd000/f{_i}.txt', 'w').write('changed')\n")
DELETE = "import os\nfor _i in range(10, 20):\n    os.remove(f'd000/f{_i}.txt')\n"
BUDGET = 1_000_000_000


def make_tree(root: Path, files: int) -> None:
    for i in range(files):
        d = root / f"d{i // 100:03d}"
        d.mkdir(exist_ok=True)
        (d / f"f{i}.txt").write_text("x" * (100 + i % 400))


async def timed(runner, name: str, *args) -> tuple[float, dict]:
    started = time.perf_counter()
    answer = await runner.probe(name, *args)
    return time.perf_counter() - started, answer


async def run_code(runner, code: str) -> None:
    from oi_kernel.core.types import CodeBlock

    result = await runner.run(CodeBlock("python", code))
    if result.status != "ok":
        raise RuntimeError(f"{code[:60]!r}: {result.status} {result.outputs}")


async def small(repeat: int) -> dict[str, float]:
    """Scenario 1: medians of ``repeat`` rounds, seconds."""
    from oi_kernel.execution.child import ChildKernel
    from oi_kernel.execution.runner import ChildRunner

    rounds: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        make_tree(Path(tmp), 1000)
        child = ChildKernel(cwd=tmp)
        runner = ChildRunner(child)
        try:
            await run_code(runner, SETUP_VARS)
            store = str(Path(tmp) / ".oi_checkpoints" / "bench")
            for r in range(repeat):
                sid = 10 * r
                cp, _ = await timed(runner, "checkpoint", r + 1, store)
                first, info = await timed(runner, "state_save", sid + 1, store + "/s", BUDGET)
                assert info.get("copied") == 1000 or r > 0, info
                await run_code(runner, CHANGE)
                again, info2 = await timed(runner, "state_save", sid + 2, store + "/s", BUDGET)
                back, report = await timed(runner, "state_restore", sid + 1, store + "/s")
                assert len(report["restored"]) == 10, report
                await run_code(runner, DELETE)
                back2, report2 = await timed(runner, "state_restore", sid + 2, store + "/s")
                assert len(report2["restored"]) == 20, report2  # 10 changed + 10 deleted
                for sid_ in (sid + 1, sid + 2):
                    await runner.probe("state_drop", sid_, store + "/s")
                await runner.probe("drop", r + 1)
                for key, value in (("checkpoint", cp), ("save_first", first),
                                   ("save_again", again), ("restore_10_changed", back),
                                   ("restore_20_files", back2)):
                    rounds.setdefault(key, []).append(value)
                rounds.setdefault("copied_again", []).append(info2["copied"])
        finally:
            await child.shutdown()
    return {k: statistics.median(v) for k, v in rounds.items()}


async def dataframe(gb: float, repeat: int) -> dict[str, float]:
    """Scenario 2: a DataFrame of ``gb`` GB."""
    from oi_kernel.execution.child import ChildKernel
    from oi_kernel.execution.runner import ChildRunner

    rows = int(gb * 1e9 / 8 / 8)
    rounds: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        child = ChildKernel(cwd=tmp)
        runner = ChildRunner(child)
        try:
            await run_code(runner, "import numpy as np, pandas as pd\n"
                           f"df = pd.DataFrame(np.ones(({rows}, 8)))\n")
            store = str(Path(tmp) / ".oi_checkpoints" / "bench")
            for r in range(repeat):
                cp, _ = await timed(runner, "checkpoint", r + 1, store)
                save, info = await timed(runner, "state_save", r + 1, store + "/s", BUDGET)
                assert info["fork"], info
                await run_code(runner, "df = None")
                back, report = await timed(runner, "state_restore", r + 1, store + "/s")
                assert "df" in report["variables"] and not report["problems"], report
                await runner.probe("state_drop", r + 1, store + "/s")
                await runner.probe("drop", r + 1)
                for key, value in (("checkpoint", cp), ("save", save), ("restore", back)):
                    rounds.setdefault(key, []).append(value)
        finally:
            await child.shutdown()
    return {k: statistics.median(v) for k, v in rounds.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--gb", type=float, default=1.0)
    args = parser.parse_args()
    a = asyncio.run(small(args.repeat))
    print(f"1,000 variables and 1,000 files (median of {args.repeat}, ms):")
    print(f"  checkpoint today:            {a['checkpoint'] * 1000:8.1f}")
    print(f"  state save, first:           {a['save_first'] * 1000:8.1f}"
          f"  ({a['save_first'] / a['checkpoint']:.2f}x; copies 1,000 files)")
    print(f"  state save, 10 files changed: {a['save_again'] * 1000:7.1f}"
          f"  ({a['save_again'] / a['checkpoint']:.2f}x; copied {a['copied_again']:.0f})")
    print(f"  restore (100 vars, 10 files): {a['restore_10_changed'] * 1000:7.1f}")
    print(f"  restore (20 files back):      {a['restore_20_files'] * 1000:7.1f}")
    b = asyncio.run(dataframe(args.gb, max(1, args.repeat // 2)))
    print(f"{args.gb:g} GB DataFrame (median of {max(1, args.repeat // 2)}, s):")
    print(f"  checkpoint today: {b['checkpoint']:.3f}")
    print(f"  state save:       {b['save']:.3f}  ({b['save'] / b['checkpoint']:.2f}x)")
    print(f"  state restore:    {b['restore']:.3f}")


if __name__ == "__main__":
    main()
