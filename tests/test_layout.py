"""The package's shape: no import cycles between modules (imports inside functions
included), the packages in their layers, functions and classes of a readable size.

What is measured is what makes code hard to change, not a file's length: a function over
``MAX_FUNCTION_LINES`` lines (one that does several things), a class over ``MAX_METHODS``
methods (one that holds several concerns), an import from a layer above (an arrow back up).
A module may be as long as its one concern needs."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "oi_kernel"
MAX_FUNCTION_LINES = 60  # from ``def`` (its decorators included) to its last line
MAX_METHODS = 25  # functions defined in the class body itself (properties included)
# Debts owned elsewhere: what breaks a rule today and whose owner is bringing it within it
# (issue 41, item 3: the engine and its parts). The table can only shrink: an entry that no
# longer breaks its rule fails ``test_every_debt_is_still_owed`` until it is taken out, and
# one may not grow past the size written here (methods of a class, lines of a function).
# "module:Class" is a class over MAX_METHODS, "module:function" (or "module:Class.method")
# a function over MAX_FUNCTION_LINES. Never add to it: split the new code instead.
DEBTS: dict[str, tuple[int, str]] = {}  # all paid (issue 41)
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
    """No module imports from a layer above its own (so none from two layers above)."""
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


def oversized(path: Path) -> dict[str, int]:
    return oversized_source(path.read_text(), module_name(path))


def oversized_source(source: str, module: str) -> dict[str, int]:
    """The classes over MAX_METHODS and functions over MAX_FUNCTION_LINES in ``source``, by
    the names DEBTS uses, each with its size (methods, or lines)."""
    found: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                methods = sum(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                              for n in child.body)
                if methods > MAX_METHODS:
                    found[f"{module}:{prefix}{child.name}"] = methods
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([child.lineno] + [d.lineno for d in child.decorator_list])
                lines = child.end_lineno - first + 1
                if lines > MAX_FUNCTION_LINES:
                    found[f"{module}:{prefix}{child.name}"] = lines
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return found


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: module_name(p))
def test_functions_and_classes_of_a_readable_size(path):
    """Split by concern: a function that does one thing, a class that holds one."""
    over = {name: size for name, size in oversized(path).items()
            if name not in DEBTS or size > DEBTS[name][0]}
    assert not over, (f"{over} (methods of a class, lines of a function): split by concern, "
                      "see CONTRIBUTING.md's layout section")


def test_every_debt_is_still_owed():
    """The debts table only shrinks: an entry paid off (or renamed, or gone) is taken out."""
    owed: dict[str, int] = {}
    for path in PACKAGE.rglob("*.py"):
        owed.update(oversized(path))
    paid = sorted(set(DEBTS) - set(owed))
    assert not paid, f"no longer over the limits, take them out of DEBTS: {paid}"


def test_the_size_check_sees_what_it_measures():
    """The measure itself: a long function and a crowded class are found, nested ones too."""
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    methods = "".join(f"    def m{i}(self):\n        pass\n" for i in range(MAX_METHODS + 1))
    source = (f"def long():\n{body}\nclass Crowded:\n{methods}\n"
              f"class Fine:\n    def short(self):\n        pass\n")
    found = oversized_source(source, "oi_kernel._example")
    assert found == {"oi_kernel._example:long": MAX_FUNCTION_LINES + 1,
                     "oi_kernel._example:Crowded": MAX_METHODS + 1}


def test_every_package_has_a_docstring():
    for init in PACKAGE.rglob("__init__.py"):
        assert ast.get_docstring(ast.parse(init.read_text())), init
