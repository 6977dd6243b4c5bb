"""`import litellm`: the floor our range allows (1.83.0) against the newest the index serves,
side by side in one run.

Each version gets its own venv (under --venvs, made once with `pip install litellm==X`, nothing
else: no mcp). Then, interleaved run by run (so load on the machine hits both alike), a fresh
process imports litellm and reports the import's wall time, its CPU time and the process RSS
after it. Before measuring, each venv answers one completion() of the scripted OpenAI-compatible
server (tests/llm_server.py, streamed and not), which shows the version works at all.

    python benchmarks/litellm_import.py            # writes benchmarks/LITELLM.md
    python benchmarks/litellm_import.py --runs 3 --output -   # print only
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.llm_server import ScriptedLLMServer, text  # noqa: E402

# What the dependency range in pyproject.toml allows, for the "newest" venv.
RANGE = "litellm>=1.83,<2,!=1.106.*"
FLOOR = "litellm==1.83.0"

MEASURE = r"""
import json, resource, time
t0, c0 = time.perf_counter(), time.process_time()
import litellm
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
rss = int(next(l for l in open("/proc/self/status") if l.startswith("VmRSS")).split()[1])
print(json.dumps({"wall": wall, "cpu": cpu, "rss_kb": rss}))
"""

COMPLETE = r"""
import importlib.metadata, json, sys
import litellm
url = sys.argv[1]
kw = dict(model="openai/scripted", api_base=url, api_key="sk-test",
          messages=[{"role": "user", "content": "say done"}])
plain = litellm.completion(**kw).choices[0].message.content
streamed = "".join(c.choices[0].delta.content or "" for c in litellm.completion(stream=True, **kw))
try:
    import mcp  # noqa: F401
    has_mcp = True
except ImportError:
    has_mcp = False
print(json.dumps({"version": importlib.metadata.version("litellm"), "plain": plain,
                  "streamed": streamed, "mcp_installed": has_mcp}))
"""


def make_venv(path: Path, requirement: str) -> Path:
    python = path / "bin" / "python"
    if not python.exists():
        print(f"== venv {path}: pip install '{requirement}'", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", requirement], check=True)
    return python


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # offline: no cost-map download
    return env


def run_json(python: Path, code: str, *args: str) -> dict:
    out = subprocess.run([str(python), "-c", code, *args], check=True, capture_output=True,
                         text=True, env=child_env(), cwd="/", timeout=300)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--venvs", default="/tmp/oi-litellm-bench")
    parser.add_argument("--output", default=str(REPO / "benchmarks" / "LITELLM.md"),
                        help="markdown file to write ('-': print only)")
    args = parser.parse_args(argv)

    venvs = {"floor": make_venv(Path(args.venvs) / "floor", FLOOR),
             "newest": make_venv(Path(args.venvs) / "newest", RANGE)}
    checks = {}
    with ScriptedLLMServer() as server:
        server.set_fallback(text("Done."))
        for name, python in venvs.items():
            checks[name] = run_json(python, COMPLETE, server.url)
            assert checks[name]["plain"] == "Done." and checks[name]["streamed"] == "Done.", (
                name, checks[name])
    samples: dict[str, list[dict]] = {name: [] for name in venvs}
    load_before = os.getloadavg()
    for _ in range(args.runs):
        for name, python in venvs.items():  # interleaved
            samples[name].append(run_json(python, MEASURE))
    load_after = os.getloadavg()

    def med(name: str, key: str) -> float:
        return statistics.median(s[key] for s in samples[name])

    lines = [
        "# `import litellm`: the floor of our range against the newest",
        "",
        f"- Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; command: "
        "`python benchmarks/litellm_import.py`",
        f"- Machine: {platform.platform()}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs; load average before {load_before[0]:.2f}, after "
        f"{load_after[0]:.2f} (1 min)",
        f"- Each venv holds litellm and its own dependencies only (no mcp); {args.runs} fresh "
        "processes each, interleaved; medians. Both answered one plain and one streamed "
        "completion() of the scripted server before measuring. Wall time grows with the "
        "machine's load; CPU time and RSS are the figures to compare across runs.",
        "",
        f"| metric | floor: litellm {checks['floor']['version']} | newest: litellm "
        f"{checks['newest']['version']} | newest / floor |",
        "|---|---|---|---|",
    ]
    for key, label, scale, unit in (("wall", "import time (wall)", 1.0, "s"),
                                    ("cpu", "import CPU time", 1.0, "s"),
                                    ("rss_kb", "process RSS after the import", 1 / 1024, "MB")):
        floor, newest = med("floor", key) * scale, med("newest", key) * scale
        fmt = "{:.2f} s" if unit == "s" else "{:.1f} MB"
        extra = f"{newest / floor:.2f}x" if unit == "s" else f"{newest - floor:+.1f} MB"
        lines.append(f"| {label} | {fmt.format(floor)} | {fmt.format(newest)} | {extra} |")
    lines.append(f"| completion() without mcp installed | "
                 f"{'works' if not checks['floor']['mcp_installed'] else 'n/a'} | "
                 f"{'works' if not checks['newest']['mcp_installed'] else 'n/a'} | |")
    report = "\n".join(lines) + "\n"
    print(report)
    if args.output != "-":
        Path(args.output).write_text(report)
        print(f"Wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
