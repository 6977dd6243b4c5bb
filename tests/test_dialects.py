"""Model dialects, pure: reasoning split off the answer (whole and while streaming), tool
calls that open models print as text in their own formats, and replies that are only code.

The same samples go through litellm and the engine in ``test_dialects_loop.py``."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oi_kernel.core.codeblocks import extract_code_blocks, parse_tool_arguments
from oi_kernel.core.dialects import bare_code, normalize
from oi_kernel.core.reasoning import ThinkSplitter, split_reasoning

PY, SH = "python", "shell"
ARGS = {"language": "python", "code": "print(2 ** 10)"}

# ----------------------------------------------------------------------------- reasoning

REASONING_CASES = [
    ("no reasoning", "```python\nx = 1\n```", "", "```python\nx = 1\n```"),
    ("think then answer", "<think>\nPlan it.\n</think>\n\nIt is 4.", "Plan it.", "It is 4."),
    ("leading blank space", "\n  <think>a</think>b", "a", "b"),
    ("thinking tag", "<thinking>hm</thinking>ok", "hm", "ok"),
    ("upper case", "<THINK>hm</THINK>ok", "hm", "ok"),
    ("unclosed: all reasoning", "<think>still going", "still going", ""),
    ("empty think (thinking off)", "<think>\n\n</think>\n\nAnswer", "", "Answer"),
    ("lone close (R1 prefilled)", "I'll print it.\n</think>\n\nDone.", "I'll print it.", "Done."),
    ("think later is text", "Use <think> tags like this.", "", "Use <think> tags like this."),
    (
        "code inside the reasoning",
        "<think>\n```python\nprint(2 * 10)\n```\nNo.\n</think>\n```python\nprint(2 ** 10)\n```",
        "```python\nprint(2 * 10)\n```\nNo.",
        "```python\nprint(2 ** 10)\n```",
    ),
]


@pytest.mark.parametrize(("text", "reasoning", "answer"), [c[1:] for c in REASONING_CASES],
                         ids=[c[0] for c in REASONING_CASES])
def test_split_reasoning(text: str, reasoning: str, answer: str) -> None:
    assert split_reasoning(text) == (reasoning, answer)


def _stream_split(pieces: list[str]) -> tuple[str, str]:
    splitter = ThinkSplitter()
    out = [p for piece in pieces for p in splitter.feed(piece)] + splitter.finish()
    thinking = "".join(t for kind, t in out if kind == "thinking")
    answer = "".join(t for kind, t in out if kind == "answer")
    return thinking, answer


@pytest.mark.parametrize(("text", "reasoning", "answer"),
                         [c[1:] for c in REASONING_CASES if "lone" not in c[0]],
                         ids=[c[0] for c in REASONING_CASES if "lone" not in c[0]])
def test_the_streamed_split_agrees_in_every_chunking(text, reasoning, answer) -> None:
    for size in range(1, len(text) + 1):
        pieces = [text[i:i + size] for i in range(0, len(text), size)]
        thinking, shown = _stream_split(pieces)
        assert thinking.strip() == reasoning
        assert shown.strip() == answer.strip(), size


@given(st.text(alphabet="<>/thinkg ab\n", max_size=40), st.lists(st.integers(1, 8), max_size=12))
def test_the_streamed_split_loses_nothing(text: str, cuts: list[int]) -> None:
    pieces, i = [], 0
    for n in cuts:
        pieces.append(text[i:i + n])
        i += n
    pieces.append(text[i:])
    thinking, answer = _stream_split(pieces)
    reasoning, final = split_reasoning(text)
    opened = re.match(r"\s*<think(ing)?>", text, re.I)
    if opened or not re.search(r"</think(ing)?>", text, re.I):  # no lone close: streams alike
        assert thinking.strip() == reasoning and answer.strip() == final.strip()
    else:  # a lone close is only seen in the whole reply: the stream showed it as answer
        assert thinking == "" and answer == text


# ----------------------------------------------------------------------------- tool calls as text

CALL = json.dumps({"name": "execute", "arguments": ARGS})
DIALECT_CASES = [
    ("hermes/qwen tool_call", f"<tool_call>\n{CALL}\n</tool_call>", [(PY, "print(2 ** 10)")]),
    ("hermes unclosed", f"<tool_call>\n{CALL}", [(PY, "print(2 ** 10)")]),
    (
        "hermes two calls after prose",
        "I will compute it.\n<tool_call>\n"
        + json.dumps({"name": "execute", "arguments": {"code": "x = 2 ** 10"}})
        + "\n</tool_call>\n<tool_call>\n"
        + json.dumps({"name": "execute", "arguments": {"code": "print(x)"}}) + "\n</tool_call>",
        [(PY, "x = 2 ** 10"), (PY, "print(x)")],
    ),
    (
        "qwen3-coder xml",
        "<tool_call>\n<function=execute>\n<parameter=language>\npython\n</parameter>\n"
        "<parameter=code>\nfor i in range(2):\n    print(i)\n</parameter>\n</function>\n</tool_call>",
        [(PY, "for i in range(2):\n    print(i)")],
    ),
    ("llama json with parameters",
     json.dumps({"name": "execute", "parameters": ARGS}), [(PY, "print(2 ** 10)")]),
    ("llama python_tag json",
     "<|python_tag|>" + json.dumps({"name": "execute", "parameters": ARGS}) + "<|eom_id|>",
     [(PY, "print(2 ** 10)")]),
    ("llama python_tag raw code", "<|python_tag|>x = 2 ** 10\nprint(x)<|eom_id|>",
     [(PY, "x = 2 ** 10\nprint(x)")]),
    ("llama python_tag raw to the end", "<|python_tag|>print(2 ** 10)", [(PY, "print(2 ** 10)")]),
    ("llama function tag", f"<function=execute>{json.dumps(ARGS)}</function>",
     [(PY, "print(2 ** 10)")]),
    ("llama function tag unclosed", f"<function=execute>{json.dumps(ARGS)}",
     [(PY, "print(2 ** 10)")]),
    ("mistral v3", f"[TOOL_CALLS] [{CALL}]", [(PY, "print(2 ** 10)")]),
    ("mistral v3 marker stripped", f"[{CALL}]", [(PY, "print(2 ** 10)")]),
    ("mistral v11", f"[TOOL_CALLS]execute[ARGS]{json.dumps(ARGS)}", [(PY, "print(2 ** 10)")]),
    (
        "mistral v11 two calls",
        '[TOOL_CALLS]execute[ARGS]{"code": "x = 1"}[TOOL_CALLS]execute[ARGS]{"code": "print(x)"}',
        [(PY, "x = 1"), (PY, "print(x)")],
    ),
    ("mistral v11 marker stripped", f"execute{json.dumps(ARGS)}", [(PY, "print(2 ** 10)")]),
    (
        "deepseek v3",
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>execute\n```json\n"
        + json.dumps(ARGS) + "\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
        [(PY, "print(2 ** 10)")],
    ),
    ("granite", f"<|tool_call|>[{CALL}]", [(PY, "print(2 ** 10)")]),
    ("phi-4-mini functools", f"functools[{CALL}]", [(PY, "print(2 ** 10)")]),
    ("gemma tool_code fence", "```tool_code\nprint(2 ** 10)\n```", [(PY, "print(2 ** 10)")]),
    ("end token after a fence", "```python\nprint(1)\n```<|eot_id|>", [(PY, "print(1)")]),
    ("end token inside an unclosed fence", "```python\nprint(1)\n<|im_end|>", [(PY, "print(1)")]),
    ("unknown tool in a dialect", '<function=search>{"q": "x"}</function>', []),
    (
        "arguments as a JSON string in a JSON string",
        json.dumps({"name": "execute", "arguments": json.dumps(json.dumps(ARGS))}),
        [(PY, "print(2 ** 10)")],
    ),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in DIALECT_CASES],
                         ids=[c[0] for c in DIALECT_CASES])
def test_dialect_tool_calls(text: str, expected: list[tuple[str, str]]) -> None:
    assert [(b.language, b.code) for b in extract_code_blocks(text)] == expected


def test_normalize_leaves_plain_text_alone() -> None:
    text = "Here is how: run `ls` in a shell, then <b>look</b>."
    assert normalize(text) == text


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_arguments_encoded_several_times(depth: int) -> None:
    raw = json.dumps(ARGS)
    for _ in range(depth - 1):
        raw = json.dumps(raw)
    assert parse_tool_arguments(raw) == ARGS


# ----------------------------------------------------------------------------- bare code

BARE_CASES = [
    ("a call", "print(2**10)", (PY, "print(2**10)")),
    ("SmolLM2's function", "def power_to_10(n):\n    return 2**n\nprint(power_to_10(5))",
     (PY, "def power_to_10(n):\n    return 2**n\nprint(power_to_10(5))")),
    ("assignment and print", "x = [5, 2, 9]\nx.sort()\nprint(x)", (PY, "x = [5, 2, 9]\nx.sort()\nprint(x)")),
    ("an import", "import math", (PY, "import math")),
    ("indented as a whole", "    x = 1\n    print(x)", (PY, "x = 1\nprint(x)")),
    ("an ipython shell escape", "!pip install numpy", (PY, "!pip install numpy")),
    ("with an end token", "print(1)<|im_end|>", (PY, "print(1)")),
    ("ls", "ls -la", (SH, "ls -la")),
    ("a prompt", "$ echo hello", (SH, "echo hello")),
    ("pip install", "pip install pandas", (SH, "pip install pandas")),
    ("two commands", "cd /tmp\nls", (SH, "cd /tmp\nls")),
    ("a pipe", "cat data.csv | wc -l", (SH, "cat data.csv | wc -l")),
    ("pwd alone", "pwd", (SH, "pwd")),
    ("a number", "1024", None),
    ("a word", "Done", None),
    ("True", "True", None),
    ("an expression only", "2 ** 10", None),
    ("prose", "The answer is 1024.", None),
    ("prose with a call-like part", "Sure (I can help).", None),
    ("prose starting with a command word", "Find the largest number in the list.", None),
    ("cat as a word", "cat is an animal", None),
    ("prose then code", "Here it is:\nprint(1)", None),
    ("a fence is not bare", "```python\nprint(1)\n```", None),
    ("empty", "   \n", None),
    ("a bare value list", "[1, 2, 3]", None),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in BARE_CASES],
                         ids=[c[0] for c in BARE_CASES])
def test_bare_code(text: str, expected: tuple[str, str] | None) -> None:
    block = bare_code(text)
    assert (None if block is None else (block.language, block.code)) == expected
    assert block is None or block.bare
