"""The probe's file side: the scan kept current by inotify, and the audit hook that saves a
file's pre-image before a step writes it. A part of the probe (see ``changes.py``).
"""

import hashlib
import os
import stat
import struct
import sys

from .changes import (
    FRONTEND_SAVED,
    WRITE_FLAGS,
    Settings,
    _at,
    _compile_ignore,
    _Ignore,
    _State,
    _walk,
    ignored,
)
from .guard import _Guard, check

# inotify(7) constants (Linux)
_IN_MODIFY, _IN_ATTRIB, _IN_CLOSE_WRITE = 0x2, 0x4, 0x8
_IN_MOVED_FROM, _IN_MOVED_TO, _IN_CREATE, _IN_DELETE = 0x40, 0x80, 0x100, 0x200
_IN_DELETE_SELF, _IN_MOVE_SELF, _IN_UNMOUNT, _IN_Q_OVERFLOW, _IN_IGNORED = (
    0x400, 0x800, 0x2000, 0x4000, 0x8000)
_IN_ONLYDIR, _IN_DONT_FOLLOW, _IN_ISDIR = 0x01000000, 0x02000000, 0x40000000
_IN_MASK = (_IN_MODIFY | _IN_ATTRIB | _IN_CLOSE_WRITE | _IN_MOVED_FROM | _IN_MOVED_TO
            | _IN_CREATE | _IN_DELETE | _IN_DELETE_SELF | _IN_MOVE_SELF | _IN_ONLYDIR
            | _IN_DONT_FOLLOW)
_IN_LOST = _IN_Q_OVERFLOW | _IN_DELETE_SELF | _IN_MOVE_SELF | _IN_UNMOUNT | _IN_IGNORED
_IN_ENTRIES = _IN_CREATE | _IN_DELETE | _IN_MOVED_FROM | _IN_MOVED_TO


class _Watch:
    """The last complete scan, kept up to date from inotify events on every folder it listed.

    A watch is added to a folder before the folder is listed, so no change between the
    listing and the watch is missed. A file event (written, truncated, created, removed,
    renamed, touched) makes the file be looked at again (one ``lstat``). Events that do not
    say exactly what changed drop the kept scan, and the next scan is a full one: a queue
    overflow, a watched folder removed or moved, a folder created, removed or renamed inside
    one, more files than the cap. A file with several names (hard links) is looked at again
    at every scan, as a write through a name elsewhere gives no event here; a new name for
    a file makes the next scan a full one. Not seen (a full scan would see them): writes
    through a name made after the scan in a folder never scanned (outside the tree, or a
    tools' folder), and writes through a shared memory map.
    """

    key = None  # (root, ignore settings, file cap) of the kept scan
    unwatchable = None  # the key whose folders could not all be watched: full scans
    fd = -1
    folders = {}  # watch descriptor -> absolute folder path
    linked = set()  # files with other names (hard links): written through one, no event here
    files = None  # the kept scan, or None
    listed = set()
    libc = None
    broken = False  # inotify is not available here: always scan in full

    @classmethod
    def scan(cls, root, listed):
        _compile_ignore()
        key = (root, _Ignore.source, Settings.max_files, Settings.scan_budget_s)
        if cls.broken or key == cls.unwatchable:
            return _walk(root, listed=listed)
        if cls.files is None or key != cls.key or not cls._catch_up(root):
            found = cls._rebuild(root, key)
            if found is not None:  # watching is not possible: this full scan is the answer
                if listed is not None:
                    listed.update(found[2])
                return found[0], found[1]
        if listed is not None:
            listed.update(cls.listed)
        return dict(cls.files), True

    @classmethod
    def drop(cls):
        cls.files = None
        cls.folders = {}
        if cls.fd >= 0:
            try:
                os.close(cls.fd)
            except OSError:
                pass
            cls.fd = -1

    @classmethod
    def _rebuild(cls, root, key):
        """A full scan that watches every folder it lists (then None: the kept scan is
        current), or ``(files, complete, listed)`` of a full scan when watching is not
        possible: no inotify here, a folder that cannot be watched (the watch limit: never
        tried again for this tree, nor with too many files), or a scan cut short."""
        cls.drop()
        try:
            if cls.libc is None:
                import ctypes
                cls.libc = ctypes.CDLL(None, use_errno=True)
                cls.libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p,
                                                       ctypes.c_uint32]
            fd = cls.libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        except Exception:  # not Linux, no ctypes: full scans
            fd = -1
        listed = set()
        if fd < 0:
            cls.broken = True
            found, complete = _walk(root, listed=listed)
            return found, complete, listed
        cls.fd = fd
        folders = {}
        add = cls.libc.inotify_add_watch
        failed = []

        def watch(folder):
            wd = add(fd, os.fsencode(folder), _IN_MASK)
            if wd < 0:  # e.g. the watch limit: this tree is scanned in full from now on
                failed.append(folder)
                return True
            folders[wd] = folder
            return True
        linked = set()
        found, complete = _walk(root, listed=listed, before_listing=watch, linked=linked)
        if failed or not complete:
            cls.drop()
            if failed or len(found) >= Settings.max_files:  # (a scan out of time: try again)
                cls.unwatchable = key
            return found, complete, listed
        cls.key, cls.folders, cls.files, cls.listed = key, folders, found, listed
        cls.linked = linked
        return None

    @classmethod
    def _catch_up(cls, root):
        """Apply the events queued since the last scan; False when they are not enough."""
        touched = set()
        while True:
            try:
                data = os.read(cls.fd, 65536)
            except BlockingIOError:
                break
            except InterruptedError:
                continue
            except OSError:
                return False
            if not data:
                break
            pos = 0
            while pos + 16 <= len(data):
                wd, mask, _cookie, size = _EVENT.unpack_from(data, pos)
                name = data[pos + 16:pos + 16 + size].rstrip(b"\0")
                pos += 16 + size
                folder = cls.folders.get(wd)
                if folder is None or mask & _IN_LOST:
                    return False
                if mask & _IN_ISDIR:
                    if mask & _IN_ENTRIES:  # a folder came or went: list again
                        return False
                    continue
                if name:
                    touched.add(os.path.join(folder, os.fsdecode(name)))
        touched.update(os.path.join(root, rel) for rel in cls.linked)
        if touched:
            return cls._look_again(root, touched)
        return True

    @classmethod
    def _look_again(cls, root, paths):
        ignore = frozenset(Settings.ignore)
        skip_files, match = _Ignore.files, _Ignore.match
        cut = len(os.path.join(root, ""))
        files = cls.files
        for path in paths:
            rel = path[cut:]
            name = os.path.basename(path)
            if (path in ignore or name in skip_files or name[:2] == ".~" or (
                    match is not None and match(rel.replace(os.sep, "/"), False))):
                continue
            try:
                st = os.lstat(path)
            except OSError:
                files.pop(rel, None)
                cls.linked.discard(rel)
                continue
            if stat.S_ISREG(st.st_mode):
                if st.st_nlink > 1 and rel not in cls.linked:  # a new hard link: which other
                    return False  # names it has only a full scan finds
                files[rel] = (st.st_size, st.st_mtime_ns, st.st_ino)
            elif stat.S_ISDIR(st.st_mode):  # became a folder: list again
                return False
            else:
                files.pop(rel, None)
                cls.linked.discard(rel)
        return len(files) < Settings.max_files


_EVENT = struct.Struct("iIII")
_State.watcher = _Watch  # ``scan`` (changes.py) keeps its result current from now on


def hook():
    """Install the probe's one audit hook (once: a hook cannot be removed)."""
    if not _State.hooked:
        sys.addaudithook(_audit)
        _State.hooked = True


_FILE_EVENTS = ("os.remove", "os.rename", "shutil.rmtree", "os.truncate", "shutil.move",
                "os.rmdir")
_AUDITED = frozenset({"open", *_FILE_EVENTS})
_DIR_FDS = {"os.remove": (1, None), "os.rmdir": (1, None), "shutil.rmtree": (1, None),
            "os.rename": (2, 3)}  # the arguments' dir_fd positions


def _audit(event, args):
    """Save pre-images before a step writes, renames or removes a file. Called for every
    audit event of the process (each ``id()``, ``compile``...): the others leave at once.
    First, while guarded code may be alive, the runtime guard's ``check`` (guard.py)."""
    if _Guard.on:
        check(event, args)
    if event not in _AUDITED:
        return
    cp = _State.current
    if cp is None or _State.in_hook:
        return
    paths = ()
    if event == "open":
        path, mode, flags = (list(args) + [None, None, None])[:3]
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            mode is None and isinstance(flags, int) and flags & WRITE_FLAGS)
        if writing and isinstance(path, (str, bytes, os.PathLike)):
            paths = (path,)
            _Reads.written(path)
        elif isinstance(path, str) and (path.startswith(_State.root) or path[:1] != os.sep):
            _Reads.read(path)  # (an import's absolute path elsewhere leaves at the test)
    elif event in _FILE_EVENTS:
        # a name relative to a folder's descriptor (``dir_fd``, as shutil.rmtree removes what
        # it walks) is not relative to the working directory: resolved, or left out
        fds = _DIR_FDS.get(event, (None, None))
        paths = tuple(_at(a, args[fd] if fd is not None and len(args) > fd else None)
                      for a, fd in ((a, fds[i]) for i, a in enumerate(args[:2]))
                      if isinstance(a, (str, bytes, os.PathLike)))
        paths = tuple(p for p in paths if p is not None)
    if not paths:
        return
    _State.in_hook = True
    try:
        for path in paths:
            path = os.fsdecode(path)
            cp.save_preimage(path if os.path.isabs(path) else os.path.join(os.getcwd(), path))
    except Exception:
        pass
    finally:
        _State.in_hook = False


# ---------------------------------------------------------------- the files a session read
MAX_HASH_BYTES = 1 << 30  # a larger input is named with its size only


class _Reads:
    """Workspace files the session read before it wrote them: the inputs an export names
    (path, size, sha256), so ``verify`` can say what a moved notebook needs. Seen by the
    audit hook (Python's ``open``, while a checkpoint records); not a shell's reads."""

    pending = {}  # absolute path -> None: read since the last step ended
    done = set()  # reported already, or written by the session before it was read

    @staticmethod
    def _absolute(path):
        path = os.fsdecode(path)
        return os.path.normpath(path if os.path.isabs(path) else os.path.join(os.getcwd(), path))

    @classmethod
    def read(cls, path):
        path = cls._absolute(path)
        if path not in cls.done and path.startswith(_State.root + os.sep):
            cls.pending[path] = None

    @classmethod
    def written(cls, path):
        path = cls._absolute(path)
        if path not in cls.pending:
            cls.done.add(path)  # the session's own file: an output, not an input


def _sha256(path, size):
    if size > MAX_HASH_BYTES:
        return None
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _take_reads(root, changed):
    """The files read since the last call, as ``{"path", "size", "sha256"}`` relative to
    ``root``; not those the step also changed (``changed``), nor tools' files."""
    pending, _Reads.pending = _Reads.pending, {}
    found = []
    for path in pending:
        _Reads.done.add(path)
        rel = path[len(root) + 1:]
        if not path.startswith(root + os.sep) or rel in changed or rel.endswith(FRONTEND_SAVED):
            continue
        try:
            info = os.stat(path)
            if not stat.S_ISREG(info.st_mode) or ignored(rel):
                continue
            found.append({"path": rel, "size": info.st_size,
                          "sha256": _sha256(path, info.st_size)})
        except OSError:
            continue
    return found


_State.take_reads = _take_reads
