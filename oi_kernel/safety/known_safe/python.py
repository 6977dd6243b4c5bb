"""The known-safe check of Python code, through its syntax tree: every import, call,
attribute and builtin must resolve to the allowlist (``table.Table``); whatever does not is
named. Names are resolved through the block's imports (``from os import system as plot``
is ``os.system``); a name the block does not bind but that is a module's usual name (``pd``,
``os``) stands for that module; a call of a name defined outside the block is unknown
unless the session knows it was defined by a known-safe step. Pure: never runs anything."""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from oi_kernel.safety.known_safe.table import Table
from oi_kernel.safety.risk.names import StaticStrings

_PUBLIC_DUNDERS = frozenset({"__name__", "__doc__", "__version__", "__qualname__"})
_BUILTIN_NAMES = frozenset(dir(builtins))
_EXCEPTIONS = frozenset(n for n in _BUILTIN_NAMES if isinstance(getattr(builtins, n), type)
                        and issubclass(getattr(builtins, n), BaseException))
# Modules whose functions share names with data methods (os.rename, shutil.copy, …): a name
# of one that the block does not bind stands for the module, not for a variable.
_MODULE_NAMES = frozenset({
    "os", "sys", "shutil", "subprocess", "socket", "pickle", "ctypes", "pty", "importlib",
    "builtins", "asyncio", "multiprocessing", "threading", "marshal", "shelve", "sqlite3",
    "webbrowser", "urllib", "requests", "httpx", "tempfile", "io", "pathlib", "posix",
    "runpy", "atexit", "dill", "cloudpickle", "joblib", "keyring", "boto3", "paramiko",
    "glob", "zipfile", "tarfile", "gc", "inspect", "ssl", "http", "ftplib", "smtplib",
    "telnetlib", "xmlrpc", "selectors", "mmap", "fcntl"})
_URL = re.compile(r"^[A-Za-z][\w+.-]*://[^\s/]")
_SCHEME = re.compile(r"^[A-Za-z][\w+.-]*://$")
# A file that a later import, interpreter start or tool runs: code, not data, even when new.
CODE_FILE = re.compile(r"(?:^|/)(?:[\w.-]+\.(?:py|pyc|pth|so|sh|bash|zsh)|(?:site|user)customize)$")
_OUTSIDE = re.compile(r"^(?:/[\w.@-]|~|\.\.(?:/|$))|(?:^|/)\.\.(?:/|$)")
_MODE = re.compile(r"^[rwxabtU+]+$")
_PATH_TYPES = frozenset({"pathlib.Path", "pathlib.PosixPath", "pathlib.PurePath"})
_PATH_MOVES = frozenset({"rename", "replace"})  # on a path: they move a file over another
_STRING_METHODS = frozenset({"split", "rsplit", "replace", "strip", "lstrip", "rstrip", "join",
                             "startswith", "endswith", "count", "find", "rfind", "index",
                             "partition", "rpartition", "removeprefix", "removesuffix",
                             "contains", "cat", "get"})


@dataclass
class Findings:
    """What one block uses that is not known safe, and what it writes."""

    unknown: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)

    def add(self, what: str) -> None:
        if what not in self.unknown:
            self.unknown.append(what)

    def wrote(self, what: str) -> None:
        if what not in self.writes:
            self.writes.append(what)


class PythonCheck:
    """Walks one parsed block (``run``) and fills ``found``."""

    def __init__(self, table: Table, aliases: dict[str, str], known_defs: frozenset[str],
                 found: Findings, objects: dict[str, str] | None = None) -> None:
        self.t = table
        self.free_aliases = aliases  # pd -> pandas: modules earlier steps imported, usual names
        self.objects = objects or {}  # names earlier steps imported from modules
        self.known_defs = known_defs
        self.found = found
        self.aliases: dict[str, str] = {}  # bound by this block's imports
        self.module_aliases: set[str] = set()  # of them, `import x (as y)`: modules
        self._strings: StaticStrings | None = None
        self.tree: ast.AST | None = None
        self.callable_names: set[str] = set()  # def, class, lambda, a call's result, parameter
        self.bound: set[str] = set()
        self.parents: dict[ast.AST, ast.AST] = {}
        self.paths: set[str] = set()  # names assigned a path built in the block

    # ------------------------------------------------------------------ names
    def run(self, tree: ast.AST) -> None:
        self.tree = tree
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
            self._bind(node)
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and self._is_path(node.value):
                self.paths.update(t.id for t in node.targets if isinstance(t, ast.Name))
        for node in ast.walk(tree):
            self._visit(node)

    def _bind(self, node: ast.AST) -> None:
        if isinstance(node, ast.Import | ast.ImportFrom):
            self._import(node)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            self.bound.add(node.name)
            self.callable_names.add(node.name)
            if node.name == "__del__":
                self.found.add("a finalizer (`__del__`): it runs later, outside this step")
        elif isinstance(node, ast.arg):
            self.bound.add(node.arg)
            self.callable_names.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            self.bound.add(node.id)
            parent = self.parents.get(node)
            value = getattr(parent, "value", None)
            if not isinstance(parent, ast.Assign | ast.AnnAssign | ast.NamedExpr) or (
                    isinstance(value, ast.Call | ast.Lambda)):
                self.callable_names.add(node.id)  # a loop variable, a with target, a result
        elif isinstance(node, ast.ExceptHandler) and node.name:
            self.bound.add(node.name)

    def _import(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if not self.t.module(alias.name):
                    self.found.add(f"import {alias.name}")
                local = alias.asname or alias.name.split(".")[0]
                self.aliases[local] = alias.name if alias.asname else local
                self.module_aliases.add(local)
                self.bound.add(local)
            return
        module = node.module or ""
        if node.level:
            self.found.add(f"a relative import from {'.' * node.level}{module}")
        for alias in node.names:
            if alias.name == "*":
                self.found.add(f"from {module} import *")
                continue
            name = f"{module}.{alias.name}"
            if self.t.is_module(name):
                self.module_aliases.add(alias.asname or alias.name)
            elif not self.t.module(module):
                self.found.add(f"import {name}")
            elif not self.t.known(name):
                self.found.add(f"`{name}`" if name not in self.t.process
                               else f"`{name}` (it starts a process)")
            local = alias.asname or alias.name
            self.aliases[local] = name
            self.bound.add(local)
            self.callable_names.add(local)

    def qualify(self, node: ast.AST) -> str | None:
        """``os.path.join`` for a chain rooted in a module's name; None otherwise."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        root = self.aliases.get(node.id)
        if root is None and node.id in self.objects and node.id not in self.bound:
            root = self.objects[node.id]
        elif root is None and node.id not in self.bound:
            root = self.free_aliases.get(node.id) or (
                node.id if node.id in _MODULE_NAMES else None)
        return ".".join([root, *reversed(parts)]) if root else None

    # ------------------------------------------------------------------ nodes
    def _visit(self, node: ast.AST) -> None:
        if isinstance(node, ast.Call):
            self._call(node)
        elif isinstance(node, ast.Attribute):
            self._attribute(node)
        elif isinstance(node, ast.Name):
            self._name(node)
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store | ast.Del):
            self._store(node.value, node)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            parent = self.parents.get(node)
            if isinstance(parent, ast.JoinedStr) and parent.values[0] is not node:
                if _OUTSIDE.search("x" + node.value):  # f"{base}/../x": a `..` part
                    self.found.add(f"the path `…{_short(node.value)}` (outside the workspace)")
            else:
                self._string(node.value, node)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            folded = _fold(node)
            if folded and not isinstance(self.parents.get(node), ast.BinOp):
                self._string(folded, node)

    def _chain_top(self, node: ast.AST) -> bool:
        parent = self.parents.get(node)
        return not (isinstance(parent, ast.Attribute) and parent.value is node)

    def _name(self, node: ast.Name) -> None:
        name = node.id
        if not isinstance(node.ctx, ast.Load) or not self._chain_top(node):
            return
        if name in self.aliases:
            qualified = self.aliases[name]
            if name in self.module_aliases:
                self.found.add(f"the module `{qualified}` used as a value")
            elif not self._called(node):
                self._qualified(qualified)
        elif name in self.bound:
            return
        elif name in self.objects:
            if not self._called(node):
                self._qualified(self.objects[name])
        elif name.startswith("__") and name not in self.t.builtins:
            self.found.add(f"`{name}`")
        elif (name in _BUILTIN_NAMES and name not in self.t.builtins
              and name not in _EXCEPTIONS and not self._called(node)):
            self.found.add(f"`{name}`")
        elif name in _MODULE_NAMES:
            self.found.add(f"the module `{self.qualify(node)}` used as a value")

    def _called(self, node: ast.AST) -> bool:
        parent = self.parents.get(node)
        return isinstance(parent, ast.Call) and parent.func is node

    def _attribute(self, node: ast.Attribute) -> None:
        if isinstance(node.ctx, ast.Store | ast.Del):
            self._store(node, node)
            return
        qualified = self.qualify(node)
        if qualified is not None:
            if self._chain_top(node) and not self._called(node):
                self._qualified(qualified)
            return
        if self._private(node.attr):
            self.found.add(f"the private attribute `.{node.attr}`")
        elif node.attr in self.t.methods_never and not self._called(node):
            self.found.add(f"`.{node.attr}`")

    def _private(self, attr: str) -> bool:
        return attr.startswith("_") and attr not in _PUBLIC_DUNDERS

    def _qualified(self, name: str) -> bool:
        if self.t.known(name) or self.t.is_module(name):
            return True
        self.found.add(f"`{name}`" if name not in self.t.process
                       else f"`{name}` (it starts a process)")
        return False

    def _store(self, target: ast.AST, node: ast.AST) -> None:
        """``obj.x = v``, ``d[k] = v``, ``del …``: a module's state only where settable."""
        qualified = self.qualify(target)
        if qualified is not None:
            if qualified not in self.t.settable:
                self.found.add(f"a change to `{qualified}`")
        elif isinstance(target, ast.Attribute) and self._private(target.attr):
            self.found.add(f"a change to the private attribute `.{target.attr}`")

    def _string(self, text: str, node: ast.AST) -> None:
        parent = self.parents.get(node)
        if _SCHEME.match(text) and (isinstance(parent, ast.JoinedStr | ast.BinOp)
                                    or isinstance(node, ast.BinOp)):
            self.found.add(f"an address built at run time (`{_short(text)}…`)")
        elif _URL.match(text):
            self.found.add(f"the address `{_short(text)}`")
        elif _OUTSIDE.search(text) or (text in ("/", "~") and self._path_argument(node, parent)):
            self.found.add(f"the path `{_short(text)}` (outside the workspace)")
        elif CODE_FILE.search(text):
            self.found.add(f"the code file `{_short(text)}` (a later import or tool runs it)")

    def _path_argument(self, node: ast.AST, parent: ast.AST | None) -> bool:
        if isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Div):
            return True
        if not isinstance(parent, ast.Call) or node not in parent.args:
            return False
        func = parent.func
        return not (isinstance(func, ast.Attribute) and self.qualify(func) is None
                    and func.attr in _STRING_METHODS)

    # ------------------------------------------------------------------ calls
    def _call(self, node: ast.Call) -> None:
        self._keywords(node)
        func = node.func
        if isinstance(func, ast.Name):
            self._call_name(node, func.id)
        elif isinstance(func, ast.Attribute):
            qualified = self.qualify(func)
            if qualified is not None:
                self._call_qualified(node, qualified)
            else:
                self._call_method(node, func.attr)
        elif isinstance(func, ast.Subscript):
            self.found.add(f"a call of `{_short(ast.unparse(func))}`")

    def _call_name(self, node: ast.Call, name: str) -> None:
        if name in self.aliases:
            self._call_qualified(node, self.aliases[name])
        elif name in self.bound:
            if name not in self.callable_names:
                self.found.add(f"a call of `{name}`, whose value the review cannot follow")
        elif name in ("getattr", "setattr", "delattr", "hasattr"):
            self._getattr(node, name)
        elif name == "open":
            _check_mode(self.found, self.strings, node, "open", self.t.modes["open"])
        elif name in self.objects:
            self._call_qualified(node, self.objects[name])
        elif name in self.t.builtins or name in _EXCEPTIONS or name in self.known_defs:
            return
        elif name in _BUILTIN_NAMES or name.startswith("__"):
            self.found.add(f"`{name}`")
        else:
            self.found.add(f"`{name}` (defined outside this block)")

    def _call_qualified(self, node: ast.Call, name: str) -> None:
        if not self._qualified(name):
            return
        if name in self.t.modes:
            _check_mode(self.found, self.strings, node, name, self.t.modes[name])
        if name in self.t.writes:
            self.found.wrote(f"`{name}`")
        if name in self.t.literal_argument:
            self._literal_arguments(node, name)
        if name in self.t.markup and any(
                _literal(a) is None or "<" in (_literal(a) or "") for a in node.args):
            self.found.add(f"`{name}` of text that is not a literal (it is shown as trusted "
                           "markup: a browser would run what it carries)")
        if name in self.t.native_readers:
            where = node.args[0] if node.args else next(
                (k.value for k in node.keywords if k.arg in ("source", "path", "file")), None)
            if where is not None and _literal(where) is None:
                self.found.add(f"`{name}` of a path the review cannot read (native code "
                               "opens it where the run-time guard cannot see)")
        if name in self.t.options:
            first = _literal(node.args[0]) if node.args else None
            if first is None or first not in self.t.options[name]:
                self.found.add(f"`{name}` of an option other than display settings")

    def _call_method(self, node: ast.Call, method: str) -> None:
        if method == "open":
            _check_mode(self.found, self.strings, node, ".open", self.t.modes[".open"])
        elif method in self.t.literal_argument:
            self._literal_arguments(node, f".{method}")
        elif not self.t.method(method):
            self.found.add(f"`.{method}`")
        elif method in _PATH_MOVES and self._is_path(node.func.value):  # type: ignore[attr-defined]
            self.found.add(f"`Path.{method}` (it moves or replaces a file)")
        elif method in self.t.method_writes and (node.args or node.keywords):
            self.found.wrote(f"`.{method}`")

    def strings(self, node: ast.AST) -> frozenset[str] | None:
        """The values ``node`` may hold, when the block spells them out (else None)."""
        if self._strings is None:
            self._strings = StaticStrings(self.tree or node)
        return self._strings.values(node)

    def _literal_arguments(self, node: ast.Call, name: str) -> None:
        """pandas' expression language, attrgetter: only literal text without private names,
        `@` (local variables), imports or lambdas."""
        texts = [_literal(a) for a in node.args] or [None]
        if any(t is None or any(w in t for w in ("__", "@", "import", "lambda")) or
               any(part in self.t.methods_never for part in re.findall(r"\w+", t))
               for t in texts):
            self.found.add(f"`{name}` of an expression the review cannot read")

    def _is_path(self, node: ast.AST) -> bool:
        """Whether ``node`` is a path built in this block: ``Path(…)``, ``p / "x"``, or a
        name assigned from one."""
        while isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            node = node.left
        if isinstance(node, ast.Call):
            return self.qualify(node.func) in _PATH_TYPES or (
                isinstance(node.func, ast.Name)
                and self.aliases.get(node.func.id, self.objects.get(node.func.id)) in _PATH_TYPES)
        if isinstance(node, ast.Name):
            return node.id in self.paths
        return False

    def _getattr(self, node: ast.Call, name: str) -> None:
        attrs = self.strings(node.args[1]) if len(node.args) > 1 else None
        if attrs is None:
            self.found.add(f"`{name}` with a computed attribute name")
            return
        target = self.qualify(node.args[0]) if node.args else None
        for attr in sorted(attrs):
            if self._private(attr) or attr in self.t.methods_never:
                self.found.add(f"`{name}` of `{attr}`")
            elif name != "hasattr" and target is not None:
                self._qualified(f"{target}.{attr}")
                if name != "getattr":
                    self.found.add(f"a change to `{target}`")

    def _keywords(self, node: ast.Call) -> None:
        for keyword in node.keywords:
            if keyword.arg is None:
                continue  # **kwargs: their names are the caller's values, checked as such
            if keyword.arg in self.t.keywords:
                want = self.t.keywords[keyword.arg]
                value = keyword.value
                if not (isinstance(value, ast.Constant) and value.value == want):
                    self.found.add(f"`{keyword.arg}={_short(ast.unparse(value))}`")


def _check_mode(found: Findings, strings: Callable[[ast.AST], frozenset[str] | None],
                node: ast.Call, name: str, rule: dict) -> None:
    """What an open call's mode does to a file (``rule``: the table's for ``name``)."""
    shown = name.lstrip(".")
    mode_node = next((k.value for k in node.keywords if k.arg == "mode"), None)
    index = rule["arg"]
    if mode_node is None and name == ".open":
        literals = [_literal(a) for a in node.args[:2]]
        if any(lit is None for lit in literals):
            found.add(f"`.{shown}` with a mode the review cannot read")
            return
        mode = next((m for m in literals if m and _MODE.match(m)), "r")
    elif mode_node is None and len(node.args) <= index:
        mode = "r"
    else:
        modes = strings(mode_node if mode_node is not None else node.args[index])
        if not modes:
            found.add(f"`{shown}(…)` with a mode the review cannot read")
            return
        for mode in sorted(modes):
            _one_mode(found, shown, mode, rule)
        return
    _one_mode(found, shown, mode, rule)

def _one_mode(found: Findings, shown: str, mode: str, rule: dict) -> None:
    mode = mode.split(":")[0]
    if "a" in mode or "+" in mode:
        found.add(f"`{shown}(…, {mode!r})` (it changes an existing file)")
    elif "w" in mode or "x" in mode:
        if rule.get("write"):
            found.wrote(f"`{shown}(…, {mode!r})`")
        else:
            found.add(f"`{shown}(…, {mode!r})` (it writes through native code)")


def _literal(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _fold(node: ast.AST) -> str | None:
    """The leading literal text of ``"a" + "b" + x`` ("ab")."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left = _fold(node.left)
        right = _literal(node.right)
        return left + right if left is not None and right is not None else left
    return _literal(node)


def _short(text: str, limit: int = 50) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
