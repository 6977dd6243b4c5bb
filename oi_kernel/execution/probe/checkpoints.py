"""Checkpoints and rollback, and the probe's entry point ``call``: the last part of the probe
(see ``changes.py``).
"""

import json
import os
import pickle
import shutil
import signal
import time

from .changes import (
    FRONTEND_SAVED,
    Settings,
    _before,
    _hand_over,
    _Ignore,
    _namespace,
    _State,
    arm_relist,
    begin,
    configure,
    end,
    ignored,
    public_names,
    scan,
)
from .guard_cell import guard_arm, guard_taken
from .values import _BY_REFERENCE, _PLAIN, _copy_plain, _deref, _keep
from .watch import _Watch, hook


# ----------------------------------------------------------------------------- checkpoints
class Snapshot:
    """What the probe holds for one checkpoint (the engine's ``core.rollback.Checkpoint``):
    a fork or a copy of the namespace, and the files' pre-images."""

    def __init__(self, cid):
        self.cid = cid
        self.dir = os.path.join(Settings.store, str(cid))
        os.makedirs(self.dir, exist_ok=True)
        ignore = os.path.join(os.path.dirname(Settings.store), ".gitignore")
        if not os.path.exists(ignore):  # never committed by accident (like .pytest_cache)
            with open(ignore, "w") as fh:
                fh.write("# saved by oi_kernel for %undo; deleted when the session ends\n*\n")
        self.values = values = public_names(_namespace())  # (for ``checkpoint``; then None)
        plain = _PLAIN
        self.refs = {n: None if type(v) in plain else _keep(v) for n, v in values.items()}
        self.copy = _copy_plain(values, self.refs)  # builtin data: pickled now, not forked
        self.root = os.getcwd()
        self.listed = set()
        self.files, self.files_complete = scan(self.root, listed=self.listed)
        self.preimages = {}  # absolute path -> saved copy, or None (did not exist)
        self.too_big = {}  # absolute path -> size
        self.created = set()
        self.saved_bytes = 0
        self.pid, self.cmd_w, self.done_r = self._fork() if self.copy is None else (None,) * 3

    def _fork(self):
        if not hasattr(os, "fork"):
            return None, None, None
        _die_with_parent(prepare=True)  # (resolved here, once: the fork only calls it)
        cmd_r, cmd_w = os.pipe()
        done_r, done_w = os.pipe()
        # an interrupt goes to the kernel's whole process group (jupyter_client signals the
        # group): the copy ignores it, set up with SIGINT blocked so none falls in between
        mask, pid = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}), -1
        parent = os.getpid()
        try:
            pid = os.fork()
        finally:
            if pid != 0:
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        if pid == 0:  # the frozen copy: wait for one command, then leave
            try:
                signal.signal(signal.SIGINT, signal.SIG_IGN)  # (one pending is discarded)
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)
                os.close(cmd_w)
                os.close(done_r)
                if _Watch.fd >= 0:  # the scan's watches stay the process's alone
                    os.close(_Watch.fd)
                _die_with_parent()
                if os.getppid() != parent:  # it died before the death signal was asked for
                    os._exit(0)
                command = os.read(cmd_r, 4096).decode()
                if command.startswith("dump "):
                    _dump(command[5:])
                    os.write(done_w, b"ok")
            finally:
                os._exit(0)
        os.close(cmd_r)
        os.close(done_w)
        return pid, cmd_w, done_r

    def _load(self, path):
        """The fork's dump: (values, {name: why not}); classes are put back before loading."""
        ns = _namespace()
        for name, kept in self.refs.items():  # a pickled instance names its class in __main__
            value = _deref(kept)
            if isinstance(value, type) and name not in ns:
                ns[name] = value
        try:
            with open(path, "rb") as fh:
                return pickle.load(fh)
        except Exception as exc:
            why = f"the saved copy could not be loaded ({type(exc).__name__}: {str(exc)[:80]})"
            return {}, {n: why for n in self.refs}
        finally:
            os.remove(path)

    def save_preimage(self, path):
        """Copy ``path`` before its first change (None: it did not exist, so remove it)."""
        path = os.path.abspath(path)
        if path in self.preimages or path in self.too_big:
            return
        if not path.startswith(self.root + os.sep) or _ours(path):
            return
        if ignored(path[len(self.root) + 1:], os.path.isdir(path)):
            return  # tools' files: never saved, never restored (as in the change summary)
        if not os.path.lexists(path):
            self.preimages[path] = None
            return
        if path.endswith(FRONTEND_SAVED):  # the frontend saves it too: never put an old one back
            return
        if os.path.isdir(path) and not os.path.islink(path):
            for top, dirs, files in os.walk(path):
                dirs[:] = [d for d in dirs if d not in _Ignore.dirs]
                for name in files:
                    self.save_preimage(os.path.join(top, name))
            return
        try:
            size = os.path.getsize(path)
        except OSError:
            return
        if size > Settings.max_file_bytes or self.saved_bytes + size > Settings.max_total_bytes:
            self.too_big[path] = size
            return
        copy = os.path.join(self.dir, f"f{len(self.preimages)}")
        try:
            shutil.copy2(path, copy, follow_symlinks=False)
        except OSError:
            self.too_big[path] = size
            return
        self.saved_bytes += size
        self.preimages[path] = copy

    def save_index(self):
        """Write what this checkpoint knows about files, so a new process can restore them
        (only when that changed: a step that touched no file costs nothing here)."""
        state = (len(self.preimages), len(self.too_big), len(self.created))
        if state == getattr(self, "_indexed", None):
            return
        self._indexed = state
        index = {"root": self.root, "files": self.files, "complete": self.files_complete,
                 "preimages": self.preimages, "too_big": self.too_big,
                 "created": sorted(self.created)}
        try:
            if state == (0, 0, 0) and _last_index[:1] == [index]:  # as the last checkpoint's
                text = _last_index[1]  # (the files unchanged: the common case; no encoding)
            else:
                text = json.dumps(index)  # (one call: json.dump to a file encodes in Python)
                if state == (0, 0, 0):
                    _last_index[:] = [index, text]
            with open(os.path.join(self.dir, "index.json"), "w") as fh:
                fh.write(text)
        except OSError:
            pass

    @classmethod
    def from_disk(cls, directory, cid):
        """The file side of a checkpoint kept by a process that is gone (None: none kept)."""
        try:
            with open(os.path.join(directory, "index.json")) as fh:
                index = json.load(fh)
        except (OSError, ValueError):
            return None
        cp = cls.__new__(cls)
        cp.cid, cp.dir, cp.pid, cp.refs, cp.copy = cid, directory, None, {}, None
        cp.root, cp.files_complete = index["root"], index["complete"]
        cp.files = {k: tuple(v) for k, v in index["files"].items()}
        cp.preimages, cp.too_big = index["preimages"], index["too_big"]
        cp.created, cp.saved_bytes, cp.values = set(index["created"]), 0, None
        return cp

    def release(self, wait=True):
        if self.pid is not None:
            for fd in (self.cmd_w, self.done_r):
                try:
                    os.close(fd)
                except OSError:
                    pass
            _reap(self.pid, wait)
            self.pid = None
        self.copy = None
        shutil.rmtree(self.dir, ignore_errors=True)

    def restore_namespace(self, ns):
        """Put the namespace back; returns (restored names, removed names, problems)."""
        loaded, failed = {}, {}
        if self.copy is not None:
            try:
                loaded, failed = pickle.loads(self.copy)
            except Exception as exc:
                why = f"the saved copy could not be loaded ({type(exc).__name__}: {str(exc)[:80]})"
                failed = {n: why for n in self.refs}
            self.copy = None
        elif self.pid is not None:
            path = os.path.join(self.dir, "namespace.pickle")
            try:
                os.write(self.cmd_w, f"dump {path}".encode())
                answered = (_wait_readable(self.done_r, Settings.restore_timeout_s)
                            and os.read(self.done_r, 2))
            except OSError:  # (the copy is gone: killed from outside)
                answered = False
            if answered:
                loaded, failed = self._load(path)
            else:
                failed = {n: "the checkpoint's copy did not answer" for n in self.refs}
            _reap(self.pid)
            self.pid = None
        else:
            failed = {n: "this system cannot keep a copy (no fork)" for n in self.refs}
        problems = []
        current = public_names(ns)
        for name in current:
            if name not in self.refs:
                del ns[name]
        removed = [n for n in current if n not in self.refs]
        for name in sorted(failed, key=lambda n: not isinstance(_deref(self.refs[n]), type)):
            ref = _deref(self.refs[name])  # classes first: the pickle may refer to them
            if ref is None:
                ns.pop(name, None)
                problems.append({"name": name, "type": "?", "why": failed[name] + "; the "
                                 "original object is gone or was not held, so the name was "
                                 "removed"})
                continue
            ns[name] = ref
            if not isinstance(ref, _BY_REFERENCE):
                problems.append({"name": name, "type": type(ref).__name__, "why": failed[name]})
        for name, value in loaded.items():
            ns[name] = value
        return sorted(self.refs), removed, problems

    def restore_files(self):
        report = {"restored": [], "removed": [], "not_restored": [], "kept": []}
        root = self.root
        now, complete = scan(root)
        created = set(self.created)
        created |= {p for p, saved in self.preimages.items() if saved is None}
        if complete and self.files_complete:  # new since the checkpoint, but not by a step:
            report["kept"] = sorted(  # the user's own files (an export, a download) stay
                rel for rel in now
                if rel not in self.files and os.path.join(root, rel) not in created)
        for path in sorted(created):
            if path in self.preimages and self.preimages[path] is not None:
                continue
            if os.path.lexists(path):
                try:
                    os.remove(path)
                    report["removed"].append(os.path.relpath(path, root))
                except OSError as exc:
                    report["not_restored"].append(f"{os.path.relpath(path, root)} ({exc})")
        for path, saved in sorted(self.preimages.items()):
            if saved is None:
                continue
            try:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path)
                shutil.copy2(saved, path, follow_symlinks=False)
                report["restored"].append(os.path.relpath(path, root))
            except OSError as exc:
                report["not_restored"].append(f"{os.path.relpath(path, root)} ({exc})")
        for path, size in sorted(self.too_big.items()):
            report["not_restored"].append(
                f"{os.path.relpath(path, root)} ({size:,} bytes: over the size budget)")
        for rel, st in sorted(self.files.items()):  # changed with no pre-image (a shell step)
            path = os.path.join(root, rel)
            if path in self.preimages or path in self.too_big or rel.endswith(FRONTEND_SAVED):
                continue
            cur = now.get(rel)
            if cur is None and complete:
                report["not_restored"].append(f"{rel} (deleted; no copy was saved)")
            elif cur is not None and cur != st:
                report["not_restored"].append(f"{rel} (changed; no copy was saved)")
        return report


_last_index = []  # [index, its JSON text] of the last checkpoint written with no file saved yet


def _ours(path):
    """Files the session writes itself: saved copies, the session log."""
    mine = [os.path.dirname(Settings.store), *Settings.ignore]
    return any(path == p or path.startswith(p + os.sep) for p in mine if p)


def _dump(path):
    """In the fork: pickle the checkpoint's namespace (what can be) to ``path``; all values
    in one pickle when possible, so objects shared between variables stay shared."""
    ns = public_names(_namespace())
    good = {n: v for n, v in ns.items() if not isinstance(v, _BY_REFERENCE)}
    failed = {n: "restored by reference" for n in ns if n not in good}
    with open(path, "wb") as fh:
        try:
            pickle.dump((good, failed), fh, protocol=pickle.HIGHEST_PROTOCOL)
            return
        except Exception:
            pass
        for name, value in list(good.items()):  # find the values that cannot be copied
            try:
                pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as exc:
                del good[name]
                failed[name] = f"cannot be copied ({type(exc).__name__}: {str(exc)[:80]})"
        fh.seek(0)
        fh.truncate()
        pickle.dump((good, failed), fh, protocol=pickle.HIGHEST_PROTOCOL)


_prctl = []  # libc's prctl once looked up (empty: not yet; [None]: not available)


def _die_with_parent(prepare=False):
    """In a checkpoint's fork: be killed when the process that forked it dies.
    ``prepare``: look ``prctl`` up now, in the process (once), so that the fork runs as little
    Python as it can (each object it touches is a page copied for it)."""
    if not _prctl:
        try:
            import ctypes

            _prctl.append(ctypes.CDLL(None).prctl)
        except Exception:
            _prctl.append(None)
    if prepare or _prctl[0] is None:
        return
    try:
        _prctl[0](1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def _wait_readable(fd, timeout):
    import select

    ready, _, _ = select.select([fd], [], [], timeout)
    return bool(ready)


_killed = []  # forks told to leave and not yet waited for (see ``_reap``)


def _reap(pid, wait=True):
    """End a checkpoint's fork. ``wait=False``: do not wait for it to be gone (the kernel
    frees its memory either way); it is collected by a later call, so it never lingers as
    a zombie for longer than until the next checkpoint is dropped."""
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
    if wait:
        try:
            os.waitpid(pid, 0)
        except OSError:
            pass
    else:
        _killed.append(pid)
    for old in list(_killed):
        try:
            done, _ = os.waitpid(old, os.WNOHANG)
        except OSError:  # not our child (any more)
            done = old
        if done:
            _killed.remove(old)


def checkpoint(cid, store, snapshot=False, drop_ids=(), relist=False):
    """Keep the state as it is now under ``cid``; pre-images are recorded until the next.
    ``snapshot``: also what ``begin`` does for a Python step (reusing this scan), as the
    caller runs a step next; ``relist``: the step comes later (the model is still asked), so
    the next cell lists the files again (``arm_relist``); ``drop_ids``: checkpoints to drop
    once this one is kept (one round trip for all)."""
    Settings.store = os.path.abspath(store)  # relative: to where the code runs (a remote kernel)
    hook()
    started = time.perf_counter()
    cp = Snapshot(cid)
    _State.checkpoints[cid] = cp
    _State.current = cp
    cp.save_index()
    values, cp.values = cp.values, None  # (held no longer than this call)
    _State.relist = None
    if snapshot:
        _before(cp.files, cp.files_complete, cp.listed, values=values)
    relisted = bool(relist and arm_relist(cid))
    for old in drop_ids:
        drop(old)
    return {"id": cid, "fork": cp.pid is not None, "copy": cp.copy is not None,
            "variables": len(cp.refs),
            "files": len(cp.files), "cost_s": round(time.perf_counter() - started, 4),
            **({"relist": relisted} if relist else {})}


def restore(cid, store=""):
    """Go back to checkpoint ``cid``: files changed since (newest checkpoint first), then the
    namespace as it was; this checkpoint and later ones are used up. When this process did
    not take it (the kernel restarted since), only files come back, from ``store``."""
    if cid not in _State.checkpoints:
        return _restore_from_disk(cid, os.path.abspath(store) if store else Settings.store)
    _State.current = None
    later = sorted((c for c in _State.checkpoints if c >= cid), reverse=True)
    files = _restore_files([_State.checkpoints[c] for c in later])
    names, removed, problems = _State.checkpoints[cid].restore_namespace(_namespace())
    for other in later:
        _State.checkpoints.pop(other).release()
    return {"variables": names, "removed_variables": removed, "problems": problems, **files}


def _restore_files(newest_first):
    files = {"restored": [], "removed": [], "not_restored": [], "kept": []}
    for cp in newest_first:
        for key, paths in cp.restore_files().items():
            files[key] += [p for p in paths if p not in files[key]]
    done = set(files["restored"]) | set(files["removed"])
    files["not_restored"] = [p for p in files["not_restored"] if p.split(" (")[0] not in done]
    files["kept"] = [p for p in files["kept"] if p not in done]
    return files


def _restore_from_disk(cid, store):
    kept = []
    try:
        names = os.listdir(store)
    except OSError:
        names = []
    for name in names:
        if name.isdigit() and int(name) >= cid:
            cp = Snapshot.from_disk(os.path.join(store, name), int(name))
            if cp is not None:
                kept.append(cp)
    kept.sort(key=lambda c: c.cid, reverse=True)
    if not kept or kept[-1].cid != cid:
        return {"missing": True}
    files = _restore_files(kept)
    for cp in kept:
        shutil.rmtree(cp.dir, ignore_errors=True)
    lost = ("the Python kernel restarted since this checkpoint, so the variables it held are "
            "gone (the new kernel's variables were left as they are)")
    return {"namespace_lost": lost, **files}


def drop(cid):
    """Forget checkpoint ``cid``; what it recorded goes to the one before it, if kept, which
    records again if this one was current (see ``_hand_over``)."""
    cp = _State.checkpoints.pop(cid, None)
    if cp is not None:
        before = max((c for c in _State.checkpoints if c < cid), default=None)
        if before is not None:
            _hand_over(cp, _State.checkpoints[before])
        if _State.current is cp:
            _State.relist = None
            _State.current = _State.checkpoints.get(before)
        cp.release(wait=False)
    return {"ok": True}


def guard(settings):
    """Run the next cell under the runtime guard (guard.py) with ``settings``."""
    hook()
    return guard_arm(settings)


def guard_report():
    """What the guard stopped in the last guarded cell."""
    return guard_taken()


_CALLS = {f.__name__: f for f in (begin, end, checkpoint, restore, drop, configure, guard,
                                  guard_report)}


def call(name, *args, settings=None, drop_first=(), **kwargs):
    """The entry point: one of ``begin end checkpoint restore drop configure guard
    guard_report``, after applying
    ``settings`` (see ``configure``) and dropping ``drop_first`` (checkpoints the engine has
    let go of since its last call: one round trip for all); the result as JSON text."""
    if settings:
        configure(**settings)
    for old in drop_first:
        drop(old)
    return json.dumps(_CALLS[name](*args, **kwargs))
