"""Shell syntax for the reviewer: logical lines (continuations, comments), tokens, and
commands grouped into pipelines with their redirections."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass
class _Command:
    words: list[str]
    redirects: list[tuple[str, str]]  # (operator, target)


def _strip_comment(line: str, state: str) -> tuple[str, str]:
    """Drop a ``#`` comment from ``line``; ``state`` is the quote open at its start."""
    out: list[str] = []
    i = 0
    while i < len(line):
        c = line[i]
        if state == "" and c == "#" and (i == 0 or line[i - 1] in " \t;&|("):
            break
        if c == "\\" and state != "'":
            out.append(line[i : i + 2])
            i += 2
            continue
        if state == "" and c in "'\"":
            state = c
        elif state == c:
            state = ""
        out.append(c)
        i += 1
    return "".join(out), state


def _logical_lines(code: str) -> Iterator[tuple[int, str]]:
    """(first line number, text) for each command line: continuations and open quotes joined."""
    lines = code.splitlines()
    i = 0
    while i < len(lines):
        start, parts, state = i, [], ""
        while i < len(lines):
            text, state = _strip_comment(lines[i], state)
            i += 1
            if state == "" and text.endswith("\\") and not text.endswith("\\\\"):
                parts.append(text[:-1])
                continue
            parts.append(text)
            if state == "":
                break
        yield start + 1, "\n".join(parts)


def _tokenize(text: str) -> list[str]:
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:  # unbalanced quotes or a trailing backslash: split plainly
        return re.findall(r"[;&|<>()]+|[^\s;&|<>()]+", text)


def _is_operator(token: str) -> bool:
    return bool(token) and all(c in "();<>|&" for c in token)


def _add_redirect(cmd: _Command, op: str, target: str) -> None:
    if cmd.words and cmd.words[-1].isdigit() and len(cmd.words[-1]) == 1:
        cmd.words.pop()  # the fd number of `2>file`
    cmd.redirects.append((op, target))


def _pipelines(tokens: list[str]) -> list[list[_Command]]:
    """Split tokens into pipelines of commands at ; && || & | ( ) and newlines."""
    pipelines: list[list[_Command]] = [[_Command([], [])]]
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok[:1] in "<>" and _is_operator(tok) or tok in ("&>", "&>>"):
            target = tokens[i + 1] if i + 1 < len(tokens) else ""
            _add_redirect(pipelines[-1][-1], tok, target)
            i += 2
            continue
        if _is_operator(tok):
            if "|" in tok and "||" not in tok:
                pipelines[-1].append(_Command([], []))
            else:
                pipelines.append([_Command([], [])])
        else:
            pipelines[-1][-1].words.append(tok)
        i += 1
    return [[c for c in p if c.words or c.redirects] for p in pipelines if any(c.words for c in p)]
