"""System prompts, the tool schema and the feedback the model gets after a step."""

from __future__ import annotations

import pytest

from oi_kernel.core import prompts


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("def f():\n    return 1", ["f"]),
        ("def f():\n    return 1\nprint(f())", []),
        ("def a(): pass\ndef b(): a()", ["b"]),
        ("async def go(): pass", ["go"]),
        ("x = 1", []),
        ("def (:", []),  # unparseable: no guess
        ("class C:\n    def m(self): pass", []),  # methods are not top-level functions
    ],
)
def test_uncalled_functions(code, expected):
    assert prompts.uncalled_functions(code) == expected


@pytest.mark.parametrize(
    ("status", "output", "code", "needle"),
    [
        ("ok", "42\n", "print(42)", "42"),
        ("ok", "", "x = 1", "printed nothing"),
        ("ok", "", "def f():\n    return 3", "defined f() but never called it"),
        ("error", "NameError: x", "x", "raised an error:\nNameError"),
        ("interrupted", "", "while True: pass", "interrupted"),
    ],
)
def test_step_feedback(status, output, code, needle):
    assert needle in prompts.step_feedback(status, output, code=code)


def test_flags_are_appended_for_the_model():
    text = prompts.step_feedback("ok", "done", "line 1: rm -rf deletes files")
    assert text.startswith("done") and "Risk review" in text and "rm -rf" in text


def test_tool_schema_lists_only_given_languages():
    schema = prompts.execute_tool(["python", "shell"])
    params = schema["function"]["parameters"]
    assert params["properties"]["language"]["enum"] == ["python", "shell"]
    assert params["required"] == ["language", "code"]


@pytest.mark.parametrize("use_tools", [True, False])
def test_system_prompt_says_how_to_run_code(use_tools):
    text = prompts.system_prompt(use_tools=use_tools, languages=["python"], cwd="/w", extra="Be brief.")
    assert ("`execute` function" in text) is use_tools
    assert ("fenced code block" in text) is not use_tools
    assert "/w" in text and text.endswith("Be brief.")


def test_small_model_prompt_is_short():
    small = prompts.system_prompt(use_tools=False, languages=["python"], cwd="/w", small_model=True)
    big = prompts.system_prompt(use_tools=False, languages=["python"], cwd="/w")
    assert len(small) < len(big) and "Python code block" in small  # examples: message pairs
