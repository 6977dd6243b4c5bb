"""`%%python` cells in the first seconds after start, and the first instruction (issue 42).

    python -m benchmarks.early_cells [--starts N] [--against TREE ...]

Per start (trees and python3 alternate): a kernel is started, and as soon as its
``kernel_info_reply`` arrives ``%%python\\n1+1`` (python3: ``1+1``) runs back to back for
``WINDOW`` seconds; the round trips are compared with python3's over the same window
after its start. Then one instruction: its wall time until idle, with the scripted server
answering at once (the first instruction waits for litellm's import when it is not done).
``--against TREE``: another checkout (e.g. main, ``git -C /work/main archive HEAD | tar -x
-C /tmp/base``), measured in the same run; its kernel runs with PYTHONPATH=TREE.
``--cold``: every kernel gets a warm host of its own (a variable in its environment), started
with it: no host warmed by an earlier kernel (the first notebook of a session). Without it,
kernels of one tree share their host, as a user's notebooks and restarts do.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any

from benchmarks.common import OI_KERNEL, PLAIN_KERNEL, REPO, llm_server, oi_env, scratch_dir
from benchmarks.startup import _Started

WINDOW = 3.0


def cells(kernel: _Started, cell: str, window: float) -> list[float]:
    times: list[float] = []
    end = time.perf_counter() + window
    while time.perf_counter() < end:
        t = time.perf_counter()
        kernel.execute_until_idle(cell)
        times.append(time.perf_counter() - t)
    return times


def one_start(name: str, env: dict[str, str], cwd: str, cell: str) -> dict[str, Any]:
    """Start, then ``cell`` back to back for ``WINDOW`` seconds."""
    kernel = _Started(name, env, cwd)
    try:
        return {"ready": kernel.to_info, "cells": cells(kernel, cell, WINDOW)}
    finally:
        kernel.close()


def first_instruction(name: str, env: dict[str, str], cwd: str) -> dict:
    """Start, then the instruction sent the moment the kernel is ready."""
    kernel = _Started(name, env, cwd)
    try:
        t = time.perf_counter()
        kernel.execute_until_idle("say done")
        return {"ready": kernel.to_info, "first": time.perf_counter() - t}
    finally:
        kernel.close()


def main(argv: list[str] | None = None) -> None:
    from tests import llm_server as S

    parser = argparse.ArgumentParser()
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--against", action="append", default=[])
    parser.add_argument("--cold", action="store_true")
    args = parser.parse_args(argv)
    trees = [str(REPO), *args.against]
    runs: dict[str, list[dict]] = {t: [] for t in [*trees, "python3"]}
    firsts: dict[str, list[dict]] = {t: [] for t in trees}
    with llm_server() as server, scratch_dir() as tmp:
        server.set_fallback(lambda body: S.text("Done."))
        for i in range(args.starts):
            order = [*trees, "python3"]
            order = order[i % len(order):] + order[: i % len(order)]
            for who in order:
                if who == "python3":
                    runs[who].append(one_start(PLAIN_KERNEL, {}, str(tmp), "1+1"))
                    continue
                env = oi_env(server.url, str(tmp / "logs"), PYTHONPATH=who)
                if args.cold:
                    env.update(EARLY_CELLS_COLD=f"{i}-cells", OI_WARM_HOST_IDLE="5")
                runs[who].append(one_start(OI_KERNEL, env, str(tmp), "%%python\n1+1"))
                if args.cold:
                    env["EARLY_CELLS_COLD"] = f"{i}-first"
                firsts[who].append(first_instruction(OI_KERNEL, env, str(tmp)))
    base = statistics.median([c for r in runs["python3"] for c in r["cells"]])
    print(f"python3: first {WINDOW:g} s after start, median cell {base * 1000:.1f} ms")
    for tree in trees:
        med = statistics.median([c for r in runs[tree] for c in r["cells"]])
        ready = statistics.median([r["ready"] for r in firsts[tree]])
        first = statistics.median([r["first"] for r in firsts[tree]])
        print(f"{tree}: %%python median {med * 1000:.1f} ms = {med / base:.2f}x python3; "
              f"ready {ready:.2f} s; first instruction {first:.2f} s after ready "
              f"(start + first {ready + first:.2f} s)")


if __name__ == "__main__":
    main(sys.argv[1:])
