"""Where the Python review fails closed on names: what a block looks up by a name the syntax
tree does not spell out, so the reviewer cannot see what is called.

``getattr`` and ``operator.attrgetter``/``methodcaller`` with computed names, lookups in a
module's namespace (``vars(m)[k]``, ``m.__dict__[k]``, ``globals()[k]``, ``sys.modules[k]``),
a namespace handed over whole, and dangerous functions passed around as values. Names the block
spells out itself are resolved first (``names.StaticStrings``)."""

from __future__ import annotations

import ast

from oi_kernel.safety.risk.common import HIGH, MEDIUM, _short
from oi_kernel.safety.risk.names import StaticStrings
from oi_kernel.safety.risk.opaque_names import (
    DESERIALIZERS,
    EXEC,
    GETATTR,
    IMPORTERS,
    NATIVE,
    RISKY_ATTRS,
    RISKY_MODULES,
    WALK,
)
from oi_kernel.safety.risk.python_calls import risky_call


def _module_root(name: str) -> str:
    return name.split(".")[0]


class LookupChecks:
    """Mixed into the Python reviewer (under ``OpacityChecks``): the checks above."""

    aliases: dict[str, str]
    parents: dict[ast.AST, ast.AST]
    strings: StaticStrings

    def qualname(self, node: ast.AST) -> str | None:  # provided by the reviewer
        raise NotImplementedError

    def _add(self, node: ast.AST, category: str, severity: str, text: str) -> None:
        raise NotImplementedError

    def _show(self, node: ast.AST, limit: int = 40) -> str:
        return _short(ast.unparse(node), limit)

    def _module_like(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Call):
            return (self.qualname(node.func) or "") in IMPORTERS
        if isinstance(node, ast.Subscript):
            return self.qualname(node.value) == "sys.modules"
        if isinstance(node, ast.Name):
            return node.id in self.aliases or node.id in ("__builtins__", "builtins")
        return isinstance(node, ast.Attribute) and self._module_like(node.value)

    def _sensitive(self, qual: str) -> bool:
        last = qual.rsplit(".", 1)[-1]
        return (
            risky_call(qual) is not None
            or qual in EXEC | IMPORTERS | GETATTR | DESERIALIZERS
            or last in RISKY_ATTRS
            or last in WALK
            or _module_root(qual) in NATIVE
        )

    def _namespace_call(self, node: ast.Call) -> None:
        """``vars(os)`` / ``os.__dict__`` handed over whole, ``….__dict__.get(k)``, and
        ``type(lambda: 0)(code, …)`` (a function built from a code object)."""
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in ("get", "pop", "__getitem__") and node.args:
            lookup = ast.Subscript(value=func.value, slice=node.args[0], ctx=ast.Load())
            ast.copy_location(lookup, node)
            self._namespace_lookup(lookup)
        if isinstance(func, ast.Call) and isinstance(func.func, ast.Name) and func.func.id == "type":
            if func.args and isinstance(func.args[0], ast.Lambda):
                self._add(node, "dynamic-code", HIGH, "type(lambda: …)(…) builds a function from a "
                          "code object, which the review cannot read")

    def _whole_namespace(self, node: ast.AST) -> None:
        """``vars(os)`` or ``os.__dict__`` not indexed by a literal: every function of it."""
        parent = self.parents.get(node)
        if isinstance(parent, ast.Subscript) and parent.value is node:
            return
        if isinstance(parent, ast.Attribute) and parent.attr in ("get", "pop", "__getitem__"):
            return
        if isinstance(node, ast.Call):
            inner = node.args[0] if node.args else None
        else:
            inner = node.value  # type: ignore[attr-defined]
        if inner is not None and self._module_like(inner) and not isinstance(inner, ast.Call):
            self._add(node, "opaque-name", HIGH,
                      f"{self._show(node)} hands over a module's whole namespace, so what is "
                      "called from it was not reviewed")

    def _getattr_call(self, node: ast.Call, name: str) -> bool:
        if name not in GETATTR or len(node.args) < 2:
            return False
        obj, attr = node.args[0], node.args[1]
        shown = f"getattr({self._show(obj, 30)}, {self._show(attr, 30)})"
        names = self.strings.values(attr)
        if names is None:
            severity = HIGH if self._module_like(obj) else MEDIUM
            self._add(node, "opaque-name", severity,
                      f"{shown} looks up an attribute whose name is only known at run time, "
                      "so what it returns was not reviewed")
            return True
        base = self.qualname(obj) or "?"
        for value in sorted(names):
            if value in WALK:
                self._add(node, "introspection-walk", HIGH,
                          f"{shown} reaches {value}, the interpreter's internals")
            elif self._sensitive(f"{base}.{value}"):
                self._add(node, "opaque-name", HIGH,
                          f"{shown} looks up {base}.{value} by name, which hides the call")
        return True

    def _getter_call(self, node: ast.Call, name: str) -> bool:
        if name not in ("operator.attrgetter", "operator.methodcaller") or not node.args:
            return False
        args = node.args if name.endswith("attrgetter") else node.args[:1]
        for arg in args:
            names = self.strings.values(arg)
            if names is None:
                self._add(node, "opaque-name", HIGH,
                          f"{name}({self._show(arg)}) looks up a name only known at run time")
                return True
            risky = [n for n in names if n.rsplit(".", 1)[-1] in RISKY_ATTRS | WALK]
            if risky:
                self._add(node, "opaque-name", HIGH,
                          f"{name} looks up {risky[0]!r} by name, which hides the call")
                return True
        return True

    def _namespace_lookup(self, node: ast.Subscript) -> None:
        """``globals()[k]``, ``vars(m)[k]``, ``m.__dict__[k]``, ``sys.modules[k]``."""
        container = self._namespace_of(node.value)
        owner: str | None = None
        if isinstance(container, ast.Call) and (self.qualname(container.func) or "") in (
            "globals", "locals", "vars", "builtins.globals", "builtins.vars"
        ):
            owner = self._show(container.args[0]) if container.args else ""
            module_like = not container.args or self._module_like(container.args[0])
        elif isinstance(container, ast.Attribute) and container.attr == "__dict__":
            owner = self.qualname(container.value) or self._show(container.value)
            module_like = self._module_like(container.value)
        elif self.qualname(container) == "sys.modules":
            self._sys_modules(node)
            return
        if owner is None:
            return
        keys = self.strings.values(node.slice)
        shown = f"{self._show(container, 30)}[{self._show(node.slice, 30)}]"
        if keys is None:
            self._add(node, "opaque-name", HIGH if module_like else MEDIUM,
                      f"{shown} looks up a name only known at run time, so what it returns "
                      "was not reviewed")
            return
        for key in sorted(keys):
            qual = f"{owner}.{key}" if owner else key
            if key in WALK or self._sensitive(qual) or qual in EXEC | IMPORTERS | GETATTR:
                self._add(node, "opaque-name", HIGH, f"{shown} looks up {qual} by name, "
                          "which hides the call")

    def _namespace_of(self, node: ast.AST) -> ast.AST:
        """``g`` after ``g = globals()`` is ``globals()``; anything else is itself."""
        bound = self.strings.bindings.get(node.id, []) if isinstance(node, ast.Name) else []
        values = [v for _, v, loop in bound if v is not None and not loop]
        if len(bound) == 1 and len(values) == 1 and isinstance(values[0], ast.Call):
            if (self.qualname(values[0].func) or "") in ("globals", "locals", "vars"):
                return values[0]
        return node

    def _sys_modules(self, node: ast.Subscript) -> None:
        keys = self.strings.values(node.slice)
        if keys is None:
            self._add(node, "opaque-import", HIGH,
                      f"sys.modules[{self._show(node.slice)}] takes a module whose name is only "
                      "known at run time")
            return
        for key in sorted(k for k in keys if _module_root(k) in RISKY_MODULES):
            computed = not isinstance(node.slice, ast.Constant)
            self._add(node, "opaque-import", HIGH if computed else MEDIUM,
                      f"sys.modules[{self._show(node.slice)}] takes {key} without an import line")

    def _value_reference(self, node: ast.Name | ast.Attribute) -> None:
        """A dangerous function handed around instead of called where the review sees it."""
        parent = self.parents.get(node)
        if isinstance(parent, ast.Call) and parent.func is node:
            return
        if isinstance(parent, ast.Attribute) and parent.value is node:
            return
        qual = self.qualname(node) or ""
        if isinstance(node, ast.Name) and node.id in self.strings.bindings and qual == node.id:
            return  # a local name that shadows the builtin
        if risky_call(qual) == "shell":
            category, what = "shell-command", "the command it runs"
        elif qual in EXEC:
            category, what = "dynamic-code", "the code it runs"
        elif qual in GETATTR | IMPORTERS:
            category, what = "opaque-name", "what it looks up"
        else:
            return
        self._add(node, category, HIGH,
                  f"{qual} is passed around as a value ({self._show(parent or node)}), so "
                  f"{what} was not reviewed")
