"""Does a turn cost more CPU the longer the session? Side by side with another tree.

```
python benchmarks/session_growth.py [--turns 200] [--against /tmp/old]
```

Each kernel gets ``--turns`` scripted instructions "compute turn N": one tool call
``vN = N * 2; print(vN)`` (run without asking), then a text reply, as in
``tests/test_reliability.py``'s 200-turn check, so the conversation sent to the model grows
by four messages a turn. With ``--against`` (e.g. ``git worktree add /tmp/old HEAD~3``) a
second kernel runs that tree's code; the two take turns one after the other. Prints the
mean CPU time a turn costs the wrapper process and its child kernel (psutil, 10 ms ticks:
means over 20 turns) early, in the middle and at the end of the session.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def _answer(body: dict) -> Any:
    from tests import llm_server as S

    last = body["messages"][-1]
    if last["role"] == "tool":
        output = last["content"].split("\n\nWhat the code changed:")[0]
        return S.text(f"Turn done: {output.strip()}")
    n = int(S.last_user_text(body).split()[-1])
    return S.tool_call(f"v{n} = {n} * 2\nprint(v{n})")


def per_turn_cpu(turns: int, against: str = "") -> dict[str, list[tuple[float, float]]]:
    """(wrapper, child) CPU seconds of every turn, per tree."""
    from benchmarks.common import (
        OI_KERNEL,
        BenchKernel,
        cpu_seconds,
        llm_server,
        oi_env,
        scratch_dir,
    )

    trees = [("this tree", str(REPO))] + ([(f"against {against}", against)] if against else [])
    rows: dict[str, list[tuple[float, float]]] = {label: [] for label, _ in trees}
    with llm_server() as server, scratch_dir() as tmp:
        server.set_fallback(_answer)
        kernels = []
        try:
            for i, (label, tree) in enumerate(trees):
                work = tmp / f"work{i}"
                work.mkdir()
                env = oi_env(server.url, str(tmp / f"logs{i}"), PYTHONPATH=tree)
                kernels.append((label, BenchKernel(OI_KERNEL, env, cwd=str(work))))
            for n in range(turns):
                for label, kernel in kernels if n % 2 == 0 else kernels[::-1]:
                    wrapper, total = cpu_seconds(kernel.pid, children=False), cpu_seconds(kernel.pid)
                    run = kernel.run_ok(f"compute turn {n}", timeout=120, keep=True)
                    text = "".join(m["content"].get("text", "") for m in run.messages
                                   if m["header"]["msg_type"] == "stream")
                    if f"Turn done: {n * 2}" not in text:
                        raise RuntimeError(f"{label}, turn {n}: unexpected output {text!r}")
                    spent_wrapper = cpu_seconds(kernel.pid, children=False) - wrapper
                    rows[label].append((spent_wrapper, cpu_seconds(kernel.pid) - total
                                        - spent_wrapper))
        finally:
            for _label, kernel in kernels:
                kernel.close()
    return rows


def report(rows: dict[str, list[tuple[float, float]]]) -> str:
    turns = len(next(iter(rows.values())))
    windows = [(lo, min(lo + 20, turns)) for lo in (10, turns // 2 - 10, turns - 20) if lo >= 0]
    lines = ["| kernel | " + " | ".join(f"turns {lo}-{hi - 1}: wrapper / child"
                                        for lo, hi in windows) + " |",
             "|---|" + "---|" * len(windows)]
    for label, cpu in rows.items():
        cells = [f"{1000 * statistics.fmean(w for w, _ in cpu[lo:hi]):.0f} / "
                 f"{1000 * statistics.fmean(c for _, c in cpu[lo:hi]):.0f} ms"
                 for lo, hi in windows]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--against", default="", help="another checkout, run side by side")
    args = parser.parse_args()
    from benchmarks.common import load_average

    print(f"load before: {load_average()}")
    print(report(per_turn_cpu(args.turns, args.against)))
    print(f"load after: {load_average()}")


if __name__ == "__main__":
    main()
