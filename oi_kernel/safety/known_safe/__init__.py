"""Known safe, or it asks: the allowlist review behind ``%approval risky``.

``check(language, code)`` says whether every call, attribute, import, magic and shell word in
a block resolves to the allowlist of operations known to be safe for data work
(``known_safe.toml``: pure computation, the data libraries' reading, transforming,
describing and plotting, reading files and writing new ones inside the workspace, printing
and displaying), and names what does not. Under ``risky`` a block runs without asking only
when nothing is left unknown; after text from outside the user's instruction entered the
conversation, only when it also writes nothing (``Verdict.stays_inside``). The risk review
(``oi_kernel.safety.risk``) still explains what a block may do; this check decides. Process
creation in any form is never known safe; a block that cannot be parsed is not either.
Pure: the table is read once, lazily; reviewing never runs anything.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from oi_kernel.safety.known_safe.python import Findings, PythonCheck
from oi_kernel.safety.known_safe.shell import shell_unknown
from oi_kernel.safety.known_safe.table import Table, table
from oi_kernel.safety.risk.common import MEDIUM, Flag

__all__ = ["NOT_KNOWN", "SessionNames", "Verdict", "check"]

NOT_KNOWN = "not-known-safe"  # the flag's category
_MAGIC_LINE = re.compile(r"^(\s*)(?:[A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*\s*=\s*)?([!%])(.*)$")
_HELP_LINE = re.compile(r"^\s*(?:\?{1,2}[\w.]+|[\w.]+\?{1,2})\s*$")
_MAX_SHOWN = 4


@dataclass(frozen=True)
class Verdict:
    """What the known-safe check found in one block."""

    unknown: tuple[str, ...] = ()  # what is not known safe, in the order it appears
    writes: tuple[str, ...] = ()  # known-safe operations that write a (new) file
    defines: tuple[str, ...] = ()  # functions and classes the block defines
    modules: tuple[tuple[str, str], ...] = ()  # (name, module) its imports bind
    objects: tuple[tuple[str, str], ...] = ()  # (name, qualified) its `from … import`s bind
    binds: tuple[str, ...] = ()  # every other name it binds

    @property
    def safe(self) -> bool:
        return not self.unknown

    @property
    def stays_inside(self) -> bool:
        """Known safe, and its effects stay in the namespace (no file written)."""
        return self.safe and not self.writes

    def text(self) -> str:
        """"not known to be safe: `socket.create_connection`, `.to_pickle`"."""
        shown = ", ".join(self.unknown[:_MAX_SHOWN])
        more = len(self.unknown) - _MAX_SHOWN
        return "not known to be safe: " + shown + (f" (and {more} more)" if more > 0 else "")

    def flag(self) -> Flag | None:
        """The card's and the model's line about it (None when the block is known safe)."""
        if self.safe:
            return None
        return Flag(0, NOT_KNOWN, MEDIUM, self.text() + "; `%approval risky` runs without "
                    "asking only what is known to be safe")


class SessionNames:
    """What earlier steps of a session bound, as far as their code shows: the names their
    imports bound (``LogisticRegression`` is ``sklearn.linear_model.LogisticRegression``) and
    the functions known-safe steps defined. A name bound any other way is forgotten."""

    def __init__(self) -> None:
        self.modules: dict[str, str] = {}
        self.objects: dict[str, str] = {}
        self.defs: set[str] = set()

    def ran(self, verdict: Verdict) -> None:
        """Note what a step that ran bound (whether it was known safe or approved)."""
        for name in (*verdict.binds, *(n for n, _ in verdict.modules + verdict.objects)):
            self.modules.pop(name, None)
            self.objects.pop(name, None)
            self.defs.discard(name)
        self.modules.update(verdict.modules)
        self.objects.update(verdict.objects)
        if verdict.safe:
            self.defs.update(verdict.defines)

    def clear(self) -> None:
        """The namespace is gone (the child kernel restarted)."""
        self.modules.clear()
        self.objects.clear()
        self.defs.clear()


def check(language: str, code: str, extra: tuple[str, ...] = (), denied: tuple[str, ...] = (),
          session: SessionNames | None = None) -> Verdict:
    """The verdict on ``code`` in ``language`` (normalized: python, shell, …). ``extra`` and
    ``denied`` are the user's and the administrator's entries (see ``table``); ``session``
    what earlier steps bound."""
    allow = table(tuple(extra), tuple(denied))
    if not code.strip():
        return Verdict()
    if language in ("markdown",):
        return Verdict()
    if language == "shell":
        return Verdict(tuple(shell_unknown(code, allow)))
    if language != "python":
        return Verdict((f"code in {language or 'an unknown language'} (only Python and shell "
                        "are reviewed for this)",))
    found = Findings()
    names = _Names(session or SessionNames())
    try:
        _python(code, allow, names, found, 0)
    except RecursionError:
        found.add("code nested too deeply to review")
    return Verdict(tuple(found.unknown), tuple(found.writes), tuple(names.defines),
                   tuple(names.modules.items()), tuple(names.objects.items()),
                   tuple(names.binds))


class _Names:
    """What the session knew before the block, and what the block binds."""

    def __init__(self, session: SessionNames) -> None:
        self.session = session
        self.defines: list[str] = []
        self.modules: dict[str, str] = {}
        self.objects: dict[str, str] = {}
        self.binds: set[str] = set()

    def add(self, check: PythonCheck, tree: ast.Module) -> None:
        self.defines += [n.name for n in tree.body
                         if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)]
        for name, qualified in check.aliases.items():
            (self.modules if name in check.module_aliases else self.objects)[name] = qualified
        self.binds |= check.bound - set(check.aliases)


def _python(code: str, allow: Table, names: _Names, found: Findings, depth: int) -> None:
    lines = code.split("\n")
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None and lines[first].lstrip().startswith("%%"):
        _cell_magic(lines[first].strip()[2:], "\n".join(lines[first + 1:]), allow, names,
                    found, depth)
        return
    for i, line in enumerate(lines):
        if match := _MAGIC_LINE.match(line):
            _line_magic(match[2], match[3], allow, names, found, depth)
            lines[i] = match[1] + "pass"
        elif _HELP_LINE.match(line):
            lines[i] = line[: len(line) - len(line.lstrip())] + "pass"
    try:
        tree = ast.parse("\n".join(lines))
    except (SyntaxError, ValueError):
        found.add("code the review cannot parse")
        return
    session = names.session
    check = PythonCheck(allow, {**allow.aliases, **session.modules}, frozenset(session.defs),
                        found, session.objects)
    check.run(tree)
    names.add(check, tree)


def _cell_magic(head: str, body: str, allow: Table, names: _Names, found: Findings,
                depth: int) -> None:
    words = head.split()
    name = words[0] if words else ""
    if name in allow.python_cells and depth < 3:
        _python(body, allow, names, found, depth + 1)
    elif name == "writefile":
        args = [w for w in words[1:] if not w.startswith("-")]
        if len(words) - 1 != len(args) or len(args) != 1 or _outside(args[0]):
            found.add(f"`%%{head}`")
        else:
            found.wrote(f"`%%writefile {args[0]}`")
    elif name not in allow.text_cells:
        process = name in ("bash", "sh", "script", "system", "sx", "zsh", "perl", "ruby")
        found.add(f"`%%{name}`" + (" (it starts a process)" if process else ""))


def _line_magic(kind: str, body: str, allow: Table, names: _Names, found: Findings,
                depth: int) -> None:
    if kind == "!":
        found.add(f"`!{body.lstrip('!').split(' ')[0]}` (it starts a process)")
        return
    name, _, rest = body.partition(" ")
    rest = rest.strip()
    if name not in allow.line_magics:
        found.add(f"`%{name}`")
    elif name in ("time", "timeit") and rest and depth < 3:
        code = re.sub(r"^(?:-[nr]\s*\d+\s+|-\w+\s+)*", "", rest)
        _python(code, allow, names, found, depth + 1)
    elif name == "config" and rest and rest.split("=")[0].strip() not in allow.config:
        found.add(f"`%config {rest.split('=')[0].strip()}`")
    elif name == "load_ext" and rest not in allow.extensions:
        found.add(f"`%load_ext {rest}`")
    elif name not in ("time", "timeit", "config", "load_ext") and not _plain_arguments(
            name, rest, allow):
        found.add(f"`%{name} {rest}`")


def _plain_arguments(name: str, rest: str, allow: Table) -> bool:
    """Whether a line magic's arguments are ones it may take: the listed words, or else only
    names and numbers (no paths, no `-f FILE`)."""
    listed = allow.magic_arguments.get(name)
    words = rest.split()
    if listed is not None:
        return all(w in listed or w.isdigit() or re.fullmatch(r"\d+[-/]\d+", w) for w in words)
    return all(re.fullmatch(r"[\w.*?]+", w) for w in words)


def _outside(path: str) -> bool:
    return path.startswith(("/", "~")) or ".." in path.split("/")
