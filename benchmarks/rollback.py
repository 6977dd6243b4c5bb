"""Cost of change summaries and checkpoints (issue 20), as ratios against a baseline
measured in the same run.

1. Added time per step in a real child kernel (``ChildRunner``) whose namespace holds
   10,000 variables and whose working directory holds 10,000 files: the same step
   (``x = 1``) run alone, then with the probe's ``begin``/``end`` around it.
2. A 1 GB namespace (eight 128 MB numpy arrays), three checkpoint mechanisms:
   (a) ``os.fork`` copy-on-write (what oi_kernel does): checkpoint time, memory the copy
   costs before and after the process rewrites a quarter of the data, restore time;
   (b) pickling the namespace at checkpoint time: time and bytes per checkpoint;
   (c) re-running the steps in a fresh process: the time the steps take again.

    python benchmarks/rollback.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def make_tree(root: Path, files: int) -> None:
    for i in range(files):
        d = root / f"d{i // 100:03d}"
        d.mkdir(exist_ok=True)
        (d / f"f{i}.txt").write_text("x" * (i % 50))


async def per_step(n_vars: int, n_files: int, runs: int, budget_s: float = 10.0) -> dict:
    from oi_kernel.execution.child import ChildKernel
    from oi_kernel.execution.runner import ChildRunner

    with tempfile.TemporaryDirectory() as tmp:
        make_tree(Path(tmp), n_files)
        child = ChildKernel(cwd=tmp)
        runner = ChildRunner(child)
        try:
            setup = (f"for _i in range({n_vars}):\n"
                     "    globals()[f'v{_i}'] = [_i] if _i % 3 == 0 else ('s' * (_i % 9) if _i % 3"
                     " == 1 else _i)\n")
            assert (await runner.run_code(setup)).status == "ok"
            settings = {"scan_budget_s": budget_s, "max_files": 1_000_000}
            await runner.probe("configure", **settings)
            base, tracked, inside, complete = [], [], [], True
            for _ in range(2):  # warm-up
                await runner.run_code("x = 1")
                await runner.probe("begin", "python")
                await runner.run_code("x = 1")
                await runner.probe("end")
            for _ in range(runs):  # interleaved
                t0 = time.perf_counter()
                await runner.run_code("x = 1")
                base.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                await runner.probe("begin", "python")
                await runner.run_code("x = 1")
                end = await runner.probe("end")
                tracked.append(time.perf_counter() - t0)
                inside.append(end["cost_s"])
                complete = complete and end["scan_complete"]
        finally:
            await child.shutdown()
    b, t = statistics.median(base), statistics.median(tracked)
    return {"variables": n_vars, "files": n_files, "base_ms": b * 1e3, "tracked_ms": t * 1e3,
            "added_ms": (t - b) * 1e3, "ratio": t / b, "end_cost_ms": statistics.median(inside) * 1e3,
            "scan_complete": complete}


OFF_CONFIG = "c.Engine.track_changes = False\nc.Engine.checkpoints_enabled = False\n"
SUMMARY_ONLY_CONFIG = "c.Engine.checkpoints_enabled = False\n"


def tree_cpu(pid: int) -> float:
    """CPU seconds of a process and every process under it, including those that ended and
    were waited for (a dropped checkpoint's fork: tearing it down is CPU the checkpoint
    costs; ``benchmarks.common.cpu_seconds`` counts only the living)."""
    import psutil

    total = 0.0
    proc = psutil.Process(pid)
    for p in [proc, *proc.children(recursive=True)]:
        try:
            t = p.cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


def per_turn(n_vars: int, n_files: int, turns: int, warmup: int, against: str = "",
             modes: tuple[str, ...] = ("on", "off"), objects: bool = False) -> dict:
    """Warm scripted turns through the kernel (one instruction, one step ``print(x * 2)``,
    then a short answer), change summaries and checkpoints on vs both off
    (``oi_kernel_config.py`` in a ``JUPYTER_CONFIG_DIR``), each kernel in its own working
    directory of ``n_files`` files with ``n_vars`` variables. All kernels run at once and
    take turns one after the other (interleaved), each followed by a pause until the kernel
    is quiet. ``against``: another tree (``git archive HEAD~1 | tar -x -C /tmp/old``)
    whose code runs as two more kernels, on and off. ``modes`` may add "summary only"
    (checkpoints off). ``objects``: every 100th variable is an instance of a class of the
    user's, so a checkpoint needs a fork (a namespace of builtin data only is copied, see
    ``probe.values._copy_plain``). CPU: the kernel, its child and the forks, ended
    ones included (``tree_cpu``). Returns the turn times in seconds."""
    from benchmarks.common import (
        OI_KERNEL,
        BenchKernel,
        llm_server,
        oi_env,
        quiet,
        scratch_dir,
    )
    from tests import llm_server as S

    trees = [("this tree", str(REPO))] + ([("against", against)] if against else [])
    times: dict[str, list[float]] = {}
    with llm_server() as server, scratch_dir() as tmp:
        off_dir = tmp / "off"
        off_dir.mkdir()
        (off_dir / "oi_kernel_config.py").write_text(OFF_CONFIG)
        summary_dir = tmp / "summary"
        summary_dir.mkdir()
        (summary_dir / "oi_kernel_config.py").write_text(SUMMARY_ONLY_CONFIG)
        kernels = []
        try:
            for tree_label, tree in trees:
                for mode in modes:
                    label = f"{tree_label}, tracking {mode}"
                    work = tmp / f"work{len(kernels)}"
                    work.mkdir()
                    make_tree(work, n_files)
                    extra = {"PYTHONPATH": tree}
                    if mode == "off":
                        extra["JUPYTER_CONFIG_DIR"] = str(off_dir)
                    elif mode == "summary only":
                        extra["JUPYTER_CONFIG_DIR"] = str(summary_dir)
                    env = oi_env(server.url, str(tmp / f"logs{len(kernels)}"), **extra)
                    kernels.append((label, BenchKernel(OI_KERNEL, env, cwd=str(work))))
            setup = (f"for _i in range({n_vars}):\n    globals()[f'v{{_i}}'] = [_i] if _i % 3"
                     " == 0 else ('s' * (_i % 9) if _i % 3 == 1 else _i)\nx = 42")
            if objects:
                setup += ("\nclass Row:\n    def __init__(self, i):\n        self.i = i\n"
                          f"for _i in range(0, {n_vars}, 100):\n"
                          "    globals()[f'v{_i}'] = Row(_i)")
            server.reset()
            for _label, kernel in kernels:
                server.enqueue(S.tool_call(setup), S.text("Set."))
                kernel.run_ok("make the variables", timeout=300)
            for i in range(warmup + turns):
                order = kernels if i % 2 == 0 else kernels[::-1]
                for label, kernel in order:
                    server.enqueue(S.tool_call("print(x * 2)"), S.text("It is 84."))
                    cpu = tree_cpu(kernel.pid)
                    run = kernel.run_ok("print x times two", timeout=120)
                    quiet(kernel.pid)
                    if i >= warmup:
                        times.setdefault(label, []).append(run.elapsed)
                        times.setdefault(f"cpu {label}", []).append(tree_cpu(kernel.pid) - cpu)
        finally:
            for _label, kernel in kernels:
                kernel.close()
    return times


def turn_table(times: dict[str, list[float]], n_vars: int, n_files: int,
               objects: bool = False) -> str:
    # CPU times tick in 10 ms: their mean over the turns, not a median
    med = {label: (statistics.fmean if label.startswith("cpu ") else statistics.median)(v)
           for label, v in times.items()}
    kind = " (1 in 100 an instance: checkpoints fork)" if objects else ""
    lines = [f"### Warm turn through the kernel, {n_vars:,} variables{kind}, {n_files:,} files "
             f"(scripted model, median of {len(next(iter(times.values())))}, interleaved)\n",
             "| kernel | tracking on | tracking off | added by tracking | CPU on (wrapper + "
             "child + forks, mean) | CPU off | CPU added |", "|---|---|---|---|---|---|---|"]
    trees = sorted({label.rsplit(", tracking", 1)[0] for label in med
                    if not label.startswith("cpu ")}, reverse=True)
    for tree in trees:
        on, off = med[f"{tree}, tracking on"], med[f"{tree}, tracking off"]
        c_on, c_off = med[f"cpu {tree}, tracking on"], med[f"cpu {tree}, tracking off"]
        lines.append(f"| {tree} | {on * 1e3:.1f} ms | {off * 1e3:.1f} ms | "
                     f"{(on - off) * 1e3:+.1f} ms | {c_on * 1e3:.0f} ms | {c_off * 1e3:.0f} ms | "
                     f"{(c_on - c_off) * 1e3:+.0f} ms |")
        if f"{tree}, tracking summary only" in med:
            on, c_on = (med[f"{tree}, tracking summary only"],
                        med[f"cpu {tree}, tracking summary only"])
            lines.append(f"| {tree}, change summary only (no checkpoints) | {on * 1e3:.1f} ms | "
                         f"{off * 1e3:.1f} ms | {(on - off) * 1e3:+.1f} ms | {c_on * 1e3:.0f} ms"
                         f" | {c_off * 1e3:.0f} ms | {(c_on - c_off) * 1e3:+.0f} ms |")
    return "\n".join(lines)


GB_SCRIPT = r"""
import json, os, pickle, sys, time
import numpy as np
sys.path.insert(0, {repo!r})
from oi_kernel.execution.probe import local_probe
P = local_probe()
_ns = sys.modules['__main__'].__dict__
def run():  # locals: a restore removes globals the checkpoint did not have
    mb = {mb}
    t0 = time.perf_counter()
    for i in range(8):
        _ns[f'a{{i}}'] = np.random.default_rng(i).random(mb * 1024 * 1024 // 8 // 8)
    build_s = time.perf_counter() - t0
    def private_kb(pid):
        out = {{}}
        for line in open(f'/proc/{{pid}}/smaps_rollup'):
            k, _, v = line.partition(':')
            if k in ('Rss', 'Pss', 'Private_Clean', 'Private_Dirty'):
                out[k] = int(v.split()[0])
        return out
    store = {store!r}
    t0 = time.perf_counter()
    info = json.loads(P.call('checkpoint', 1, store))
    fork_s = time.perf_counter() - t0
    cp = P._State.checkpoints[1]
    before = private_kb(cp.pid)
    for i in range(2):  # rewrite a quarter of the data
        _ns[f'a{{i}}'][:] = 0.5
    after = private_kb(cp.pid)
    t0 = time.perf_counter()
    report = json.loads(P.call('restore', 1))
    restore_s = time.perf_counter() - t0
    ok = float(_ns['a0'][0]) != 0.5 and not report['problems']
    t0 = time.perf_counter()
    blob = pickle.dumps({{k: _ns[k] for k in _ns if k.startswith('a') and k[1:].isdigit()}}, protocol=5)
    pickle_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    pickle.loads(blob)
    unpickle_s = time.perf_counter() - t0
    print(json.dumps(dict(build_s=build_s, fork_s=fork_s, fork_before=before, fork_after=after,
        restore_s=restore_s, restored_ok=ok, pickle_s=pickle_s, pickle_bytes=len(blob),
        unpickle_s=unpickle_s, rss_kb=private_kb(os.getpid())['Rss'])))

run()
"""


def one_gb(mb: int) -> dict:
    with tempfile.TemporaryDirectory() as store:
        code = GB_SCRIPT.format(repo=str(REPO), mb=mb, store=store)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             cwd=store)
    if out.returncode:
        raise SystemExit(out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--turns", action="store_true",
                        help="only the warm turns through the kernel (see per_turn)")
    parser.add_argument("--against", default="",
                        help="another checkout to measure side by side (with --turns)")
    parser.add_argument("--rounds", type=int, default=20, help="turns per kernel (--turns)")
    parser.add_argument("--summary-only", action="store_true",
                        help="with --turns: also kernels with checkpoints off")
    parser.add_argument("--objects", action="store_true",
                        help="with --turns: some variables are instances (checkpoints fork)")
    args = parser.parse_args()
    if args.turns:
        nv = nf = 100 if args.quick else 1000
        modes = ("on", "off", "summary only") if args.summary_only else ("on", "off")
        times = per_turn(nv, nf, args.rounds, 3 if args.quick else 12, args.against, modes,
                         args.objects)
        print(turn_table(times, nv, nf, args.objects))
        return
    n, runs, mb = (300, 3, 64) if args.quick else (10_000, 20, 1024)
    print("## Change summary: added time per step (real child kernel, median of "
          f"{runs}, interleaved)\n")
    print("| namespace | files | step alone | step + summary | added | ratio | probe's end() "
          "in the child | scan complete |\n|---|---|---|---|---|---|---|---|")
    for nv, nf, budget in ((n, 0, 10.0), (0, n, 10.0), (n, n, 10.0), (n, n, 0.05)):
        r = asyncio.run(per_step(nv, nf, runs, budget))
        files = f"{nf:,}" + (" (default 50 ms scan budget)" if budget < 1 else "")
        print(f"| {nv:,} variables | {files} | {r['base_ms']:.2f} ms | {r['tracked_ms']:.2f} ms | "
              f"+{r['added_ms']:.2f} ms | {r['ratio']:.2f}x | {r['end_cost_ms']:.2f} ms | "
              f"{r['scan_complete']} |")
    g = one_gb(mb)
    gb = g["pickle_bytes"] / 1e9
    print(f"\n## Checkpoint of a {gb:.2f} GB namespace (8 numpy arrays)\n")
    print("| mechanism | at checkpoint | memory held | restore | notes |\n|---|---|---|---|---|")
    fb, fa = g["fork_before"], g["fork_after"]
    print(f"| (a) fork, copy-on-write (ours) | {g['fork_s'] * 1e3:.0f} ms | "
          f"{(fb['Private_Clean'] + fb['Private_Dirty']) / 1024:.0f} MB private at first; "
          f"{(fa['Private_Clean'] + fa['Private_Dirty']) / 1024:.0f} MB after a quarter of "
          f"the data was rewritten | {g['restore_s']:.2f} s (pickle in the fork + load) | "
          f"restored correctly: {g['restored_ok']} |")
    print(f"| (b) pickle at checkpoint | {g['pickle_s']:.2f} s | {gb * 1000:.0f} MB per "
          f"checkpoint | {g['unpickle_s']:.2f} s | every instruction pays it |")
    print(f"| (c) re-run the steps | 0 | 0 | {g['build_s']:.2f} s here (the steps' own time: "
          "any data loading, training... again) | only if the steps are deterministic and "
          "their inputs unchanged |")


if __name__ == "__main__":
    main()
