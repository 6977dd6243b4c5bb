"""Python code, read through its syntax tree (imports and aliases resolved), and the IPython
syntax around it: ``!`` and ``%`` lines and cell magics, whose bodies go to their own reviewer."""

from __future__ import annotations

import ast
import shlex
from collections.abc import Callable

from oi_kernel.safety.redact import is_secret_name
from oi_kernel.safety.risk.common import (
    _MAX_DEPTH,
    _ROOT_LIKE,
    HIGH,
    MEDIUM,
    _credential,
    _Finding,
    _Found,
    _is_disk_device,
    _is_system_path,
    _short,
    nested_findings,
)
from oi_kernel.safety.risk.names import QualifiedNames, StaticStrings
from oi_kernel.safety.risk.opaque import OpacityChecks
from oi_kernel.safety.risk.python_calls import (
    _DELETE_CALLS,
    _DUMPERS,
    _ENV_READS,
    _KILL_CALLS,
    _MODE,
    _MOVE_CALLS,
    _NETWORK_MODULES,
    _NOT_NETWORK,
    _OPEN_CALLS,
    _PERMISSION_CALLS,
    _PRIVILEGE_CALLS,
    _SHELL_CALLS,
    _SHELL_PREFIXES,
)

# ---------------------------------------------------------------- python



def _literal(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _target(node: ast.AST) -> str | None:
    """The literal path an expression names: ``"x"``, ``Path("a", "b")``, ``Path("/etc") / "x"``."""
    text = _literal(node)
    if text is not None:
        return text
    if isinstance(node, ast.Call) and node.args and len(node.args) <= 4:
        parts = [_target(a) for a in node.args]
        return "/".join(p for p in parts if p is not None) if None not in parts else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        left, right = _target(node.left), _target(node.right)
        return f"{left.rstrip('/')}/{right}" if left is not None and right is not None else None
    return None


def _render(node: ast.AST) -> str | None:
    """Source-like text of a command argument; run-time parts appear as ``{expr}``.

    ``["rm", "-rf", path]`` → ``rm -rf {path}``; ``f"ls {d}"`` → ``ls {d}``.
    """
    text = _literal(node)
    if text is not None:
        return text
    if isinstance(node, ast.JoinedStr):
        return "".join(
            str(v.value) if isinstance(v, ast.Constant) else "{" + ast.unparse(v) + "}"
            for v in node.values
        )
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _render(node.left), _render(node.right)
        return left + right if left is not None and right is not None else None
    if isinstance(node, ast.List | ast.Tuple):
        words = [_literal(e) for e in node.elts]
        shown = [
            shlex.quote(w) if w is not None else "{" + ast.unparse(e) + "}"
            for w, e in zip(words, node.elts, strict=True)
        ]
        return " ".join(shown)
    return None


def _plain(node: ast.AST) -> bool:
    """A name or a dotted name (``os.system``), not a lookup built by a call or subscript."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


class _PythonReviewer(OpacityChecks):
    """Walks one parsed module and collects findings with their lines."""

    def __init__(self, tree: ast.Module, depth: int) -> None:
        self.tree = tree
        self.depth = depth
        self.parents: dict[ast.AST, ast.AST] = {}
        self.tainted: set[str] = set()
        self.decoded: set[str] = set()
        self.strings = StaticStrings(tree)
        self.names = QualifiedNames(tree, self.strings)
        self.aliases = self.names.aliases
        self.found: _Found = []

    def run(self) -> _Found:
        for node in ast.walk(self.tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
        self._taint()
        self._taint_decoded(self.tree)
        for node in ast.walk(self.tree):
            self._visit(node)
        return self.found

    def _add(self, node: ast.AST, category: str, severity: str, text: str) -> None:
        self.found.append((getattr(node, "lineno", 0), _Finding(category, severity, text)))

    def qualname(self, node: ast.AST) -> str | None:
        """``sh.rmtree`` → ``shutil.rmtree`` after ``import shutil as sh``."""
        return self.names.qualname(node)

    def _is_network_call(self, node: ast.AST) -> bool:
        if not isinstance(node, ast.Call):
            return False
        name = self.qualname(node.func) or ""
        last = name.rsplit(".", 1)[-1]
        if last.endswith(("Error", "Exception", "Timeout", "Limits")) or last in _NOT_NETWORK:
            return False
        return any(name == m or name.startswith(m + ".") for m in _NETWORK_MODULES)

    def _is_remote(self, node: ast.AST) -> bool:
        """Does ``node`` contain a network call or a variable that holds downloaded data?"""
        return any(
            self._is_network_call(n) or isinstance(n, ast.Name) and n.id in self.tainted
            for n in ast.walk(node)
        )

    def _already_network(self, node: ast.Call) -> bool:
        return self._is_network_call(node)

    def _taint(self) -> None:
        for _ in range(3):  # follow `r = requests.get(u)` → `code = r.text` → `exec(code)`
            for node in ast.walk(self.tree):
                if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    if self._is_remote(node.value):
                        self.tainted |= {
                            n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)
                        }
                elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                    if self._is_remote(node.context_expr):
                        self.tainted |= {
                            n.id for n in ast.walk(node.optional_vars) if isinstance(n, ast.Name)
                        }

    # -- visiting

    def _visit(self, node: ast.AST) -> None:
        self.opaque_visit(node)
        if isinstance(node, ast.Call):
            self._call(node)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            path = _credential(node.value)
            if path:
                text = f"refers to '{_short(node.value, 50)}', a credentials file"
                self._add(node, "credentials", HIGH, text)
        elif isinstance(node, ast.Subscript):
            self._env_subscript(node)
        if isinstance(node, ast.Name | ast.Attribute) and self.qualname(node) == "os.environ":
            self._env_dump(node)

    def _call(self, node: ast.Call) -> None:
        name = self.qualname(node.func)
        handlers: tuple[Callable[[ast.Call, str], bool], ...] = (
            self._shell_call,
            self._delete_call,
            self._move_call,
            self._open_call,
            self._network_call,
            self._env_call,
            self._misc_call,
        )
        if name and any(handler(node, name) for handler in handlers):
            return
        if isinstance(node.func, ast.Attribute):
            self._method_call(node, node.func)

    def _shell_call(self, node: ast.Call, name: str) -> bool:
        if name not in _SHELL_CALLS and not name.startswith(_SHELL_PREFIXES):
            return False
        text = self._command_text(node, name)
        findings = [f for _, f in nested_findings("shell", text, self.depth + 1)] if text else []
        for finding in findings if self.depth < _MAX_DEPTH else []:
            self._add(node, finding.category, finding.severity, f"{name}: {finding.text}")
        if not _plain(node.func):
            shown = f"`{_short(text)}`" if text else "a command"
            self._add(node, "shell-command", HIGH, f"{name}, looked up indirectly "
                      f"({_short(ast.unparse(node.func), 50)}), runs {shown}")
        elif not findings and (text is None or text.startswith("{")):
            what = f"`{_short(text)}`" if text else "a command"
            text = f"{name} runs {what} built at run time, so it was not reviewed"
            self._add(node, "shell-command", MEDIUM, text)
        return True

    def _command_text(self, node: ast.Call, name: str) -> str | None:
        keyword = next((k.value for k in node.keywords if k.arg == "args"), None)
        if keyword is not None:
            return _render(keyword)
        if name == "asyncio.create_subprocess_exec":
            return _render(ast.List(elts=list(node.args), ctx=ast.Load()))
        if name.startswith(_SHELL_PREFIXES):
            seq = next((a for a in node.args if isinstance(a, ast.List | ast.Tuple)), None)
            return _render(seq) if seq is not None else None
        return _render(node.args[0]) if node.args else None

    def _delete_call(self, node: ast.Call, name: str) -> bool:
        if name not in _DELETE_CALLS:
            return False
        severity, template = _DELETE_CALLS[name]
        arg = node.args[0] if node.args else None
        target = _target(arg) if arg is not None else None
        shown = f"'{target}'" if target is not None else _short(ast.unparse(arg), 40) if arg else ""
        text = f"{name} {template.format(target=shown)}"
        if target is not None and (target in _ROOT_LIKE or _is_system_path(target)):
            severity = HIGH
            text += f": {_ROOT_LIKE.get(target, 'a system directory')}"
        self._add(node, "delete-files", severity, text)
        return True

    def _move_call(self, node: ast.Call, name: str) -> bool:
        if name not in _MOVE_CALLS:
            return False
        dst = node.args[1] if len(node.args) > 1 else None
        dst_text = _target(dst) if dst is not None else None
        if dst_text is not None and _is_system_path(dst_text):
            self._add(
                node, "system-config", HIGH, f"{name} writes '{dst_text}' in a system directory"
            )
        else:
            shown = f"'{dst_text}'" if dst_text else "the destination"
            self._add(
                node,
                "overwrite-file",
                MEDIUM,
                f"{name} moves a file onto {shown}, replacing it if it exists",
            )
        return True

    def _open_call(self, node: ast.Call, name: str) -> bool:
        if name not in _OPEN_CALLS:
            return False
        path = node.args[0] if node.args else None
        mode = node.args[1] if len(node.args) > 1 else None
        mode = next((k.value for k in node.keywords if k.arg == "mode"), mode)
        self._check_open(node, path, _literal(mode) or "r", name)
        return True

    def _check_open(self, node: ast.Call, path: ast.AST | None, mode: str, name: str) -> None:
        target = _target(path) if path is not None else None
        writes = bool(set(mode) & set("wax+"))
        if target is not None and writes and _is_disk_device(target):
            self._add(node, "disk", HIGH, f"{name} writes onto the device {target}")
        elif target is not None and writes and _is_system_path(target):
            self._add(
                node, "system-config", HIGH, f"{name} writes '{target}' in a system directory"
            )
        elif "w" in mode:
            shown = f"'{target}'" if target is not None else "a file"
            self._add(
                node,
                "overwrite-file",
                MEDIUM,
                f"{name}(…, {mode!r}) replaces the contents of {shown}",
            )

    def _network_call(self, node: ast.Call, name: str) -> bool:
        if not self._is_network_call(node):
            return False
        url = _literal(node.args[0]) if node.args else None
        where = f" ({_short(url, 50)})" if url else ""
        self._add(node, "network", MEDIUM, f"{name} connects to the network{where}")
        return True

    def _env_call(self, node: ast.Call, name: str) -> bool:
        if name not in _ENV_READS:
            return False
        var = _literal(node.args[0]) if node.args else None
        if var is not None and is_secret_name(var):
            self._add(
                node, "secrets-env", HIGH, f"{name} reads the secret environment variable {var}"
            )
        return True

    def _misc_call(self, node: ast.Call, name: str) -> bool:
        if name in _KILL_CALLS:
            self._add(
                node, "process-kill", MEDIUM, f"{name} sends a signal that can stop a process"
            )
        elif name in _PERMISSION_CALLS:
            target = _target(node.args[0]) if node.args else None
            severity = HIGH if target is not None and _is_system_path(target) else MEDIUM
            self._add(
                node,
                "permissions",
                severity,
                f"{name} changes permissions or owner of {target or 'a path'}",
            )
        elif name in _PRIVILEGE_CALLS:
            self._add(node, "privilege", HIGH, f"{name} changes the user the process runs as")
        elif name in ("pip.main", "pip._internal.main"):
            self._add(node, "package-install", MEDIUM, f"{name} changes the installed packages")
        else:
            return False
        return True

    def _method_call(self, node: ast.Call, func: ast.Attribute) -> None:
        """Calls on objects whose type is unknown: pathlib-style methods and `.open(mode)`."""
        owner = _short(ast.unparse(func.value), 40)
        target = _target(func.value)
        if func.attr in ("unlink", "rmdir") and not node.args:
            self._add(
                node,
                "delete-files",
                MEDIUM,
                f"{owner}.{func.attr}() deletes {repr(target) if target else 'the path'}",
            )
        elif func.attr in ("write_text", "write_bytes"):
            if target is not None and _is_system_path(target):
                self._add(
                    node,
                    "system-config",
                    HIGH,
                    f"{func.attr} writes '{target}' in a system directory",
                )
            else:
                self._add(
                    node,
                    "overwrite-file",
                    MEDIUM,
                    f"{owner}.{func.attr}() replaces the contents of the file",
                )
        elif func.attr == "open":
            self._method_open(node, func)

    def _method_open(self, node: ast.Call, func: ast.Attribute) -> None:
        """``Path("x").open("w")``, ``tarfile.open("x.tar", "w")``."""
        literals = [_literal(a) for a in node.args[:2]]
        mode_at = next((i for i, m in enumerate(literals) if m and _MODE.fullmatch(m)), None)
        mode = next((_literal(k.value) for k in node.keywords if k.arg == "mode"), None)
        mode = mode or (literals[mode_at] if mode_at is not None else "r")
        path = node.args[0] if node.args and mode_at != 0 else func.value
        self._check_open(node, path, mode, f"{_short(ast.unparse(func.value), 40)}.open")

    def _env_subscript(self, node: ast.Subscript) -> None:
        if self.qualname(node.value) != "os.environ":
            return
        var = _literal(node.slice)
        if var is not None and is_secret_name(var):
            verb = "sets" if isinstance(node.ctx, ast.Store) else "reads"
            self._add(
                node,
                "secrets-env",
                HIGH,
                f"os.environ[...] {verb} the secret environment variable {var}",
            )

    def _env_dump(self, node: ast.AST) -> None:
        parent = self.parents.get(node)
        dumped = isinstance(parent, ast.Expr | ast.FormattedValue) or (
            isinstance(parent, ast.Attribute) and parent.attr in ("items", "values")
        )
        if isinstance(parent, ast.Call) and node in parent.args:
            dumped = self.qualname(parent.func) in _DUMPERS
        if dumped:
            self._add(
                node,
                "secrets-env",
                MEDIUM,
                "shows the whole environment, which may include secrets",
            )
