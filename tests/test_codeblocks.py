"""Tests of code extraction from LLM replies and of execute() argument parsing."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oi_kernel.core.codeblocks import (
    ToolArgumentsError,
    blocks_from_tool_calls,
    extract_code_blocks,
    parse_tool_arguments,
)
from oi_kernel.core.types import CodeBlock, ToolCall
from oi_kernel.errors import OIError

PY = "python"
SH = "shell"
CALL_JSON = '{"name": "execute", "arguments": {"language": "python", "code": "print(2)"}}'

EXTRACT_CASES = [
    ("plain python", "Run:\n```python\nprint(1)\n```\nDone.", [(PY, "print(1)")]),
    ("untagged is python", "```\nx = 1\n```", [(PY, "x = 1")]),
    ("python3 tag", "```python3\nx = 1\n```", [(PY, "x = 1")]),
    ("braced tag", "```{python}\nx = 1\n```", [(PY, "x = 1")]),
    ("tag with attributes", '```py title="x.py"\nx = 1\n```', [(PY, "x = 1")]),
    ("tilde fence", "~~~bash\nls -l\n~~~", [(SH, "ls -l")]),
    (
        "backticks nested in a tilde block",
        "~~~python\ns = '''\n```\ninner\n```\n'''\n~~~",
        [(PY, "s = '''\n```\ninner\n```\n'''")],
    ),
    (
        "four-backtick fence holding three",
        "````markdown\n```python\nx\n```\n````\n",
        [("markdown", "```python\nx\n```")],
    ),
    ("longer closer closes", "```python\nx = 1\n`````\nafter", [(PY, "x = 1")]),
    ("shorter line does not close", "````python\n```\nx = 1\n````", [(PY, "```\nx = 1")]),
    ("CRLF line endings", "Text\r\n```python\r\na = 1\r\nb = 2\r\n```\r\n", [(PY, "a = 1\nb = 2")]),
    ("fence with trailing spaces", "```python   \nx = 1\n```   \n", [(PY, "x = 1")]),
    (
        "two blocks of different languages",
        "```bash\npip install x\n```\nthen\n```python\nimport x\n```",
        [(SH, "pip install x"), (PY, "import x")],
    ),
    ("json tool call inside prose", f"I'll run {CALL_JSON} for you.", [(PY, "print(2)")]),
    ("json tool call in a json fence", f"```json\n{CALL_JSON}\n```", [(PY, "print(2)")]),
    (
        "tool_call tags",
        f"<tool_call>\n{CALL_JSON}\n</tool_call>",
        [(PY, "print(2)")],
    ),
    (
        "tool_call tags with bare arguments",
        '<tool_call>{"language": "bash", "code": "ls"}</tool_call>',
        [(SH, "ls")],
    ),
    (
        "functions.execute call syntax",
        'Now functions.execute({"language": "shell", "code": "pwd"}) runs it.',
        [(SH, "pwd")],
    ),
    ("execute call syntax", 'execute({"language": "python", "code": "1+1"})', [(PY, "1+1")]),
    (
        "arguments as a JSON string",
        json.dumps({"name": "execute", "arguments": json.dumps({"code": "x = 3"})}),
        [(PY, "x = 3")],
    ),
    (
        "parameters instead of arguments",
        '{"name": "execute", "parameters": {"language": "sh", "code": "ls"}}',
        [(SH, "ls")],
    ),
    (
        "openai-style function wrapper",
        '{"type": "function", "function": {"name": "run_code", "arguments": {"code": "f()"}}}',
        [(PY, "f()")],
    ),
    ("text block is not code", "```text\nhello\n```", []),
    ("output block is not code", "```output\n42\n```", []),
    ("plain json is not code", '```json\n{"a": 1}\n```', []),
    ("unknown tool in prose ignored", '{"name": "search", "arguments": {"q": "x"}}', []),
    (
        "unclosed final fence",
        "Here:\n```python\nfor i in range(3):\n    print(i)\n",
        [(PY, "for i in range(3):\n    print(i)")],
    ),
    ("empty block skipped", "```python\n\n   \n```\n```python\nx\n```", [(PY, "x")]),
    (
        "indented fence in a list item",
        "1. First:\n   ```python\n   for i in x:\n       pass\n   ```\n2. Next",
        [(PY, "for i in x:\n    pass")],
    ),
    (
        "prose and fences in order",
        f'{CALL_JSON}\n```bash\nls\n```\nexecute({{"language": "python", "code": "z"}})',
        [(PY, "print(2)"), (SH, "ls"), (PY, "z")],
    ),
    ("console is shell, prompts dropped", "```console\n$ ls\na.txt\n$ pwd\n```", [(SH, "ls\npwd")]),
    ("unknown language kept as tagged", "```rust\nfn main() {}\n```", [("rust", "fn main() {}")]),
    ("backticks in the info string: no fence", "```python``` tags a fence.\nok = 1", []),
    ("no code at all", "All done, the answer is 42.", []),
    ("bare arguments outside tags ignored", 'Send {"language": "python", "code": "x"}.', []),
    ("cut call syntax is ignored", 'execute({"language": "python", "code": "x"', []),
]


@pytest.mark.parametrize(
    ("text", "expected"), [case[1:] for case in EXTRACT_CASES], ids=[c[0] for c in EXTRACT_CASES]
)
def test_extract_code_blocks(text: str, expected: list[tuple[str, str]]) -> None:
    blocks = extract_code_blocks(text)
    assert [(b.language, b.code) for b in blocks] == expected
    assert all(b.tool_call_id is None for b in blocks)


def test_an_unclosed_last_fence_can_be_left_out() -> None:
    reply = "```python\nprint(1)\n```\n```python\nimport shutil\nshutil.rmt"
    assert extract_code_blocks(reply)[-1] == CodeBlock(PY, "import shutil\nshutil.rmt")
    assert extract_code_blocks(reply, allow_unclosed=False) == [CodeBlock(PY, "print(1)")]
    closed = "```python\nprint(1)\n```"
    assert extract_code_blocks(closed, allow_unclosed=False) == [CodeBlock(PY, "print(1)")]


def test_tool_call_json_is_not_also_a_json_or_untagged_block() -> None:
    for text in (f"```json\n{CALL_JSON}\n```", f"```\n{CALL_JSON}\n```", CALL_JSON):
        assert extract_code_blocks(text) == [CodeBlock(PY, "print(2)")]


_REPLY_PIECES = st.sampled_from(
    [
        "Sure, here is the plan.\n",
        "```python\nprint('a')\n```\n",
        "~~~bash\nls\n~~~\n",
        "```text\nout\n```\n",
        f"{CALL_JSON}\n",
        '<tool_call>{"language": "python", "code": "y"}</tool_call>\n',
        "````\n```\nnested\n```\n````\n",
        "```python\nunclosed = 1\n",
        "\r\n",
        '`` ` {"name": ',
    ]
)


@settings(max_examples=200, deadline=None)
@given(
    pieces=st.lists(_REPLY_PIECES, max_size=8),
    cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=12),
)
def test_extraction_does_not_depend_on_chunking(pieces: list[str], cuts: list[int]) -> None:
    reply = "".join(pieces)
    bounds = sorted({0, len(reply), *(c % (len(reply) + 1) for c in cuts)})
    chunks = [reply[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
    expected = extract_code_blocks(reply)
    accumulated = ""
    for chunk in chunks:
        accumulated += chunk
    assert "".join(chunks) == reply
    assert extract_code_blocks(accumulated) == expected
    assert extract_code_blocks(reply) == expected  # no state left behind by a call


_CODE_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r"), max_size=200
).filter(lambda s: "```" not in s and s.strip() and not s.lstrip().startswith(("{", "execute")))


@settings(max_examples=300, deadline=None)
@given(code=_CODE_TEXT, tag=st.sampled_from(["python", "py", "", "python3"]))
def test_fenced_code_comes_back_exactly(code: str, tag: str) -> None:
    reply = f"Here you go:\n```{tag}\n{code}\n```\nThat's it."
    assert extract_code_blocks(reply) == [CodeBlock("python", code)]


ARGUMENT_CASES = [
    ("plain", '{"language": "python", "code": "print(1)"}', (PY, "print(1)")),
    ("language normalized", '{"language": "bash", "code": "ls"}', (SH, "ls")),
    ("unknown language kept raw", '{"language": "Fortran", "code": "x"}', ("Fortran", "x")),
    ("missing language", '{"code": "x = 1"}', (PY, "x = 1")),
    ("null language", '{"language": null, "code": "x"}', (PY, "x")),
    ("cut after the string", '{"language": "python", "code": "print(1)"', (PY, "print(1)")),
    ("missing nested braces", '{"arguments": {"code": "x"', (PY, "x")),
    ("trailing comma", '{"language": "python", "code": "x", "timeout": 5,}', (PY, "x")),
    ("nested trailing commas", '{"code": "x", "env": {"A": "1",}, "n": [1, 2,],}', (PY, "x")),
    ("trailing comma in a cut call", '{"code": "x",', (PY, "x")),
    ("comma inside code is kept", '{"code": "f(a,)"}', (PY, "f(a,)")),
    ("raw newline in string", '{"code": "a = 1\nb = 2"}', (PY, "a = 1\nb = 2")),
    ("python dict of strings", "{'language': 'python', 'code': 'x'}", (PY, "x")),
    ("double encoded", json.dumps(json.dumps({"code": "y"})), (PY, "y")),
    ("json string of code", json.dumps("print(5)"), (PY, "print(5)")),
    ("bare python code", "import os\nprint(os.getcwd())", (PY, "import os\nprint(os.getcwd())")),
    ("bare code with magics", "%pip install x\nimport x", (PY, "%pip install x\nimport x")),
    ("whole call as arguments", '{"name": "execute", "arguments": {"code": "z"}}', (PY, "z")),
]


@pytest.mark.parametrize(
    ("raw", "expected"), [c[1:] for c in ARGUMENT_CASES], ids=[c[0] for c in ARGUMENT_CASES]
)
def test_parse_tool_arguments(raw: str, expected: tuple[str, str]) -> None:
    assert parse_tool_arguments(raw) == {"language": expected[0], "code": expected[1]}


ARGUMENT_ERRORS = [
    ("empty", "", "empty"),
    ("whitespace", "   \n", "empty"),
    ("prose", "please run the code", "not JSON"),
    ("cut before the code", '{"language": "python", "code": ', "not JSON"),
    ("cut inside a key", '{"language": "python", "co', "not JSON"),
    ("no code", '{"language": "python"}', '"code" string is missing'),
    ("code not a string", '{"code": 42}', '"code" must be a string'),
    ("empty code", '{"code": "  "}', '"code" was empty'),
    ("language not a string", '{"language": 3, "code": "x"}', '"language" must be a string'),
    ("a list", '["print(1)"]', "JSON object was expected"),
    ("python dict with non-strings", "{'code': 1}", "not JSON"),
    ("broken braces", "{code: print(1)}", "not JSON"),
    ("nested too deeply", "[" * 100_000, "nested too deeply"),
    ("arguments nested too deeply", '{"arguments": ' * 20_000, "nested too deeply"),
]

# JSON that ends inside a string: the code was cut off, and half a program must not run.
CUT_STRING_CASES = [
    ("cut inside the code string", '{"language": "python", "code": "print(1)'),
    ("cut after an escape", '{"code": "a\\nb\\'),
    ("cut inside a later value", '{"code": "print(1)", "language": "pyth'),
    ("cut inside double-encoded arguments", json.dumps(json.dumps({"code": "y = 1"}))[:-4]),
]


@pytest.mark.parametrize(
    "raw", [c[1] for c in CUT_STRING_CASES], ids=[c[0] for c in CUT_STRING_CASES]
)
def test_arguments_cut_inside_a_string_are_refused(raw: str) -> None:
    with pytest.raises(ToolArgumentsError) as info:
        parse_tool_arguments(raw)
    message = str(info.value)
    assert "cut off" in message and "none of it was run" in message
    assert '{"language": "python", "code": "print(1)"}' in message


_JSONISH = st.text(alphabet='{}[]",:\\ \n abcode0123456789python-', max_size=120)


@settings(max_examples=400, deadline=None)
@given(
    raw=st.one_of(
        st.text(max_size=300), _JSONISH, st.builds(lambda n: "[" * n, st.integers(0, 5000))
    )
)
def test_parse_tool_arguments_raises_only_tool_arguments_error(raw: str) -> None:
    try:
        result = parse_tool_arguments(raw)
    except ToolArgumentsError as error:
        assert str(error)
    else:
        assert set(result) == {"language", "code"} and result["code"].strip()
        assert (result["language"] + result["code"]).encode("utf-8")  # no lone surrogates


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        ('{"code": "print(\'\\ud83d\')"}', "print('\ufffd')"),  # escaped half of a pair
        ('{"code": "print(\'\\ud83d\\ude00\')"}', "print('\U0001f600')"),  # a whole pair
        ("print('\udc80')", "print('\ufffd')"),  # bare code holding a lone surrogate
    ],
)
def test_lone_surrogates_become_replacement_characters(raw: str, code: str) -> None:
    assert parse_tool_arguments(raw)["code"] == code


@settings(max_examples=300, deadline=None)
@given(
    code=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=80),
    cut=st.integers(min_value=1, max_value=200),
)
def test_a_cut_call_never_runs_a_prefix_of_the_code(code: str, cut: int) -> None:
    """Whatever prefix of a streamed call arrives, the result is the whole code or an error."""
    raw = json.dumps({"language": "python", "code": code})
    prefix = raw[: min(cut, len(raw))]
    try:
        result = parse_tool_arguments(prefix)
    except ToolArgumentsError:
        return
    if prefix.startswith("{"):
        assert result["code"] == code


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=400), nesting=st.integers(0, 3000))
def test_extract_code_blocks_never_raises(text: str, nesting: int) -> None:
    reply = text + ' {"name": "execute", "arguments": ' + "[" * nesting + text
    assert isinstance(extract_code_blocks(reply), list)


@pytest.mark.parametrize(
    ("raw", "problem"), [c[1:] for c in ARGUMENT_ERRORS], ids=[c[0] for c in ARGUMENT_ERRORS]
)
def test_parse_tool_arguments_errors(raw: str, problem: str) -> None:
    with pytest.raises(ToolArgumentsError) as info:
        parse_tool_arguments(raw)
    message = str(info.value)
    assert problem in message
    assert '{"language": "python", "code": "print(1)"}' in message
    assert f"got: {raw[:200]}" in message
    assert isinstance(info.value, OIError)


def test_error_message_quotes_at_most_200_characters() -> None:
    raw = "{" + "x" * 1000
    with pytest.raises(ToolArgumentsError) as info:
        parse_tool_arguments(raw)
    assert "x" * 199 in str(info.value)
    assert "x" * 201 not in str(info.value)


def test_blocks_from_tool_calls() -> None:
    calls = [
        ToolCall("c1", "execute", '{"language": "bash", "code": "ls"}'),
        ToolCall("c2", "web_search", '{"q": "x"}'),
        ToolCall("c3", "python", "print(1)"),
        ToolCall("c4", "execute", "{not json at all"),
        ToolCall("c5", "run_code", '{"code": "x = 1"}'),
        ToolCall("c6", "python", '{"code": "y = 2"}'),
        ToolCall("c7", "functions.execute", '{"code": "z"}'),
    ]
    blocks, problems = blocks_from_tool_calls(calls)
    assert blocks == [
        CodeBlock(SH, "ls", "c1"),
        CodeBlock(PY, "print(1)", "c3"),
        CodeBlock(PY, "x = 1", "c5"),
        CodeBlock(PY, "y = 2", "c6"),
        CodeBlock(PY, "z", "c7"),
    ]
    assert len(problems) == 2
    assert "c2" in problems[0] and "web_search" in problems[0] and "execute" in problems[0]
    assert "c4" in problems[1] and "JSON arguments like" in problems[1]


def test_blocks_from_no_tool_calls() -> None:
    assert blocks_from_tool_calls([]) == ([], [])
