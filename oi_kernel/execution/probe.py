"""What a step changed, and checkpoints to roll it back: the part that runs where the code runs.

Standard library only, never imported as ``oi_kernel...``: ``probe_loader`` runs this file
and ``probe_checkpoints.py`` as one private module, ``sys.modules['_oi_probe']``, in the
child kernel (``ChildRunner``) or in the user's process (``ShellExecutor``, for ``%%oi``);
nothing is added to the user's namespace. Both call ``call(name, *args)``, whose results are
JSON-ready.

Change summary (``begin`` / ``end``): each public variable is fingerprinted by identity,
type and a cheap description (length, shape, dtype, or the value of small scalars and short
strings); nothing is pickled or copied. The working directory is scanned with ``os.scandir``
(size, mtime, inode) within a time budget and a file cap, skipping caches and VCS folders.

Checkpoints (``checkpoint`` / ``restore``): ``os.fork`` keeps a frozen copy-on-write image of
the process, costing page tables at checkpoint time and memory only as pages change; only at
restore does the fork pickle the namespace to a file, which the process loads. Functions,
classes and modules are restored by reference; values that cannot be pickled are named.
Files: an audit hook saves a file's pre-image the first time a step opens it for writing,
renames or removes it (within a size budget); shell steps, which the hook cannot see, get a
bounded copy of the scanned files before they run. Files created after the checkpoint are
removed on restore.
"""

from __future__ import annotations

import json
import os
import sys
import time
import types

SKIP_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", ".ipynb_checkpoints", "node_modules",
                       ".venv", "venv", ".tox", ".mypy_cache", ".pytest_cache", ".ruff_cache",
                       ".oi_checkpoints", ".cache"})
HIDDEN_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython"})
SHORT_TEXT = 40
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC


class Settings:
    scan_budget_s = 0.05
    max_files = 20_000
    max_file_bytes = 10_000_000
    max_total_bytes = 100_000_000
    store = ""  # where pre-images and dumps go
    restore_timeout_s = 120.0
    ignore = ()  # absolute paths not scanned (e.g. the session log's folder)


# ----------------------------------------------------------------------------- variables
def _namespace():
    shell = _shell()
    return shell.user_ns if shell is not None else sys.modules["__main__"].__dict__


def _shell():
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()


def public_names(ns):
    """The user's variables: no ``_`` names, no IPython names, no modules."""
    shell = _shell()
    hidden = getattr(shell, "user_ns_hidden", {}) if shell is not None else {}
    missing = object()
    out = {}
    for name, value in list(ns.items()):
        if not isinstance(name, str) or name.startswith("_") or name in HIDDEN_NAMES:
            continue
        if isinstance(value, types.ModuleType) or hidden.get(name, missing) is value:
            continue
        out[name] = value
    return out


def describe(value):
    """A short description: ``int 2``, ``str 'abc'``, ``list[3]``, ``DataFrame 1000×5``."""
    kind = type(value).__name__
    if value is None or isinstance(value, (bool, int, float, complex)):
        text = repr(value)
        return f"{kind} {text}" if len(text) <= SHORT_TEXT else f"{kind} ({len(text)} digits)"
    if isinstance(value, str):
        return f"str {value!r}" if len(value) <= SHORT_TEXT else f"str[{len(value)}]"
    if isinstance(value, (bytes, bytearray, list, tuple, dict, set, frozenset)):
        return f"{kind}[{len(value)}]"
    try:
        shape = getattr(value, "shape", None)
        if isinstance(shape, tuple):
            text = f"{kind} {'×'.join(str(n) for n in shape) or 'scalar'}"
            dtype = getattr(value, "dtype", None)
            if dtype is not None and getattr(value, "columns", None) is None:
                text += f" {dtype}"
            return text
    except Exception:
        pass
    if isinstance(value, type):
        return f"class {value.__qualname__}"
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType)):
        return "function"
    return kind


def _fingerprint(value):
    """Identity, description, and for small lists/dicts the identities of their items (an
    in-place append or item change shows without copying anything)."""
    version = None
    if isinstance(value, (list, dict)) and len(value) <= 1000:
        items = value.items() if isinstance(value, dict) else enumerate(value)
        version = hash(tuple((k if isinstance(k, (str, int)) else id(k), id(v))
                             for k, v in items))
    return (id(value), describe(value), version)


def fingerprints(ns):
    return {name: _fingerprint(value) for name, value in public_names(ns).items()}


def diff_variables(before, after):
    changes = []
    for name, fp in after.items():
        old = before.get(name)
        if old is None:
            changes.append({"name": name, "change": "new", "after": fp[1]})
        elif old != fp:
            changes.append({"name": name, "change": "changed", "before": old[1],
                            "after": fp[1]})
    changes += [{"name": n, "change": "deleted", "before": fp[1]}
                for n, fp in before.items() if n not in after]
    return changes


# ----------------------------------------------------------------------------- files
def scan(root, budget_s=None, max_files=None):
    """``({relative path: (size, mtime_ns, inode)}, complete)`` of regular files under root."""
    budget_s = Settings.scan_budget_s if budget_s is None else budget_s
    max_files = Settings.max_files if max_files is None else max_files
    deadline = time.perf_counter() + budget_s
    ignore = frozenset(Settings.ignore)
    found = {}
    stack = [root]
    while stack:
        top = stack.pop()
        try:
            entries = os.scandir(top)
        except OSError:
            continue
        with entries:
            for entry in entries:
                if len(found) >= max_files or time.perf_counter() > deadline:
                    return found, False
                if entry.path in ignore:
                    continue
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if entry.name not in SKIP_DIRS:
                            stack.append(entry.path)
                    elif entry.is_file(follow_symlinks=False):
                        st = entry.stat(follow_symlinks=False)
                        rel = os.path.relpath(entry.path, root)
                        found[rel] = (st.st_size, st.st_mtime_ns, st.st_ino)
                except OSError:
                    continue
    return found, True


def diff_files(before, after):
    changes = []
    for path, st in after.items():
        old = before.get(path)
        if old is None:
            changes.append({"path": path, "change": "created", "size": st[0]})
        elif old != st:
            changes.append({"path": path, "change": "modified", "size": st[0],
                            "before_size": old[0]})
    changes += [{"path": p, "change": "deleted", "before_size": st[0]}
                for p, st in before.items() if p not in after]
    return sorted(changes, key=lambda c: c["path"])


# ----------------------------------------------------------------------------- summary
class _State:
    before_vars = None
    before_files = None
    before_complete = True
    root = ""
    checkpoints = {}  # id -> Checkpoint
    current = None  # the Checkpoint whose pre-images are being recorded
    hooked = False
    in_hook = False


def begin(language="python"):
    """Fingerprint the namespace and scan the files before a step."""
    _State.root = os.getcwd()
    _State.before_vars = fingerprints(_namespace())
    _State.before_files, _State.before_complete = scan(_State.root)
    cp = _State.current
    if cp is not None and language != "python":  # the audit hook cannot see a shell
        for rel in _State.before_files:
            cp.save_preimage(os.path.join(_State.root, rel))
    return {"ok": True}


def end():
    """What changed since ``begin``."""
    if _State.before_vars is None:
        return {}
    started = time.perf_counter()
    after_vars = fingerprints(_namespace())
    after_files, complete = scan(_State.root)
    files = diff_files(_State.before_files, after_files)
    if not (complete and _State.before_complete):  # a cut scan: do not call unseen files deleted
        files = [f for f in files if f["change"] != "deleted"]
    cp = _State.current
    if cp is not None:
        for f in files:
            if f["change"] == "created":
                cp.created.add(os.path.join(_State.root, f["path"]))
    if cp is not None:
        cp.save_index()
    result = {"variables": diff_variables(_State.before_vars, after_vars), "files": files,
              "scan_complete": complete and _State.before_complete,
              "cost_s": round(time.perf_counter() - started, 4)}
    _State.before_vars = _State.before_files = None
    return result


def configure(**settings):
    for name, value in settings.items():
        if hasattr(Settings, name):
            setattr(Settings, name, tuple(value) if isinstance(value, list) else value)
    return {"ok": True}


def call(name, *args, settings=None, **kwargs):
    """The entry point: one of ``begin end checkpoint restore drop configure``, after applying
    ``settings`` (see ``configure``); the result as JSON text."""
    if settings:
        configure(**settings)
    return json.dumps(globals()[name](*args, **kwargs))
