"""Where a warm turn's wall time goes, side by side with other trees (issue 31, item 5).

    python benchmarks/turn_phases.py [--turns 30] [--against TREE ...] [--nodelay] [--env N=V]

Section 7's warm turn 2 (an empty folder, "print x times two": one tool call, one step
``print(x * 2)``, one short answer from the scripted model; change summaries and checkpoints
on), in one kernel per tree (this one first), turns alternating, each followed by a pause
until the kernel is quiet. Each kernel runs through ``traced_kernel.py`` with this file as
its ``OI_BENCH_EXPERIMENT``: the engine's phases (``Engine._request`` per LLM call,
``Rollback.ensure_checkpoint``, the step's ``_run_with_timeout``, ...) are timed in the
wrapper and appended to a file. Prints per tree the median wall time of a turn as the client
sees it, the mean CPU (wrapper + child) and each phase's median, and the per-turn times of
the two LLM requests (a bimodal one is worth a look: that is how the scripted server's
Nagle stall was found; ``--nodelay`` is now the server's default and kept for old trees).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PHASES = [("do_execute", "oi_kernel.kernel.kernel", "OIKernel"),
          ("run_turn", "oi_kernel.core.engine", "Engine"),
          ("_request", "oi_kernel.core.engine", "Engine"),
          ("ensure_checkpoint", "oi_kernel.core.rollback", "Rollback"),
          ("track_begin", "oi_kernel.core.rollback", "Rollback"),
          ("track_end", "oi_kernel.core.rollback", "Rollback"),
          ("_run_with_timeout", "oi_kernel.core.steps", "StepRunner")]


def install() -> None:
    """In the kernel (as ``OI_BENCH_EXPERIMENT``): time each phase into ``OI_PHASES``."""
    import importlib

    out = os.environ["OI_PHASES"]
    for name, module, cls_name in PHASES:
        cls = getattr(importlib.import_module(module), cls_name)
        original = getattr(cls, name)

        def timed(original=original, name=name):  # noqa: ANN001, ANN202
            @functools.wraps(original)
            async def wrapper(self, *args, **kwargs):  # noqa: ANN001, ANN202
                started = time.perf_counter()
                try:
                    return await original(self, *args, **kwargs)
                finally:
                    with open(out, "a") as fh:  # noqa: ASYNC230 (a few bytes, measuring)
                        fh.write(json.dumps([name, started, time.perf_counter() - started]) + "\n")
            return wrapper

        setattr(cls, name, timed())


def _per_turn(path: Path) -> list[dict[str, list[float]]]:
    rows = sorted((json.loads(line) for line in path.read_text().splitlines()), key=lambda r: r[1])
    turns: list[dict[str, list[float]]] = []
    for name, _started, seconds in rows:
        if name == "do_execute":
            turns.append({})
        if turns:
            turns[-1].setdefault(name, []).append(seconds)
    return turns[1:]  # the set-up turn is not warm


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--against", action="append", default=[], help="another tree")
    parser.add_argument("--nodelay", action="store_true", help="scripted server: TCP_NODELAY")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="set for every tree's kernel, e.g. OI_GUARD=unasked (a tree "
                        "that does not know the setting ignores it)")
    args = parser.parse_args()
    extra = dict(item.split("=", 1) for item in args.env)
    sys.path.insert(0, str(REPO))
    from benchmarks.common import BenchKernel, cpu_seconds, llm_server, oi_env, quiet
    from benchmarks.overhead import traced_kernelspec
    from tests import llm_server as S

    if args.nodelay:
        S._Handler.disable_nagle_algorithm = True
    trees = [str(REPO), *args.against]
    with llm_server() as server, tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        specs = traced_kernelspec(tmp)
        kernels = []
        try:
            for i, tree in enumerate(trees):
                (tmp / f"work{i}").mkdir()
                env = oi_env(server.url, str(tmp / f"logs{i}"), PYTHONPATH=tree,
                             OI_BENCH_EXPERIMENT=str(Path(__file__).resolve()),
                             OI_PHASES=str(tmp / f"phases{i}"), **extra)
                kernels.append((tree, BenchKernel("oi-traced", env, cwd=str(tmp / f"work{i}"),
                                                  kernel_spec_manager=specs), tmp / f"phases{i}",
                                [], []))
            for _tree, kernel, *_ in kernels:
                server.enqueue(S.tool_call("x = 42"), S.text("x is set."))
                kernel.run_ok("set x to 42", timeout=300)
                quiet(kernel.pid)
            for i in range(args.turns):
                for _tree, kernel, _path, wall, cpu in (kernels if i % 2 == 0 else kernels[::-1]):
                    server.enqueue(S.tool_call("print(x * 2)"), S.text("It is 84."))
                    before = cpu_seconds(kernel.pid)
                    wall.append(kernel.run_ok("print x times two", timeout=120).elapsed)
                    quiet(kernel.pid)
                    cpu.append(cpu_seconds(kernel.pid) - before)
        finally:
            for _tree, kernel, *_ in kernels:
                kernel.close()
        report([(tree, _per_turn(path), wall, cpu) for tree, _k, path, wall, cpu in kernels])


def report(results: list[tuple[str, list[dict[str, list[float]]], list[float], list[float]]]
           ) -> None:
    for tree, turns, wall, cpu in results:
        print(f"{tree}: turn {statistics.median(wall) * 1e3:.1f} ms (median of {len(wall)}), "
              f"CPU {statistics.mean(cpu) * 1e3:.0f} ms (mean)")
        for name, *_ in PHASES:
            for call in range(2 if name == "_request" else 1):
                values = [t[name][call] for t in turns if len(t.get(name, ())) > call]
                if values:
                    label = f"{name}[{call + 1}]" if name == "_request" else name
                    print(f"  {label:<20} {statistics.median(values) * 1e3:7.1f} ms")
        for call in (0, 1):
            print(f"  LLM request {call + 1} per turn (ms):",
                  [round(t["_request"][call] * 1e3) for t in turns if len(t["_request"]) > call])


if __name__ == "__main__":
    main()
elif __name__ == "<run_path>":  # traced_kernel.py runs this file as OI_BENCH_EXPERIMENT
    install()
