"""Section 1: execution overhead of a direct cell, and where the time goes.

Round trip = ``execute_request`` sent until both ``execute_reply`` and the ``idle``
status arrived, measured by a jupyter_client blocking client. ``%%python\\n1+1`` on the
Open Interpreter kernel against ``1+1`` on a plain python3 kernel, interleaved (the order
alternates every pair) so machine load hits both alike, in two modes: back to back (each
request sent as soon as the previous round trip ended, as Run All does: the wrapper's work
after a reply, e.g. the session log, then lands on the next request's path) and spaced
(``SPACED_S`` after each run).

The breakdown runs the wrapper under ``benchmarks.traced_kernel`` (stamps at each hop,
``time.time()`` on the same machine clock as the client and the child's header dates)
and under cProfile (main thread), in separate kernels so neither perturbs the ratio.
"""

from __future__ import annotations

import collections
import json
import pstats
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import (
    OI_KERNEL,
    PLAIN_KERNEL,
    REPO,
    BenchKernel,
    SectionResult,
    Summary,
    llm_server,
    ms,
    oi_env,
    ratio,
    scratch_dir,
    settle,
    verdict,
)

OI_CELL = "%%python\n1+1"
PLAIN_CELL = "1+1"
TARGET = 1.3
BLOCK = 50
MODES = {"back to back": 0.0, "spaced": 0.03}  # pause after each run, seconds

# (phase, start label, end label): labels from traced_kernel, the child's header dates
# (CHILD_*) and the client (client_*); each phase is the median over the traced runs.
PHASES = [
    ("client -> wrapper main thread", "client_sent", "main_thread_has_request"),
    (
        "wrapper: request read -> sent to the child (busy follows)",
        "main_thread_has_request",
        "sent_to_child",
    ),
    ("wrapper -> child starts (child busy date)", "sent_to_child", "CHILD_status_busy"),
    ("child runs the cell (busy -> idle dates)", "CHILD_status_busy", "CHILD_status_idle"),
    ("child idle -> wrapper has reply and idle", "CHILD_status_idle", "child_done_arrived"),
    ("wrapper: reply and idle -> the runner's result", "child_done_arrived", "child_result_ready"),
    ("wrapper: rest of do_execute", "child_result_ready", "do_execute_end"),
    (
        "wrapper: do_execute end -> execute_reply sent",
        "do_execute_end",
        "wrapper_sent_execute_reply",
    ),
    (
        "wrapper: execute_reply -> idle sent",
        "wrapper_sent_execute_reply",
        "wrapper_sent_status_idle",
    ),
    ("wrapper idle sent -> client has all", "wrapper_sent_status_idle", "client_done"),
]
PLAIN_PHASES = [
    ("client -> kernel busy (date)", "client_sent", "CHILD_status_busy"),
    ("kernel runs the cell (busy -> idle dates)", "CHILD_status_busy", "CHILD_status_idle"),
    ("kernel idle -> client has all", "CHILD_status_idle", "client_done"),
]


def interleaved(
    oi: BenchKernel, plain: BenchKernel, runs: int, pause: float = 0.0
) -> tuple[list[float], list[float]]:
    """Round trips of both kernels, alternating which goes first in each pair, ``pause``
    seconds after each run (0: back to back)."""
    ours: list[float] = []
    base: list[float] = []
    for i in range(runs):
        pair = [(oi, OI_CELL, ours), (plain, PLAIN_CELL, base)]
        if i % 2:
            pair.reverse()
        for kernel, cell, out in pair:
            out.append(kernel.run_ok(cell).elapsed)
            if pause:
                time.sleep(pause)
    return ours, base


def warm(kernel: BenchKernel, cell: str, n: int) -> None:
    kernel.run_ok(cell, timeout=180)
    settle(kernel.pid)  # the wrapper imports litellm in the background after start
    for _ in range(n):
        kernel.run_ok(cell)


def measure_ratio(runs: int, warmup: int) -> dict[str, Any]:
    """Per mode (``MODES``): both kernels' round trips; the modes alternate in blocks of
    ``BLOCK`` pairs so that load changes hit both modes too."""
    out: dict[str, Any] = {mode: {"ours": [], "base": []} for mode in MODES}
    with llm_server() as server, scratch_dir() as tmp:
        env = oi_env(server.url, str(tmp / "logs"))
        with (
            BenchKernel(OI_KERNEL, env, cwd=str(tmp)) as oi,
            BenchKernel(PLAIN_KERNEL, cwd=str(tmp)) as plain,
        ):
            warm(oi, OI_CELL, warmup)
            warm(plain, PLAIN_CELL, warmup)
            done = 0
            while done < runs:
                n = min(BLOCK, runs - done)
                for mode, pause in MODES.items():
                    ours, base = interleaved(oi, plain, n, pause)
                    out[mode]["ours"] += ours
                    out[mode]["base"] += base
                done += n
    return out


# ----------------------------------------------------------------------------- breakdown
def traced_kernelspec(root: Path) -> Any:
    """A kernelspec manager whose only kernel runs the wrapper through traced_kernel."""
    from jupyter_client.kernelspec import KernelSpecManager

    kdir = root / "kernels" / "oi-traced"
    kdir.mkdir(parents=True)
    spec = {
        "argv": [sys.executable, "-m", "benchmarks.traced_kernel", "-f", "{connection_file}"],
        "display_name": "Open Interpreter (traced)",
        "language": "markdown",
        "interrupt_mode": "signal",
    }
    (kdir / "kernel.json").write_text(json.dumps(spec), encoding="utf-8")
    return KernelSpecManager(kernel_dirs=[str(root / "kernels")])


def _timelines(trace: dict[str, Any], runs: list[tuple[str, float, float]]) -> list[dict]:
    """Per request: label -> time (first occurrence), from wrapper stamps, child dates, client."""
    stamps: dict[str, dict[str, float]] = collections.defaultdict(dict)
    for t, label, mid in trace.get("trace", []):
        stamps[mid].setdefault(label, t)
    for mid, kind, state, date in trace.get("child_dates", []):
        stamps[mid].setdefault(f"CHILD_{kind}{'_' + state if state else ''}", date)
    out = []
    for mid, sent, elapsed in runs:
        s = dict(stamps.get(mid, {}))
        s["client_sent"], s["client_done"] = sent, sent + elapsed
        arrived = [
            s[k] for k in ("child_status_idle_arrived", "child_execute_reply_arrived") if k in s
        ]
        if len(arrived) == 2:
            s["child_done_arrived"] = max(arrived)
        out.append(s)
    return out


def phase_table(timelines: list[dict], phases: list[tuple[str, str, str]]) -> list[dict]:
    rows = []
    for name, start, end in phases:
        values = [t[end] - t[start] for t in timelines if start in t and end in t]
        s = Summary.of(values)
        rows.append({"phase": name, "median_s": s.median, "p90_s": s.p90, "n": s.n})
    return rows


def measure_breakdown(runs: int, warmup: int) -> dict[str, Any]:
    """Phase medians for the traced wrapper and for a plain kernel (header dates only)."""
    with llm_server() as server, scratch_dir() as tmp:
        ksm = traced_kernelspec(tmp)
        trace_file = tmp / "trace.json"
        env = oi_env(
            server.url, str(tmp / "logs"), OI_BENCH_TRACE=str(trace_file), PYTHONPATH=str(REPO)
        )
        oi_runs: list[tuple[str, float, float]] = []
        plain_lines: list[dict] = []
        with (
            BenchKernel("oi-traced", env, cwd=str(tmp), kernel_spec_manager=ksm) as oi,
            BenchKernel(PLAIN_KERNEL, cwd=str(tmp)) as plain,
        ):
            warm(oi, OI_CELL, warmup)
            warm(plain, PLAIN_CELL, warmup)
            for _ in range(runs):
                r = oi.run_ok(OI_CELL)
                oi_runs.append((r.reply["parent_header"]["msg_id"], r.sent_at, r.elapsed))
                plain_lines.append(_plain_timeline(plain))
        trace = json.loads(trace_file.read_text()) if trace_file.exists() else {}
    return {
        "oi": phase_table(_timelines(trace, oi_runs), PHASES),
        "plain": phase_table(plain_lines, PLAIN_PHASES),
        "traced": bool(trace),
    }


def _plain_timeline(kernel: BenchKernel) -> dict[str, float]:
    """One plain round trip: client stamps and the kernel's busy/idle header dates."""
    s: dict[str, float] = {}

    def grab(msg: dict[str, Any], _arrival: float) -> None:
        if msg["header"]["msg_type"] == "status":
            state = msg["content"]["execution_state"]
            s[f"CHILD_status_{state}"] = msg["header"]["date"].timestamp()

    run = kernel.run_ok(PLAIN_CELL, on_message=grab)
    s["client_sent"], s["client_done"] = run.sent_at, run.sent_at + run.elapsed
    return s


# Functions whose cumulative (active) time per request the report lists, by name suffix.
PROFILE_KEYS = [
    ("ipykernel: dispatch_shell (whole request, our handler included)", "(dispatch_shell)"),
    ("ipykernel: execute_request", "(execute_request)"),
    ("OIKernel.do_execute", "kernel.py", "(do_execute)"),
    ("ChildKernel.send (request to the child)", "child.py", "(send)"),
    ("ChildKernel._read_iopub (child output in, forwarded)", "(_read_iopub)"),
    ("ChildKernel._read_shell (child reply in)", "(_read_shell)"),
    ("jupyter_client Session.send (all messages out)", "session.py", "(send)"),
    ("jupyter_client Session.deserialize (all messages in)", "(deserialize)"),
    ("  of which extract_dates (header date parsing)", "(extract_dates)"),
    ("ipykernel OutStream.flush (waits for the IOPub thread)", "iostream.py", "(flush)"),
    ("SessionLog.write (direct cell record)", "session_log.py", "(write)"),
]


def measure_profile(
    runs: int, warmup: int, cell: str = OI_CELL, keys: list[tuple[str, ...]] | None = None
) -> dict[str, Any]:
    """cProfile of the wrapper's main thread over ``runs`` executions of ``cell`` (after
    ``warmup`` of ``OI_CELL``), per request."""
    with llm_server() as server, scratch_dir() as tmp:
        ksm = traced_kernelspec(tmp)
        prof = tmp / "wrapper.prof"
        env = oi_env(
            server.url,
            str(tmp / "logs"),
            OI_BENCH_PROFILE=str(prof),
            OI_BENCH_PROFILE_AFTER=str(warmup + 1),
            PYTHONPATH=str(REPO),
        )
        with BenchKernel("oi-traced", env, cwd=str(tmp), kernel_spec_manager=ksm) as oi:
            warm(oi, OI_CELL, warmup)
            for _ in range(runs):
                oi.run_ok(cell, timeout=600)
        if not prof.exists():
            return {}
        stats = pstats.Stats(str(prof)).stats  # type: ignore[attr-defined]
    idle = sum(tt for (f, _l, fn), (_c, _n, tt, _ct, _cl) in stats.items() if "epoll" in fn)
    total = sum(tt for (_c, _n, tt, _ct, _cl) in stats.values())
    own = [
        {"function": f"{Path(f).name}:{line}({fn})", "calls": nc / runs, "own_s": tt / runs}
        for (f, line, fn), (_cc, nc, tt, _ct, _cl) in stats.items()
        if "epoll" not in fn
    ]
    own.sort(key=lambda r: r["own_s"], reverse=True)
    keyed = []
    for label, *parts in PROFILE_KEYS if keys is None else keys:
        cum = sum(
            ct
            for (f, line, fn), (_cc, _nc, _tt, ct, _cl) in stats.items()
            if all(part in f"{f}:{line}({fn})" for part in parts)
        )
        keyed.append({"what": label, "cumulative_s": cum / runs})
    return {"active_s": (total - idle) / runs, "own": own[:12], "keys": keyed, "runs": runs}


# ----------------------------------------------------------------------------- section
def run(quick: bool = False) -> SectionResult:
    runs, warmup = (20, 3) if quick else (300, 30)
    result = SectionResult("1. Execution overhead")
    data = measure_ratio(runs, warmup)
    result.data["ratio"] = {}
    for mode, pause in MODES.items():
        ours, base = Summary.of(data[mode]["ours"]), Summary.of(data[mode]["base"])
        r_med, r_p90 = ratio(ours.median, base.median), ratio(ours.p90, base.p90)
        how = "back to back" if not pause else f"{pause * 1e3:.0f} ms apart"
        result.add(
            f"`%%python 1+1` round trip, {how}, median ({ours.n} runs each, interleaved)",
            ms(ours.median),
            ms(base.median) + " (`1+1`, python3)",
            f"{r_med:.2f}x",
            f"<= {TARGET}x",
            verdict(r_med, TARGET),
        )
        result.add(f"same ({how}), p90", ms(ours.p90), ms(base.p90), f"{r_p90:.2f}x")
        result.data["ratio"][mode] = {"ours": ours.__dict__, "base": base.__dict__}

    breakdown = measure_breakdown(max(10, runs // 3), warmup)
    result.data["breakdown"] = breakdown
    result.notes.append(_breakdown_markdown(breakdown))
    profile = measure_profile(max(10, runs // 3), warmup)
    result.data["profile"] = profile
    if profile:
        result.notes.append(_profile_markdown(profile))
    return result


def _breakdown_markdown(b: dict[str, Any]) -> str:
    lines = [
        "Where one round trip goes (medians of per-request phases; wrapper stamps "
        "from `benchmarks/traced_kernel.py`, the child's and plain kernel's header dates, "
        "one machine clock):",
        "",
        "| phase | OI kernel median | p90 |",
        "|---|---|---|",
    ]
    lines += [f"| {r['phase']} | {ms(r['median_s'])} | {ms(r['p90_s'])} |" for r in b["oi"]]
    lines += ["", "| phase (plain python3 kernel) | median | p90 |", "|---|---|---|"]
    lines += [f"| {r['phase']} | {ms(r['median_s'])} | {ms(r['p90_s'])} |" for r in b["plain"]]
    return "\n".join(lines)


def _profile_markdown(p: dict[str, Any], what: str = "") -> str:
    lines = [
        f"cProfile of the wrapper's main thread{what} ({p['runs']} requests; cProfile slows Python "
        f"code down, so compare rows with each other): active (not waiting) "
        f"{ms(p['active_s'])} per request.",
        "",
        "| where (cumulative, per request) | time |",
        "|---|---|",
    ]
    lines += [f"| {r['what']} | {r['cumulative_s'] * 1e6:.0f} µs |" for r in p["keys"]]
    lines += ["", "| top functions by own time | calls/request | own time/request |"]
    lines += ["|---|---|---|"]
    lines += [
        f"| `{r['function']}` | {r['calls']:.1f} | {r['own_s'] * 1e6:.0f} µs |" for r in p["own"]
    ]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- side by side
def measure_side_by_side(
    trees: list[tuple[str, str]], runs: int, warmup: int
) -> dict[str, dict[str, Any]]:
    """Section 1's ratio for several trees of the wrapper in one run: one Open Interpreter
    kernel per tree (``PYTHONPATH``) and one plain kernel; per block of ``BLOCK`` pairs and
    per mode, each tree's kernel runs ``interleaved`` with the plain kernel, the trees in
    alternating order, so load changes hit every tree alike. Also the CPU time per request
    (psutil) of each wrapper process alone and of its child kernel, over the same blocks."""
    import psutil

    out: dict[str, dict[str, Any]] = {
        label: {mode: {"ours": [], "base": [], "cpu_wrapper": 0.0, "cpu_child": 0.0}
                for mode in MODES} for label, _ in trees}
    with llm_server() as server, scratch_dir() as tmp:
        kernels: list[tuple[str, BenchKernel]] = []
        try:
            for i, (label, tree) in enumerate(trees):
                env = oi_env(server.url, str(tmp / f"logs{i}"), PYTHONPATH=tree)
                kernels.append((label, BenchKernel(OI_KERNEL, env, cwd=str(tmp))))
            with BenchKernel(PLAIN_KERNEL, cwd=str(tmp)) as plain:
                for _label, k in kernels:
                    warm(k, OI_CELL, warmup)
                warm(plain, PLAIN_CELL, warmup)
                procs = {label: psutil.Process(k.pid) for label, k in kernels}

                def cpu(label: str) -> tuple[float, float]:
                    proc = procs[label]
                    own = sum(proc.cpu_times()[:2])
                    kids = sum(sum(c.cpu_times()[:2]) for c in proc.children(recursive=True))
                    return own, kids

                done = 0
                while done < runs:
                    n = min(BLOCK, runs - done)
                    order = kernels if (done // BLOCK) % 2 == 0 else kernels[::-1]
                    for mode, pause in MODES.items():
                        for label, k in order:
                            before = cpu(label)
                            ours, base = interleaved(k, plain, n, pause)
                            after = cpu(label)
                            row = out[label][mode]
                            row["ours"] += ours
                            row["base"] += base
                            row["cpu_wrapper"] += after[0] - before[0]
                            row["cpu_child"] += after[1] - before[1]
                    done += n
        finally:
            for _label, k in kernels:
                k.close()
    return out


def side_by_side_markdown(data: dict[str, dict[str, Any]]) -> str:
    lines = [
        "| tree | mode | ours median | python3 median | ratio | p90 ratio "
        "| wrapper CPU/request | child CPU/request |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label, modes in data.items():
        for mode, row in modes.items():
            ours, base = Summary.of(row["ours"]), Summary.of(row["base"])
            n = max(ours.n, 1)
            lines.append(
                f"| {label} | {mode} | {ms(ours.median)} | {ms(base.median)} "
                f"| {ratio(ours.median, base.median):.2f}x | {ratio(ours.p90, base.p90):.2f}x "
                f"| {ms(row['cpu_wrapper'] / n)} | {ms(row['cpu_child'] / n)} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    import argparse
    import os

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny iteration counts (smoke)")
    parser.add_argument(
        "--against", action="append", default=[], metavar="TREE",
        help="another tree of the project (e.g. `git archive main | tar -x -C /tmp/main`): "
        "only the ratio, this tree and each TREE side by side in one run (repeatable)")
    parser.add_argument("--runs", type=int, default=0, help="round trips per kernel and mode")
    args = parser.parse_args(argv)
    if not args.against:
        from benchmarks.run_all import print_section

        print_section(run(quick=args.quick))
        return
    runs = args.runs or (20 if args.quick else 300)
    trees = [("this tree", str(REPO))] + [(t, t) for t in args.against]
    print(f"load before: {os.getloadavg()}")
    data = measure_side_by_side(trees, runs, 3 if args.quick else 30)
    print(f"load after: {os.getloadavg()}")
    print(side_by_side_markdown(data))


if __name__ == "__main__":
    main()
