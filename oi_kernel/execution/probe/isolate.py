"""The disposable copy's isolation, for ``preview``: new user, mount and network
namespaces; every mount read-only; the workspace and ``/tmp`` as copy-on-write overlays whose
upper layers live in a private tmpfs. Called in the fork only (single-threaded, as
``unshare(CLONE_NEWUSER)`` requires); its changes die with it. Part of the probe (see
the package's docstring): standard library only.
"""

import os

_CLONE_NEWNS, _CLONE_NEWUSER, _CLONE_NEWNET = 0x00020000, 0x10000000, 0x40000000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_NOATIME, _MS_NODIRATIME, _MS_BIND = 32, 1024, 2048, 4096
_MS_REC, _MS_PRIVATE, _MS_RELATIME, _MS_STRICTATIME = 16384, 1 << 18, 1 << 21, 1 << 24
_KEPT_FLAGS = {"nosuid": _MS_NOSUID, "nodev": _MS_NODEV, "noexec": _MS_NOEXEC,
               "noatime": _MS_NOATIME, "nodiratime": _MS_NODIRATIME,
               "relatime": _MS_RELATIME, "strictatime": _MS_STRICTATIME}
_VIRTUAL = ("/proc", "/sys", "/dev")
SCRATCH = "/dev/shm"  # where the copy's private tmpfs (the overlays' upper layers) goes
_libc = []
UPPERS = []  # (overlaid folder, its upper layer) in the fork, once ``isolate`` made them


def isolation_libc():
    """libc, looked up once in the process (before the fork: the fork runs little Python)."""
    if not _libc:
        import ctypes

        _libc.append(ctypes.CDLL(None, use_errno=True))
    return _libc[0]


def _check(result, what):
    if result != 0:
        import ctypes

        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _write(path, text):
    with open(path, "w") as fh:
        fh.write(text)


def _mount(source, target, fstype, flags, data=None):
    libc = isolation_libc()
    _check(libc.mount(source and source.encode(), target.encode(),
                      fstype and fstype.encode(), flags, data and data.encode()),
           f"mount {target}")


def _mount_points():
    """(mount point, options) of each mount, the deepest last."""
    points = []
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            fields = line.split()
            point = fields[4].encode().decode("unicode_escape")
            points.append((point, fields[5]))
    return points


def _read_only_everywhere():
    """Remount each real mount read-only (the flags a user namespace may not drop kept)."""
    for point, options in _mount_points():
        if any(point == v or point.startswith(v + "/") for v in _VIRTUAL):
            continue
        flags = _MS_REMOUNT | _MS_BIND | _MS_RDONLY
        for opt in options.split(","):
            flags |= _KEPT_FLAGS.get(opt, 0)
        try:
            _mount(None, point, None, flags)
        except OSError:
            pass  # (a mount that refuses keeps its flags; the overlays still cover the workspace)


def _overlays(root):
    """The folders the copy may write: the workspace and /tmp (one overlay when one holds
    the other)."""
    tops = [os.path.realpath(root), "/tmp"]
    tops.sort(key=len)
    kept = []
    for top in tops:
        if not any(top == k or top.startswith(k.rstrip("/") + "/") for k in kept):
            kept.append(top)
    return [t for t in kept if os.path.isdir(t) and t != "/"]


def _overlay(top, upper, work):
    """Overlay ``top``; its xattrs in the user namespace's ``user.`` space (``userxattr``:
    without it, removing a folder the copy did not make fails with EIO), where the kernel
    knows the option."""
    options = f"lowerdir={top},upperdir={upper},workdir={work}"
    try:
        _mount("oi-preview", top, "overlay", 0, options + ",userxattr")
    except OSError:
        _mount("oi-preview", top, "overlay", 0, options)


def isolate(root):
    """Isolate this (forked) process; "" when done, else why it cannot be."""
    libc = isolation_libc()
    uid, gid = os.getuid(), os.getgid()
    try:
        _check(libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNS | _CLONE_NEWNET), "unshare")
    except OSError as exc:
        return (f"this machine does not let a process make a private copy of its files and "
                f"network (user namespaces: {exc.strerror}); ask the administrator to allow "
                "unprivileged user namespaces")
    try:
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
        _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
        _mount("oi-preview", SCRATCH, "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=0700")
        tops = _overlays(root)
        _read_only_everywhere()
        for i, top in enumerate(tops):
            upper, work = f"{SCRATCH}/u{i}", f"{SCRATCH}/w{i}"
            os.mkdir(upper)
            os.mkdir(work)
            _overlay(top, upper, work)
            UPPERS.append((top, upper))
    except OSError as exc:
        return (f"the copy-on-write copy of the workspace could not be made ({exc}); "
                "overlayfs in a user namespace needs Linux 5.11 or later")
    return ""
