"""Section 6: prompt size per LLM request over a scripted 20-step session.

One instruction; the scripted LLM asks for 20 steps in a row, each printing 50 KB
(1,000 lines of 50 characters), then answers with text. Every request body the server
received is measured: prompt tokens as the server reports them in ``usage``
(``len(json.dumps(messages)) // 4``) and bytes on the wire. The baseline is the same
session with each step's full output fed back (computed from the recorded requests by
putting the full 50 KB back into each tool result), i.e. what a loop without output
truncation would send.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from benchmarks.common import (
    OI_KERNEL,
    BenchKernel,
    SectionResult,
    Summary,
    llm_server,
    oi_env,
    ratio,
    scratch_dir,
)

TITLE = "6. Prompt tokens"
LINE = "x" * 31  # a line of output is 50 characters with its newline


def step_code(step: int, lines: int) -> str:
    return f"for i in range({lines}):\n    print(f'step {step:02d} row {{i:05d}} {LINE}')"


def step_output(step: int, lines: int) -> str:
    return "".join(f"step {step:02d} row {i:05d} {LINE}\n" for i in range(lines))


def _tokens(messages: list[dict]) -> int:
    return len(json.dumps(messages)) // 4  # the scripted server's usage formula


def _untruncated(requests: list[list[dict]], outputs: dict[str, str]) -> list[list[dict]]:
    """The messages a loop feeding every output back in full would send: the first
    request, plus each step's tool call and its whole output (taken from the request that
    first carried them, where they are newest and never condensed)."""
    base = list(requests[0])
    naive = [base]
    for messages in requests[1:]:
        call, result = messages[-2], messages[-1]
        if result.get("role") == "tool":
            full = outputs.get(result.get("tool_call_id", ""), result.get("content"))
            base = [*base, call, {**result, "content": full}]
        naive.append(base)
    return naive


def measure(steps: int, lines: int) -> dict[str, Any]:
    from tests import llm_server as S

    with llm_server() as server, scratch_dir() as tmp:
        env = oi_env(server.url, str(tmp / "logs"), OI_MAX_STEPS=str(steps + 5))
        with BenchKernel(OI_KERNEL, env, cwd=str(tmp)) as oi:
            outputs = {}
            for step in range(1, steps + 1):
                call_id = f"call_step_{step:02d}"
                outputs[call_id] = step_output(step, lines).rstrip("\n")
                server.enqueue(S.tool_call(step_code(step, lines), call_id=call_id))
            server.enqueue(S.text("All steps are done."))
            run = oi.run_ok("run the 20 steps", timeout=600)
            del run
            requests = server.requests
    naive = _untruncated([b["messages"] for b in requests], outputs)
    rows = [
        {
            "tokens": _tokens(body["messages"]),
            "bytes": len(json.dumps(body)),
            "untruncated_tokens": _tokens(full),
        }
        for body, full in zip(requests, naive, strict=True)
    ]
    return {"requests": rows, "output_bytes": len(step_output(1, lines)), "steps": steps}


def run(quick: bool = False) -> SectionResult:
    steps, lines = (3, 50) if quick else (20, 1000)
    result = SectionResult(TITLE)
    d = measure(steps, lines)
    result.data = d
    reqs = d["requests"]
    tokens = [r["tokens"] for r in reqs]
    full = [r["untruncated_tokens"] for r in reqs]
    growth = Summary.of([b - a for a, b in zip(tokens, tokens[1:], strict=False)])
    kb = d["output_bytes"] / 1000
    result.add(f"requests in a {steps}-step session ({kb:.0f} KB output per step)", str(len(reqs)))
    result.add(
        "prompt tokens per request, median / max / last",
        f"{Summary.of(tokens).median:,.0f} / {max(tokens):,} / {tokens[-1]:,}",
        f"{Summary.of(full).median:,.0f} / {max(full):,} / {full[-1]:,} (full outputs)",
        f"{ratio(max(tokens), max(full)):.2f}x (max)",
    )
    result.add(
        "prompt tokens, whole session",
        f"{sum(tokens):,}",
        f"{sum(full):,}",
        f"{ratio(sum(tokens), sum(full)):.2f}x",
    )
    result.add(
        "growth per step, median tokens",
        f"{growth.median:,.0f}",
        f"{Summary.of([b - a for a, b in zip(full, full[1:], strict=False)]).median:,.0f}",
    )
    result.add("request bytes on the wire, largest request", f"{max(r['bytes'] for r in reqs):,}")
    result.notes.append("Prompt tokens per request: " + ", ".join(f"{t:,}" for t in tokens) + ".")
    result.notes.append(
        "Each step's output reaches the LLM cut to its head and tail "
        "(`Engine.max_output_chars`, 6,000 characters), so the prompt grows by about "
        "1,600 tokens per step instead of the ~12,500 of a full 50 KB output; when the "
        "conversation outgrows the context budget (`Engine.context_budget`; the scripted "
        "model's window is unknown, so a default applies) older outputs are condensed, "
        "which is where the series drops."
    )
    return result


if __name__ == "__main__":
    from benchmarks.run_all import print_section

    print_section(run(quick="--quick" in sys.argv))
