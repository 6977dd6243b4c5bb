"""The size of the house (issue 41): the engine and its parts, who reads the engine, public
names per package. Static (the source's syntax tree, nothing imported), so it runs on any
checkout in a second:

    python benchmarks/house.py [--root TREE] [--json]

- **engine and parts**: for ``Engine`` (core/engine.py), ``StepRunner`` (core/steps.py) and
  ``Rollback`` (core/rollback.py): lines of the class, methods (``def`` in the class body,
  properties included), and the longest function of each module; for the parts, the members
  of the host protocol they read their owner through (0: they are given what they use).
- **engine read from outside core/**: every ``<x>.engine.<name>`` / ``engine.<name>``
  attribute read in modules outside ``oi_kernel/core``: how many modules, how many distinct
  names.
- **public names per package**: module-level names not starting with ``_`` (functions,
  classes, assignments), per subpackage of ``oi_kernel``.
- **functions over 60 lines** in core/steps.py and session/assembly.py (issue 41's rule).
"""

from __future__ import annotations

import argparse
import ast
import json
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PARTS = {"Engine": "core/engine.py", "StepRunner": "core/steps.py",
         "Rollback": "core/rollback.py"}
HOSTS = {"StepRunner": "StepHost", "Rollback": "RollbackHost"}
WATCHED = ("core/steps.py", "session/assembly.py", "core/engine.py", "core/rollback.py")


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _class(module: ast.Module, name: str) -> ast.ClassDef | None:
    return next((n for n in module.body if isinstance(n, ast.ClassDef) and n.name == name),
                None)


def _length(node: ast.AST) -> int:
    return (node.end_lineno or node.lineno) - node.lineno + 1  # type: ignore[attr-defined]


def _functions(module: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(module) if isinstance(n, (ast.FunctionDef,
                                                          ast.AsyncFunctionDef))]


def parts(pkg: Path) -> dict[str, dict[str, object]]:
    """Lines, methods and host-protocol members of the engine and its parts."""
    out: dict[str, dict[str, object]] = {}
    for name, rel in PARTS.items():
        module = _tree(pkg / rel)
        cls = _class(module, name)
        if cls is None:
            continue
        methods = [n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        host = _class(module, HOSTS.get(name, ""))
        members = 0 if host is None else sum(
            1 for n in host.body if isinstance(n, (ast.AnnAssign, ast.FunctionDef)))
        longest = max(_functions(module), key=_length)
        out[name] = {"lines": _length(cls), "methods": len(methods), "host_members": members,
                     "longest": f"{longest.name} ({_length(longest)})"}
    return out


def _engine_reads(module: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(module):
        if not isinstance(node, ast.Attribute):
            continue
        owner = node.value
        if (isinstance(owner, ast.Name) and owner.id == "engine") or (
                isinstance(owner, ast.Attribute) and owner.attr == "engine"):
            names.add(node.attr)
    return names


def engine_reads(pkg: Path) -> dict[str, object]:
    """Engine members read by modules outside core/."""
    by_module: dict[str, set[str]] = {}
    for path in sorted(pkg.rglob("*.py")):
        rel = path.relative_to(pkg).as_posix()
        if rel.startswith("core/"):
            continue
        names = _engine_reads(_tree(path))
        if names:
            by_module[rel] = names
    every = set().union(*by_module.values()) if by_module else set()
    return {"modules": len(by_module), "names": len(every), "list": sorted(every)}


def _public(module: ast.Module) -> int:
    count = 0
    for node in module.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            count += not node.name.startswith("_")
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            count += sum(1 for t in targets if isinstance(t, ast.Name)
                         and not t.id.startswith("_"))
    return count


def public_names(pkg: Path) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for path in pkg.rglob("*.py"):
        rel = path.relative_to(pkg).parts
        package = rel[0] if len(rel) > 1 else "(top)"
        counts[package] += _public(_tree(path))
    return dict(sorted(counts.items()))


def long_functions(pkg: Path, limit: int = 60) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for rel in WATCHED:
        path = pkg / rel
        if path.exists():
            out[rel] = [f"{f.name} ({_length(f)})" for f in _functions(_tree(path))
                        if _length(f) > limit]
    return out


def measure(root: Path) -> dict[str, object]:
    pkg = root / "oi_kernel"
    return {"parts": parts(pkg), "engine_read_outside_core": engine_reads(pkg),
            "public_names": public_names(pkg), "functions_over_60": long_functions(pkg)}


def report(figures: dict[str, object]) -> str:
    lines = ["part        lines  methods  host members  longest function in its module"]
    for name, f in figures["parts"].items():  # type: ignore[union-attr]
        lines.append(f"{name:<11} {f['lines']:>5}  {f['methods']:>7}  {f['host_members']:>12}"
                     f"  {f['longest']}")
    reads = figures["engine_read_outside_core"]
    lines.append(f"engine read outside core/: {reads['modules']} modules, "  # type: ignore[index]
                 f"{reads['names']} names")  # type: ignore[index]
    lines.append("functions over 60 lines: " + json.dumps(figures["functions_over_60"]))
    names = figures["public_names"]
    lines.append("public names per package: " + ", ".join(
        f"{k} {v}" for k, v in names.items()))  # type: ignore[union-attr]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=REPO, help="the checkout to measure")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    figures = measure(args.root)
    print(json.dumps(figures, indent=1) if args.json else report(figures))


if __name__ == "__main__":
    main()
