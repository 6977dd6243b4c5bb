"""The package's shape: no import cycles between modules (imports inside functions
included), modules of a readable size, and the packages in their layers."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "oi_kernel"
MAX_LINES = 500
# Modules allowed to be longer, each one cohesive table (see CONTRIBUTING.md's layout section).
LONG_TABLES: dict[str, str] = {}
# Lower layers never import higher ones (front doors are on top).
LAYERS = [
    {"errors", "config", "languages", "_version", "__init__"},
    {"core", "safety"},
    {"llm", "approval", "execution"},
    {"record"},
    {"session"},
    {"kernel", "magics", "api", "acp", "cli", "integrations", "__main__"},
]


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py")}


def imports_of(path: Path, known: set[str]) -> set[str]:
    """The oi_kernel modules ``path`` imports anywhere in its code (the most specific known
    module for each import; TYPE_CHECKING-only imports count too)."""
    found: set[str] = set()
    me = module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            names = [f"{base}.{a.name}" for a in node.names] + [base]
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name != me and name.startswith("oi_kernel"):
                found.add(name)
    return found


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    # importing a package's submodule runs the package's __init__: not an edge of its own
    return {m: {i for i in imports_of(p, known) if not m.startswith(i + ".")}
            for m, p in mods.items()}


def test_no_import_cycles():
    edges = graph()
    cycles = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node)
    assert cycles == []


def test_lower_layers_do_not_import_higher_ones():
    def layer(module: str) -> int:
        top = module.split(".")[1] if module.count(".") else "__init__"
        return next(i for i, names in enumerate(LAYERS) if top in names)

    upward = [(m, i) for m, targets in graph().items() for i in targets
              if m != "oi_kernel" and layer(i) > layer(m)]
    assert upward == []


def test_no_module_imports_the_package_root():
    """The root package is the top of the public API (it offers ``Interpreter``): a module
    that imports it for ``__version__`` or a submodule's name makes an arrow back up."""
    known = set(modules())
    offenders = []
    for name, path in modules().items():
        if name == "oi_kernel":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import) and any(a.name == "oi_kernel" for a in node.names):
                offenders.append(f"{name}: import oi_kernel")
            elif isinstance(node, ast.ImportFrom) and node.module == "oi_kernel" and not node.level:
                offenders += [f"{name}: from oi_kernel import {a.name}" for a in node.names
                              if f"oi_kernel.{a.name}" not in known]
    assert not offenders, offenders


def test_safety_and_core_do_not_import_each_other_upward():
    """``safety`` (risk review, redaction) is pure and below ``core``'s turn loop: what both
    need (the language table) lives in the bottom layer."""
    edges = graph()
    upward = sorted(f"{m} -> {i}" for m, deps in edges.items() if m.startswith("oi_kernel.safety")
                    for i in deps if i.startswith("oi_kernel.core"))
    assert not upward, upward


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: module_name(p))
def test_module_size(path):
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES or module_name(path) in LONG_TABLES, f"{lines} lines"


def test_every_package_has_a_docstring():
    for init in PACKAGE.rglob("__init__.py"):
        assert ast.get_docstring(ast.parse(init.read_text())), init
