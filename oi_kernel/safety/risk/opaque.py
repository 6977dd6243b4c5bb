"""Where the Python review fails closed: code whose effect the syntax tree does not show.

Imports and attribute lookups with computed names, ``exec``/``eval``/``compile`` of
anything but a literal (a literal is reviewed as code), decoding fed to execution,
unpickling, native code (``ctypes``/``cffi``), walks through interpreter internals
(``__globals__``, ``__subclasses__``, frames), dangerous functions passed around as values,
and any call given a network URL. Each gets a flag naming the line and what could not be
resolved; names the block spells out itself (``"sys" + "tem"``, a loop over literal names)
are resolved first (``names.StaticStrings``), so ordinary code stays quiet."""

from __future__ import annotations

import ast

from oi_kernel.safety.risk.common import _MAX_DEPTH, HIGH, MEDIUM, _Found, _short
from oi_kernel.safety.risk.common import nested_findings as _nested
from oi_kernel.safety.risk.names import StaticStrings
from oi_kernel.safety.risk.opaque_names import (
    _ANY_OBJECT_RUNNERS,
    _CODE_RUNNERS,
    _DOWNLOAD_CALLS,
    _IPYTHON_RUNNERS,
    _URL_SINKS,
    _WALK_CALLS,
    DECODERS,
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

_DECODER_WORDS = {name.rsplit(".", 1)[-1] for name in DECODERS} | {"decode"}


def _module_root(name: str) -> str:
    return name.split(".")[0]


class OpacityChecks:
    """Mixed into the Python reviewer: the checks above, on each node it visits."""

    depth: int
    aliases: dict[str, str]
    parents: dict[ast.AST, ast.AST]
    strings: StaticStrings
    decoded: set[str]

    def qualname(self, node: ast.AST) -> str | None:  # provided by the reviewer
        raise NotImplementedError

    def _add(self, node: ast.AST, category: str, severity: str, text: str) -> None:
        raise NotImplementedError

    def _is_remote(self, node: ast.AST) -> bool:
        raise NotImplementedError

    def _already_network(self, node: ast.Call) -> bool:
        raise NotImplementedError

    # -- helpers

    def _show(self, node: ast.AST, limit: int = 40) -> str:
        return _short(ast.unparse(node), limit)

    def _is_decoded(self, node: ast.AST) -> str | None:
        """The decoder whose output ``node`` carries (through names too), or None."""
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call) and (self.qualname(sub.func) or "") in DECODERS:
                return self.qualname(sub.func)
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute):
                codec = sub.args[0] if sub.args else None
                if sub.func.attr == "decode" and self._codec(codec):
                    return f".decode({self._show(codec)})"  # type: ignore[arg-type]
            if isinstance(sub, ast.Name) and sub.id in self.decoded:
                return f"'{sub.id}', decoded earlier in the block"
        return None

    def _codec(self, node: ast.AST | None) -> bool:
        values = self.strings.values(node) if node is not None else None
        plain = {"utf-8", "utf8", "ascii", "latin-1", "latin1", "utf-16", "cp1252", "ignore"}
        return bool(values) and any(v.lower() not in plain for v in values)  # type: ignore[union-attr]

    def _taint_decoded(self, tree: ast.AST) -> None:
        """Names that hold decoded bytes: ``p = zlib.decompress(...)`` → p."""
        self.decoded = set()
        source_words = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        source_words |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        if not source_words & _DECODER_WORDS:
            return  # nothing in the block can decode
        for _ in range(3):
            for node in ast.walk(tree):
                if isinstance(node, ast.Assign) and self._is_decoded(node.value):
                    self.decoded |= {
                        n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)
                    }

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

    def _nested(self, node: ast.AST, label: str, language: str, code: str) -> bool:
        """Review literal ``code`` as ``language``; True when that found anything."""
        if self.depth >= _MAX_DEPTH:
            self._add(node, "dynamic-code", HIGH, f"{label} runs code nested too deeply to review")
            return True
        found: _Found = _nested(language, code, self.depth + 1)
        for _, finding in found:
            self._add(node, finding.category, finding.severity, f"{label}: {finding.text}")
        return bool(found)

    # -- the checks, per node

    def opaque_visit(self, node: ast.AST) -> None:
        if isinstance(node, ast.Call):
            self._opaque_call(node, self.qualname(node.func) or "")
        elif isinstance(node, ast.Import | ast.ImportFrom):
            self._native_import(node)
        elif isinstance(node, ast.Attribute) and node.attr == "__dict__":
            self._whole_namespace(node)
        elif isinstance(node, ast.Attribute) and node.attr in WALK:
            self._add(node, "introspection-walk", HIGH,
                      f"{self._show(node)} reaches into the interpreter's internals "
                      f"({node.attr}), where the review cannot follow what is called")
        elif isinstance(node, ast.Name) and node.id in ("__builtins__", "__loader__"):
            self._add(node, "introspection-walk", HIGH,
                      f"{node.id} reaches the interpreter's built-ins, where the review cannot "
                      "follow what is called")
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            self._namespace_lookup(node)
        if isinstance(node, ast.Name | ast.Attribute) and isinstance(node.ctx, ast.Load):
            self._value_reference(node)

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

    def _opaque_call(self, node: ast.Call, name: str) -> None:
        self._namespace_call(node)
        if name in ("vars", "builtins.vars"):
            self._whole_namespace(node)
        checks = (self._getattr_call, self._import_call, self._getter_call, self._exec_call,
                  self._runner_call, self._ipython_call, self._deserialize_call, self._native_call)
        for check in checks:
            if check(node, name):
                break
        self._network_call_url(node, name)
        how = self._is_decoded(ast.Tuple(elts=list(node.args), ctx=ast.Load()))
        if how and risky_call(name) == "shell":
            self._add(node, "decode-exec", HIGH, f"{name} runs a command decoded by {how}")

    def _native_import(self, node: ast.Import | ast.ImportFrom) -> None:
        modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
        for module in modules:
            if _module_root(module) in NATIVE:
                self._add(node, "native-code", HIGH,
                          f"imports {module}, which calls native code the review cannot read")

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

    def _import_call(self, node: ast.Call, name: str) -> bool:
        if name not in IMPORTERS or not node.args:
            return False
        arg = node.args[0]
        names = self.strings.values(arg)
        if names is None:
            how = self._is_decoded(arg)
            what = f"decoded by {how}" if how else "only known at run time"
            self._add(node, "opaque-import", HIGH,
                      f"{name}({self._show(arg)}) imports a module whose name is {what}")
            return True
        computed = not isinstance(arg, ast.Constant)
        for module in sorted(names):
            if _module_root(module) in NATIVE:
                self._add(node, "native-code", HIGH,
                          f"{name} imports {module}, which calls native code")
            elif _module_root(module) in RISKY_MODULES and (computed or "import_module" not in name):
                severity, how = (HIGH, f"from a name built at run time ({self._show(arg)})") if computed \
                    else (MEDIUM, "inline, where an import line would show it")
                self._add(node, "opaque-import", severity, f"{name} imports {module} {how}")
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

    def _exec_call(self, node: ast.Call, name: str) -> bool:
        if name not in EXEC or not node.args:
            return False
        arg = node.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            self._nested(node, f"{name}({_short(repr(arg.value), 30)})", "python", arg.value)
            return True
        how = self._is_decoded(arg)
        if self._is_remote(arg):
            self._add(node, "dynamic-code", HIGH, f"{name} runs code downloaded from the network")
        elif how:
            self._add(node, "decode-exec", HIGH,
                      f"{name} runs code decoded at run time ({how}), which the review cannot read")
        else:
            self._add(node, "dynamic-code", HIGH,
                      f"{name} runs code built at run time ({self._show(arg)}), which was not reviewed")
        return True

    def _runner_call(self, node: ast.Call, name: str) -> bool:
        if name in _WALK_CALLS:
            self._add(node, "introspection-walk", HIGH,
                      f"{name} reaches the interpreter's frames, where the review cannot follow "
                      "what is called")
            return True
        if name not in _CODE_RUNNERS:
            return False
        arg = node.args[0] if node.args else None
        shown = self._show(arg) if arg is not None else "a path"
        how = self._is_decoded(node)
        if how and name.startswith("types."):
            self._add(node, "decode-exec", HIGH,
                      f"{name} builds a function from bytes decoded by {how}")
        else:
            self._add(node, "dynamic-code", HIGH,
                      f"{name} {_CODE_RUNNERS[name].format(arg=shown)}, which was not reviewed")
        return True

    def _ipython_call(self, node: ast.Call, name: str) -> bool:
        func = node.func
        if not isinstance(func, ast.Attribute) or func.attr not in _IPYTHON_RUNNERS:
            return False
        if func.attr not in _ANY_OBJECT_RUNNERS and not self._is_ipython(func.value):
            return False
        label = f"{self._show(func, 40)}"
        kind = _IPYTHON_RUNNERS[func.attr]
        texts = [self.strings.values(a) for a in node.args[:3]]
        if not node.args or any(t is None or len(t) != 1 for t in texts):
            self._add(node, "dynamic-code", HIGH,
                      f"{label} runs code built at run time, which was not reviewed")
            return True
        words = [next(iter(t)) for t in texts]  # type: ignore[arg-type]
        code = {
            "python": words[0],
            "shell": words[0],
            "line": "%" + " ".join(words[:2]),
            "cell": "%%" + " ".join(words[:2]) + "\n" + (words[2] if len(words) > 2 else ""),
        }[kind]
        self._nested(node, label, "shell" if kind == "shell" else "python", code)
        return True

    def _is_ipython(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Call):
            return (self.qualname(node.func) or "") in ("get_ipython", "IPython.get_ipython")
        if isinstance(node, ast.Name):
            bound = self.strings.bindings.get(node.id, [])
            return any(v is not None and self._is_ipython(v) for _, v, _ in bound)
        return False

    def _deserialize_call(self, node: ast.Call, name: str) -> bool:
        unsafe = any(
            k.arg in ("allow_pickle", "weights_only") and isinstance(k.value, ast.Constant)
            and k.value.value is (k.arg == "allow_pickle") for k in node.keywords
        )
        if name not in DESERIALIZERS and not unsafe:
            return False
        how = self._is_decoded(ast.Tuple(elts=list(node.args), ctx=ast.Load()))
        if how:
            self._add(node, "decode-exec", HIGH,
                      f"{name} unpickles bytes decoded by {how}: loading it runs whatever code "
                      "the data names")
        else:
            self._add(node, "deserialize", MEDIUM,
                      f"{name} runs whatever code the pickled data names, so loading it is "
                      "running it")
        return True

    def _native_call(self, node: ast.Call, name: str) -> bool:
        if _module_root(name) not in NATIVE and name != "mmap.mmap":
            return False
        if name == "mmap.mmap" and "PROT_EXEC" not in ast.unparse(node):
            return False
        self._add(node, "native-code", HIGH,
                  f"{name} calls native code (or maps executable memory), which the review "
                  "cannot read")
        return True

    # -- URLs and downloads

    def _network_call_url(self, node: ast.Call, name: str) -> None:
        label = name or self._show(node.func)
        last = label.rsplit(".", 1)[-1]
        if last in _URL_SINKS or self._already_network(node):
            return
        values = [*node.args, *(k.value for k in node.keywords)]
        url = next(filter(None, (self.strings.url(v) for v in values)), None)
        if url:
            self._add(node, "network", MEDIUM, f"{label} reaches {url} over the network")
        elif name.startswith(_DOWNLOAD_CALLS) or last == "from_pretrained" or any(
            k.arg == "download" and isinstance(k.value, ast.Constant) and k.value.value is True
            for k in node.keywords
        ):
            self._add(node, "network", MEDIUM, f"{label} downloads from the network")

    # -- namespaces and values

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

