"""The allowlist of the known-safe review: ``known_safe.toml`` beside this module, read once
(lazily: never on ``import oi_kernel``), then widened by the user's entries (a profile's or
config's ``known_safe``) and narrowed by the administrator's (the policy's
``known_safe_denied``). An entry is a qualified name (``pandas.read_csv``), a module pattern
(``mylib.*``, any ``fnmatch`` glob) or, starting with a dot, a method name (``.clean``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from functools import lru_cache
from pathlib import Path
from typing import Any

TABLE_FILE = Path(__file__).with_name("known_safe.toml")
VERSION = 1


class Names:
    """A set of qualified names and patterns: exact names, ``module.*`` prefixes, globs."""

    def __init__(self, entries: list[str] | tuple[str, ...] = ()) -> None:
        self.exact: set[str] = set()
        self.prefixes: list[str] = []
        self.globs: list[str] = []
        for entry in entries:
            if entry.endswith(".*") and not any(c in entry[:-2] for c in "*?["):
                self.prefixes.append(entry[:-1])  # "pandas." covers pandas.read_csv
            elif any(c in entry for c in "*?["):
                self.globs.append(entry)
            else:
                self.exact.add(entry)

    def by_pattern(self, name: str) -> bool:
        return (any(name.startswith(p) for p in self.prefixes)
                or any(fnmatchcase(name, g) for g in self.globs))

    def __contains__(self, name: str) -> bool:
        return name in self.exact or self.by_pattern(name)


@dataclass
class Table:
    """The allowlist as the review reads it (see ``known_safe.toml`` for each part)."""

    modules: Names
    aliases: dict[str, str]
    calls: Names
    writes: set[str]
    never: Names
    process: Names
    settable: Names
    native_readers: Names
    markup: set[str]
    builtins: set[str]
    options: dict[str, Names]
    modes: dict[str, dict[str, Any]]
    keywords: dict[str, Any]
    methods: set[str]
    method_writes: set[str]
    methods_never: set[str]
    literal_argument: set[str]
    line_magics: set[str]
    magic_arguments: dict[str, list[str]]
    extensions: set[str]
    config: Names
    python_cells: set[str]
    text_cells: set[str]
    commands: set[str]
    options_never: set[str]
    denied: Names = field(default_factory=Names)
    denied_methods: set[str] = field(default_factory=set)

    def known(self, name: str) -> bool:
        """Whether the qualified ``name`` is known safe (see known_safe.toml's header)."""
        if name in self.denied or name in self.process:
            return False
        if name in self.calls.exact:
            return True
        parts = name.split(".")[1:]
        if name in self.never or any(p in self.methods_never or _private(p) for p in parts):
            return False
        return self.calls.by_pattern(name)

    def method(self, name: str) -> bool:
        """Whether ``name`` is known safe as a method of an object of unknown type."""
        return (name in self.methods and name not in self.methods_never
                and name not in self.denied_methods)

    def module(self, name: str) -> bool:
        """Whether ``name`` is a module known safe to import (a submodule of one too)."""
        return (name in self.modules or any(name.startswith(m + ".")
                                            for m in self.modules.exact)) and self.allowed(name)

    def is_module(self, name: str) -> bool:
        """Whether ``name`` is itself one of the modules (``os.path``, not ``os.system``)."""
        return name in self.modules.exact and self.allowed(name)

    def allowed(self, name: str) -> bool:
        """Not denied by the policy, and not (in) a module that starts processes."""
        return not (name in self.denied or name in self.process
                    or self.process.by_pattern(name + ".x")
                    or self.denied.by_pattern(name + ".x"))


def _private(part: str) -> bool:
    return part.startswith("_") and part not in ("__version__", "__name__", "__doc__")


@lru_cache(maxsize=1)
def _raw() -> dict[str, Any]:
    import tomllib  # (only when the first block is reviewed)

    data = tomllib.loads(TABLE_FILE.read_text(encoding="utf-8"))
    if data.get("version") != VERSION:
        raise ValueError(f"{TABLE_FILE} has version {data.get('version')!r}; "
                         f"this oi_kernel reads version {VERSION}")
    return data


@lru_cache(maxsize=16)
def table(extra: tuple[str, ...] = (), denied: tuple[str, ...] = ()) -> Table:
    """The allowlist with the user's ``extra`` entries and the administrator's ``denied``
    ones (cached: a session asks for the same pair on every step)."""
    raw = _raw()
    py, methods, ipy, sh = raw["python"], raw["methods"], raw["ipython"], raw["shell"]
    extra_names = [e for e in extra if not e.startswith(".")]
    extra_modules = [e.removesuffix(".*") for e in extra_names if e.endswith(".*")]
    return Table(
        modules=Names([*py["modules"], *extra_modules]),
        aliases=dict(py["aliases"]),
        calls=Names([*py["calls"], *extra_names]),
        writes=set(py["writes"]),
        never=Names(py["never"]),
        process=Names(py["process"]),
        settable=Names(py["settable"]),
        native_readers=Names(py["native_readers"]),
        markup=set(py["markup"]),
        builtins=set(py["builtins"]),
        options={k: Names(v) for k, v in py["options"].items()},
        modes=py["modes"],
        keywords=py["keywords"],
        methods={*methods["safe"], *(e[1:] for e in extra if e.startswith("."))},
        method_writes=set(methods["writes"]),
        methods_never=set(methods["never"]) - {e[1:] for e in extra if e.startswith(".")},
        literal_argument=set(methods["literal_argument"]),
        line_magics=set(ipy["line"]),
        magic_arguments=dict(ipy["arguments"]),
        extensions=set(ipy["extensions"]),
        config=Names(ipy["config"]),
        python_cells=set(ipy["python_cells"]),
        text_cells=set(ipy["text_cells"]),
        commands=set(sh["commands"]),
        options_never=set(sh["options_never"]),
        denied=Names([d for d in denied if not d.startswith(".")]),
        denied_methods={d[1:] for d in denied if d.startswith(".")},
    )
