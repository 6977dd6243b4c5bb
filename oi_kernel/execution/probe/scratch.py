"""The disposable copy where no namespaces can be made (the sandboxed child forbids new user
namespaces; some machines do too): a scratch copy of the workspace, and a Landlock domain in
the fork that lets it write only there (and to /dev/null) and connect to nothing over TCP.
Part of the probe (see the package's docstring): standard library only.
"""

import ctypes
import os
import shutil
import tempfile

_CREATE, _ADD_RULE, _RESTRICT = 444, 445, 446  # the same numbers on every architecture
_PATH_BENEATH = 1
_WRITES = (2 | 16 | 32 | 64 | 128 | 256 | 512 | 1024 | 2048 | 4096)  # write, remove, make
_REFER, _TRUNCATE = 8192, 16384  # ABI 2, ABI 3
_NET_BIND, _NET_CONNECT = 1, 2  # ABI 4
SCRATCH_MAX_BYTES = 200_000_000


class _Beneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def scratch_path():
    """Where a preview's scratch copy goes (made by the fork, removed by the parent)."""
    return os.path.join(tempfile.gettempdir(), f"oi-preview-{os.getpid()}-{os.urandom(4).hex()}")


def copy_capped(root, dest, skip, max_bytes, dirs_exist_ok=False):
    """Copy the folder ``root`` to ``dest`` (symlinks as links; files and folders named in
    ``skip`` left out at every depth) unless its files add up to more than ``max_bytes``:
    True when copied, False (nothing copied) when over. Also ``record.verify``'s copy."""
    total = 0
    for top, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in skip]
        for name in files:
            try:
                total += os.lstat(os.path.join(top, name)).st_size
            except OSError:
                pass
        if total > max_bytes:
            return False
    shutil.copytree(root, dest, symlinks=True, dirs_exist_ok=dirs_exist_ok,
                    ignore=lambda _d, names: [n for n in names if n in skip])
    return True


def make_scratch(root, dest, skip_dirs):
    """Copy the workspace to ``dest`` (symlinks as links, tools' folders left out); "" when
    done, else why not."""
    if not copy_capped(root, dest, skip_dirs, SCRATCH_MAX_BYTES):
        return (f"the workspace is over {SCRATCH_MAX_BYTES // 1_000_000} MB, too large for "
                "a scratch copy")
    return ""


def _abi(syscall):
    return max(syscall(_CREATE, None, 0, 1), 0)  # LANDLOCK_CREATE_RULESET_VERSION


def confine_writes(dest):
    """Enter a Landlock domain: writes only beneath ``dest`` (and to /dev), no TCP; "" when
    done, else why not."""
    libc = ctypes.CDLL(None, use_errno=True)
    syscall = libc.syscall
    syscall.restype = ctypes.c_long
    abi = _abi(syscall)
    if abi == 0:
        return "this kernel has neither unprivileged user namespaces nor Landlock"
    fs = _WRITES | (_REFER if abi >= 2 else 0) | (_TRUNCATE if abi >= 3 else 0)
    net = _NET_BIND | _NET_CONNECT if abi >= 4 else 0
    attr = (ctypes.c_uint64 * 3)(fs, net, 0)
    fd = syscall(_CREATE, ctypes.byref(attr), 16 if abi >= 4 else 8, 0)
    if fd < 0:
        return f"landlock_create_ruleset: {os.strerror(ctypes.get_errno())}"
    try:
        for path, rights in ((dest, fs), (dest + "-tmp", fs),
                             ("/dev", 2 | (_TRUNCATE if abi >= 3 else 0))):
            beneath = _Beneath(rights, os.open(path, os.O_PATH | os.O_DIRECTORY))
            try:
                if syscall(_ADD_RULE, fd, _PATH_BENEATH, ctypes.byref(beneath), 0) != 0:
                    return f"landlock_add_rule {path}: {os.strerror(ctypes.get_errno())}"
            finally:
                os.close(beneath.parent_fd)
        libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS
        if syscall(_RESTRICT, fd, 0) != 0:
            return f"landlock_restrict_self: {os.strerror(ctypes.get_errno())}"
    finally:
        os.close(fd)
    return ""


def enter_scratch(root, dest, skip_dirs):
    """The fallback copy: copy, confine, go there; "" when done, else why not."""
    why = make_scratch(root, dest, skip_dirs)
    if why:
        return why
    os.makedirs(dest + "-tmp", exist_ok=True)  # the copy's TMPDIR (not in its file list)
    why = confine_writes(dest)
    if why:
        return why
    os.environ["TMPDIR"] = dest + "-tmp"
    tempfile.tempdir = None
    os.chdir(dest)
    return ""
