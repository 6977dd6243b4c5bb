"""Shell code that hides what it runs: a command or script that is a variable or another
command's output (``bash -c "$X"``, ``eval "$(…)"``, ``!{cmd}``), decoded text piped into an
interpreter (``base64 -d | sh``), URLs given to any command, and heredocs read by Python
(reviewed as Python) or another interpreter (flagged)."""

from __future__ import annotations

import re

from oi_kernel.safety.risk.common import (
    _MAX_DEPTH,
    HIGH,
    MEDIUM,
    _Finding,
    _Found,
    _short,
    nested_findings,
    url_of,
)
from oi_kernel.safety.risk.shell_words import _NETWORK, _SHELLS, _name, _strip_prefixes


def _built_at_run_time(code: str) -> bool:
    """Code that is a variable or a command's output: ``"$CMD"``, ``"$(…)"``, backticks."""
    text = code.strip()
    return text.startswith(("$", "`")) or "$(" in text or "`" in text


def _computed_command(name: str) -> list[_Finding]:
    """A command whose name is a variable or an IPython ``{expression}``."""
    if name.startswith(("$", "`", "{")) and name != "{sys.executable}":
        text = f"runs the command {_short(name, 40)}, which is only known at run time"
        return [_Finding("dynamic-code", HIGH, text)]
    return []


def _interactive_shell(name: str, args: list[str]) -> list[_Finding]:
    """``bash``, ``sh -i``, ``/bin/sh``: a shell that reads commands nobody reviewed."""
    if name in _SHELLS and all(a.startswith("-") and a not in ("-c", "-s") for a in args):
        text = f"{name} starts an interactive shell, whose commands are not reviewed"
        return [_Finding("shell-command", MEDIUM, text)]
    return []


def _urls(name: str, words: list[str]) -> list[_Finding]:
    """A URL given to a command that is not already a network command (git clone, pip…)."""
    if name in _NETWORK or name in ("echo", "printf", ":", "true"):
        return []
    url = next(filter(None, map(url_of, words)), None)
    return [_Finding("network", MEDIUM, f"{name} reaches {url} over the network")] if url else []


def _is_decoder(words: list[str]) -> bool:
    """base64 -d, xxd -r, openssl enc -d, gunzip, zcat, rev, tr (rot13)…"""
    words = _strip_prefixes(words)
    if not words:
        return False
    name, args = _name(words[0]), words[1:]
    if name in ("base64", "base32", "basenc"):
        return bool({"-d", "--decode", "-D"} & set(args))
    if name in ("xxd", "openssl"):
        return "-r" in args or "-d" in args or "base64" in args
    return name in ("gunzip", "zcat", "bzcat", "xzcat", "uudecode", "rev", "tr") or (
        name in ("gzip", "bzip2", "xz") and "-d" in args
    )


_SUBST_DECODE = re.compile(
    r"\b(?:(?:ba|z|da|k)?sh|eval|source|python3?|perl)\b[^\n]{0,200}?(?:<\(|\$\(|`)[^)`]*"
    r"\b(?:base64\s+(?:-d|--decode|-D)|xxd\s+-r|gunzip|zcat|openssl\s+(?:enc|base64))"
)


def _heredoc_body(lines: list[str], start: int, delimiter: str) -> str:
    """The lines after line ``start`` (1-based) up to the delimiter."""
    body: list[str] = []
    for line in lines[start:]:
        if line.strip() == delimiter:
            break
        body.append(line)
    return "\n".join(body)


def _heredoc_findings(lines: list[str], line: int, doc: tuple[str, str], depth: int) -> _Found:
    """Python read from a heredoc is reviewed as Python; another interpreter's is flagged."""
    delimiter, reader = doc
    if reader == "python" and depth < _MAX_DEPTH:
        body = _heredoc_body(lines, line, delimiter)
        return [(line + n, f) for n, f in nested_findings("python", body, depth + 1)]
    if reader not in ("shell", "data", "python"):
        text = f"{reader} runs the code in the heredoc, which is not reviewed"
        return [(line, _Finding("dynamic-code", MEDIUM, text))]
    return []
