"""The generated reference pages: every configurable trait, and every %-command.

Both are read from the code at build time, so they cannot drift from it:

- the configuration reference from the traitlets classes (their ``help`` strings, types and
  defaults) and the environment variable each trait declares in its ``env`` tag (the same tag
  the resolver's environment step, ``config.environment_value``, reads);
- the magics reference from the command table (``oi_kernel.session.commands.COMMANDS``).

``write_all(out_dir)`` writes ``config.md`` and ``magics.md`` (MyST Markdown) there; the pages
``docs/reference/configuration.md`` and ``docs/reference/magics.md`` include them. As a Sphinx
extension (``conf.py`` lists it) it writes them when the build starts. The tests import it
too (tests/test_docs.py).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "oi_kernel"
# What a trait's value may depend on besides oi_kernel's own variables: cleared while the
# defaults are computed, so the page says what a fresh machine gets.
_AMBIENT = ("KERNEL_USERNAME", "JUPYTERHUB_USER")


# ----------------------------------------------------------------------------- finding
def _is_config_call(node: ast.AST) -> bool:
    """``Trait(..., config=True)`` or ``Trait(...).tag(config=True)``."""
    return isinstance(node, ast.Call) and any(
        k.arg == "config" and isinstance(k.value, ast.Constant) and k.value.value is True
        for k in node.keywords)


def _classes() -> tuple[dict[str, tuple[str, list[str]]], set[str]]:
    """Every class of the package: name -> (module, base names); and the names of those whose
    body declares a configurable trait."""
    classes: dict[str, tuple[str, list[str]]] = {}
    configurable: set[str] = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ClassDef):
                continue
            bases = [b.id if isinstance(b, ast.Name) else getattr(b, "attr", "")
                     for b in node.bases]
            classes.setdefault(node.name, (module, bases))
            for stmt in node.body:
                if isinstance(stmt, ast.Assign) and any(
                        _is_config_call(n) for n in ast.walk(stmt.value)):
                    configurable.add(node.name)
    return classes, configurable


# A class whose traits users set under a subclass's name (traitlets applies ``c.Engine.*`` to
# the traits Engine inherits from EngineSettings).
CONFIGURED_AS = {"EngineSettings": "Engine"}


def configurable_classes() -> list[type]:
    """The classes a user configures (``c.<Class>.<name>``): each class of the package whose
    body declares configurable traits (under the name in ``CONFIGURED_AS``), except one whose
    subclass is listed too (``GatewayOptions``: its traits are listed under ``ChildKernel``)."""
    classes, configurable = _classes()
    names = {CONFIGURED_AS.get(n, n) for n in configurable}
    loaded = {n: getattr(importlib.import_module(classes[n][0]), n) for n in names}
    keep = [n for n, cls in loaded.items()
            if not any(o is not cls and issubclass(o, cls) for o in loaded.values())]
    return [loaded[n] for n in sorted(keep, key=lambda n: (classes[n][0], n))]


def own_config_traits(cls: type) -> dict[str, Any]:
    """The configurable traits ``cls`` gets from oi_kernel (not those of ipykernel, IPython
    or traitlets' own bases), by name."""
    found = {}
    for name, trait in sorted(cls.class_traits(config=True).items()):  # type: ignore[attr-defined]
        owner = next(k for k in cls.__mro__ if name in vars(k))
        if owner.__module__.startswith("oi_kernel"):
            found[name] = trait
    return found


@contextmanager
def clean_environment() -> Iterator[None]:
    """No ``OI_*`` (nor ambient user) variables while a default is computed."""
    saved = {k: v for k, v in os.environ.items() if k.startswith("OI_") or k in _AMBIENT}
    for key in saved:
        del os.environ[key]
    try:
        yield
    finally:
        os.environ.update(saved)


def default_text(cls: type, name: str, trait: Any) -> str:
    """The default a fresh machine gets, as Markdown: the trait's ``doc_default`` tag where
    it depends on the machine, else its value in an instance made without any ``OI_*``
    variable set (``@default`` methods included)."""
    if trait.metadata.get("doc_default"):
        return prose(str(trait.metadata["doc_default"]))
    with clean_environment():
        value = getattr(cls.__new__(cls), name)
    if value in ("", None, [], ()):
        return "empty"
    return f"`{value!r}`"


def type_text(trait: Any) -> str:
    kind = type(trait).__name__
    values = getattr(trait, "values", None)
    if values:
        return f"{kind}: " + ", ".join(f"`{v}`" for v in values)
    inner = getattr(trait, "_trait", None)
    if inner is not None:
        return f"{kind} of {type(inner).__name__}"
    return kind


def env_text(trait: Any) -> str:
    env = trait.metadata.get("env")
    if not env:
        return "–"
    text = f"`{env}`"
    if trait.metadata.get("env_also"):
        text += f", `{trait.metadata['env_also']}`"
    for fallback in trait.metadata.get("env_fallbacks", ()):
        text += f", else `{fallback}`"
    return text


_SPECIAL = re.compile(r"([*<>|\[\]\\$])")


def prose(text: str) -> str:
    """A help string as one Markdown paragraph: backticked spans kept, characters Markdown
    would read as markup elsewhere escaped."""
    text = " ".join(inspect.cleandoc(text).split())
    parts = text.split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: escape it and everything else
        return _SPECIAL.sub(r"\\\1", text).replace("`", "\\`")
    return "`".join(p if i % 2 else _SPECIAL.sub(r"\\\1", p) for i, p in enumerate(parts))


def config_markdown() -> str:
    """The configuration reference: one section per class, one entry per trait."""
    out: list[str] = []
    for cls in configurable_classes():
        traits = own_config_traits(cls)
        if not traits:
            continue
        section = cls.__name__
        doc = inspect.getdoc(cls) or ""
        out.append(f"## `{section}`\n")
        out.append(f"Module `{cls.__module__}`. {prose(doc.split(chr(10) * 2)[0])}\n")
        for name, trait in traits.items():
            out.append(f"### `c.{section}.{name}`\n")
            out.append(f"| type | default | environment variable |\n|---|---|---|\n"
                       f"| {type_text(trait)} | {default_text(cls, name, trait)} | "
                       f"{env_text(trait)} |\n")
            out.append(prose(trait.help or "(no help text)") + "\n")
    return "\n".join(out)


def config_rows() -> list[tuple[str, str, str]]:
    """(class, trait, environment variable or "") of every configurable trait."""
    return [(cls.__name__, name, trait.metadata.get("env", ""))
            for cls in configurable_classes()
            for name, trait in own_config_traits(cls).items()]


# ----------------------------------------------------------------------------- magics
def _command_modules() -> list[str]:
    """The modules that register commands with ``@command(...)``."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text())
        if any(isinstance(d, ast.Call) and getattr(d.func, "id", "") == "command"
               for node in ast.walk(tree)
               if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
               for d in node.decorator_list):
            found.append(".".join(path.relative_to(ROOT).with_suffix("").parts))
    return found


def _acp_hidden() -> set[str]:
    """``HIDDEN_COMMANDS`` of the ACP agent, read from its source (the agent needs the ACP SDK
    to import)."""
    tree = ast.parse((PACKAGE / "acp" / "agent.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == \
                "HIDDEN_COMMANDS":
            return set(ast.literal_eval(node.value))
    return set()


def magics_markdown() -> str:
    """The magics reference: every command as the kernel, ``%%oi`` and an ACP client type it."""
    for module in _command_modules():
        importlib.import_module(module)
    from oi_kernel.session import commands

    hidden = _acp_hidden()
    entries = []
    for name, cmd in sorted(commands.COMMANDS.items()):
        args = f" {cmd.usage}" if cmd.usage else ""
        magic = ("not under `%%oi` (it needs the kernel's own child)" if cmd.needs_child
                 else f"`%oi {name}`")
        acp = "not in ACP clients" if name in hidden else f"`/{name}`"
        entries.append(f"`%{name}{args}`\n: {prose(cmd.help)}. Also: {magic} · {acp}\n")
    direct = commands.HELP_EXTRA["%"].strip()
    return ("## Commands\n\n" + "\n".join(entries) + "\n"
            "## Direct cells (the kernel only)\n\n| cell | what it does |\n|---|---|\n"
            + direct + "\n\n"
            "## The `%%oi` cell magic\n\n" + commands.HELP_INTRO["%oi "] + "\n")


# ----------------------------------------------------------------------------- output
def write_all(out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in (("config.md", config_markdown()), ("magics.md", magics_markdown())):
        path = out_dir / name
        if not path.exists() or path.read_text() != text:  # unchanged: no rebuild
            path.write_text(text)
        written.append(path)
    return written


# A Markdown link to a file of the repository outside docs/ (``../benchmarks/RESULTS.md``):
# right on GitHub and in an editor, no page of the site. On the site it becomes the file's path.
_OUTSIDE_LINK = re.compile(r"\[([^\]]+)\]\(((?:\.\./)+[^)#\s]+)(#[^)\s]*)?\)")


def repo_links(docname: str, text: str, srcdir: Path) -> str:
    """``text`` with links to repository files outside ``srcdir`` written as their paths."""
    here = (srcdir / docname).parent

    def replace(match: re.Match[str]) -> str:
        target = (here / match.group(2)).resolve()
        if target.is_relative_to(srcdir.resolve()) or not target.is_relative_to(ROOT):
            return match.group(0)
        path = target.relative_to(ROOT).as_posix()
        label = match.group(1)
        return (f"{label} (`{path}` in the repository)" if label.strip("`") != path
                and label.strip("`") != target.name else f"`{path}` (in the repository)")

    return _OUTSIDE_LINK.sub(replace, text)


def _on_source_read(app: Any, docname: str, source: list[str]) -> None:
    source[0] = repo_links(docname, source[0], Path(app.srcdir))


def _on_builder_inited(app: Any) -> None:
    write_all(Path(app.srcdir) / "_generated")


def setup(app: Any) -> dict[str, Any]:
    app.connect("builder-inited", _on_builder_inited)
    app.connect("source-read", _on_source_read)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
