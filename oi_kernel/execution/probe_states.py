"""Named states (``%state save NAME``): the namespace and every workspace file, kept until
dropped, and restored as often as asked. The last part of the probe (see ``probe.py``).

A checkpoint is used up when restored and records only what changes after it; a state is
whole, so states form a tree: restoring one leaves the others as they are.

* Files: each file is copied once into a pool (``<store>/pool``) named by its path, size
  and modification time; a state's index names the pool copies of its files, so a file
  unchanged since an earlier state costs nothing to save again. Restoring copies back only
  the files that differ and removes those the state did not have.
* Namespace: builtin data is pickled at once (as a copy checkpoint) and also written to
  disk, so it outlives the process; anything else is held by a fork that answers every
  restore (and dies with the process: the engine then re-runs the recorded steps).

Where the probe runs, ``probe_loader`` joins this file's source to the parts before it as one
module and leaves out the imports from them below.
"""

import hashlib
import json
import os
import pickle
import shutil
import signal
import time

from oi_kernel.execution.probe import FRONTEND_SAVED, _namespace, public_names, scan
from oi_kernel.execution.probe_checkpoints import (
    _CALLS,
    _die_with_parent,
    _dump,
    _reap,
    _wait_readable,
)
from oi_kernel.execution.probe_copy import _BY_REFERENCE, _copy_plain, _deref, _keep
from oi_kernel.execution.probe_watch import _Watch


class _Held:
    """What this process holds of each state: {id: _Kept}."""

    states = {}


class _Kept:
    def __init__(self, refs, copy, fork):
        self.refs = refs  # name -> what ``_keep`` holds (None: plain data)
        self.copy = copy  # the pickled namespace of builtin data, or None
        self.fork = fork  # (pid, command fd, done fd) of the fork holding it, or None


def _pool_name(rel, st):
    key = f"{rel}\0{st[0]}\0{st[1]}".encode()
    return hashlib.blake2b(key, digest_size=12).hexdigest()


def _state_dir(store, sid):
    return os.path.join(store, f"s{sid}")


def _read_index(store, sid):
    try:
        with open(os.path.join(_state_dir(store, sid), "index.json")) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def _save_files(store, root, max_bytes):
    """Copy the workspace's files into the pool; their index, or (None, total size)."""
    files, complete = scan(root)
    files = {rel: st for rel, st in files.items() if not rel.endswith(FRONTEND_SAVED)}
    total = sum(st[0] for st in files.values())
    if total > max_bytes:
        return None, total, len(files)
    pool = os.path.join(store, "pool")
    os.makedirs(pool, exist_ok=True)
    index, copied = {}, 0
    for rel, st in files.items():
        name = _pool_name(rel, st)
        target = os.path.join(pool, name)
        if not os.path.exists(target):
            try:
                shutil.copy2(os.path.join(root, rel), target, follow_symlinks=False)
            except OSError:
                continue  # gone meanwhile: not part of the state
            copied += 1
        index[rel] = [st[0], st[1], name]
    return {"files": index, "complete": complete, "copied": copied}, total, len(files)


def _fork_holder():
    """A fork that keeps the namespace as it is now and pickles it on each ``dump PATH``."""
    if not hasattr(os, "fork"):
        return None
    _die_with_parent(prepare=True)
    cmd_r, cmd_w = os.pipe()
    done_r, done_w = os.pipe()
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    parent, pid = os.getpid(), -1
    try:
        pid = os.fork()
    finally:
        if pid != 0:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    if pid == 0:
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            os.close(cmd_w)
            os.close(done_r)
            if _Watch.fd >= 0:
                os.close(_Watch.fd)
            _die_with_parent()
            if os.getppid() == parent:
                _serve(cmd_r, done_w)
        finally:
            os._exit(0)
    os.close(cmd_r)
    os.close(done_w)
    return pid, cmd_w, done_r


def _serve(cmd_r, done_w):
    """In the fork: answer ``dump PATH`` until the pipe closes."""
    while True:
        command = os.read(cmd_r, 4096).decode()
        if not command.startswith("dump "):
            return
        _dump(command[5:])
        os.write(done_w, b"ok")


def state_save(sid, store, max_bytes):
    """Keep the namespace and the workspace's files as state ``sid``. Refused (nothing
    kept) when the files exceed ``max_bytes``: ``too_big`` says their size."""
    started = time.perf_counter()
    store = os.path.abspath(store)
    root = os.getcwd()
    files, total, count = _save_files(store, root, max_bytes)
    if files is None:
        return {"too_big": total, "files": count}
    values = public_names(_namespace())
    refs = {n: _keep(v) for n, v in values.items()}
    copy = _copy_plain(values, refs)
    folder = _state_dir(store, sid)
    os.makedirs(folder, exist_ok=True)
    if copy is not None:
        with open(os.path.join(folder, "namespace.pickle"), "wb") as fh:
            fh.write(copy)
    fork = None if copy is not None else _fork_holder()
    _Held.states[sid] = _Kept(refs, copy, fork)
    with open(os.path.join(folder, "index.json"), "w") as fh:
        json.dump({"root": root, **files, "plain": copy is not None}, fh)
    return {"id": sid, "variables": len(values), "files": count, "bytes": total,
            "copied": files["copied"], "plain": copy is not None, "fork": fork is not None,
            "complete": files["complete"], "cost_s": round(time.perf_counter() - started, 4)}


def _restore_files(index, root):
    """Put the files back as the state has them; the report."""
    pool = os.path.join(os.path.dirname(index["_dir"]), "pool")
    now, complete = scan(root)
    now = {rel: st for rel, st in now.items() if not rel.endswith(FRONTEND_SAVED)}
    report = {"restored": [], "removed": [], "not_restored": []}
    wanted = index["files"]
    for rel, (size, mtime, name) in sorted(wanted.items()):
        cur = now.get(rel)
        if cur is not None and cur[0] == size and cur[1] == mtime:
            continue
        path = os.path.join(root, rel)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            shutil.copy2(os.path.join(pool, name), path)
            report["restored"].append(rel)
        except OSError as exc:
            report["not_restored"].append(f"{rel} ({exc.strerror or exc})")
    if complete and index.get("complete", True):
        for rel in sorted(set(now) - set(wanted)):
            try:
                os.remove(os.path.join(root, rel))
                report["removed"].append(rel)
            except OSError as exc:
                report["not_restored"].append(f"{rel} ({exc.strerror or exc})")
    return report


def _load_namespace(sid, folder):
    """(values, {name: why not}, refs) of state ``sid``; None when only a fork that is gone
    held it."""
    kept = _Held.states.get(sid)
    if kept is not None and kept.copy is not None:
        return (*pickle.loads(kept.copy), kept.refs)
    if kept is not None and kept.fork is not None:
        pid, cmd_w, done_r = kept.fork
        path = os.path.join(folder, f"dump-{os.getpid()}.pickle")
        try:
            os.write(cmd_w, f"dump {path}".encode())
            answered = _wait_readable(done_r, 300) and os.read(done_r, 2)
        except OSError:
            answered = False
        if not answered:
            return {}, {n: "the state's copy did not answer" for n in kept.refs}, kept.refs
        try:
            with open(path, "rb") as fh:
                values, failed = pickle.load(fh)
        finally:
            os.remove(path)
        return values, failed, kept.refs
    try:
        with open(os.path.join(folder, "namespace.pickle"), "rb") as fh:
            values, failed = pickle.load(fh)
    except OSError:
        return None
    return values, failed, {}


def _put_back(ns, values, failed, refs):
    """The namespace as the state had it; (names, removed names, problems)."""
    current = public_names(ns)
    wanted = set(values) | set(failed)
    removed = sorted(n for n in current if n not in wanted)
    for name in removed:
        del ns[name]
    problems = []
    for name, why in failed.items():
        ref = _deref(refs.get(name))
        if ref is None:
            ns.pop(name, None)
            problems.append({"name": name, "type": "?", "why": why})
            continue
        ns[name] = ref
        if not isinstance(ref, _BY_REFERENCE):
            problems.append({"name": name, "type": type(ref).__name__, "why": why})
    ns.update(values)
    return sorted(wanted), removed, problems


def state_restore(sid, store, files_only=False):
    """Go back to state ``sid``: files, then the namespace (``files_only``: not).
    ``namespace_lost``: only a fork of a process that is gone held the namespace (every
    public name was removed, so the recorded steps can build it again from nothing)."""
    store = os.path.abspath(store)
    index = _read_index(store, sid)
    if index is None:
        return {"missing": True}
    folder = index["_dir"] = _state_dir(store, sid)
    files = _restore_files(index, index["root"])
    if files_only:
        return files
    ns = _namespace()
    loaded = _load_namespace(sid, folder)
    if loaded is None:
        removed = sorted(public_names(ns))
        for name in removed:
            del ns[name]
        return {"namespace_lost": True, "removed_variables": removed, "variables": [],
                "problems": [], **files}
    names, removed, problems = _put_back(ns, *loaded)
    return {"variables": names, "removed_variables": removed, "problems": problems, **files}


def state_drop(sid, store):
    """Forget state ``sid``: its fork, its index, and pool copies no other state names."""
    store = os.path.abspath(store)
    kept = _Held.states.pop(sid, None)
    if kept is not None and kept.fork is not None:
        pid, cmd_w, done_r = kept.fork
        for fd in (cmd_w, done_r):
            try:
                os.close(fd)
            except OSError:
                pass
        _reap(pid, wait=False)
    shutil.rmtree(_state_dir(store, sid), ignore_errors=True)
    used = set()
    for name in os.listdir(store) if os.path.isdir(store) else ():
        if name.startswith("s") and name[1:].isdigit():
            index = _read_index(store, int(name[1:])) or {}
            used |= {entry[2] for entry in index.get("files", {}).values()}
    pool = os.path.join(store, "pool")
    for name in os.listdir(pool) if os.path.isdir(pool) else ():
        if name not in used:
            try:
                os.remove(os.path.join(pool, name))
            except OSError:
                pass
    return {"ok": True}


def state_held():
    """The states this process holds (the others, if on disk, restore without a fork)."""
    return {"held": sorted(_Held.states)}


_CALLS.update({f.__name__: f for f in (state_save, state_restore, state_drop, state_held)})
