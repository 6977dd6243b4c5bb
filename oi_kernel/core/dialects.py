"""Model dialects: the ways open models print a tool call as text, and replies that are
only code.

When no server-side parser turns a model's tool call into a real one (llama.cpp's
servers, vLLM without a tool parser, an Ollama model without a tools template), the call
arrives as text in the model family's own format. ``normalize`` rewrites the formats the
extractor (``codeblocks``) does not read directly into the one it does,
``<tool_call>{"name": ..., "arguments": ...}</tool_call>``, or a fenced block for raw code:

- Qwen3-Coder: ``<function=execute><parameter=code>...</parameter></function>``;
- Llama 3.1: ``<function=execute>{...}</function>``, and ``<|python_tag|>`` before raw
  Python (its code-interpreter form, up to ``<|eom_id|>``);
- Mistral tokenizer v11+: ``[TOOL_CALLS]execute[ARGS]{...}`` (the marker may be stripped);
- DeepSeek-V3: ``<｜tool▁call▁begin｜>function<｜tool▁sep｜>execute`` and a json fence;
- end-of-turn special tokens (``<|eot_id|>``, ``<|im_end|>``, ...) left in the text.

The forms it already reads (Hermes/Qwen ``<tool_call>``, Llama's JSON with "parameters",
Mistral's ``[TOOL_CALLS] [...]``, Granite, Phi-4-mini) pass through unchanged.

``bare_code`` recognises a reply that is nothing but code, without a fence or a tool call
(SmolLM2 and other small models answer that way); the engine uses it in small-model mode.
Pure: no I/O.
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from typing import Any

from oi_kernel.core.types import CodeBlock

_DECODER = json.JSONDecoder(strict=False)
_NAME = r"[A-Za-z_][\w.\-]*"

# DeepSeek-V3 / R1 tool-call tokens: full-width bars (U+FF5C) and U+2581 for spaces, or
# their ASCII look-alikes when a server decoded them differently.
_BAR = "[｜|]"
_SP = "[▁_ ]"
_DEEPSEEK_RE = re.compile(
    rf"<{_BAR}tool{_SP}call{_SP}begin{_BAR}>\s*(?:function\s*)?<{_BAR}tool{_SP}sep{_BAR}>\s*"
    rf"(?P<name>{_NAME})\s*(?:```[a-z]*\s*\n)?(?P<body>.*?)\n?\s*(?:```\s*)?"
    rf"<{_BAR}tool{_SP}call{_SP}end{_BAR}>",
    re.S,
)
_DEEPSEEK_WRAPPER_RE = re.compile(rf"<{_BAR}tool{_SP}calls{_SP}(?:begin|end){_BAR}>")
_XML_CALL_RE = re.compile(
    rf"<function=(?P<name>{_NAME})>\s*(?P<params>(?:<parameter=[^>\n]+>.*?</parameter>\s*)+)"
    r"</function>",
    re.S,
)
_XML_PARAM_RE = re.compile(r"<parameter=([^>\n]+)>\n?(.*?)\n?</parameter>", re.S)
_FUNCTION_TAG_RE = re.compile(rf"<function=(?P<name>{_NAME})>\s*(?=\{{)")
_FUNCTION_CLOSE_RE = re.compile(r"\s*</function>")
_MISTRAL_V11_RE = re.compile(
    r"(?:\[TOOL_CALLS\]\s*(?P<any>" + _NAME + r")\s*\[ARGS\]|\[TOOL_CALLS\]\s*"
    r"(?P<noargs>" + _NAME + r")(?=\s*\{)|(?<![\w.])(?P<bare>execute|run_code)(?=\{\"))\s*"
)
_PYTHON_TAG = "<|python_tag|>"
_END_TOKENS_RE = re.compile(
    r"<\|(?:eot_id|eom_id|im_end|end|endoftext|end_of_text)\|>|<end_of_turn>|</s>"
)


def normalize(text: str) -> str:
    """``text`` with dialect tool calls rewritten as ``<tool_call>{...}</tool_call>`` (or a
    fenced block for raw code) and stray end-of-turn tokens removed."""
    if "<" not in text and "[TOOL_CALLS]" not in text and "execute{" not in text \
            and "run_code{" not in text:
        return text
    text = _DEEPSEEK_RE.sub(lambda m: _canonical_raw(m["name"], m["body"]), text)
    text = _DEEPSEEK_WRAPPER_RE.sub("", text)
    text = _XML_CALL_RE.sub(_xml_call, text)
    text = _json_after(text, _FUNCTION_TAG_RE, closer=_FUNCTION_CLOSE_RE)
    text = _json_after(text, _MISTRAL_V11_RE)
    text = _python_tag(text)
    return _END_TOKENS_RE.sub("", text)


def _canonical(name: str, arguments: Any) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


def _canonical_raw(name: str, body: str) -> str:
    """A call whose arguments are JSON text (kept as a string when it does not parse)."""
    try:
        arguments: Any = json.loads(body, strict=False)
    except json.JSONDecodeError:
        arguments = body
    return _canonical(name, arguments)


def _xml_call(match: re.Match[str]) -> str:
    """Qwen3-Coder's XML call: parameter values are raw text, not JSON."""
    params = {key.strip(): value for key, value in _XML_PARAM_RE.findall(match["params"])}
    return _canonical(match["name"], params)


def _json_after(text: str, opener: re.Pattern[str], closer: re.Pattern[str] | None = None) -> str:
    """Each ``opener`` (naming the tool) followed by a JSON object, as a canonical call."""
    out: list[str] = []
    pos = 0
    while (m := opener.search(text, pos)) is not None:
        name = next(g for g in m.groups() if g)
        try:
            arguments, end = _DECODER.raw_decode(text, m.end())
        except (json.JSONDecodeError, RecursionError):
            out.append(text[pos:m.end()])
            pos = m.end()
            continue
        if closer is not None and (c := closer.match(text, end)) is not None:
            end = c.end()
        out.append(text[pos:m.start()] + _canonical(name, arguments))
        pos = end
    out.append(text[pos:])
    return "".join(out)


def _python_tag(text: str) -> str:
    """Llama's ``<|python_tag|>``: before JSON it only marks a call (dropped); before
    anything else the code runs as Python, up to ``<|eom_id|>``/``<|eot_id|>`` or the end."""
    while (at := text.find(_PYTHON_TAG)) >= 0:
        rest = text[at + len(_PYTHON_TAG):]
        if rest.lstrip().startswith(("{", "[")):
            text = text[:at] + rest
            continue
        end = _END_TOKENS_RE.search(rest)
        code = (rest[:end.start()] if end else rest).strip("\n")
        after = rest[end.end():] if end else ""
        text = text[:at] + "\n" + _fenced("python", code) + "\n" + after
    return text


def _fenced(language: str, code: str) -> str:
    longest = max((len(m) for m in re.findall(r"`{3,}", code)), default=2)
    fence = "`" * (longest + 1)
    return f"{fence}{language}\n{code}\n{fence}"


# ----------------------------------------------------------------------------- bare code

# Statements that do something; a reply of only names and literals ("42", "Done") is an
# answer, not code.
_ACTIONS = (
    ast.Call, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Import, ast.ImportFrom,
    ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.For, ast.AsyncFor, ast.While,
    ast.If, ast.With, ast.AsyncWith, ast.Try, ast.Delete, ast.Raise, ast.Await,
)
_MAGIC_RE = re.compile(r"^([ \t]*)[%!].*$", re.M)
_SHELL_ALONE = frozenset(
    "ls pwd whoami date uname df du free uptime hostname env history nproc id ps top".split()
)
_SHELL_COMMANDS = _SHELL_ALONE | frozenset(
    "cd echo cat head tail grep find wc mkdir rmdir touch cp mv rm chmod ln stat file sort "
    "uniq cut tr diff awk sed tar unzip zip curl wget which python python3 pip pip3 git conda "
    "npm node apt apt-get brew kill less more ping".split()
)
_SUBCOMMANDS = {
    "pip": {"install", "list", "show", "uninstall", "freeze"},
    "pip3": {"install", "list", "show", "uninstall", "freeze"},
    "git": {"status", "log", "diff", "clone", "init", "add", "commit", "branch", "checkout",
            "pull", "push", "show", "remote"},
    "conda": {"install", "list", "create", "activate", "env"},
    "npm": {"install", "run", "list", "init", "test"},
    "apt": {"install", "list", "update"},
    "apt-get": {"install", "update"},
    "brew": {"install", "list", "update"},
}
_SHELLISH = re.compile(r"^-|[/.=*~$|<>&;]")


def bare_code(text: str) -> CodeBlock | None:
    """The block when all of ``text`` is code without a fence or a tool call: Python that
    does something (a call, an assignment, an import, a loop...), or one to five lines that
    are clearly shell commands. None for prose, a bare value, or a mix."""
    body = _END_TOKENS_RE.sub("", text).strip("\n").rstrip()
    if not body.strip() or "```" in body or "~~~" in body:
        return None
    if _python_that_acts(body):
        return CodeBlock("python", _dedent_block(body), bare=True)
    commands = _shell_commands(body)
    if commands:
        return CodeBlock("shell", commands, bare=True)
    return None


def _dedent_block(body: str) -> str:
    lines = body.split("\n")
    indent = min((len(ln) - len(ln.lstrip()) for ln in lines if ln.strip()), default=0)
    return "\n".join(ln[indent:] for ln in lines)


def _python_that_acts(body: str) -> bool:
    source = _MAGIC_RE.sub(lambda m: m[1] + "_ipython_magic()", _dedent_block(body))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return any(isinstance(node, _ACTIONS) for node in ast.walk(tree))


def _shell_commands(body: str) -> str:
    """The commands (without ``$`` prompts) when every line is clearly one; else ""."""
    lines = [line.strip() for line in body.split("\n") if line.strip()]
    if not lines or len(lines) > 5:
        return ""
    commands = []
    for line in lines:
        prompted = line.startswith("$ ")
        command = line[2:].strip() if prompted else line
        if not (prompted or _clearly_shell(command)):
            return ""
        commands.append(command)
    return "\n".join(commands)


def _clearly_shell(line: str) -> bool:
    if line[-1] in ".?!:," and not _SHELLISH.search(line.split()[-1][:-1] or "-"):
        return False
    words = line.split()
    command, args = words[0], words[1:]
    if command not in _SHELL_COMMANDS:
        return False
    if not args:
        return command in _SHELL_ALONE
    if command == "echo" or args[0] in _SUBCOMMANDS.get(command, ()):
        return True
    return any(_SHELLISH.search(arg) for arg in args)
