"""Section 5: memory of the wrapper process (the child kernel excluded).

RSS after start-up and a first instruction (litellm is in the warm host, not in the wrapper,
unless hosts are off: ``OI_WARM_HOST=0``), then after every
quarter of 100 turns. Each turn is a real instruction: the scripted LLM proposes a small
``print``, the kernel runs it in the child (auto-run), feeds the output back, and the LLM
answers with text. The conversation grows with every turn, so some growth is expected;
the bound is on growth per turn over the second half (steady state).
"""

from __future__ import annotations

import sys
from typing import Any

from benchmarks.common import (
    OI_KERNEL,
    BenchKernel,
    SectionResult,
    llm_server,
    mb,
    oi_env,
    rss,
    scratch_dir,
    settle,
)

TITLE = "5. Memory"
BOUND_PER_TURN = 100_000  # bytes per turn in steady state (a turn adds ~1 KB of messages)


def measure(turns: int) -> dict[str, Any]:
    from tests import llm_server as S

    checkpoints: list[tuple[int, int]] = []
    with llm_server() as server, scratch_dir() as tmp:
        env = oi_env(server.url, str(tmp / "logs"))
        with BenchKernel(OI_KERNEL, env, cwd=str(tmp)) as oi:
            oi.run_ok("%%python\n1+1", timeout=180)
            server.enqueue(S.text("Ready."))
            oi.run_ok("warm up", timeout=180)
            settle(oi.pid)
            checkpoints.append((0, rss(oi.pid)))
            every = max(1, turns // 4)
            for turn in range(1, turns + 1):
                server.enqueue(
                    S.tool_call(f"print('turn {turn}', {turn} * 2)"),
                    S.text(f"Turn {turn} printed {turn * 2}."),
                )
                result = oi.run_ok(f"print turn {turn} and its double")
                del result
                if turn % every == 0 or turn == turns:
                    checkpoints.append((turn, rss(oi.pid)))
    return {"checkpoints": checkpoints, "turns": turns}


def run(quick: bool = False) -> SectionResult:
    turns = 4 if quick else 100
    result = SectionResult(TITLE)
    d = measure(turns)
    result.data = d
    points = d["checkpoints"]
    start = points[0][1]
    end = points[-1][1]
    half = [p for p in points if p[0] >= turns // 2]
    steady = (half[-1][1] - half[0][1]) / max(1, half[-1][0] - half[0][0]) if len(half) > 1 else 0
    result.add("wrapper RSS after start and a first instruction (child and warm host "
               "excluded)", mb(start))
    result.add(
        f"wrapper RSS after {turns} turns",
        mb(end),
        mb(start) + " (after start)",
        f"+{mb(end - start)}",
    )
    result.add(
        "steady-state growth per turn (second half)",
        f"{steady / 1000:.1f} KB",
        "",
        "",
        f"<= {BOUND_PER_TURN // 1000} KB",
        "ok" if steady <= BOUND_PER_TURN else "over",
    )
    result.notes.append("RSS by turn: " + ", ".join(f"{t}: {mb(r)}" for t, r in points))
    return result


if __name__ == "__main__":
    from benchmarks.run_all import print_section

    print_section(run(quick="--quick" in sys.argv))
