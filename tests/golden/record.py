"""Record the golden session log that tests/test_golden_log.py reads.

The log is written by the code of the commit that records it and then kept as it is: later
changes to how logs are written must still export, verify and replay it. Re-record only to
add a new golden file next to the old ones (``session_v1.jsonl`` stays), never to make a
failing test pass::

    PYTHONPATH=$PWD .venv/bin/python -m tests.golden.record tests/golden/session_v1.jsonl

Volatile values are fixed after recording (times, ids, the working directory and the
scripted server's address), so the file is stable and names no machine.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from pathlib import Path

from oi_kernel import Interpreter
from oi_kernel.record.session_log import read_log
from tests import llm_server as S

KEY = "sk-golden-not-a-real-key-000000"
WORK = "/nonexistent/oi-golden/work"
BASE = "http://127.0.0.1:9/v1"

TURN_1 = "make a small table of numbers and summarise it"
TURN_2 = "double the largest, write it to a file, then clean up"
DIRECT = "print(len(data))"

REPLIES = [
    # turn 1: a step that runs, one that fails and is recovered, then the answer
    S.tool_call("data = [3, 4, 5]\nprint(sum(data))"),
    S.tool_call("print(data[10])"),
    S.tool_call("print(data[-1])"),
    S.text("The sum is 12 and the last value is 5."),
    # turn 2: an edited step, a shell step, a file write, a flagged step that is skipped
    S.tool_calls(
        [
            ("print(max(data))", "python"),
            ("echo $((6 * 7))", "shell"),
            ("with open('largest.txt', 'w') as f:\n    f.write(str(max(data) * 2))", "python"),
            ("import shutil\nshutil.rmtree('/nonexistent/oi-golden/elsewhere')", "python"),
        ]
    ),
    S.text("Done: largest.txt holds 10."),
]
# Run, Run, Run | edit, Run, Run, Skip
ANSWERS = [True, True, True, "print(max(data) * 2)", True, True, False]


def normalise(records: list[dict], work: str, url: str) -> list[str]:
    """The records as JSON lines with times, ids, paths and the server address fixed."""
    session_ids: dict[str, str] = {}
    lines = []
    for i, record in enumerate(records):
        text = json.dumps(record, ensure_ascii=False)
        text = text.replace(work, WORK).replace(url, BASE)
        record = json.loads(text)
        record["t"] = f"2026-11-27T03:00:{i:02d}.000Z"
        record["session"] = session_ids.setdefault(record["session"], f"golden-{len(session_ids)}")
        lines.append(json.dumps(record, ensure_ascii=False, sort_keys=True))
    # durations and ids of calls vary from run to run
    return [
        re.sub(r'"(duration_s|latency_s|cost_s)": [0-9.]+', r'"\1": 0.001', line) for line in lines
    ]


def record(target: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "work"
        work.mkdir()
        answers = iter(ANSWERS)
        with S.ScriptedLLMServer() as server:
            server.enqueue(*REPLIES)
            with Interpreter(
                "openai/scripted",
                api_base=server.url,
                api_key=KEY,
                approve=lambda request: next(answers),
                log_dir=Path(tmp) / "logs",
                cwd=work,
            ) as it:
                list(it.chat(TURN_1))
                list(it.chat(TURN_2))
                it.run_code(DIRECT)
                log = it.log_path
            url = server.url
        lines = normalise(read_log(log), str(work.resolve()), url.rstrip("/"))
        lines = [line.replace(str(work), WORK) for line in lines]
    target.write_text("".join(line + "\n" for line in lines))


if __name__ == "__main__":
    record(Path(sys.argv[1]))
