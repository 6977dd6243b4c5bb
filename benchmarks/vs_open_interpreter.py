"""Section 7: side by side with Open Interpreter 0.4.3.

Open Interpreter lives in its own venv (``/work/oi-venv``, created here when missing:
``python3 -m venv`` + ``pip install open-interpreter==0.4.3 litellm==1.83.0``); this
section is skipped, with the reason, when that cannot be done (no package index). Both
talk to the same scripted server, which answers every instruction with one ``execute``
tool call and then a short text, and run the same three instructions:

1. set a variable (``x = 42``), 2. reuse it (``print(x * 2)``), 3. print 20,000 lines.

Measured per run (runs alternate between the two): start until ready for input (our
kernel: start -> kernel_info_reply; Open Interpreter: process start -> imported and
configured), wall time of each turn (turn 1 is cold), and the bytes of every request's
``messages`` as the server received them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import (
    OI_KERNEL,
    BenchKernel,
    SectionResult,
    Summary,
    litellm_version,
    llm_server,
    oi_env,
    ratio,
    scratch_dir,
)

TITLE = "7. Side by side with Open Interpreter 0.4.3"
VENV = Path(os.environ.get("OI_BENCH_OI_VENV", "/work/oi-venv"))
PACKAGES = ["open-interpreter==0.4.3", "litellm==1.83.0"]
# --cold-host: no warm host left by an earlier kernel (the first notebook of a session);
# without it our kernels share theirs, as a user's notebooks and restarts do.
COLD_HOST = "--cold-host" in sys.argv
DRIVER = Path(__file__).with_name("oi_driver.py")
SCRIPT = [
    ("set x to 42", "x = 42", "x is set."),
    ("print x times two", "print(x * 2)", "It is 84."),
    ("print 20000 lines", "for i in range(20000):\n    print(i)", "Printed 20,000 lines."),
]


def ensure_venv(timeout: float = 1200) -> str:
    """Create the Open Interpreter venv if missing; returns "" or why it is unavailable."""
    python = VENV / "bin" / "python"
    if python.exists() and _imports(python):
        return ""
    try:
        if not python.exists():
            subprocess.run(
                ["python3", "-m", "venv", str(VENV)], check=True, timeout=300, capture_output=True
            )
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", *PACKAGES],
            check=True,
            timeout=timeout,
            capture_output=True,
            text=True,
        )
    except subprocess.CalledProcessError as exc:
        tail = (exc.stderr or "").strip().splitlines()[-1:] if isinstance(exc.stderr, str) else []
        return f"could not install {' '.join(PACKAGES)} into {VENV}: {' '.join(tail)}"
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"could not create {VENV}: {exc}"
    return "" if _imports(python) else f"{VENV} exists but `import interpreter` fails"


def _imports(python: Path) -> bool:
    try:
        subprocess.run(
            [str(python), "-c", "import interpreter"], check=True, timeout=300, capture_output=True
        )
        return True
    except (OSError, subprocess.SubprocessError):
        return False


def _script_server(server: Any) -> None:
    from tests import llm_server as S

    server.reset()
    for _instruction, code, answer in SCRIPT:
        server.enqueue(S.tool_call(code), S.text(answer))


def _request_sizes(server: Any) -> list[dict[str, int]]:
    return [
        {"messages": len(json.dumps(b["messages"])), "body": len(json.dumps(b))}
        for b in server.requests
    ]


def run_ours(server: Any, tmp: Path) -> dict[str, Any]:
    _script_server(server)
    env = oi_env(server.url, str(tmp / "logs"))
    if COLD_HOST:  # a warm host of this kernel's own, started with it (oi_kernel/llm/host_link.py)
        env.update(VS_OI_COLD_HOST=str(tmp), OI_WARM_HOST_IDLE="5")
    t0 = time.perf_counter()
    with BenchKernel(OI_KERNEL, env, cwd=str(tmp)) as oi:
        ready = time.perf_counter() - t0
        turns = []
        for instruction, _code, _answer in SCRIPT:
            run = oi.run_ok(instruction, timeout=300, keep=True)
            out = "".join(
                m["content"]["text"] for m in run.messages if m["header"]["msg_type"] == "stream"
            )
            turns.append({"seconds": run.elapsed, "output": out})
    return {"ready_s": ready, "turns": turns, "requests": _request_sizes(server)}


def run_theirs(server: Any, tmp: Path) -> dict[str, Any]:
    _script_server(server)
    python = VENV / "bin" / "python"
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "HOME": str(tmp)}
    env.pop("PYTHONPATH", None)
    t0 = time.perf_counter()
    proc = subprocess.run(
        [str(python), str(DRIVER), server.url, *[s[0] for s in SCRIPT]],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=str(tmp),
        env=env,
    )
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"Open Interpreter driver failed: {proc.stderr[-2000:]}")
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    data["wall_s"] = wall
    data["requests"] = _request_sizes(server)
    return data


def _check(side: str, data: dict[str, Any]) -> str:
    turns = data["turns"]
    problems = []
    if "84" not in turns[1]["output"]:
        problems.append("turn 2 did not print 84")
    if "19999" not in turns[2]["output"]:
        problems.append("turn 3 output lacks the last line")
    return f"{side}: {', '.join(problems)}" if problems else ""


def measure(repeats: int) -> dict[str, Any]:
    ours: list[dict[str, Any]] = []
    theirs: list[dict[str, Any]] = []
    with llm_server() as server, scratch_dir() as tmp:
        for i in range(repeats):
            order = [(run_ours, ours, "ours"), (run_theirs, theirs, "theirs")]
            if i % 2:
                order.reverse()
            for fn, out, name in order:
                work = tmp / f"{name}-{i}"
                work.mkdir()
                out.append(fn(server, work))
    return {"ours": ours, "theirs": theirs}


def _median(runs: list[dict[str, Any]], pick: Any) -> float:
    return Summary.of([pick(r) for r in runs]).median


def run(quick: bool = False) -> SectionResult:
    result = SectionResult(TITLE)
    why = ensure_venv()
    if why:
        result.skipped = why + " (run again with access to the package index)"
        return result
    d = measure(1 if quick else 5)
    result.data = d
    ours, theirs = d["ours"], d["theirs"]
    n = len(ours)
    rows = [
        ("start -> ready for the first instruction", lambda r: r["ready_s"]),
        ("turn 1 (cold): set a variable", lambda r: r["turns"][0]["seconds"]),
        ("start + turn 1 (cold total)", lambda r: r["ready_s"] + r["turns"][0]["seconds"]),
        ("turn 2 (warm): reuse the variable", lambda r: r["turns"][1]["seconds"]),
        ("turn 3 (warm): 20,000-line output", lambda r: r["turns"][2]["seconds"]),
    ]
    for label, pick in rows:
        a, b = _median(ours, pick), _median(theirs, pick)
        result.add(
            f"{label}, median of {n}",
            f"{a:.3f} s",
            f"{b:.3f} s (Open Interpreter)",
            f"{ratio(a, b):.2f}x",
        )
    for label, key in (
        ("prompt bytes per request (messages), median", "messages"),
        ("request body bytes per request (with tool schema), median", "body"),
    ):
        a = Summary.of([q[key] for r in ours for q in r["requests"]]).median
        b = Summary.of([q[key] for r in theirs for q in r["requests"]]).median
        result.add(label, f"{a:,.0f}", f"{b:,.0f}", f"{ratio(a, b):.2f}x")
    a = _median(ours, lambda r: sum(q["messages"] for q in r["requests"]))
    b = _median(theirs, lambda r: sum(q["messages"] for q in r["requests"]))
    result.add(
        "prompt bytes, whole 3-instruction session (messages)",
        f"{a:,.0f}",
        f"{b:,.0f}",
        f"{ratio(a, b):.2f}x",
    )
    per_req = [[q["messages"] for q in r["requests"]] for r in (ours[0], theirs[0])]
    result.notes.append(
        "Prompt bytes (messages) per request, first run: ours "
        f"{per_req[0]}; Open Interpreter {per_req[1]}."
    )
    problems = [p for p in (_check("ours", ours[0]), _check("Open Interpreter", theirs[0])) if p]
    if problems:
        result.notes.append("Output check: " + "; ".join(problems))
    result.notes.append(
        "Both see the scripted replies over real HTTP through litellm (ours "
        f"{litellm_version()}, Open Interpreter's "
        f"{litellm_version(str(VENV / 'bin' / 'python'))}). The 20,000-line "
        "output reaches the user in full on our side; for the LLM we keep head and tail "
        "(6,000 characters), Open Interpreter keeps the last 2,800 characters. Open "
        "Interpreter's ready time includes importing it (litellm included); ours imports "
        "litellm in a warm host process (a second kernel shares the first one's), so a cold "
        "host's import shows in turn 1 (--cold-host)."
    )
    return result


if __name__ == "__main__":
    from benchmarks.run_all import print_section

    print_section(run(quick="--quick" in sys.argv))
