"""Section 2: output throughput, through the Open Interpreter kernel vs a plain kernel.

Two cells, each timed until both the reply and idle arrived at a jupyter_client client
that deserialises every output message (as a frontend must): 100,000 printed lines, and
one 20 MB output. Runs alternate between the kernels; the ratio is of medians. After each
run the next waits until the kernel that ran is quiet again (the wrapper writes its
session log after the cell's idle; that work must not land in the other kernel's run).
While the wrapper forwards the output, a thread samples its RSS (child excluded) for the
peak, until it is quiet.
"""

from __future__ import annotations

import sys
from typing import Any

from benchmarks import overhead
from benchmarks.common import (
    OI_KERNEL,
    PLAIN_KERNEL,
    BenchKernel,
    PeakRSS,
    SectionResult,
    Summary,
    llm_server,
    mb,
    oi_env,
    quiet,
    ratio,
    rss,
    scratch_dir,
    settle,
    verdict,
)

TITLE = "2. Output throughput"
PROFILE_KEYS = [
    ("ChildKernel._read_iopub (receive, collect, forward)", "(_read_iopub)"),
    ("  jupyter_client Session.deserialize (JSON, signature check)", "(deserialize)"),
    ("  OutputCollector.add (the step's output kept for the LLM and the log)", "(add)"),
    ("  jupyter_client Session.send (JSON, signature)", "session.py", "(send)"),
    ("SessionLog.write (the direct cell's record)", "session_log.py", "(write)"),
    ("  of which redact_obj (secret patterns over the outputs)", "(redact_obj)"),
]
TARGET = 1.15
CASES = {
    "100,000 printed lines": "for i in range(100_000):\n    print(i)",
    "one 20 MB output": "import sys\nsys.stdout.write('x' * 20_000_000)\nsys.stdout.flush()",
}
QUICK_CASES = {
    "2,000 printed lines (quick)": "for i in range(2_000):\n    print(i)",
    "one 200 KB output (quick)": "import sys\nsys.stdout.write('x' * 200_000)\nsys.stdout.flush()",
}


def _output_chars(run: Any) -> int:
    return sum(
        len(m["content"].get("text", ""))
        for m in run.messages
        if m["header"]["msg_type"] == "stream"
    )


def measure(cases: dict[str, str], repeats: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with llm_server() as server, scratch_dir() as tmp:
        env = oi_env(server.url, str(tmp / "logs"))
        with (
            BenchKernel(OI_KERNEL, env, cwd=str(tmp)) as oi,
            BenchKernel(PLAIN_KERNEL, cwd=str(tmp)) as plain,
        ):
            oi.run_ok("%%python\n1+1", timeout=180)
            settle(oi.pid)
            plain.run_ok("1+1")
            rss_start = rss(oi.pid)
            for name, code in cases.items():
                out[name] = _measure_case(oi, plain, code, repeats)
            out["rss_start"] = rss_start
            out["rss_end"] = rss(oi.pid)
    return out


def _measure_case(oi: BenchKernel, plain: BenchKernel, code: str, repeats: int) -> dict:
    ours: list[float] = []
    base: list[float] = []
    peaks: list[int] = []
    chars = {"ours": 0, "base": 0}
    for i in range(repeats):
        order = [("ours", oi), ("base", plain)]
        if i % 2:
            order.reverse()
        for who, kernel in order:
            if who == "ours":
                with PeakRSS(kernel.pid) as sampler:
                    run = kernel.run_ok("%%python\n" + code, timeout=600, keep=True)
                    quiet(kernel.pid)  # the peak includes what the wrapper does after idle
                peaks.append(sampler.peak - sampler.start_rss)
                ours.append(run.elapsed)
            else:
                run = kernel.run_ok(code, timeout=600, keep=True)
                quiet(kernel.pid)
                base.append(run.elapsed)
            chars[who] = _output_chars(run)
            del run
    return {"ours": ours, "base": base, "peak_delta": peaks, "chars": chars}


def run(quick: bool = False) -> SectionResult:
    result = SectionResult(TITLE)
    data = measure(QUICK_CASES if quick else CASES, 2 if quick else 7)
    result.data = {k: v for k, v in data.items()}
    for name in QUICK_CASES if quick else CASES:
        d = data[name]
        ours, base = Summary.of(d["ours"]), Summary.of(d["base"])
        r = ratio(ours.median, base.median)
        same = d["chars"]["ours"] == d["chars"]["base"]
        result.add(
            f"{name}: time until idle, median of {ours.n}",
            f"{ours.median:.3f} s",
            f"{base.median:.3f} s (python3)",
            f"{r:.2f}x",
            f"<= {TARGET}x",
            verdict(r, TARGET),
        )
        result.add(
            f"{name}: wrapper RSS peak while forwarding (max)", "+" + mb(max(d["peak_delta"]))
        )
        if not same:
            result.notes.append(f"{name}: output differs: {d['chars']}")
    result.add(
        "wrapper RSS after all throughput runs vs before",
        f"{mb(data['rss_end'])} (start {mb(data['rss_start'])})",
        "",
        "",
        "bounded",
        "",
    )
    cases = QUICK_CASES if quick else CASES
    for name in cases:
        profile = overhead.measure_profile(
            1 if quick else 3, 2, "%%python\n" + cases[name], PROFILE_KEYS
        )
        result.data[f"profile {name}"] = profile
        if profile:
            result.notes.append(overhead._profile_markdown(profile, f", {name}"))
    result.notes.append(
        "Both kernels' outputs reach the client in full (characters compared). The wrapper "
        "keeps at most 2 MB of a step's output for the LLM and the session log "
        "(`OutputCollector`), so its RSS peak is the in-flight message, not the total."
    )
    return result


if __name__ == "__main__":
    from benchmarks.run_all import print_section

    print_section(run(quick="--quick" in sys.argv))
