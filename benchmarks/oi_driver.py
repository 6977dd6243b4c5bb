"""Drive Open Interpreter 0.4.3 through a script of instructions and time each turn.

Runs with the separate venv's Python (``/work/oi-venv/bin/python``), never ours; it
imports nothing from this repository. Prints one JSON object on its last line:
``{"ready_s": ..., "turns": [{"seconds": ..., "output": "..."}]}``.

    oi_driver.py API_BASE INSTRUCTION [INSTRUCTION ...]
"""

from __future__ import annotations

import json
import os
import sys
import time


def main(argv: list[str]) -> None:
    started = time.perf_counter()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    api_base, instructions = argv[0], argv[1:]
    from interpreter import interpreter

    interpreter.offline = True
    interpreter.disable_telemetry = True
    interpreter.auto_run = True
    interpreter.llm.model = "openai/scripted"
    interpreter.llm.api_base = api_base
    interpreter.llm.api_key = "sk-bench-not-a-real-key-000000"
    interpreter.llm.supports_functions = True  # the scripted server answers with tool calls
    interpreter.llm.supports_vision = False
    interpreter.llm.context_window = 128_000
    interpreter.llm.max_tokens = 4_096
    ready = time.perf_counter() - started
    turns = []
    for instruction in instructions:
        t0 = time.perf_counter()
        messages = interpreter.chat(instruction, display=False, stream=False)
        seconds = time.perf_counter() - t0
        output = "\n".join(
            str(m.get("content", ""))
            for m in messages
            if m.get("type") == "console" and m.get("format") == "output"
        )
        turns.append({"seconds": seconds, "output": output})
    interpreter.computer.terminate()
    print(json.dumps({"ready_s": ready, "turns": turns}))


if __name__ == "__main__":
    main(sys.argv[1:])
