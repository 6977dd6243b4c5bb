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
from oi_kernel.safety.risk.lookups import LookupChecks, _module_root
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
    IMPORTERS,
    NATIVE,
    RISKY_MODULES,
    WALK,
)
from oi_kernel.safety.risk.python_calls import risky_call

_DECODER_WORDS = {name.rsplit(".", 1)[-1] for name in DECODERS} | {"decode"}


class OpacityChecks(LookupChecks):
    """Mixed into the Python reviewer: the checks above, on each node it visits (those of
    names looked up at run time are ``LookupChecks``')."""

    depth: int
    decoded: set[str]

    def _is_remote(self, node: ast.AST) -> bool:
        raise NotImplementedError

    def _already_network(self, node: ast.Call) -> bool:
        raise NotImplementedError

    # -- helpers

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

