"""Which files the change summaries and rollback leave out: tools' files, not the user's.

A working directory is often the user's home, full of what tools keep there: IPython's
history (which the child kernel itself writes at every step), JupyterLab's workspaces, caches,
virtual environments, VCS folders. None of that is the user's work, so neither the change
summary lists it nor a checkpoint saves or restores it. Left out:

- folders named in ``TOOL_DIRS`` and files named in ``TOOL_FILES``, at any depth;
- modifications of notebooks (``*.ipynb``): the frontend saves every open notebook while steps
  run (a notebook a step creates or deletes is still listed), and the temporary ``.~*`` files
  of its atomic saves;
- the session log's folder (the session writes it);
- the user's own patterns (``c.Engine.change_ignore`` / ``OI_CHANGE_IGNORE``) and the
  project's ``.gitignore`` (the working directory's, and the repository root's when the
  working directory is inside a git repository), in gitignore syntax.

Patterns are compiled here with ``pathspec`` (gitignore semantics) into regular expressions
the probe (standard library only, in the child kernel) applies while it walks, pruning
ignored folders instead of listing them first.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable
from typing import Any

TOOL_DIRS = (
    # version control, caches and environments
    ".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv", "venv", ".tox", ".nox",
    ".mypy_cache", ".pytest_cache", ".ruff_cache", ".cache", ".conda", ".npm", ".yarn",
    # Jupyter and IPython state, frontends' helpers, our own checkpoints
    ".ipython", ".jupyter", ".ipynb_checkpoints", ".virtual_documents", ".oi_checkpoints",
    # what a home directory holds for tools
    ".local", ".config", ".matplotlib", ".keras", ".nv", ".vscode-server", ".pki", ".dbus",
    ".Trash",
)
TOOL_FILES = (
    ".python_history", ".bash_history", ".zsh_history", ".sqlite_history", ".lesshst",
    ".wget-hsts", ".viminfo", ".node_repl_history", ".sudo_as_admin_successful",
)
ENV_VAR = "OI_CHANGE_IGNORE"  # comma-separated patterns
_NAMED_GROUP = re.compile(r"\(\?P<[^>]+>")


def env_patterns() -> list[str]:
    """``OI_CHANGE_IGNORE`` as patterns (comma-separated)."""
    return [p.strip() for p in os.environ.get(ENV_VAR, "").split(",") if p.strip()]


def _pattern_class() -> Any:
    try:  # pathspec >= 1.0
        from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern
        return GitIgnoreSpecPattern
    except ImportError:  # pathspec 0.12
        from pathspec.patterns.gitwildmatch import GitWildMatchPattern
        return GitWildMatchPattern


def compile_patterns(lines: Iterable[str]) -> list[tuple[str, bool]]:
    """Gitignore lines as ``(regex, ignore)`` pairs in order (the last match decides; a
    negated pattern gives ``ignore`` False). The regex matches a path relative to the
    pattern file's folder, with ``/`` separators, and a folder as ``path/``.

    Raises ``ImportError`` when ``pathspec`` is not installed."""
    pattern = _pattern_class()
    rules = []
    for line in lines:
        regex, include = pattern.pattern_to_regex(line.rstrip("\n"))
        if regex is not None and include is not None:
            rules.append((_NAMED_GROUP.sub("(?:", regex), bool(include)))
    return rules


@functools.lru_cache(maxsize=32)
def _compiled(lines: tuple[str, ...]) -> tuple[tuple[str, bool], ...]:
    """``compile_patterns``, once per distinct list (it is asked before every step)."""
    return tuple(compile_patterns(lines))


def _read_lines(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read().splitlines()
    except OSError:
        return []


def gitignore_sources(cwd: str) -> list[tuple[str, list[str]]]:
    """``(prefix, lines)`` of the ignore files that apply to ``cwd``: its own ``.gitignore``
    (prefix ""), and when ``cwd`` is inside a git repository, the repository root's
    ``.gitignore`` and ``.git/info/exclude`` (prefix: ``cwd`` relative to the root, plus /).
    Only on this machine: a kernel on a gateway has a working directory we cannot read."""
    if not cwd or not os.path.isdir(cwd):
        return []
    cwd = os.path.realpath(cwd)
    sources = [("", _read_lines(os.path.join(cwd, ".gitignore")))]
    top = cwd
    while True:
        if os.path.exists(os.path.join(top, ".git")):
            break
        parent = os.path.dirname(top)
        if parent == top:
            top = ""
            break
        top = parent
    if top:
        lines = _read_lines(os.path.join(top, ".git", "info", "exclude"))
        if top != cwd:
            lines += _read_lines(os.path.join(top, ".gitignore"))
        prefix = os.path.relpath(cwd, top).replace(os.sep, "/")
        sources.append(("" if prefix == "." else prefix + "/", lines))
    return [(prefix, lines) for prefix, lines in sources if lines]


def probe_settings(cwd: str, patterns: Iterable[str], use_gitignore: bool,
                   not_scanned: Iterable[str] = ()) -> tuple[dict[str, Any], str]:
    """The probe's ignore settings (``skip_dirs``, ``skip_files``, ``rules``: ``(regex,
    ignore, prefix)`` triples, ``ignore``: absolute paths) and a problem to tell ("" when
    none). A negated pattern naming a tool folder (``!.config/``) lists that folder again."""
    patterns = [p for p in patterns if p.strip()]
    sources = ([("", patterns)] if patterns else []) + (
        gitignore_sources(cwd) if use_gitignore else [])
    rules: list[tuple[str, bool, str]] = []
    problem = ""
    try:
        for prefix, lines in sources:
            rules += [(regex, ignore, prefix) for regex, ignore in _compiled(tuple(lines))]
    except ImportError:
        rules = []
        problem = ("Ignore patterns for the change summaries (c.Engine.change_ignore, "
                   f"{ENV_VAR}, .gitignore) need the pathspec package: pip install pathspec. "
                   "Only the built-in list of tools' folders is left out meanwhile.")
    wanted = {p.strip().lstrip("!").strip("/") for p in patterns if p.strip().startswith("!")}
    ignore = set()
    for path in not_scanned:
        ignore |= {os.path.abspath(path), os.path.realpath(path)}
    return {"skip_dirs": sorted(set(TOOL_DIRS) - wanted), "skip_files": list(TOOL_FILES),
            "rules": rules, "ignore": sorted(ignore)}, problem
