"""A compact text summary of the user's variables, for the LLM.

``summarize`` turns a namespace (a mapping of names to live objects) into a few
lines such as ``df: DataFrame (120, 3) columns: month (object), revenue (int64)``
so that the model can use data the user already has. Pure and cheap: it never
imports pandas or numpy (tables and arrays are recognised by ``.shape``,
``.columns`` and ``.dtypes``), calls ``repr`` only on cut builtin values (never
on unknown objects, whose repr may be slow or huge), and stops as soon as the summary is full, so a namespace of
100,000 variables costs the same as one of 100. The most recently defined names
come first in line for the space, then the lines are shown in definition order.
"""

from __future__ import annotations

import inspect
import math
import types
from collections.abc import Iterator, Mapping
from itertools import islice
from typing import Any

from oi_kernel.safety.redact import is_secret_name

HIDDEN = frozenset({"In", "Out", "exit", "quit", "get_ipython"})
MAX_LINE = 240  # characters of one variable's line
MAX_COLUMNS = 12  # columns of a table listed by name
MAX_ITEMS = 6  # elements of a list, tuple or set shown; a dict shows two thirds of this
MAX_TEXT = 60  # characters of a string shown
MAX_COUNTED = 10_000  # names counted for "... and N more" (beyond: "N+")
# stdlib types whose repr is short and cheap: dates, paths, decimals, ids
_VALUE_MODULES = frozenset({"datetime", "pathlib", "decimal", "fractions", "uuid", "ipaddress"})


def summarize(namespace: Mapping[str, Any], max_chars: int = 2000) -> str:
    """Lines ``name: description`` for the public variables of ``namespace``, at most
    ``max_chars`` characters in all (empty when there is nothing to show).

    Skipped: names starting with ``_``, modules, and IPython's ``In``/``Out``/
    ``exit``/``quit``/``get_ipython``. Values of secret-looking names (``API_KEY``,
    ``db_password``) are not shown.
    """
    lines: list[str] = []
    used = 0
    budget = max(0, max_chars)
    names = _public_names_newest_first(namespace)
    for name in names:
        line = _line(name, namespace[name])
        if line is None:
            continue
        if used + len(line) + 1 > budget:
            rest = 1 + sum(1 for n in islice(names, MAX_COUNTED) if _shown(n, namespace))
            return _with_more(lines[::-1], rest, budget)
        lines.append(line)
        used += len(line) + 1
    return "\n".join(reversed(lines))


def _public_names_newest_first(namespace: Mapping[str, Any]) -> Iterator[str]:
    """The candidate names, most recently defined first (dicts keep insertion order)."""
    keys = namespace.keys()
    ordered = reversed(keys) if hasattr(keys, "__reversed__") else reversed(list(keys))
    return (n for n in ordered if isinstance(n, str) and not n.startswith("_") and n not in HIDDEN)


def _shown(name: str, namespace: Mapping[str, Any]) -> bool:
    try:
        return not isinstance(namespace[name], types.ModuleType)
    except Exception:
        return False


def _with_more(lines: list[str], rest: int, budget: int) -> str:
    """The lines that fit, then a note of how many did not (dropping lines to fit it)."""
    plus = "+" if rest > MAX_COUNTED else ""
    while True:
        note = f"... and {rest:,}{plus} more variable{'s' if rest != 1 else ''} not listed"
        text = "\n".join([*lines, note])
        if len(text) <= budget or not lines:
            return text if len(text) <= budget else ""
        lines = lines[1:]  # drop the oldest
        rest += 1


def _line(name: str, value: Any) -> str | None:
    """``name: description``, or None for what is not shown (modules)."""
    if isinstance(value, types.ModuleType):
        return None
    if is_secret_name(name):  # never send what looks like a key to the model
        return f"{name}: {_type_name(value)} (value not shown: the name looks secret)"
    try:
        text = f"{name}: {describe(value)}"
    except Exception:  # a broken __getattr__ or property must not break the turn
        text = f"{name}: {_type_name(value)}"
    return text if len(text) <= MAX_LINE else text[: MAX_LINE - 3] + "..."


def describe(value: Any) -> str:
    """A one-line description of one object: type, size, shape or a short repr."""
    if isinstance(value, (bool, int, float, complex, str, bytes, bytearray, type(None))):
        size = f"[{len(value)}]" if isinstance(value, (str, bytes, bytearray)) else ""
        return f"{_type_name(value)}{size} = {brief(value)}"
    if isinstance(value, (list, tuple, set, frozenset, dict)):
        return f"{_type_name(value)}[{len(value)}] = {brief(value)}"
    if isinstance(value, type):
        return f"class {value.__qualname__}"
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, types.MethodType)):
        return f"function{_signature(value)}"
    shape = _attr(value, "shape")
    if isinstance(shape, tuple):
        return _describe_shaped(value, shape)
    return _describe_other(value)


def brief(value: Any, depth: int = 2) -> str:
    """A short repr built without calling ``repr`` on anything large or unknown.

    Builtin scalars and strings are shown (cut), containers show their first few
    elements in iteration order (nothing is sorted), other objects ``<TypeName>``.
    """
    if isinstance(value, str):
        return repr(value[:MAX_TEXT]) + ("..." if len(value) > MAX_TEXT else "")
    if isinstance(value, (bytes, bytearray)):
        return repr(bytes(value[:MAX_TEXT])) + ("..." if len(value) > MAX_TEXT else "")
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return f"<int of about {int(value.bit_length() * math.log10(2)) + 1} digits>"
    if isinstance(value, (bool, int, float, complex, type(None))):
        return repr(value)
    if isinstance(value, dict):
        return _brief_items(value, depth)
    if isinstance(value, (list, tuple, set, frozenset)):
        return _brief_sequence(value, depth)
    return f"<{_type_name(value)}>"


def _brief_sequence(value: Any, depth: int) -> str:
    opening, closing = {list: "[]", tuple: "()"}.get(type(value), "{}")
    if isinstance(value, (set, frozenset)) and not value:
        return f"{_type_name(value)}()"
    if depth <= 0:
        return f"{opening}...{closing}" if value else opening + closing
    parts = [brief(v, depth - 1) for v in islice(value, MAX_ITEMS)]
    if len(value) > MAX_ITEMS:
        parts.append("...")
    if isinstance(value, tuple) and len(value) == 1:
        parts[0] += ","
    return opening + ", ".join(parts) + closing


def _brief_items(value: dict[Any, Any], depth: int) -> str:
    if depth <= 0:
        return "{...}" if value else "{}"
    limit = max(1, MAX_ITEMS * 2 // 3)
    parts = [f"{brief(k, 0)}: {brief(v, depth - 1)}" for k, v in islice(value.items(), limit)]
    if len(value) > limit:
        parts.append("...")
    return "{" + ", ".join(parts) + "}"


def _describe_shaped(value: Any, shape: Any) -> str:
    """Tables (``.columns``) with their columns; arrays and series with their dtype."""
    text = f"{_type_name(value)} shape {_short(shape)}"
    columns = _attr(value, "columns")
    if columns is not None:
        return text + " columns: " + _columns(value, columns)
    if shape == ():  # a numpy scalar: its value says more than its shape
        return f"{_type_name(value)} = {_short(value)}"
    dtype = _attr(value, "dtype")
    if dtype is not None:
        text += f" dtype {_short(dtype)}"
    name = _attr(value, "name")
    if isinstance(name, str) and name:
        text += f" name {brief(name)}"
    return text


def _columns(value: Any, columns: Any) -> str:
    """``a (int64), b (object), ... (+N more)``: names with dtypes when available."""
    dtypes = _attr(value, "dtypes")
    kinds: dict[Any, str] = {}
    if dtypes is not None and hasattr(dtypes, "items"):
        for col, kind in islice(dtypes.items(), MAX_COLUMNS):
            kinds[col] = _short(kind)
    names = list(islice(iter(columns), MAX_COLUMNS))
    parts = [f"{_short(c)} ({kinds[c]})" if c in kinds else _short(c) for c in names]
    try:
        total = len(columns)
    except Exception:
        total = len(names)
    if total > len(names):
        parts.append(f"... (+{total - len(names)} more)")
    return ", ".join(parts)


def _describe_other(value: Any) -> str:
    """Other objects: small stdlib values with their repr, callables as such, else the type.

    ``len`` and ``repr`` of unknown objects are not called: they may run a query,
    read a file or print megabytes.
    """
    kind = type(value)
    # (the package's top name: on 3.13 paths are ``pathlib._local`` classes)
    if kind.__module__.partition(".")[0] in _VALUE_MODULES or kind is range:
        return f"{_type_name(value)} = {_short(repr(value))}"
    if callable(value):
        return f"{_type_name(value)} (callable)"
    return _type_name(value)


def _type_name(value: Any) -> str:
    return type(value).__name__


def _signature(func: Any) -> str:
    """``(a, b=2, *args, **kw)``: names and short defaults (no annotations, no big reprs)."""
    try:
        parameters = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return "(...)"
    parts = []
    for p in parameters:
        star = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "")
        default = "" if p.default is p.empty else "=" + brief(p.default, 0)
        parts.append(f"{star}{p.name}{default}")
    return "(" + ", ".join(parts) + ")"


def _attr(value: Any, name: str) -> Any:
    """``getattr`` that treats every failure as absence (properties may raise anything)."""
    try:
        return getattr(value, name, None)
    except Exception:
        return None


def _short(value: Any) -> str:
    """A short text for a shape, dtype or column label (these have cheap reprs)."""
    if isinstance(value, tuple):
        return brief(value)
    text = str(value)
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 3] + "..."
