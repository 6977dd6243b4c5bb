"""IPython syntax around Python code: ``!`` and ``%`` lines, help lines and cell magics, whose
bodies go to the reviewer of their own language; the rest is reviewed as Python."""

from __future__ import annotations

import ast
import re

from oi_kernel.safety.redact import is_secret_name
from oi_kernel.safety.risk.common import (
    HIGH,
    MEDIUM,
    _Finding,
    _Found,
    _is_system_path,
    _short,
    nested_findings,
    url_of,
)
from oi_kernel.safety.risk.python import _PythonReviewer
from oi_kernel.safety.risk.shell import _name

_MAGIC_LINE = re.compile(r"^(\s*)(?:[A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*\s*=\s*)?([!%])(.*)$")
_HELP_LINE = re.compile(r"^\s*(?:\?{1,2}[\w.]+|[\w.]+\?{1,2})\s*$")
_SHELL_MAGICS = {"sx", "system", "sc"}
_COMMAND_MAGICS = {"pip", "conda", "mamba", "micromamba", "uv", "rm", "rmdir", "mv", "cp", "cat"}


def _line_magic_findings(kind: str, body: str, depth: int) -> list[_Finding]:
    if kind == "!":
        return [f for _, f in nested_findings("shell", body.lstrip("!"), depth)]
    name, _, rest = body.partition(" ")
    if name in _SHELL_MAGICS:
        return [f for _, f in nested_findings("shell", rest, depth)]
    if name in _COMMAND_MAGICS:
        return [f for _, f in nested_findings("shell", body, depth)]
    if name == "env":
        var = re.split(r"[\s=]", rest.strip(), maxsplit=1)[0]
        if not var:
            return [
                _Finding(
                    "secrets-env",
                    MEDIUM,
                    "%env shows every environment variable, including any secrets",
                )
            ]
        if is_secret_name(var):
            return [
                _Finding("secrets-env", HIGH, f"%env uses the secret environment variable {var}")
            ]
    if name == "load" and url_of(rest.strip().split(" ")[-1]):
        url = url_of(rest.strip().split(" ")[-1])
        return [_Finding("network", MEDIUM, f"%load fetches {url} over the network")]
    if name == "run" and rest.strip():
        return [
            _Finding("dynamic-code", MEDIUM, f"%run runs {_short(rest)}, which was not reviewed")
        ]
    return []


def _strip_ipython(code: str, depth: int) -> tuple[str, _Found]:
    """Python source with `!cmd`, `%magic` and `obj?` lines blanked, and their findings."""
    lines = code.split("\n")
    found: _Found = []
    for i, line in enumerate(lines):
        match = _MAGIC_LINE.match(line)
        if match:
            found += [(i + 1, f) for f in _line_magic_findings(match[2], match[3], depth)]
            lines[i] = match[1] + "pass"
        elif _HELP_LINE.match(line):
            lines[i] = line[: len(line) - len(line.lstrip())] + "pass"
    return "\n".join(lines), found


def _cell_magic_findings(code: str, depth: int) -> _Found | None:
    """Findings for a cell starting with `%%name`, or None when it is not one."""
    lines = code.split("\n")
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None or not lines[first].lstrip().startswith("%%"):
        return None
    head = lines[first].strip()[2:].split()
    name, args = (head[0], head[1:]) if head else ("", [])
    body = "\n".join(lines[first + 1 :])
    offset = first + 1
    if name in ("script", "!") and args:
        name = {"node": "javascript", "Rscript": "R"}.get(_name(args[0]), _name(args[0]))
    language = {
        **dict.fromkeys(("bash", "sh", "zsh", "sx", "system"), "shell"),
        **dict.fromkeys(("capture", "time", "timeit", "prun", "python", "python3"), "python"),
        **dict.fromkeys(("javascript", "js"), "javascript"),
        "R": "r",
    }.get(name)
    if language is not None:
        return [(offset + line, f) for line, f in nested_findings(language, body, depth)]
    if name == "writefile":
        return _writefile_findings(offset, args)
    if name in ("html", "markdown", "latex", "svg", "HTML"):
        return []
    return [(offset, _Finding("unparseable", MEDIUM, f"the cell magic %%{name} is not reviewed"))]


def _writefile_findings(line: int, args: list[str]) -> _Found:
    path = next((a for a in args if not a.startswith("-")), "")
    if "-a" in args or "--append" in args:
        return (
            [(line, _Finding("system-config", HIGH, f"%%writefile writes '{path}'"))]
            if _is_system_path(path)
            else []
        )
    severity, category = (
        (HIGH, "system-config") if _is_system_path(path) else (MEDIUM, "overwrite-file")
    )
    return [(line, _Finding(category, severity, f"%%writefile replaces the contents of '{path}'"))]


def _python_findings(code: str, depth: int = 0) -> _Found:
    cell = _cell_magic_findings(code, depth)
    if cell is not None:
        return cell
    found: _Found = []
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        code, found = _strip_ipython(code, depth)
        try:
            tree = ast.parse(code)
        except (SyntaxError, ValueError) as error:
            line = getattr(error, "lineno", None) or 0
            detail = getattr(error, "msg", None) or str(error)
            text = f"could not parse the Python ({_short(detail, 50)}), so it was not reviewed"
            return [*found, (line, _Finding("unparseable", MEDIUM, text))]
    return found + _PythonReviewer(tree, depth).run()
