"""``%rebuild`` of a 50-step session against re-running the same code by hand (issue 45).

One Open Interpreter kernel (this checkout's code) and the scripted LLM server: 10
instructions of 5 steps each build 50 variables; the child is killed (``os._exit``); then
(a) the 50 steps are typed again as ``%%python`` cells, one cell each, as a user re-running
them by hand would (the model is not asked again: the fastest "by hand"), against
(b) ``%rebuild --dry-run`` listing them and (c) ``%rebuild`` re-running them (each after
its own kill, in a fresh kernel per round). Reported: wall time of each, median of
``--repeat`` rounds.

    python -m benchmarks.rebuild [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from benchmarks.common import BenchKernel, llm_server, oi_env, scratch_dir

STEPS_PER_TURN, TURNS = 5, 10
KILL = "%%python\nimport os\nos._exit(1)"


def step_code(i: int) -> str:
    return f"v{i} = [j * {i} for j in range(1000)]\nprint(sum(v{i}))"


def tool_call(code: str) -> dict:
    from tests import llm_server as S

    return S.tool_call(code)


def one_round(server, tmp) -> dict[str, float]:
    """A fresh kernel: build, lose, rebuild; lose again, re-run by hand. Each includes the
    start of the new child (the first cell after a death starts it)."""
    from tests import llm_server as S

    env = oi_env(server.url, str(tmp / "logs"))
    with BenchKernel("open-interpreter", env=env, cwd=str(tmp)) as kernel:
        for turn in range(TURNS):
            first = turn * STEPS_PER_TURN
            server.enqueue(*[tool_call(step_code(first + k)) for k in range(STEPS_PER_TURN)],
                           S.text("Done."))
            kernel.run_ok(f"build variables {first} to {first + STEPS_PER_TURN - 1}")
        kernel.run(KILL, timeout=60)
        dry = kernel.run_ok("%rebuild --dry-run").elapsed
        rebuilt = kernel.run_ok("%rebuild", timeout=300, keep=True)
        text = json.dumps([m["content"] for m in rebuilt.messages])
        if f"{STEPS_PER_TURN * TURNS} of {STEPS_PER_TURN * TURNS} steps ran again" not in text:
            raise RuntimeError(f"the rebuild did not finish: {text[-500:]}")
        kernel.run(KILL, timeout=60)
        started = time.perf_counter()
        for i in range(STEPS_PER_TURN * TURNS):
            kernel.run_ok("%%python\n" + step_code(i))
        by_hand = time.perf_counter() - started
    return {"by_hand_s": by_hand, "dry_run_s": dry, "rebuild_s": rebuilt.elapsed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rounds = []
    with llm_server() as server:
        for _ in range(args.repeat):
            with scratch_dir() as tmp:
                rounds.append(one_round(server, tmp))
    result = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
    steps = STEPS_PER_TURN * TURNS
    print(f"{steps} steps, median of {len(rounds)} rounds:")
    print(f"  by hand ({steps} %%python cells): {result['by_hand_s']:.2f} s")
    print(f"  %rebuild --dry-run (read the log, list): {result['dry_run_s']:.2f} s")
    print(f"  %rebuild: {result['rebuild_s']:.2f} s "
          f"({result['rebuild_s'] / result['by_hand_s']:.2f}x by hand)")


if __name__ == "__main__":
    main()
