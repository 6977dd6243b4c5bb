"""The strings a Python block spells out itself: what a name or an expression built from
literals is known to hold before the block runs (``"sys" + "tem"``, ``for m in ("mean",
"std")``, ``BASE = "https://…"``). The risk review uses it to resolve computed import and
attribute names and URLs; whatever it cannot resolve stays ``None`` and the review treats
it as opaque (it fails closed). Pure: reads the syntax tree, never runs anything."""

from __future__ import annotations

import ast
from itertools import product

from oi_kernel.safety.risk.common import url_of
from oi_kernel.safety.risk.opaque_names import GETATTR, IMPORTERS
from oi_kernel.safety.risk.python_calls import _DELETE_CALLS, _KILL_CALLS, _MOVE_CALLS, _SHELL_CALLS

_MAX_VALUES = 32  # more possible values than this: treated as unknown
_STR_METHODS = {"lower", "upper", "strip", "lstrip", "rstrip", "title", "casefold", "capitalize"}
_Pos = tuple[int, int]
# name -> [(where it is bound, the expression it gets or None when unknown, bound by a loop)]
_Bindings = dict[str, list[tuple[_Pos, ast.AST | None, bool]]]


def _pos(node: ast.AST) -> _Pos:
    return getattr(node, "lineno", 0), getattr(node, "col_offset", 0)


def _combine(parts: list[frozenset[str] | None]) -> frozenset[str] | None:
    if any(p is None for p in parts):
        return None
    total = 1
    for p in parts:
        total *= len(p)  # type: ignore[arg-type]
    if total > _MAX_VALUES:
        return None
    return frozenset("".join(combo) for combo in product(*parts))  # type: ignore[arg-type]


class StaticStrings:
    """The known string values of names and expressions in one parsed block."""

    def __init__(self, tree: ast.AST) -> None:
        self.bindings: _Bindings = {}
        self.names_unknown = False  # set by `globals()[expr] = …`: any name may be rebound
        for node in ast.walk(tree):
            self._collect(node)

    # -- bindings

    def _bind(self, target: ast.AST, where: _Pos, value: ast.AST | None, loop: bool) -> None:
        if isinstance(target, ast.Name):
            self.bindings.setdefault(target.id, []).append((where, value, loop))
            return
        if isinstance(target, ast.Starred):
            self._bind(target.value, where, None, False)
        elif isinstance(target, ast.Tuple | ast.List):  # unpacking: each name unknown
            for element in target.elts:
                self._bind(element, where, None, False)
        # an attribute or subscript target (`d[k] = v`, `obj.x = v`) binds no name

    def _collect(self, node: ast.AST) -> None:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                self._bind(target, _pos(node), node.value, False)
                self._namespace_store(target)
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            value = node.value if isinstance(node, ast.AnnAssign) else None
            self._bind(node.target, _pos(node), value, False)
        elif isinstance(node, ast.NamedExpr):
            self._bind(node.target, _pos(node), node.value, False)
        elif isinstance(node, ast.For | ast.AsyncFor):
            self._bind(node.target, _pos(node), node.iter, True)
        elif isinstance(node, ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp):
            for gen in node.generators:
                self._bind(gen.target, _pos(node), gen.iter, True)
        elif isinstance(node, ast.arg):
            self.bindings.setdefault(node.arg, []).append((_pos(node), None, False))
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            self._bind(node.optional_vars, _pos(node.context_expr), None, False)
        else:
            self._other_binding(node)

    def _other_binding(self, node: ast.AST) -> None:
        name = None
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            name = node.name
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar):
            name = node.name
        elif isinstance(node, ast.alias):
            name = node.asname or node.name.split(".")[0]
        if name:
            self.bindings.setdefault(name, []).append((_pos(node), None, False))

    def _namespace_store(self, target: ast.AST) -> None:
        """``globals()["x"] = …`` binds x to something unknown; a computed key, any name."""
        if not (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Call)):
            return
        func = target.value.func
        if isinstance(func, ast.Name) and func.id in ("globals", "locals", "vars"):
            keys = self.values(target.slice)
            if keys is None:
                self.names_unknown = True
            for key in keys or ():
                self.bindings.setdefault(key, []).append(((0, 0), None, False))

    def _known(self, name: ast.Name) -> list[tuple[ast.AST, bool]] | None:
        """(value, bound by a loop) of every binding, or None when one is unknown, or the
        name is not bound in this block before it is used."""
        bound = self.bindings.get(name.id)
        if self.names_unknown or not bound or min(b[0] for b in bound) >= _pos(name):
            return None
        if any(value is None for _, value, _ in bound):
            return None
        return [(value, loop) for _, value, loop in bound]  # type: ignore[misc]

    # -- values

    def values(self, node: ast.AST, seen: frozenset[str] = frozenset()) -> frozenset[str] | None:
        """Every string ``node`` can hold, or None when the block does not say."""
        if isinstance(node, ast.Constant):
            return frozenset([node.value]) if isinstance(node.value, str) else None
        if isinstance(node, ast.JoinedStr):
            return _combine([self._fstring_part(v, seen) for v in node.values])
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return _combine([self.values(node.left, seen), self.values(node.right, seen)])
        if isinstance(node, ast.IfExp):
            parts = [self.values(node.body, seen), self.values(node.orelse, seen)]
            return None if None in parts else frozenset().union(*parts)  # type: ignore[arg-type]
        if isinstance(node, ast.Subscript):
            return self._sliced(node, seen)
        if isinstance(node, ast.Call):
            return self._call_value(node, seen)
        if isinstance(node, ast.Name) and node.id not in seen:
            return self._name_values(node, seen | {node.id})
        return None

    def _fstring_part(self, node: ast.AST, seen: frozenset[str]) -> frozenset[str] | None:
        if isinstance(node, ast.FormattedValue):
            plain = node.conversion == -1 and node.format_spec is None
            return self.values(node.value, seen) if plain else None
        return self.values(node, seen)

    def _name_values(self, node: ast.Name, seen: frozenset[str]) -> frozenset[str] | None:
        known = self._known(node)
        if known is None:
            return None
        parts = [self.items(v, seen) if loop else self.values(v, seen) for v, loop in known]
        if None in parts:
            return None
        out = frozenset().union(*parts)  # type: ignore[arg-type]
        return out if len(out) <= _MAX_VALUES else None

    def _sliced(self, node: ast.Subscript, seen: frozenset[str]) -> frozenset[str] | None:
        base = self.values(node.value, seen)
        index = node.slice
        if base is None:
            return None
        try:
            if isinstance(index, ast.Slice):
                bounds = [ast.literal_eval(p) if p else None
                          for p in (index.lower, index.upper, index.step)]
                return frozenset(s[slice(*bounds)] for s in base)
            return frozenset(s[ast.literal_eval(index)] for s in base)
        except (ValueError, TypeError, IndexError, SyntaxError):
            return None

    def _call_value(self, node: ast.Call, seen: frozenset[str]) -> frozenset[str] | None:
        func = node.func
        if isinstance(func, ast.Name) and func.id == "chr" and len(node.args) == 1:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, int) and 0 <= arg.value < 0x110000:
                return frozenset([chr(arg.value)])
            return None
        if isinstance(func, ast.Name) and func.id == "str" and len(node.args) == 1:
            return self.values(node.args[0], seen)
        if not isinstance(func, ast.Attribute):
            return None
        base = self.values(func.value, seen)
        if base is None:
            return None
        if func.attr in _STR_METHODS and not node.args:
            return frozenset(getattr(s, func.attr)() for s in base)
        if func.attr == "replace" and len(node.args) == 2:
            old, new = (self.values(a, seen) for a in node.args)
            if old and new and len(old) == len(new) == 1:
                return frozenset(s.replace(next(iter(old)), next(iter(new))) for s in base)
        if func.attr == "join" and len(node.args) == 1 and len(base) == 1:
            return self._joined(next(iter(base)), node.args[0], seen)
        return None

    def _joined(self, sep: str, arg: ast.AST, seen: frozenset[str]) -> frozenset[str] | None:
        if isinstance(arg, ast.List | ast.Tuple):
            parts = [self.values(e, seen) for e in arg.elts]
            if None in parts:
                return None
            with_sep: list[frozenset[str] | None] = []
            for i, part in enumerate(parts):
                with_sep += [frozenset([sep])] * bool(i) + [part]
            return _combine(with_sep)
        return None

    def items(self, node: ast.AST, seen: frozenset[str] = frozenset()) -> frozenset[str] | None:
        """Every string a ``for`` loop over ``node`` can yield, or None."""
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            parts = [self.values(e, seen) for e in node.elts]
            return None if None in parts else frozenset().union(*parts)  # type: ignore[arg-type]
        if isinstance(node, ast.Dict):
            return self.items(ast.List(elts=[k for k in node.keys if k is not None]), seen)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "split" and not node.args:
                base = self.values(node.func.value, seen)
                return None if base is None else frozenset(w for s in base for w in s.split())
            if node.func.attr == "keys" and not node.args:
                return self.items(node.func.value, seen)
        if isinstance(node, ast.Name) and node.id not in seen:
            known = self._known(node)
            if known is None or any(loop for _, loop in known):
                return None
            parts = [self.items(v, seen | {node.id}) for v, _ in known]
            return None if None in parts else frozenset().union(*parts)  # type: ignore[arg-type]
        return None

    # -- URLs

    def url(self, node: ast.AST, seen: frozenset[str] = frozenset()) -> str | None:
        """The network URL ``node`` starts with (a literal, an f-string or concatenation
        starting with one, or a name bound to one), or None."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return url_of(node.value)
        if isinstance(node, ast.JoinedStr) and node.values:
            first = node.values[0]
            return self.url(first.value if isinstance(first, ast.FormattedValue) else first, seen)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Mod):
            return self.url(node.left, seen)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "format":
                return self.url(node.func.value, seen)
            if node.func.attr == "join" and node.args and isinstance(node.args[0], ast.List | ast.Tuple):
                return next(filter(None, (self.url(e, seen) for e in node.args[0].elts[:1])), None)
        if isinstance(node, ast.Call) and node.args and _called(node) in ("urljoin", "Request"):
            return self.url(node.args[0], seen)
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            return next(filter(None, (self.url(e, seen) for e in node.elts)), None)
        if isinstance(node, ast.Subscript):
            return self.url(node.value, seen)
        if isinstance(node, ast.Name) and node.id not in seen:
            bound = self.bindings.get(node.id, [])
            found = (self.url(v, seen | {node.id}) for _, v, _ in bound if v is not None)
            return next(filter(None, found), None)
        return None


def _called(node: ast.Call) -> str:
    func = node.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


class QualifiedNames:
    """What a name in one block stands for, fully qualified: imports and their aliases
    (``import shutil as sh``), one-name bindings (``sh = os.system``), lookups spelled out
    (``sys.modules["os"]``, ``getattr(os, "system")``) and star imports of risky modules."""

    def __init__(self, tree: ast.Module, strings: StaticStrings) -> None:
        self.strings = strings
        self.aliases: dict[str, str] = {}
        self.star_modules: list[str] = []
        self._resolving: set[str] = set()
        self._assigned_cache: dict[str, str | None] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                self.add_import(node)

    def add_import(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.split(".")[0]
                self.aliases[local] = alias.name if alias.asname else local
            return
        module = node.module or ""
        for alias in node.names:
            if alias.name == "*":
                self.star_modules.append(module)
            else:
                self.aliases[alias.asname or alias.name] = f"{module}.{alias.name}"

    def dotted(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Attribute):
            base = self.dotted(node.value)
            return f"{base}.{node.attr}" if base else None
        if isinstance(node, ast.Call) and node.args:
            called = self.qualname(node.func)
            if called in IMPORTERS:
                return self.single(node.args[0])
            if called in GETATTR and len(node.args) >= 2:
                base, attr = self.dotted(node.args[0]), self.single(node.args[1])
                return f"{base}.{attr}" if base and attr else None
        if isinstance(node, ast.Subscript):
            return self._dotted_lookup(node)
        return None

    def single(self, node: ast.AST) -> str | None:
        values = self.strings.values(node)
        return next(iter(values)) if values and len(values) == 1 else None

    def _dotted_lookup(self, node: ast.Subscript) -> str | None:
        """``sys.modules["os"]`` → os, ``os.__dict__["system"]`` → os.system, ``globals()["f"]``."""
        key, container = self.single(node.slice), node.value
        if key is None:
            return None
        if self.qualname(container) == "sys.modules":
            return key
        if isinstance(container, ast.Attribute) and container.attr == "__dict__":
            base = self.dotted(container.value)
            return f"{base}.{key}" if base else None
        if isinstance(container, ast.Call) and isinstance(container.func, ast.Name):
            if container.func.id == "vars" and container.args:
                base = self.dotted(container.args[0])
                return f"{base}.{key}" if base else None
            if container.func.id in ("globals", "locals"):
                return key
        return None

    def assigned(self, name: str) -> str | None:
        """What ``name`` stands for when the block binds it only to one dotted name:
        ``sh = os.system`` → os.system, ``x = __import__("subprocess")`` → subprocess."""
        if name in self._assigned_cache:
            return self._assigned_cache[name]
        bound = self.strings.bindings.get(name, [])
        if not bound or name in self._resolving or any(v is None or loop for _, v, loop in bound):
            return None
        self._resolving.add(name)
        try:
            targets = {self.qualname(v) for _, v, _ in bound}  # type: ignore[arg-type]
        finally:
            self._resolving.discard(name)
        target = targets.pop() if len(targets) == 1 else None
        self._assigned_cache[name] = target if target and target != name else None
        return self._assigned_cache[name]

    def qualname(self, node: ast.AST) -> str | None:
        """``sh.rmtree`` → ``shutil.rmtree`` after ``import shutil as sh``."""
        dotted = self.dotted(node)
        if dotted is None:
            return None
        head, _, tail = dotted.partition(".")
        if head in self.aliases:
            full = self.aliases[head]
            return f"{full}.{tail}" if tail else full
        assigned = self.assigned(head) if head.isidentifier() else None
        if assigned:
            return f"{assigned}.{tail}" if tail else assigned
        if isinstance(node, ast.Name):
            for module in self.star_modules:
                candidate = f"{module}.{head}"
                if candidate in _SHELL_CALLS | _MOVE_CALLS | _KILL_CALLS | set(_DELETE_CALLS):
                    return candidate
        return dotted
