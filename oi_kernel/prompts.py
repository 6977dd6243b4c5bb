"""System prompts and the tool schema. Pure: text in, text out.

Two prompts: one for capable models (function calling or fenced blocks) and a
short one for small local models, where every prompt token costs latency.
"""

from __future__ import annotations

import ast
import platform
from collections.abc import Sequence

TOOL_NAME = "execute"

_CAPABLE = """\
You are Open Interpreter running inside a Jupyter notebook. The user writes instructions; \
you complete them by running code on the user's machine, step by step.

How to work:
- Run code with {how}. Each step runs in one persistent IPython kernel: variables, imports \
and files from earlier steps are still there. The working directory is {cwd}.
- Languages: {languages}. Python is the default; IPython magics work in python.
- The user sees every step and may approve, edit or decline it before it runs. You then get \
its output (long output is cut to its head and tail). If a step fails, read the error and fix it.
- Prefer small steps that print or display what they find. Plots and tables display inline.
- Do not ask for confirmation in prose: propose the code; the user approves it.
- When the task is done (or cannot be done), answer in a few sentences without code.

System: {system} · Python {python}."""

_HOW_TOOLS = "the `execute` function (arguments: language, code)"
_HOW_MARKDOWN = (
    "a fenced code block, e.g. ```python ... ``` (one block per step; every block you write "
    "is run, so never show code you do not want run)"
)

_SMALL = """\
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


def system_prompt(
    *,
    use_tools: bool,
    languages: Sequence[str],
    cwd: str,
    small_model: bool = False,
    extra: str = "",
    base: str = "",
) -> str:
    """The system message for the next request; ``base`` (a profile's system_message)
    replaces the built-in text when not empty."""
    if base.strip():
        text = base.strip()
    elif small_model:
        text = _SMALL
    else:
        text = _CAPABLE.format(
            how=_HOW_TOOLS if use_tools else _HOW_MARKDOWN,
            cwd=cwd,
            languages=", ".join(languages),
            system=f"{platform.system()} {platform.machine()}",
            python=platform.python_version(),
        )
    if extra.strip():
        text += "\n\nAdditional instructions:\n" + extra.strip()
    return text


def execute_tool(languages: Sequence[str]) -> dict[str, object]:
    """The OpenAI-style schema of the one tool, listing only available languages."""
    return {
        "type": "function",
        "function": {
            "name": TOOL_NAME,
            "description": "Run code in the user's persistent Jupyter kernel and return its output.",
            "parameters": {
                "type": "object",
                "properties": {
                    "language": {
                        "type": "string",
                        "enum": list(languages),
                        "description": "Language of the code.",
                    },
                    "code": {"type": "string", "description": "The code to run."},
                },
                "required": ["language", "code"],
            },
        },
    }


def uncalled_functions(code: str) -> list[str]:
    """Top-level functions that ``code`` defines but never calls (a small-model habit)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    defined = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    called = {n.func.id for n in ast.walk(tree)
              if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    return [name for name in defined if name not in called]


def step_feedback(status: str, output_text: str, flags_text: str = "", code: str = "") -> str:
    """What the LLM is told after a step ran (or did not)."""
    if status == "ok":
        body = output_text or _no_output(code)
    elif status == "error":
        body = "The code raised an error:\n" + output_text
    elif status == "interrupted":
        body = "The user interrupted the code." + (
            f" Output so far:\n{output_text}" if output_text else ""
        )
    else:
        body = output_text
    if flags_text:
        body += "\n\nRisk review of this code:\n" + flags_text
    return body


def _no_output(code: str) -> str:
    uncalled = uncalled_functions(code)
    if uncalled:
        names = ", ".join(f"{n}()" for n in uncalled)
        return (f"The code defined {names} but never called it, so nothing ran and nothing was "
                "printed. Call it and print the result.")
    return "The code ran and printed nothing. Print or display the result to see it."
