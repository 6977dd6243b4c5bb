"""What a step changed, and checkpoints to roll it back: the part that runs where the code runs.

Standard library only. The first part of the probe package (see its ``__init__``), which
installs its parts as one private package, ``sys.modules['_oi_probe']``, in the child kernel (``ChildRunner``: a sandboxed or remote child
may have no ``oi_kernel`` to import) or in the user's process (``ShellExecutor``, for
``%%oi``); nothing is added to the user's namespace. Both call ``call(name, *args)`` (in
``checkpoints.py``), whose results are JSON-ready.

Change summary (``begin`` / ``end``): each public variable is fingerprinted by identity,
type and a cheap description (length, shape, dtype, or the value of small scalars and short
strings); nothing is pickled or copied. The working directory is scanned with ``os.scandir``
(size, mtime, inode) within a time budget and a file cap, skipping caches and VCS folders;
on Linux a complete scan is then kept up to date from inotify events on the folders it listed
(``_Watch``, in ``watch.py``), so later scans cost the changes, not the files: any writer's changes are seen,
and anything the events cannot say exactly (a queue overflow, a folder created, removed or
moved) makes the next scan a full one again.

Checkpoints (``checkpoint`` / ``restore``): ``os.fork`` keeps a frozen copy-on-write image of
the process, costing page tables at checkpoint time and memory only as pages change; only at
restore does the fork pickle the namespace to a file, which the process loads. Functions,
classes and modules are restored by reference; values that cannot be pickled are named.
Files: an audit hook saves a file's pre-image the first time a step opens it for writing,
renames or removes it (within a size budget); shell steps, which the hook cannot see, get a
bounded copy of the scanned files before they run. Files the kernel created after the
checkpoint are removed on restore; files that appeared from outside it (the user's own, an
export) stay and are named.
"""

from __future__ import annotations

import os
import re
import sys
import time
import types

SKIP_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", ".ipynb_checkpoints", "node_modules",
                       ".venv", "venv", ".tox", ".mypy_cache", ".pytest_cache", ".ruff_cache",
                       ".oi_checkpoints", ".cache", ".ipython", ".jupyter", ".local", ".config",
                       ".virtual_documents"})  # until the engine sends its list (skip_dirs)
FRONTEND_SAVED = ".ipynb"  # the frontend saves open notebooks: their modifications are not listed
HIDDEN_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython"})
SHORT_TEXT = 40
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC


class Settings:
    scan_budget_s = 0.05
    max_files = 20_000
    max_file_bytes = 10_000_000
    max_total_bytes = 100_000_000
    copy_max_bytes = 2_000_000  # a namespace of plain data up to this is pickled, not forked
    store = ""  # where pre-images and dumps go
    restore_timeout_s = 120.0
    ignore = ()  # absolute paths not scanned (e.g. the session log's folder)
    skip_dirs = SKIP_DIRS  # folder names never scanned (tools' state)
    skip_files = ()  # file names never listed (tools' history files)
    rules = ()  # (regex, ignore, prefix): gitignore patterns compiled by the engine
    watch = True  # keep a complete scan up to date from inotify events (Linux), see _Watch


class _Ignore:
    """The compiled form of ``Settings.skip_*`` and ``rules`` (see ``_compile_ignore``)."""

    source = None
    dirs = SKIP_DIRS
    files = frozenset()
    match = None  # match(relative path, is_dir) -> ignored, or None when there are no rules


def _compile_ignore():
    """Compile the settings once per change: names as sets; patterns as one regex per prefix
    when none is negated (the common case), else in order, the last match deciding."""
    source = (Settings.skip_dirs, Settings.skip_files, Settings.rules, Settings.ignore)
    if source == _Ignore.source:
        return
    _Ignore.source = source
    _Ignore.dirs = frozenset(Settings.skip_dirs)
    _Ignore.files = frozenset(Settings.skip_files)
    rules = [(re.compile(rx), bool(ignore), prefix) for rx, ignore, prefix in Settings.rules]
    if not rules:
        _Ignore.match = None
    elif all(ignore for _, ignore, _ in rules):
        by_prefix = {}
        for rx, _, prefix in rules:
            by_prefix.setdefault(prefix, []).append(rx.pattern)
        combined = [(prefix, re.compile("|".join(f"(?:{p})" for p in pats)))
                    for prefix, pats in by_prefix.items()]

        def match(rel, is_dir):
            path = rel + "/" if is_dir else rel
            return any(rx.match(prefix + path) for prefix, rx in combined)
        _Ignore.match = match
    else:
        def match(rel, is_dir):
            path = rel + "/" if is_dir else rel
            verdict = False
            for rx, ignore, prefix in rules:
                if rx.match(prefix + path):
                    verdict = ignore
            return verdict
        _Ignore.match = match


def ignored(rel, is_dir=False):
    """Whether a path relative to the working directory is left out (tools' files, the
    user's patterns); a folder's contents are left out with it."""
    _compile_ignore()
    parts = rel.replace(os.sep, "/").split("/")
    if any(part in _Ignore.dirs for part in (parts if is_dir else parts[:-1])):
        return True
    if not is_dir and (parts[-1] in _Ignore.files or parts[-1].startswith(".~")):
        return True
    match = _Ignore.match
    if match is None:
        return False
    for i in range(1, len(parts)):  # a folder ignored by a pattern takes its contents along
        if match("/".join(parts[:i]), True):
            return True
    return match("/".join(parts), is_dir)


def _at(path, dir_fd):
    """``path`` as given when there is no ``dir_fd`` (None, or -1 in the audit event) or
    the path is absolute; else the folder the descriptor names joined with it (Linux), or
    None."""
    if not isinstance(dir_fd, int) or dir_fd < 0 or os.path.isabs(os.fsdecode(path)):
        return path
    try:
        return os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), os.fsdecode(path))
    except OSError:
        return None


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
    hidden = getattr(shell, "user_ns_hidden", None) or {} if shell is not None else {}
    missing = object()
    module = types.ModuleType
    return {name: value for name, value in list(ns.items())
            if type(name) is str and name[:1] != "_" and name not in HIDDEN_NAMES
            and not isinstance(value, module) and hidden.get(name, missing) is not value}


_SCALARS = frozenset({bool, int, float, complex, type(None)})
_SIZED = frozenset({str, bytes, bytearray, list, tuple, dict, set, frozenset})
_CALLABLES = frozenset({types.FunctionType, types.BuiltinFunctionType, types.MethodType})
# An object's identity as ``id`` gives it (its address, rotated: one to one) without the
# audit event ``id`` raises: with the checkpoints' audit hook installed, each ``id`` calls it.
_identity = object.__hash__


def _fingerprint(value):
    """``(id, type, detail)``, cheap: no strings are built (``describe`` does that only for
    what changed). ``detail``: small scalars and short strings themselves (immutable, so a
    reference is no copy), the length of containers (plus, for lists and dicts of up to 1,000
    items, a hash of the items' identities, so an append or an item change shows), the shape
    and dtype of arrays and tables."""
    kind = type(value)
    if kind in _SCALARS:
        return (_identity(value), kind, value)
    if kind in _SIZED:
        if kind is str and len(value) <= SHORT_TEXT:
            return (_identity(value), kind, value)
        size = len(value)
        if kind is list and size <= 1000:
            return (_identity(value), kind, size, hash(tuple(map(_identity, value))))
        if kind is dict and size <= 1000:
            return (_identity(value), kind, size, hash(tuple(
                (k if type(k) in (str, int) else _identity(k), _identity(v))
                for k, v in value.items())))
        return (_identity(value), kind, size)
    if kind is type:
        return (_identity(value), kind, value.__qualname__)
    if kind in _CALLABLES:
        return (_identity(value), kind, None)
    try:
        shape = getattr(value, "shape", None)
        if isinstance(shape, tuple):
            columns = getattr(value, "columns", None)
            return (_identity(value), kind, shape, None if columns is not None
                    else getattr(value, "dtype", None))
    except Exception:
        pass
    return (_identity(value), kind, None)


def describe(fp):
    """A short description from a fingerprint: ``int 2``, ``str 'abc'``, ``list[3]``,
    ``DataFrame 1000×5``, ``ndarray 10×3 float64``, ``class Model``, ``function``."""
    kind, detail = fp[1], fp[2]
    name = kind.__name__
    if kind in _SCALARS or (kind is str and not isinstance(detail, int)):
        text = repr(detail)
        if len(text) <= SHORT_TEXT:
            return f"{name} {text}"
        return f"{name} ({len(text)} digits)"
    if kind in _SIZED:
        return f"{name}[{detail}]"
    if kind is type:
        return f"class {detail}"
    if kind in _CALLABLES:
        return "function"
    if isinstance(detail, tuple):
        text = f"{name} {'×'.join(str(n) for n in detail) or 'scalar'}"
        return text + (f" {fp[3]}" if fp[3] is not None else "")
    return name


def fingerprints(ns, values=None):
    """``values``: ``public_names(ns)`` when the caller has it already."""
    values = public_names(ns) if values is None else values
    fingerprint, scalars, short, identity = _fingerprint, _SCALARS, SHORT_TEXT, _identity
    return {name: (identity(value), kind, value)  # (``_fingerprint``'s first case, inline: the most)
            if (kind := type(value)) in scalars or (kind is str and len(value) <= short)
            else fingerprint(value) for name, value in values.items()}


def diff_variables(before, after):
    changes = []
    for name, fp in after.items():
        old = before.get(name)
        if old is None:
            changes.append({"name": name, "change": "new", "after": describe(fp)})
        elif old != fp:
            changes.append({"name": name, "change": "changed", "before": describe(old),
                            "after": describe(fp)})
    changes += [{"name": n, "change": "deleted", "before": describe(fp)}
                for n, fp in before.items() if n not in after]
    return changes


# ----------------------------------------------------------------------------- files
def scan(root, budget_s=None, max_files=None, listed=None):
    """``({relative path: (size, mtime_ns, inode)}, complete)`` of regular files under root;
    ``listed`` (a set) receives the relative paths of the folders listed to the end. With
    the default budget and cap, the result of the last complete scan brought up to date
    from inotify events when that is exact (``_Watch``, watch.py)."""
    watcher = _State.watcher
    if watcher is not None and Settings.watch and budget_s is None and max_files is None:
        return watcher.scan(root, listed)
    return _walk(root, budget_s, max_files, listed)


def _walk(root, budget_s=None, max_files=None, listed=None, before_listing=None, linked=None):
    """The full scan (see ``scan``); ``before_listing(folder)`` is called before a folder is
    listed, and a False from it stops the walk (then the scan is not complete); ``linked`` (a
    set) receives the files with more than one name (hard links)."""
    budget_s = Settings.scan_budget_s if budget_s is None else budget_s
    max_files = Settings.max_files if max_files is None else max_files
    deadline = time.perf_counter() + budget_s
    _compile_ignore()
    ignore = frozenset(Settings.ignore)
    skip_dirs, skip_files, match = _Ignore.dirs, _Ignore.files, _Ignore.match
    slash = os.sep != "/"
    cut = len(os.path.join(root, ""))  # entry.path[cut:] is the path relative to root
    found = {}
    stack = [root]
    while stack:
        top = stack.pop()
        if before_listing is not None and not before_listing(top):
            return found, False
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
                        if entry.name in skip_dirs or (match is not None and match(
                                entry.path[cut:].replace(os.sep, "/") if slash
                                else entry.path[cut:], True)):
                            continue  # pruned: never listed
                        stack.append(entry.path)
                    elif entry.is_file(follow_symlinks=False):
                        name = entry.name
                        if name in skip_files or name[:2] == ".~":
                            continue
                        rel = entry.path[cut:]
                        if match is not None and match(rel.replace(os.sep, "/") if slash
                                                       else rel, False):
                            continue
                        st = entry.stat(follow_symlinks=False)
                        found[rel] = (st.st_size, st.st_mtime_ns, st.st_ino)
                        if linked is not None and st.st_nlink > 1:
                            linked.add(rel)
                except OSError:
                    continue
        if listed is not None:
            listed.add(top[cut:] if len(top) >= cut else "")
    return found, True




def diff_files(before, after):
    changes = []
    for path, st in after.items():
        old = before.get(path)
        if old is None:
            changes.append({"path": path, "change": "created", "size": st[0]})
        elif old != st and not path.endswith(FRONTEND_SAVED):
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
    before_listed = set()
    root = ""
    checkpoints = {}  # id -> Snapshot (checkpoints.py)
    current = None  # the Snapshot whose pre-images are being recorded
    hooked = False
    in_hook = False
    relist = None  # the checkpoint whose files the next cell lists again (``arm_relist``)
    relist_hooked = False
    watcher = None  # watch.py's ``_Watch`` once that part is loaded (see ``scan``)
    take_reads = None  # watch.py's ``_take_reads``: the workspace files a step read


def begin(language="python"):
    """Fingerprint the namespace and scan the files before a step."""
    _State.relist = None  # scanned now: nothing to list again
    listed = set()
    files, complete = scan(os.getcwd(), listed=listed)
    return _before(files, complete, listed, language)


def _before(files, complete, listed, language="python", values=None):
    """Keep the state before a step: the namespace's fingerprints and a scan just made
    (``values``: the namespace's ``public_names`` just taken, if the caller has them)."""
    _State.root = os.getcwd()
    _State.before_vars = fingerprints(_namespace(), values)
    _State.before_files, _State.before_complete, _State.before_listed = (
        files, complete, listed)
    cp = _State.current
    if cp is not None and language != "python":  # the audit hook cannot see a shell
        for rel in _State.before_files:
            if not rel.endswith(FRONTEND_SAVED):  # the frontend's, not the step's
                cp.save_preimage(os.path.join(_State.root, rel))
    return {"ok": True}


def arm_relist(cid):
    """Have the next cell list the files again before its code runs (IPython's
    ``pre_run_cell``, no round trip), for checkpoint ``cid`` taken while the model is asked:
    the step comes later, and what changed on disk meanwhile (the user's editor, a tool) is
    neither the step's change nor a change since the checkpoint. False: no IPython here."""
    shell = _shell()
    if shell is None:
        return False
    if not _State.relist_hooked:
        shell.events.register("pre_run_cell", _relist)
        _State.relist_hooked = True
    _State.relist = cid
    return True


def _relist(*_info):
    """``pre_run_cell``: list the files again (see ``arm_relist``); probe calls are silent
    executions, which do not fire it."""
    cid, _State.relist = _State.relist, None
    cp = _State.current
    if cid is None or cp is None or cp.cid != cid:
        return
    try:
        listed = set()
        files, complete = scan(cp.root, listed=listed)
        if _State.before_vars is not None:  # the change summary's "before" (a snapshot)
            _State.before_files, _State.before_complete, _State.before_listed = (
                files, complete, listed)
        if files != cp.files:  # what restore compares with and leaves alone
            cp.files, cp.files_complete, cp.listed = files, complete, listed
            cp._indexed = None
            cp.save_index()
    except Exception:
        _State.before_vars = None  # no summary rather than a wrong one


def _hand_over(cp, to):
    """Give ``to`` (the checkpoint before ``cp``, which is dropped) what ``cp`` recorded of
    files first changed after it, so undo to ``to`` puts them back as they were (what ``to``
    has already wins). ``cp``: one taken while the model was asked and then not used, or
    taken again because code ran in between (``checkpoints.drop``)."""
    for path, saved in cp.preimages.items():
        if path in to.preimages or path in to.too_big:
            continue
        if saved is not None:
            moved = os.path.join(to.dir, f"f{len(to.preimages)}")
            try:
                os.replace(saved, moved)
            except OSError:
                to.too_big[path] = os.path.getsize(saved) if os.path.exists(saved) else 0
                continue
            saved = moved
        to.preimages[path] = saved
    for path, size in cp.too_big.items():
        if path not in to.preimages:
            to.too_big.setdefault(path, size)
    to.created |= cp.created
    to.saved_bytes += cp.saved_bytes
    to.save_index()


def end():
    """What changed since ``begin``."""
    if _State.before_vars is None:
        return {}
    started = time.perf_counter()
    after_vars = fingerprints(_namespace())
    after_listed = set()
    after_files, complete = scan(_State.root, listed=after_listed)
    files = diff_files(_State.before_files, after_files)
    if not (complete and _State.before_complete):  # a cut scan: judge only folders both listed
        seen = {"created": _State.before_listed, "deleted": after_listed}
        files = [f for f in files if f["change"] == "modified"
                 or os.path.dirname(f["path"]) in seen[f["change"]]]
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
    reads = _State.take_reads(_State.root, {f["path"] for f in files}) if _State.take_reads else []
    if reads:
        result["reads"] = reads
    _State.before_vars = _State.before_files = None
    return result


def configure(**settings):
    for name, value in settings.items():
        if hasattr(Settings, name):
            if isinstance(value, list):
                value = tuple(tuple(v) if isinstance(v, list) else v for v in value)
            setattr(Settings, name, value)
    return {"ok": True}
