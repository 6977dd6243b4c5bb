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

A part of the probe package (see ``__init__.py``), after ``checkpoints``.
"""

import _thread
import functools
import hashlib
import json
import mmap
import os
import pickle
import shutil
import signal
import struct
import time

from .changes import (
    FRONTEND_SAVED,
    _namespace,
    _shell,
    public_names,
    scan,
)
from .checkpoints import (
    _CALLS,
    _die_with_parent,
    _dump,
    _reap,
    _wait_readable,
)
from .values import _BY_REFERENCE, _copy_plain, _deref, _keep
from .watch import _Watch


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


def _ready_path(folder):
    """The namespace as the state's fork wrote it (``_serve``): mapped by each restore."""
    return os.path.join(folder, f"namespace-{os.getpid()}.buffers")


def _read_index(store, sid):
    try:
        with open(os.path.join(_state_dir(store, sid), "index.json")) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def _workspace(root, store):
    """The files a state keeps: not the notebooks the frontend saves, nor the store."""
    files, complete = scan(root)
    mine = os.path.relpath(os.path.dirname(store), root) + os.sep
    return {rel: st for rel, st in files.items()
            if not rel.endswith(FRONTEND_SAVED) and not rel.startswith(mine)}, complete


def _index_files(store, root, files, complete):
    """(In the copies' thread.) The state's index of ``files``, each named by its pool
    copy, and the files whose copies the pool lacks."""
    have = _pool(os.path.join(store, "pool"))
    index, jobs = {}, []
    for rel, st in files.items():
        name = _pool_name(rel, st)
        index[rel] = [st[0], st[1], name]
        if name not in have:
            have.add(name)  # (made below; a failed copy is absent)
            jobs.append((rel, st))
    return {"root": root, "files": index, "complete": complete, "copied": len(jobs)}, jobs


def _keep_files(store, root, files, complete, sid, copy):
    """(In the copies' thread.) Copy into the pool the files it lacks, then write the
    state's record (``_write_state``). A file that another process or thread changed
    after the save listed it (and before its copy was made) is kept as it was when copied
    and named in ``changed``, which restoring reports."""
    index, jobs = _index_files(store, root, files, complete)
    pool, changed = os.path.join(store, "pool"), []
    for rel, st in jobs:
        entry = _copy_checked(os.path.join(root, rel), pool, rel, st)
        if entry is not None and entry[:2] == list(st[:2]) and entry[3] == st[2]:
            continue
        changed.append(rel)
        old = index["files"][rel][2]
        if entry is not None:
            index["files"][rel] = entry[:3]
        if entry is None or entry[2] != old:  # (a copy under its listed name is not it)
            _pool(pool).discard(old)
            _remove(os.path.join(pool, old))
    index["changed"] = changed
    index["plain"] = copy is not None
    _write_state(_state_dir(store, sid), index, copy)


def _remove(path):
    try:
        os.remove(path)
    except OSError:
        pass


def _stat3(path):
    st = os.lstat(path)
    return st.st_size, st.st_mtime_ns, st.st_ino


def _copy_checked(source, pool, rel, st, tries=3):
    """Copy ``source`` into the pool and check that it did not change meanwhile (size,
    modification time, inode), copying again when it did; [size, mtime, pool name, inode]
    of what was copied (``st`` unless it changed since listed), None when it is gone."""
    entry = None
    for _ in range(tries):
        try:
            before = _stat3(source)
        except OSError:
            return entry
        name = _pool_name(rel, before)
        if not _pool_copy(source, os.path.join(pool, name), before[1]):
            continue
        _pool(pool).add(name)
        entry = [before[0], before[1], name, before[2]]
        try:
            if _stat3(source) == before:
                return entry
        except OSError:
            return entry
    return entry


_POOLS = {}  # pool folder -> the names in it (listed once, then kept up to date here)


def _pool(folder):
    names = _POOLS.get(folder)
    if names is None:
        os.makedirs(folder, exist_ok=True)
        names = _POOLS[folder] = {n for n in os.listdir(folder) if not n.endswith(".part")}
    return names


def _pool_copy(source, target, mtime_ns):
    """A file's content with its modification time (what names it in the pool); written
    under a temporary name first, so a pool entry is whole or absent."""
    partial = target + ".part"
    try:
        shutil.copyfile(source, partial, follow_symlinks=False)
        os.utime(partial, ns=(mtime_ns, mtime_ns))
        os.replace(partial, target)
        return True
    except OSError:
        _pool(os.path.dirname(target)).discard(os.path.basename(target))
        try:
            os.remove(partial)
        except OSError:
            pass
        return False


class _Copies:
    """The pool copies still to make, in a thread: saving returns at once; the next cell
    (IPython's ``pre_run_cell``), restore and the next save wait for them to be done.

    The thread is started with ``_thread`` (``threading.Thread.start`` waits until the new
    thread runs: on a busy machine, milliseconds of the save's time). It waits a moment
    first (``hurry``), so the save's answer goes out before the copies take the GIL; a
    caller that waits for them cuts that moment short."""

    done = None  # a lock held until the copies are made
    hurry = None  # a lock held until the copies should start
    hooked = False

    @classmethod
    def start(cls, jobs):
        cls.wait()
        shell = _shell()
        if not jobs:
            return
        if shell is None:  # (no cell to wait for them: copied now)
            cls.run(jobs)
            return
        if not cls.hooked:
            shell.events.register("pre_run_cell", cls.before_cell)
            cls.hooked = True
        done, hurry = _thread.allocate_lock(), _thread.allocate_lock()
        done.acquire()
        hurry.acquire()
        cls.done, cls.hurry = done, hurry
        _thread.start_new_thread(cls.later, (jobs, done, hurry))

    @classmethod
    def later(cls, jobs, done, hurry):
        try:
            hurry.acquire(timeout=0.05)
            cls.run(jobs)
        finally:
            done.release()

    @staticmethod
    def run(jobs):
        for job in jobs:
            job()

    @classmethod
    def wait(cls):
        done, cls.done = cls.done, None
        if done is not None:
            cls.hurry.release()
            done.acquire()

    @classmethod
    def before_cell(cls, *_info):
        cls.wait()


def _fork_holder(ready):
    """A fork that keeps the namespace as it is now: it writes it at once to ``ready``
    (``_serve``) and answers each ``dump PATH`` with it."""
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
                _serve(cmd_r, done_w, ready)
        finally:
            os._exit(0)
    os.close(cmd_r)
    os.close(done_w)
    return pid, cmd_w, done_r


def _serve(cmd_r, done_w, ready):
    """In the fork: write the namespace to ``ready`` now, in the background of the kernel
    (after a moment, so the save's answer goes out first), then answer ``dump PATH`` until
    the pipe closes. A restore thus only maps the file (``_load_buffers``) instead of
    waiting for a gigabyte to be written: that write costs seconds of CPU on a busy machine.
    A namespace ``_dump_buffers`` cannot write is written by ``_dump`` on each request."""
    time.sleep(0.05)
    try:
        done = _dump_buffers(ready)
    except OSError:  # (a full disk: written on request instead, as before)
        _remove(ready + ".part")
        done = False
    while True:
        command = os.read(cmd_r, 4096).decode()
        if not command.startswith("dump "):
            return
        if not (done and command[5:] == ready):
            _dump(command[5:])
        os.write(done_w, b"ok")


_MAGIC = b"OISTATE5"
_ALIGN = 64


def _dump_buffers(path):
    """In the fork: the namespace pickled with its large buffers (numpy arrays, a
    DataFrame's columns) out of band, each written raw and aligned, so the kernel maps them
    instead of copying them (``_load_buffers``). False: something could not be pickled
    (``_dump`` then finds which)."""
    ns = public_names(_namespace())
    good = {n: v for n, v in ns.items() if not isinstance(v, _BY_REFERENCE)}
    failed = {n: "restored by reference" for n in ns if n not in good}
    buffers = []
    try:
        head = pickle.dumps((good, failed), protocol=5, buffer_callback=buffers.append)
        raws = [b.raw() for b in buffers]
    except Exception:
        return False
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".part", "wb") as fh:  # (whole or absent: it is kept and mapped)
        sizes = [len(head)] + [r.nbytes for r in raws]
        fh.write(_MAGIC + struct.pack(f"<Q{len(sizes)}Q", len(sizes), *sizes))
        fh.write(head)
        for raw in raws:
            fh.write(b"\0" * (-fh.tell() % _ALIGN))
            fh.write(raw)
    os.replace(path + ".part", path)
    return True


def _load_buffers(path):
    """(values, failed) from ``path`` as ``_dump_buffers`` or ``_dump`` wrote it; the
    buffers are a private mapping of the file (pages copied only when written)."""
    with open(path, "rb") as fh:
        if fh.read(len(_MAGIC)) != _MAGIC:
            fh.seek(0)
            return pickle.load(fh)
        (count,) = struct.unpack("<Q", fh.read(8))
        sizes = struct.unpack(f"<{count}Q", fh.read(8 * count))
        head = fh.read(sizes[0])
        start = fh.tell()
        if count == 1:
            return pickle.loads(head)
        view = memoryview(mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_COPY))
    views = []
    for size in sizes[1:]:
        start += -start % _ALIGN
        views.append(view[start:start + size])
        start += size
    return pickle.loads(head, buffers=views)


def _write_state(folder, index, copy):
    """A state's record on disk: its files' index, and its namespace when plain data."""
    os.makedirs(folder, exist_ok=True)
    if copy is not None:
        with open(os.path.join(folder, "namespace.pickle"), "wb") as fh:
            fh.write(copy)
    with open(os.path.join(folder, "index.json"), "w") as fh:
        fh.write(json.dumps(index))


def state_save(sid, store, max_bytes):
    """Keep the namespace and the workspace's files as state ``sid``. Refused (nothing
    kept) when the files exceed ``max_bytes``: ``too_big`` says their size. What the
    files are (path, size, modification time) is taken now; their copies and the state's
    record are made in a thread (``_Copies``), so a save costs about what a checkpoint does."""
    started = time.perf_counter()
    store = os.path.abspath(store)
    root = os.getcwd()
    files, complete = _workspace(root, store)
    total = sum(st[0] for st in files.values())
    if total > max_bytes:
        return {"too_big": total, "files": len(files)}
    values = public_names(_namespace())
    refs = {n: _keep(v) for n, v in values.items()}
    copy = _copy_plain(values, refs)
    fork = None if copy is not None else _fork_holder(_ready_path(_state_dir(store, sid)))
    _Held.states[sid] = _Kept(refs, copy, fork)
    _Copies.start([functools.partial(_keep_files, store, root, files, complete, sid, copy)])
    return {"id": sid, "variables": len(values), "files": len(files), "bytes": total,
            "plain": copy is not None, "fork": fork is not None, "complete": complete,
            "cost_s": round(time.perf_counter() - started, 4)}


def _put_files_back(index, root):
    """Put the files back as the state has them; the report."""
    pool = os.path.join(os.path.dirname(index["_dir"]), "pool")
    now, complete = _workspace(root, os.path.dirname(index["_dir"]))
    report = {"restored": [], "removed": [], "not_restored": [],
              "changed_during_save": sorted(index.get("changed", ()))}
    wanted = index["files"]
    for rel, (size, mtime, name) in sorted(wanted.items()):
        cur = now.get(rel)
        if cur is not None and cur[0] == size and cur[1] == mtime:
            continue
        path = os.path.join(root, rel)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            shutil.copyfile(os.path.join(pool, name), path)
            os.utime(path, ns=(mtime, mtime))
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
        try:
            os.write(cmd_w, f"dump {_ready_path(folder)}".encode())
            answered = _wait_readable(done_r, 300) and os.read(done_r, 2)
        except OSError:
            answered = False
        if not answered:
            return {}, {n: "the state's copy did not answer" for n in kept.refs}, kept.refs
        values, failed = _load_buffers(_ready_path(folder))  # (kept for the next restore)
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
    _Copies.wait()
    store = os.path.abspath(store)
    index = _read_index(store, sid)
    if index is None:
        return {"missing": True}
    folder = index["_dir"] = _state_dir(store, sid)
    files = _put_files_back(index, index["root"])
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
    _Copies.wait()
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
    have = _pool(pool)
    for name in list(have - used):
        have.discard(name)
        try:
            os.remove(os.path.join(pool, name))
        except OSError:
            pass
    return {"ok": True}


def state_held():
    """The states this process holds (the others, if on disk, restore without a fork)."""
    return {"held": sorted(_Held.states)}


_CALLS.update({f.__name__: f for f in (state_save, state_restore, state_drop, state_held)})
