"""Checks of a small model's code before it is proposed: what can be seen without running it.

SmolLM2-135M often writes code that is wrong in ways visible in the code itself: a
variable it never set (``print(len(word))``), a value of the task left out (the sum of 1
to 100 computed over ``range(1, 11)``), a syntax slip, or nothing printed. Such a draft is
set aside and the model asked for another one (``Engine``), before the user is asked to
approve anything. Pure and stdlib only; the checks only ever cost a retry, so they lean
towards accepting: a name the conversation or the instruction mentions counts as known,
and a number counts as used when it or its neighbour appears (``range`` bounds).
"""

from __future__ import annotations

import ast
import builtins
import io
import re
import tokenize
from collections.abc import Iterable

from oi_kernel.core.examples import bind_values
from oi_kernel.core.prompts import uncalled_functions

_WORD_RE = re.compile(r"[A-Za-z_]\w*")
_BUILTINS = frozenset(dir(builtins)) | {"display", "get_ipython", "In", "Out", "exit", "quit"}
_CLOSER = {"(": ")", "[": "]", "{": "}"}


def problems(code: str, instruction: str, known: Iterable[str] = ()) -> list[str]:
    """What is visibly wrong with ``code`` as an answer to ``instruction``, each as a
    phrase ("it uses `word`, which is not defined"); [] when nothing is. ``known``: names
    defined before (by earlier code of the conversation)."""
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        where = f" (line {exc.lineno})" if exc.lineno else ""
        return [f"it is not valid Python{where}: {exc.msg}"]
    # The instruction's values are shown to a small model bound to names (a = 1, text =
    # '...'); code reading such a name must set it, or it reads an earlier task's value.
    given = dict(bind_values(instruction)[1])
    known = {*known, *_WORD_RE.findall(instruction)} - set(given)
    found = [
        f"it uses `{name}` without setting it ({name} = {given[name]} in the task)"
        if name in given
        else f"it uses `{name}`, which is not defined"
        for name in undefined_names(tree, known)
    ]
    missing = missing_values(tree, instruction)
    if missing:
        found.append(f"it does not use {', '.join(missing)} from the instruction")
    uncalled = uncalled_functions(code)
    if uncalled:
        found.append(f"it defines {', '.join(n + '()' for n in uncalled)} but never calls it")
    elif not _shows_something(tree):
        found.append("it prints nothing")
    return found


def bound_names(tree: ast.AST) -> set[str]:
    """Every name ``tree`` binds anywhere: assignments, loop and comprehension targets,
    imports, functions, classes, their parameters, ``except ... as``."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)
    return names


def names_bound_by(codes: Iterable[str]) -> set[str]:
    """The names that earlier code (which may not parse) defined."""
    names: set[str] = set()
    for code in codes:
        try:
            names |= bound_names(ast.parse(code))
        except SyntaxError:
            continue
    return names


def undefined_names(tree: ast.AST, known: Iterable[str] = ()) -> list[str]:
    """Names ``tree`` reads but nothing defines (builtins and ``known`` are defined)."""
    defined = bound_names(tree) | _BUILTINS | set(known)
    read = {
        node.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
    }
    return sorted(read - defined)


def missing_values(tree: ast.AST, instruction: str) -> list[str]:
    """The instruction's numbers and quoted strings (also those inside its lists) that the
    code never mentions (strings in any letter case), as written in the instruction."""
    numbers: set[float] = set()
    strings: list[str] = []
    for node in ast.walk(tree):
        value = _constant(node)
        if isinstance(value, str):
            strings.append(value)
        elif value is not None:
            numbers.add(value)
    missing: list[str] = []
    for _name, written in bind_values(instruction)[1]:
        for item in _items(written):
            if isinstance(item, str):  # in any case: 'Good Morning'.upper() is fine
                present = any(item.casefold() in s.casefold() for s in strings)
            else:
                present = bool(numbers & {item, item - 1, item + 1})
            if not present:
                missing.append(repr(item) if isinstance(item, str) else _number(item))
    return list(dict.fromkeys(missing))


def _constant(node: ast.AST) -> str | float | None:
    """A string or number constant (a negative number is a minus and a constant)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _constant(node.operand)
        return -inner if isinstance(inner, float) else None
    if isinstance(node, ast.Constant) and not isinstance(node.value, bool):
        if isinstance(node.value, str):
            return node.value
        if isinstance(node.value, (int, float)):
            return float(node.value)
    return None


def _items(written: str) -> list[str | float]:
    """The string and number values in a value as written in the instruction."""
    try:
        value = ast.literal_eval(written)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return []
    values = value if isinstance(value, list) else [value]
    return [
        float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v
        for v in values
        if isinstance(v, (str, int, float)) and not isinstance(v, bool)
    ]


def _number(value: float) -> str:
    return str(int(value)) if value.is_integer() else str(value)


def _shows_something(tree: ast.Module) -> bool:
    """Whether running the code can show anything: a call of print/display, or a last
    statement that is an expression (IPython shows its value)."""
    calls = any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("print", "display")
        for node in ast.walk(tree)
    )
    return calls or bool(tree.body and isinstance(tree.body[-1], ast.Expr))


def close_brackets(code: str) -> str | None:
    """``code`` with the brackets it left open closed, when that is its only syntax error:
    ``print(len([c for c in s if c in 'aeiou'))`` gets its ``]`` before the ``)`` that
    does not match. None when the code parses already or the repair does not parse."""
    try:
        ast.parse(code)
        return None
    except SyntaxError:
        pass
    lines = code.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    inserts: list[tuple[int, str]] = []
    stack: list[str] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(code).readline):
            if tok.type != tokenize.OP or tok.string not in "()[]{}":
                continue
            if tok.string in _CLOSER:
                stack.append(tok.string)
                continue
            at = starts[tok.start[0] - 1] + tok.start[1]
            while stack and _CLOSER[stack[-1]] != tok.string:
                inserts.append((at, _CLOSER[stack.pop()]))
            if not stack:
                return None  # a closer with no opener: not a missing bracket
            stack.pop()
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass  # the end of the code inside open brackets: closed below
    end = len(code.rstrip())
    inserts += [(end, _CLOSER[opener]) for opener in reversed(stack)]
    if not inserts:
        return None
    fixed = code
    for at, text in sorted(inserts, key=lambda item: item[0], reverse=True):
        fixed = fixed[:at] + text + fixed[at:]
    try:
        ast.parse(fixed)
    except SyntaxError:
        return None
    return fixed
