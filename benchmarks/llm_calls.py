"""CPU per streamed LLM request through oi_kernel's client, side by side with other trees.

    python benchmarks/llm_calls.py [--calls 60] [--messages 41] [--rounds 3]
        [--against TREE ...] [--setup CODE ...] [--python VENV/bin/python] [--profile OUT.prof]

One process per tree (this one first, then each ``--against``; rounds alternate), each
calling ``LLM.stream()`` as the kernel does (``boundary.own_process()`` applied) against the
scripted server, which runs in a process of its own so its CPU is not counted: a
conversation of ``--messages`` messages, the reply section 7's warm turn gets (one
``execute`` tool call, then a short text). Measured per request: the process's CPU time
(every thread: litellm's callbacks run in a thread pool) and wall time, medians over the
calls after 5 warm-up ones. ``--profile``: cProfile in every thread of this tree's process
(the calls after warm-up), written to OUT.prof and the top functions printed. ``--setup``:
one more side, this tree with CODE run after litellm's import (an experiment: a setting to
try). ``--python``: another venv's interpreter (litellm 1.110 against the 1.83 floor).
``--floor``: one more side without litellm, the floor under any client: a request with the
same conversation and tool schema posted with aiohttp, each streamed chunk parsed with
``json.loads``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

SERVER = """
import sys
sys.path.insert(0, sys.argv[1])
from tests import llm_server as S
server = S.ScriptedLLMServer().start()
replies = [S.tool_call("print(x * 2)"), S.text("It is 84.")]
count = [0]
def answer(body):
    count[0] += 1
    return replies[count[0] % 2]
server.set_fallback(answer)
print(server.url, flush=True)
sys.stdin.read()
"""

CONVERSATION = """
messages = [{"role": "system", "content": "You are a helpful assistant. " * 40}]
while len(messages) < n_messages:
    i = len(messages)
    messages.append({"role": "user", "content": f"instruction {i}: print x times two " * 3})
    messages.append({"role": "assistant", "content": f"It is {i}. " * 10})
messages = messages[:n_messages]
if messages[-1]["role"] != "user":
    messages.append({"role": "user", "content": "print x times two"})
tools = [{"type": "function", "function": {"name": "execute", "description": "Run code",
          "parameters": {"type": "object", "properties": {"language": {"type": "string"},
                         "code": {"type": "string"}}, "required": ["language", "code"]}}}]
"""

WORKER = """
import asyncio, cProfile, json, os, sys, threading, time
sys.path.insert(0, os.environ["OI_TREE"])
url, calls, n_messages, profile = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
from oi_kernel.llm import boundary
from oi_kernel.llm.client import LLM
boundary.own_process()
litellm = boundary.load()
exec(os.environ.get("OI_BENCH_SETUP", ""))
llm = LLM(model="scripted", api_base=url, api_key="sk-test")
exec(os.environ["OI_BENCH_CONVERSATION"])
profilers = []
if profile:
    original_run = threading.Thread.run
    def run(self):
        p = cProfile.Profile()
        profilers.append(p)
        p.enable()
        try:
            original_run(self)
        finally:
            p.disable()
    threading.Thread.run = run
texts = []
async def main():
    cpu, wall = [], []
    for i in range(calls + 5):
        if i == 5 and profile:
            for p in profilers:  # the threads are idle: forget the warm-up calls
                p.clear()
            main_profiler = cProfile.Profile()
            profilers.append(main_profiler)
            main_profiler.enable()
        c0, w0 = time.process_time(), time.perf_counter()
        reply = await llm.stream(messages, tools, on_text=texts.append)
        c1, w1 = time.process_time(), time.perf_counter()
        if i >= 5:
            cpu.append(c1 - c0)
            wall.append(w1 - w0)
        assert reply.tool_calls or reply.text, reply
        assert reply.usage.prompt_tokens > 0, reply.usage
    if profile:
        main_profiler.disable()
    return cpu, wall
cpu, wall = asyncio.run(main())
if profile:
    import pstats
    stats = None
    for p in profilers:
        try:
            s = pstats.Stats(p)
        except TypeError:  # never enabled with anything recorded
            continue
        stats = s if stats is None else stats.add(s) or stats
    stats.dump_stats(profile)
print(json.dumps({"cpu": cpu, "wall": wall}))
"""


FLOOR_SIDE = "(no litellm: aiohttp, json.loads per chunk)"
FLOOR = """
import asyncio, json, os, sys, time
url, calls, n_messages = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
import aiohttp
exec(os.environ["OI_BENCH_CONVERSATION"])
body = {"model": "scripted", "messages": messages, "tools": tools, "stream": True,
        "stream_options": {"include_usage": True}, "temperature": 0}
async def main():
    cpu, wall = [], []
    async with aiohttp.ClientSession() as session:
        for i in range(calls + 5):
            c0, w0 = time.process_time(), time.perf_counter()
            chunks = []
            async with session.post(url + "/chat/completions", json=body,
                                    headers={"Authorization": "Bearer sk-test"}) as response:
                async for line in response.content:
                    if line.startswith(b"data: {"):
                        chunks.append(json.loads(line[6:]))
            c1, w1 = time.process_time(), time.perf_counter()
            assert chunks, "no chunk"
            if i >= 5:
                cpu.append(c1 - c0)
                wall.append(w1 - w0)
    return cpu, wall
cpu, wall = asyncio.run(main())
print(json.dumps({"cpu": cpu, "wall": wall}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=60)
    parser.add_argument("--messages", type=int, default=41)
    parser.add_argument("--rounds", type=int, default=3, help="processes per tree, alternating")
    parser.add_argument("--against", action="append", default=[], help="another tree")
    parser.add_argument("--python", default=sys.executable, help="the interpreter (a venv's)")
    parser.add_argument("--setup", action="append", default=[],
                        help="code run in the first tree's process after litellm's import "
                             "(an experiment; ``litellm`` is the module); repeatable: one "
                             "more side per --setup, with this tree")
    parser.add_argument("--profile", default="", help="write this tree's cProfile here")
    parser.add_argument("--floor", action="store_true",
                        help="one more side: the same request without litellm (aiohttp)")
    args = parser.parse_args()
    sides = [(str(REPO), ""), *((str(REPO), code) for code in args.setup),
             *((tree, "") for tree in args.against), *([("", FLOOR_SIDE)] if args.floor else [])]
    server = subprocess.Popen([args.python, "-c", SERVER, str(REPO)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    results: list[dict[str, list[float]]] = [{"cpu": [], "wall": []} for _ in sides]
    try:
        url = server.stdout.readline().strip()
        load_before = os.getloadavg()[0]
        for round_ in range(args.rounds):
            for index, (tree, setup) in enumerate(sides):
                profile = args.profile if (index == 0 and round_ == 0) else ""
                env = {**os.environ, "OI_TREE": tree, "PYTHONPATH": tree, "OI_BENCH_SETUP": setup,
                       "OI_BENCH_CONVERSATION": CONVERSATION}
                script = FLOOR if setup == FLOOR_SIDE else WORKER
                out = subprocess.run(
                    [args.python, "-c", script, url, str(args.calls), str(args.messages), profile],
                    env=env, capture_output=True, text=True, check=False)
                if out.returncode:
                    sys.exit(f"{tree} {setup}: {out.stderr[-3000:]}")
                data = json.loads(out.stdout.strip().splitlines()[-1])
                for key in ("cpu", "wall"):
                    results[index][key] += data[key]
        load_after = os.getloadavg()[0]
    finally:
        server.stdin.close()
        server.wait(timeout=10)
    sys.path.insert(0, str(REPO))
    from benchmarks.common import litellm_version

    version = litellm_version(args.python)
    print(f"litellm {version}; {args.messages} messages; {args.calls} calls x {args.rounds} "
          f"processes per side; load average {load_before:.2f} -> {load_after:.2f}")
    print(f"{'side':<60} {'CPU/request':>12} {'wall/request':>13}")
    for (tree, setup), r in zip(sides, results, strict=True):
        label = f"{tree} {setup}".strip()[:60]
        print(f"{label:<60} {statistics.median(r['cpu']) * 1000:>10.2f} ms "
              f"{statistics.median(r['wall']) * 1000:>10.2f} ms")
    if args.profile:
        import pstats
        pstats.Stats(args.profile).sort_stats("tottime").print_stats(40)


if __name__ == "__main__":
    main()
