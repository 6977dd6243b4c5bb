"""JavaScript and R: a light line scan for shell-outs, deletes, writes and installs."""

from __future__ import annotations

import re
from collections.abc import Callable

from oi_kernel.safety.redact import is_secret_name
from oi_kernel.safety.risk.common import (
    _MAX_DEPTH,
    HIGH,
    MEDIUM,
    _credential,
    _Finding,
    _Found,
    nested_findings,
)

# ---------------------------------------------------------------- javascript and r

_JS_SHELL = re.compile(
    r"\b(?:execSync|execFileSync|spawnSync|exec|execFile|spawn)\s*\(\s*(?:(['\"`])((?:\\.|(?!\1).)*)\1)?"
)
_JS_DELETE = re.compile(
    r"\b(?:fs|fsp|fse|promises)\.(?:rmSync|rm|rmdirSync|rmdir|unlinkSync|unlink|removeSync|remove|emptyDirSync)\s*\(|\brimraf\w*\s*\("
)
_JS_WRITE = re.compile(r"\b(?:fs|fsp|fse|promises)\.(?:writeFileSync|writeFile)\s*\(")
_R_SHELL = re.compile(r"\b(?:system2?|shell)\s*\(\s*(?:(['\"])((?:\\.|(?!\1).)*)\1)?")
_R_DELETE = re.compile(r"\b(?:unlink|file\.remove|file_delete|dir_delete)\s*\(")
_R_INSTALL = re.compile(r"\binstall\.packages\s*\(|\b(?:remotes|devtools|BiocManager)::install")
_RECURSIVE = re.compile(r"recursive\s*[:=]\s*(?:true|TRUE|T)\b")
_URL_CALL = re.compile(
    r"\b([\w.$:]+)\s*\(\s*(?:[\w.]+\s*=\s*)?(['\"`])((?:https?|ftps?|s3|gs)://[^'\"`\s]*)"
)
_TEXT_CALLS = {"print", "cat", "message", "paste", "paste0", "console.log", "log", "alert"}
_ENV_NAME = re.compile(r"(?:process\.env\.|Sys\.getenv\s*\(\s*['\"])([A-Za-z_]\w*)")


def _strip_line_comment(line: str, marker: str) -> str:
    """``line`` without a trailing ``//`` or ``#`` comment that is outside quotes."""
    state = ""
    for i, c in enumerate(line):
        if state == "" and line.startswith(marker, i):
            return line[:i]
        if c in "'\"`" and (i == 0 or line[i - 1] != "\\"):
            state = "" if state == c else state or c
    return line


def _call_name(match: re.Match[str]) -> str:
    return match.group(0).split("(")[0].strip()


def _shell_out(match: re.Match[str], depth: int) -> list[_Finding]:
    name = _call_name(match)
    if match.group(2) is None:
        text = f"{name} runs a command built at run time, so it was not reviewed"
        return [_Finding("shell-command", MEDIUM, text)]
    if depth >= _MAX_DEPTH:
        return []
    found = nested_findings("shell", match.group(2), depth + 1)
    return [_Finding(f.category, f.severity, f"{name}: {f.text}") for _, f in found]


def _light_line(line: str, language: str, depth: int, shells_out: bool) -> list[_Finding]:
    out: list[_Finding] = []
    js = language == "javascript"
    shell, delete, write = (_JS_SHELL, _JS_DELETE, _JS_WRITE) if js else (_R_SHELL, _R_DELETE, None)
    for match in shell.finditer(line) if shells_out else ():
        out += _shell_out(match, depth)
    for match in delete.finditer(line):
        recursive = _RECURSIVE.search(line) or "rimraf" in match.group(0)
        text = f"{_call_name(match)} deletes files" + (" recursively" if recursive else "")
        out.append(_Finding("delete-files", HIGH if recursive else MEDIUM, text))
    for match in write.finditer(line) if write else ():
        text = f"{_call_name(match)} replaces the contents of a file"
        out.append(_Finding("overwrite-file", MEDIUM, text))
    for match in _URL_CALL.finditer(line):
        name = match.group(1)
        if name.rsplit(".", 1)[-1] not in _TEXT_CALLS and name not in _TEXT_CALLS:
            text = f"{name} reaches {match.group(3)[:60]} over the network"
            out.append(_Finding("network", MEDIUM, text))
    if not js and _R_INSTALL.search(line):
        out.append(_Finding("package-install", MEDIUM, "installs R packages"))
    path = _credential(line)
    if path:
        out.append(_Finding("credentials", HIGH, f"refers to '{path}', a credentials file"))
    for var in filter(is_secret_name, _ENV_NAME.findall(line)):
        text = f"reads the secret environment variable {var}"
        out.append(_Finding("secrets-env", HIGH, text))
    return out


def _light_findings_fn(language: str) -> Callable[[str, int], _Found]:
    def scan(code: str, depth: int = 0) -> _Found:
        marker = "//" if language == "javascript" else "#"
        shells_out = language != "javascript" or "child_process" in code
        out: _Found = []
        for number, raw in enumerate(code.splitlines(), start=1):
            line = _strip_line_comment(raw, marker)
            out += [(number, f) for f in _light_line(line, language, depth, shells_out)]
        return out

    return scan
