"""Find the code an LLM proposed: fenced blocks in its reply, tool calls it printed
as text instead of calling them, and the arguments of real ``execute`` calls.

Everything works on the complete reply text, never chunk by chunk, so the result
cannot depend on how the provider split its stream. Pure: no I/O.

A fence whose tag is not a known language (say ``rust``) still becomes a block
with that tag as its language, so the engine can tell the LLM it can't run it;
fences tagged as output or data (``text``, ``json``, ``csv``, ...) are not code.
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace
from itertools import accumulate
from typing import Any

from oi_kernel.core import dialects
from oi_kernel.core.types import CodeBlock, ToolCall
from oi_kernel.errors import OIError
from oi_kernel.languages import normalize_language

_EXAMPLE = '{"language": "python", "code": "print(1)"}'
# What the model is told when the token limit cut its last fenced block (it did not run).
CUT_BLOCK_PROBLEM = (
    "Your reply reached the output token limit inside a code block, so that block was cut "
    "off and was not run. Send it again complete, in smaller steps if it is long."
)
_EXECUTE_NAMES = frozenset({"execute", "run_code", "python"})
_CODE_KEYS = ("code", "source", "script", "command")
_NOT_CODE = frozenset(
    "text txt plain plaintext output out stdout stderr result log json jsonc json5 jsonl "
    "csv tsv yaml yml toml xml ini diff patch mermaid".split()
)
# Fence tags that models use for code of a known language (Gemma writes ```tool_code).
_FENCE_ALIASES = {"tool_code": "python"}
_OPENER_RE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_TAG_RE = re.compile(r"[\s{.]*([A-Za-z0-9_+#-]*)")
_CANDIDATE_RE = re.compile(
    r"(?:(?P<tag><tool_call>)\s*|(?P<call>\b(?:functions\.)?\b(?:execute|run_code)\s*\(\s*))?"
    r"(?=\{\s*\")"
)
_CALL_BODY_RE = re.compile(r"(?:functions\.)?(?:execute|run_code)\s*\(\s*(\{.*\})\s*\)\s*;?", re.S)
_CLOSE_PAREN_RE = re.compile(r"\s*\)")
_MAGIC_LINE_RE = re.compile(r"^([ \t]*)[%!].*$", re.M)
_LONE_SURROGATE_RE = re.compile("[\ud800-\udfff]")
_DECODER = json.JSONDecoder(strict=False)
_NOT_JSON = object()
_CUT_STRING = object()
# What a malformed or absurdly nested object can make the JSON decoder raise.
_DECODE_ERRORS = (json.JSONDecodeError, RecursionError)


class ToolArgumentsError(OIError):
    """The arguments of an ``execute`` call could not be understood."""


@dataclass
class _Fence:
    start: int  # offset of the opening fence line
    end: int  # offset just after the closing fence line (or the end of the text)
    tag: str  # first word of the info string, lower case; "" when untagged
    body: str
    closed: bool = True  # False: the text ended before the closing fence


def reply_text(text: str) -> str:
    """The reply as blocks are found in it: CRLF as LF, and the model dialects' tool calls
    in their canonical form (``dialects.normalize``)."""
    return dialects.normalize(text.replace("\r\n", "\n"))


def extract_code_blocks(text: str, allow_unclosed: bool = True) -> list[CodeBlock]:
    """The code blocks of a complete reply, in order of appearance.

    Fenced blocks and tool calls printed as text (JSON objects, ``<tool_call>``
    tags, ``functions.execute({...})`` and the model dialects of ``dialects.normalize``)
    are recognised; CRLF counts as LF. A fence
    still open at the end of the text (models often omit the last closer) gives a
    block unless ``allow_unclosed`` is False: pass that for a reply the output
    token limit cut off, whose last block is then only the start of the code.
    """
    return [block for _, _, block in block_spans(text, allow_unclosed)]


def block_spans(text: str, allow_unclosed: bool = True) -> list[tuple[int, int, CodeBlock]]:
    """``extract_code_blocks`` with where each block is: ``(start, end, block)``, offsets
    into ``reply_text(text)`` (a view that shows a block elsewhere can fold that part of
    the reply)."""
    text = reply_text(text)
    found: list[tuple[int, int, CodeBlock]] = []
    prose_start = 0
    for fence in _find_fences(text):
        found += _prose_calls(text, prose_start, fence.start)
        block = _fence_block(fence) if fence.closed or allow_unclosed else None
        if block is not None:
            found.append((fence.start, fence.end, block))
        prose_start = fence.end
    found += _prose_calls(text, prose_start, len(text))
    return sorted(found, key=lambda item: item[0])


def _find_fences(text: str) -> list[_Fence]:
    lines = text.split("\n")
    starts = [0, *accumulate(len(line) + 1 for line in lines)]
    fences: list[_Fence] = []
    i = 0
    while i < len(lines):
        m = _OPENER_RE.match(lines[i])
        if m is None or (m["fence"][0] == "`" and "`" in m["info"]):
            i += 1
            continue
        close = _find_closer(lines, i + 1, m["fence"])
        body = "\n".join(_dedent(line, len(m["indent"])) for line in lines[i + 1 : close])
        if close == len(lines) and body.endswith("\n"):
            body = body[:-1]
        end = min(starts[min(close + 1, len(lines))], len(text))
        closed = close < len(lines)
        fences.append(_Fence(starts[i], end, _fence_tag(m["info"]), body, closed))
        i = close + 1
    return fences


def _find_closer(lines: list[str], first: int, fence: str) -> int:
    """Index of the line closing ``fence``, or ``len(lines)`` when it never closes."""
    for index in range(first, len(lines)):
        stripped = lines[index].strip(" \t")
        if len(stripped) >= len(fence) and stripped == fence[0] * len(stripped):
            return index
    return len(lines)


def _dedent(line: str, width: int) -> str:
    i = 0
    while i < width and i < len(line) and line[i] in " \t":
        i += 1
    return line[i:]


def _fence_tag(info: str) -> str:
    """``python3``, ``{python}``, ``{.python}``, ``py title="x"``, ``python:a.py`` → the name."""
    m = _TAG_RE.match(info)
    return m[1].lower() if m else ""


def _fence_block(fence: _Fence) -> CodeBlock | None:
    if not fence.body.strip():
        return None
    call = _whole_text_call(fence.body.strip())
    if call is not None:
        return call
    if fence.tag in _NOT_CODE:
        return None
    body = _strip_console_prompts(fence.body) if fence.tag == "console" else fence.body
    tag = _FENCE_ALIASES.get(fence.tag, fence.tag)
    return CodeBlock(normalize_language(tag) or tag or "python", body)


def _strip_console_prompts(body: str) -> str:
    """In a console session keep the ``$ `` command lines (without prompt), drop output."""
    lines = body.split("\n")
    commands = [line.lstrip()[2:] for line in lines if line.lstrip().startswith("$ ")]
    return "\n".join(commands) if commands else body


def _whole_text_call(body: str) -> CodeBlock | None:
    """The block when all of ``body`` is one textual tool call, else None."""
    if body.startswith("{"):
        try:
            return _block_from_object(json.loads(body, strict=False), bare_ok=False)
        except _DECODE_ERRORS:
            return None
    m = _CALL_BODY_RE.fullmatch(body)
    if m is None:
        return None
    try:
        return _block_from_arguments(json.loads(m[1], strict=False))
    except _DECODE_ERRORS:
        return None


def _prose_calls(text: str, start: int, end: int) -> list[tuple[int, int, CodeBlock]]:
    """Tool calls printed as text between ``start`` and ``end`` (outside any fence)."""
    segment = text[start:end]
    found: list[tuple[int, int, CodeBlock]] = []
    pos = 0
    while (m := _CANDIDATE_RE.search(segment, pos)) is not None:
        try:
            obj, obj_end = _DECODER.raw_decode(segment, m.end())
        except _DECODE_ERRORS:
            pos = m.end() + 1
            continue
        end = obj_end
        if m["call"]:
            paren = _CLOSE_PAREN_RE.match(segment, obj_end)
            block = _block_from_arguments(obj) if paren is not None else None
            end = paren.end() if paren is not None else obj_end
        else:
            block = _block_from_object(obj, bare_ok=m["tag"] is not None)
        if block is not None:
            found.append((start + m.start(), start + end, block))
        pos = obj_end
    return found


def _block_from_object(obj: Any, bare_ok: bool) -> CodeBlock | None:
    """A block from ``{"name": "execute", "arguments": ...}`` (or bare arguments)."""
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("function"), dict):
        obj = obj["function"]
    name = obj.get("name")
    if name is None:
        return _block_from_arguments(obj) if bare_ok else None
    args = obj.get("arguments", obj.get("parameters"))
    if not isinstance(name, str) or not isinstance(args, (str, dict)):
        return None
    raw = args if isinstance(args, str) else json.dumps(args)
    try:
        return _call_to_block(name, raw)
    except ToolArgumentsError:
        return None


def _block_from_arguments(obj: Any) -> CodeBlock | None:
    if not isinstance(obj, dict) or "code" not in obj:
        return None
    try:
        args = _args_from_dict(obj, json.dumps(obj))
    except ToolArgumentsError:
        return None
    return CodeBlock(args["language"], args["code"])


def _tool_name(name: str) -> str:
    name = name.strip().lower()
    return name.removeprefix("functions.")


def _call_to_block(name: str, raw: str) -> CodeBlock | None:
    """The block for one call; None when ``name`` is not an execute tool."""
    kind = _tool_name(name)
    if kind not in _EXECUTE_NAMES:
        return None
    if kind == "python" and raw.strip() and not raw.lstrip().startswith(("{", '"')):
        return CodeBlock("python", raw.strip("\r\n"))
    args = parse_tool_arguments(raw)
    return CodeBlock(args["language"], args["code"])


def blocks_from_tool_calls(
    calls: list[ToolCall],
    lookup: Callable[[str, str], CodeBlock | None] | None = None,
    unknown_hint: str = "The only tool is execute(language, code).",
) -> tuple[list[CodeBlock], list[str]]:
    """Blocks for the ``execute`` calls (aliases ``run_code``, ``python``), and problems.

    ``lookup(name, arguments)`` is asked first (other tools offered; it may raise
    ``ToolArgumentsError``). Each problem is a message to the LLM naming the tool call id:
    an unknown tool (then ``unknown_hint``) or arguments that could not be parsed. Blocks
    carry their ``tool_call_id``.
    """
    blocks: list[CodeBlock] = []
    problems: list[str] = []
    for call in calls:
        try:
            block = lookup(call.name, call.arguments) if lookup else None
            if block is None:
                block = _call_to_block(call.name, call.arguments)
        except ToolArgumentsError as error:
            problems.append(f"Tool call {call.id} ({call.name}) was not run: {error}")
            continue
        if block is None:
            problems.append(
                f'Tool call {call.id} was not run: there is no tool named "{call.name}". '
                + unknown_hint
            )
            continue
        blocks.append(replace(block, tool_call_id=call.id))
    return blocks, problems


def parse_tool_arguments(raw: str) -> dict[str, str]:
    """Parse the JSON arguments of ``execute(language, code)``.

    Returns ``{"language": ..., "code": ...}``; the language is normalised when
    known, else kept as sent, and is "python" when missing. Repairs what is
    unambiguous: missing closing brackets and trailing commas. JSON that ends
    inside a string is not repaired: the code (or a value after it) was cut off,
    and running half a program is worse than asking again. Bare Python code is
    accepted as such. Raises ``ToolArgumentsError`` (and nothing else) telling the
    model what to send instead.
    """
    try:
        return _parse_arguments(raw)
    except RecursionError:
        raise _args_error("nested too deeply", raw) from None


def _parse_arguments(raw: str) -> dict[str, str]:
    text = _valid_text(raw).strip()
    if not text:
        raise _args_error("the arguments were empty", raw)
    obj = _load_lenient(text)
    for _ in range(3):  # JSON encoded two or three times, or a JSON string holding the code
        if not isinstance(obj, str):
            break
        inner = obj.strip()
        obj = _load_lenient(inner) if inner.startswith(("{", '"')) else {"code": obj}
    if isinstance(obj, str):
        raise _args_error("JSON encoded too many times", raw)
    if isinstance(obj, dict):
        return _args_from_dict(obj, raw)
    if obj is _CUT_STRING:
        raise ToolArgumentsError(
            "The execute() arguments end inside a string: the code was cut off, so none of it "
            f"was run. Send the complete call again, like {_EXAMPLE} (split long code into "
            f"smaller steps); got: {_quote(raw)}"
        )
    if obj is _NOT_JSON and not text.startswith(("{", "[")) and _looks_like_python(text):
        return {"language": "python", "code": text}
    problem = "a JSON object was expected" if obj is not _NOT_JSON else "not JSON"
    raise _args_error(problem, raw)


def _args_error(problem: str, raw: str) -> ToolArgumentsError:
    return ToolArgumentsError(
        f"execute() needs JSON arguments like {_EXAMPLE} ({problem}); got: {_quote(raw)}"
    )


def _quote(raw: str) -> str:
    """The start of what the model sent, to show it what went wrong."""
    return raw[:200] + ("..." if len(raw) > 200 else "")


def _args_from_dict(obj: dict[str, Any], raw: str) -> dict[str, str]:
    nested = obj.get("arguments", obj.get("parameters"))
    has_code = any(key in obj for key in _CODE_KEYS)
    if not has_code and isinstance(nested, dict):  # the whole call was sent as arguments
        return _args_from_dict(nested, raw)
    if not has_code and isinstance(nested, str):
        return _parse_arguments(nested)
    code = next((obj[key] for key in _CODE_KEYS if key in obj), None)
    if isinstance(code, str):
        code = _valid_text(code)
    if code is None:
        raise _args_error('the "code" string is missing', raw)
    if not isinstance(code, str):
        raise _args_error('"code" must be a string of code', raw)
    if not code.strip():
        raise _args_error('"code" was empty', raw)
    language = obj.get("language")
    if language is None or language == "":
        return {"language": "python", "code": code}
    if not isinstance(language, str):
        raise _args_error('"language" must be a string such as "python"', raw)
    language = _valid_text(language)
    return {"language": normalize_language(language) or language.strip(), "code": code}


def _valid_text(text: str) -> str:
    """``text`` with lone surrogates (a JSON "\\ud83d" without its pair) as U+FFFD: they
    cannot be encoded, so code holding them could not be sent, logged or hashed."""
    return _LONE_SURROGATE_RE.sub("\ufffd", text)


def _load_lenient(text: str) -> Any:
    """JSON, JSON repaired at the end, or a Python dict of strings; else ``_NOT_JSON``,
    or ``_CUT_STRING`` for JSON that could only be repaired by closing a cut string."""
    try:
        return json.loads(text, strict=False)
    except json.JSONDecodeError:
        pass
    repaired, cut_string = _repair_json(text)
    try:
        value = json.loads(repaired, strict=False)
    except json.JSONDecodeError:
        pass
    else:
        return _CUT_STRING if cut_string else value
    if text.startswith("{"):
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return _NOT_JSON
        if isinstance(value, dict) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            return value
    return _NOT_JSON


def _repair_json(text: str) -> tuple[str, bool]:
    """Close an unterminated string and open brackets; drop commas before closers.

    Returns the repaired text and whether a string had to be closed."""
    out: list[str] = []
    closers: list[str] = []
    in_string = escaped = False
    for ch in text:
        if in_string:
            escaped, in_string = (False, True) if escaped else (ch == "\\", ch != '"')
        elif ch in "}]":
            _drop_trailing_comma(out)
            if closers and closers[-1] == ch:
                closers.pop()
        elif ch in "{[":
            closers.append("}" if ch == "{" else "]")
        elif ch == '"':
            in_string = True
        out.append(ch)
    if in_string:
        if escaped:
            out.pop()
        out.append('"')
    _drop_trailing_comma(out)
    out.extend(reversed(closers))
    return "".join(out), in_string


def _drop_trailing_comma(out: list[str]) -> None:
    i = len(out) - 1
    while i >= 0 and out[i].isspace():
        i -= 1
    if i >= 0 and out[i] == ",":
        del out[i]


def _looks_like_python(text: str) -> bool:
    """Whether ``text`` parses as IPython code (``%magic`` and ``!shell`` lines allowed)."""
    source = _MAGIC_LINE_RE.sub(r"\1pass", text)
    flags = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    try:
        with warnings.catch_warnings():  # "invalid escape sequence" and such: not our business
            warnings.simplefilter("ignore")
            compile(source, "<arguments>", "exec", flags=flags, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


_CLOSED_BLOCK_RE = re.compile(r"^```[^`\n]*\n.*?^```[ \t]*\n", re.MULTILINE | re.DOTALL)


def first_block_end(text: str) -> int | None:
    """Where the first complete fenced code block of ``text`` ends (its closing fence
    included, once the line after it has begun), or None. Small models follow their code
    with made-up "Output:" blocks and chatter; a reply can be ended there."""
    match = _CLOSED_BLOCK_RE.search(text)
    return match.end() - 1 if match else None
