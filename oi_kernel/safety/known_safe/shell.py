"""The known-safe check of a shell block: every command of every pipeline must be one of the
table's read-only commands, with no option it forbids, no output redirected to a file, no
expansion (``$``, backquotes) and no argument naming a place outside the workspace."""

from __future__ import annotations

import re
import shlex

from oi_kernel.safety.known_safe.table import Table

_OPERATORS = frozenset({"|", "||", "&&", ";", "&", ";;", "\n"})
_HARMLESS_TARGETS = frozenset({"/dev/null", "&1", "&2", "1", "2"})
_OUTSIDE = re.compile(r"^(?:/|~)|(?:^|/)\.\.(?:/|$)|^[A-Za-z][\w+.-]*://")


def shell_unknown(code: str, table: Table) -> list[str]:
    """What in ``code`` is not known safe ([] when all of it is)."""
    if any(mark in code for mark in ("$", "`", "<(", ">(")):
        return ["a shell expansion (`$`, backquotes or process substitution)"]
    try:
        lexer = shlex.shlex(code.replace("\\\n", " "), posix=True, punctuation_chars=";&|<>")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        tokens = list(lexer)
    except ValueError:
        return ["shell code the review cannot read"]
    found: list[str] = []
    for words in _commands(tokens, found):
        _command(words, table, found)
    return list(dict.fromkeys(found))


def _commands(tokens: list[str], found: list[str]) -> list[list[str]]:
    """The commands of ``tokens`` with redirections checked and removed."""
    commands: list[list[str]] = [[]]
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token in _OPERATORS:
            commands.append([])
        elif set(token) <= set("<>&") and token:
            target = tokens[i + 1] if i + 1 < len(tokens) else ""
            if ">" in token and target not in _HARMLESS_TARGETS:
                found.append(f"`{token} {target}` (it writes a file)")
            elif "<" in token and _OUTSIDE.search(target):
                found.append(f"`{target}` (outside the workspace)")
            i += 1
        else:
            commands[-1].append(token)
        i += 1
    return [c for c in commands if c]


def _command(words: list[str], table: Table, found: list[str]) -> None:
    while words and re.fullmatch(r"\w+=.*", words[0]):
        found.append(f"`{words[0]}` (it sets the environment)")
        words = words[1:]
    if not words:
        return
    name = words[0]
    if name not in table.commands:
        found.append(f"`{name}`")
        return
    for word in words[1:]:
        if word in table.options_never:
            found.append(f"`{name} {word}`")
        elif _OUTSIDE.search(word):
            found.append(f"`{word}` (outside the workspace)")
