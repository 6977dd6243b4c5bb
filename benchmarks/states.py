"""Named states (issue 45): ``%state save`` and ``%state restore`` against today's checkpoint,
in a real child kernel (``ChildRunner``), measured in the same run.

1. 1,000 variables (builtin data) and 1,000 files: a checkpoint (what every instruction
   takes today), a first state save (every file copied into the pool), a second save with
   10 files changed (only those copied), and a restore after 100 variables and 10 files
   changed, and after 10 files were deleted.
2. A 1 GB pandas DataFrame (held by a fork, as a checkpoint holds it): checkpoint, save,
   and restore (the fork pickles it to disk, the kernel loads it).

Goal: save <= the checkpoint's time; restore <= 1 s plus the file copies.

    python benchmarks/states.py [--repeat 5] [--gb 1.0] [--against TREE ...] [--blocks 2]
                                [--pause SECONDS]

``--pause``: seconds between the 1 GB save and its restore, as a user works in between
(the state's fork writes the namespace in that time; 0, the default, restores at once).

``--against TREE``: the same scenarios with another tree's ``oi_kernel`` (e.g. a worktree of
main), each tree in its own process and child kernel, in ``--blocks`` blocks of rounds
alternating between the trees (this one first, then the other way round), so that both see
the same machine; the ratios are medians of each round's own ratio (save / checkpoint of
the same round).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
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


def copied(info: dict, store: str, sid: int) -> int:
    """Files a save copied into the pool: in its answer (older trees), or written to the
    state's index once the copies are done (read after a later call has waited for them)."""
    if "copied" in info:
        return info["copied"]
    with open(os.path.join(store, f"s{sid}", "index.json")) as fh:
        return json.load(fh)["copied"]


async def warm_up(runner, store: str) -> None:
    """Not measured: the probe's installation and first listing of the files."""
    await runner.probe("checkpoint", 0, store)
    await runner.probe("drop", 0)


async def small_round(runner, r: int, store: str) -> dict[str, float]:
    """One round of scenario 1: seconds per operation."""
    sid, states = 10 * r, store + "/s"
    cp, _ = await timed(runner, "checkpoint", r + 1, store)
    first, info = await timed(runner, "state_save", sid + 1, states, BUDGET)
    await run_code(runner, CHANGE)
    assert r > 0 or copied(info, states, sid + 1) == 1000, info
    again, info2 = await timed(runner, "state_save", sid + 2, states, BUDGET)
    back, report = await timed(runner, "state_restore", sid + 1, states)
    assert len(report["restored"]) == 10, report
    await run_code(runner, DELETE)
    back2, report2 = await timed(runner, "state_restore", sid + 2, states)
    assert len(report2["restored"]) == 20, report2  # 10 changed + 10 deleted
    n_again = copied(info2, states, sid + 2)
    for sid_ in (sid + 1, sid + 2):
        await runner.probe("state_drop", sid_, states)
    await runner.probe("drop", r + 1)
    return {"checkpoint": cp, "save_first": first, "save_again": again,
            "restore_10_changed": back, "restore_20_files": back2, "copied_again": n_again,
            "ratio_first": first / cp, "ratio_again": again / cp}


async def small(repeat: int) -> dict[str, list[float]]:
    """Scenario 1: ``repeat`` rounds, seconds (per key, one value per round)."""
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
            await warm_up(runner, store)
            for r in range(repeat):
                for key, value in (await small_round(runner, r, store)).items():
                    rounds.setdefault(key, []).append(value)
        finally:
            await child.shutdown()
    return rounds


async def dataframe(gb: float, repeat: int, pause: float = 0.0) -> dict[str, list[float]]:
    """Scenario 2: a DataFrame of ``gb`` GB; ``pause`` seconds between save and restore."""
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
            await warm_up(runner, store)
            for r in range(repeat):
                cp, _ = await timed(runner, "checkpoint", r + 1, store)
                save, info = await timed(runner, "state_save", r + 1, store + "/s", BUDGET)
                assert info["fork"], info
                await run_code(runner, "df = None")
                await asyncio.sleep(pause)
                back, report = await timed(runner, "state_restore", r + 1, store + "/s")
                assert "df" in report["variables"] and not report["problems"], report
                await run_code(runner, f"assert df.shape == ({rows}, 8) and df.iloc[-1, -1] == 1")
                await runner.probe("state_drop", r + 1, store + "/s")
                await runner.probe("drop", r + 1)
                for key, value in (("checkpoint", cp), ("save", save), ("restore", back),
                                   ("ratio", save / cp)):
                    rounds.setdefault(key, []).append(value)
        finally:
            await child.shutdown()
    return rounds


def in_tree(tree: str, scenario: str, repeat: int, gb: float,
            pause: float = 0.0) -> dict[str, list[float]]:
    """Run one scenario with ``tree``'s ``oi_kernel`` in a process of its own."""
    command = [sys.executable, __file__, "--worker", scenario, "--tree", tree,
               "--repeat", str(repeat), "--gb", str(gb), "--pause", str(pause)]
    env = {**os.environ, "PYTHONPATH": tree}
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"{tree}: {done.stderr[-2000:]}")
    return json.loads(done.stdout.splitlines()[-1])


def measure(trees: list[str], args: argparse.Namespace) -> dict[str, dict[str, dict]]:
    """{tree: {scenario: {key: values}}}: blocks of rounds, trees alternating."""
    out: dict[str, dict[str, dict]] = {t: {"small": {}, "df": {}} for t in trees}
    df_repeat = max(1, args.repeat // 2)
    for block in range(args.blocks):
        order = trees if block % 2 == 0 else trees[::-1]
        for scenario, repeat in (("small", args.repeat), ("df", df_repeat)):
            for tree in order:
                got = in_tree(tree, scenario, repeat, args.gb, args.pause)
                for key, values in got.items():
                    out[tree][scenario].setdefault(key, []).extend(values)
    return out


def report(tree: str, a: dict[str, list[float]], b: dict[str, list[float]], gb: float) -> None:
    m = {k: statistics.median(v) for k, v in a.items()}
    d = {k: statistics.median(v) for k, v in b.items()}
    print(f"{tree}")
    print(f"1,000 variables and 1,000 files (median of {len(a['checkpoint'])} rounds, ms):")
    print(f"  checkpoint today:             {m['checkpoint'] * 1000:7.1f}")
    print(f"  state save, first:            {m['save_first'] * 1000:7.1f}"
          f"  ({m['ratio_first']:.2f}x; copies 1,000 files)")
    print(f"  state save, 10 files changed: {m['save_again'] * 1000:7.1f}"
          f"  ({m['ratio_again']:.2f}x; copied {m['copied_again']:.0f})")
    print(f"  restore (100 vars, 10 files): {m['restore_10_changed'] * 1000:7.1f}")
    print(f"  restore (20 files back):      {m['restore_20_files'] * 1000:7.1f}")
    print(f"{gb:g} GB DataFrame (median of {len(b['checkpoint'])} rounds, s):")
    print(f"  checkpoint today: {d['checkpoint']:.3f}")
    print(f"  state save:       {d['save']:.3f}  ({d['ratio']:.2f}x)")
    print(f"  state restore:    {d['restore']:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="rounds per block")
    parser.add_argument("--gb", type=float, default=1.0)
    parser.add_argument("--against", action="append", default=[], help="another tree")
    parser.add_argument("--blocks", type=int, default=2, help="blocks of rounds per tree "
                        "(with --against)")
    parser.add_argument("--pause", type=float, default=0.0, help="seconds between the 1 GB "
                        "save and its restore (the user's work in between)")
    parser.add_argument("--worker", choices=("small", "df"), help=argparse.SUPPRESS)
    parser.add_argument("--tree", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        sys.path.insert(0, args.tree)
        run = small(args.repeat) if args.worker == "small" else dataframe(
            args.gb, args.repeat, args.pause)
        print(json.dumps(asyncio.run(run)))
        return
    if not args.against:
        a = asyncio.run(small(args.repeat))
        b = asyncio.run(dataframe(args.gb, max(1, args.repeat // 2), args.pause))
        report(str(REPO), a, b, args.gb)
        return
    trees = [str(REPO), *(str(Path(t).resolve()) for t in args.against)]
    for tree, got in measure(trees, args).items():
        report(tree, got["small"], got["df"], args.gb)


if __name__ == "__main__":
    main()
