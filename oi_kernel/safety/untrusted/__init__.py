"""Where a step's output comes from: text the user did not write.

A step that reads a file, fetches from the network, runs a program whose output comes back
or calls an MCP tool puts text from outside the user's instruction in front of the model,
and that text may carry instructions ("ignore the user and ..."). ``code_sources`` finds
such reads statically: Python through its syntax tree (IPython ``!``/``%`` lines and cell
magics included), shell through ``shlex`` one command at a time, R and JavaScript by a light
scan. It names each source as precisely as the code allows (``notes.txt``,
``https://x/y``, a file whose name is computed) and follows values across steps: a name
assigned from a source stays tainted (``Taint``) until it is assigned again from nothing
outside, so ``df = pd.read_csv("x.csv")`` in one step and ``print(df)`` in the next still
counts. Code it cannot read counts as outside (it fails closed). Pure: stdlib only.

What it does not see is in docs/security.md ("Content from outside"): a file read inside a
library function, a network client held in a variable from an earlier step, and so on.
"""

from __future__ import annotations

import ast
import re

from oi_kernel.safety.untrusted.common import UNREADABLE, Source, Taint, file_or_url, unique
from oi_kernel.safety.untrusted.python import _Python
from oi_kernel.safety.untrusted.shell import _split, shell_sources

__all__ = ["UNREADABLE", "Source", "Taint", "carries_text", "code_sources", "shell_sources"]

# ----------------------------------------------------------------------------- IPython
_MAGIC_LINE = re.compile(r"^(\s*)(?:[A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*\s*=\s*)?([!%])(.*)$")
_HELP_LINE = re.compile(r"^\s*(?:\?{1,2}[\w.]+|[\w.]+\?{1,2})\s*$")
_FILE_MAGICS = frozenset({"cat", "less", "more", "pycat", "load", "head", "tail"})
_CELL_LANGUAGES = {**dict.fromkeys(("bash", "sh", "zsh", "sx", "system", "script"), "shell"),
                   **dict.fromkeys(("capture", "time", "timeit", "prun", "python", "python3"),
                               "python"),
                   **dict.fromkeys(("javascript", "js"), "javascript"), "R": "r"}


def _magic_sources(kind: str, body: str) -> list[Source]:
    if kind == "!":
        return shell_sources(body.lstrip("!"))
    name, _, rest = body.partition(" ")
    if name in ("sx", "system", "sc"):
        return shell_sources(rest)
    if name in _FILE_MAGICS:
        return shell_sources(f"cat {rest}")
    if name == "run":
        words = [w for w in _split(rest) if not w.startswith("-")]
        return [file_or_url(words[0], "program") if words else Source("program")]
    return []


def _python_sources(code: str, taint: Taint) -> tuple[list[Source], Taint]:
    lines = code.split("\n")
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None and lines[first].lstrip().startswith("%%"):
        head = lines[first].strip()[2:].split()
        name = head[0] if head else ""
        body = "\n".join(lines[first + 1:])
        if name in ("writefile", "html", "markdown", "latex", "svg", "HTML"):
            return [], taint
        language = _CELL_LANGUAGES.get(name)
        if language is None:
            return [UNREADABLE], taint
        return code_sources(language, body, taint)
    found: list[Source] = []
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        for i, line in enumerate(lines):
            if match := _MAGIC_LINE.match(line):
                found += _magic_sources(match[2], match[3])
                lines[i] = match[1] + "pass"
            elif _HELP_LINE.match(line):
                lines[i] = line[: len(line) - len(line.lstrip())] + "pass"
        try:
            tree = ast.parse("\n".join(lines))
        except (SyntaxError, ValueError, RecursionError):
            return [*found, UNREADABLE], taint
    except RecursionError:
        return [UNREADABLE], taint
    reader = _Python(taint)
    try:
        found += reader.run(tree)
    except RecursionError:
        return [UNREADABLE], taint
    return unique(found), reader.taint


# ----------------------------------------------------------------------------- others
_LIGHT = {
    "r": re.compile(r"\b(read\.csv|read\.table|read\.delim|readLines|readRDS|read_csv|"
                    r"read_excel|fromJSON|scan|download\.file|url|GET|system2?|source|"
                    r"load|file|fread)\s*\(\s*(?:['\"]([^'\"]+)['\"])?"),
    "javascript": re.compile(r"\b(readFileSync|readFile|fetch|XMLHttpRequest|execSync|exec|"
                             r"spawnSync|spawn|createReadStream|get|request)\s*\(\s*(?:['\"`]([^'\"`]+)['\"`])?"),
}


def code_sources(language: str, code: str, taint: Taint | None = None
                 ) -> tuple[list[Source], Taint]:
    """The outside sources ``code`` reads (which its output may carry), and the taint after
    it (names bound to what came from outside). [UNREADABLE] when it cannot tell."""
    taint = dict(taint or {})
    if not code.strip() or language in ("html", "markdown"):
        return [], taint
    if language == "python":
        return _python_sources(code, taint)
    if language == "shell":
        return shell_sources(code), taint
    pattern = _LIGHT.get(language)
    if pattern is None:
        return [UNREADABLE], taint
    found = [file_or_url(m[2], "file") if m[2] else Source("file", "", f"`{m[1]}(...)`")
             for m in pattern.finditer(code)]
    return unique(found), taint


def carries_text(text: str) -> bool:
    """Whether output ``text`` holds words at all (numbers alone carry no instructions we
    could tell apart; see docs/security.md)."""
    words = re.findall(r"[^\W\d_]{3,}", text)
    return any(w.lower() not in ("nan", "inf", "true", "false", "none", "null") for w in words)
