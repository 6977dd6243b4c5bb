"""What a step changed in the preview's overlay, read from the overlay's upper layer: the
files it wrote are there (copied up), the ones it removed are whiteouts (character devices
0/0), a folder it removed and made again is opaque. So the list costs the changes, not the
workspace's files. Part of the probe (see the package's docstring): standard library only.
"""

import os
import stat

from .changes import ignored
from .isolate import UPPERS

_OPAQUE = ("trusted.overlay.opaque", "user.overlay.opaque")


def _upper_of(root):
    """The upper-layer folder that holds ``root``'s changes, or None."""
    for top, upper in UPPERS:
        if root == top or root.startswith(top.rstrip("/") + "/"):
            return upper + root[len(top):]
    return None


def _opaque(path):
    for name in _OPAQUE:
        try:
            if os.getxattr(path, name) == b"y":
                return True
        except OSError:
            continue
    return False


def _gone_under(rel_dir, before, root):
    """Files of ``before`` under ``rel_dir`` that the merged view no longer has."""
    prefix = rel_dir + os.sep if rel_dir else ""
    return [p for p in before if p.startswith(prefix)
            and not os.path.lexists(os.path.join(root, p))]


def _look(root, rel, upper_path, before, now, gone):
    st = os.lstat(upper_path)
    if stat.S_ISCHR(st.st_mode) and st.st_rdev == 0:  # a whiteout: removed (a file or folder)
        gone.extend([rel] if rel in before else _gone_under(rel, before, root))
    elif stat.S_ISREG(st.st_mode) and not ignored(rel):
        merged = os.lstat(os.path.join(root, rel))
        now[rel] = (merged.st_size, merged.st_mtime_ns)


def overlay_changes(root, before):
    """``(after, removed)``: the changed files' new (size, mtime_ns) by path relative to
    ``root``, and the paths removed; None when ``root`` is not under an overlay."""
    upper_root = _upper_of(root)
    if upper_root is None:
        return None
    now, gone = {}, []
    if not os.path.isdir(upper_root):
        return now, gone
    cut = len(os.path.join(upper_root, ""))
    for top, dirs, files in os.walk(upper_root):
        rel_top = top[cut:] if len(top) >= cut else ""
        if rel_top and (ignored(rel_top, True)):
            dirs[:] = []
            continue
        if rel_top and _opaque(top):
            gone.extend(_gone_under(rel_top, before, root))
        for name in files + [d for d in dirs if os.path.islink(os.path.join(top, d))]:
            rel = os.path.join(rel_top, name) if rel_top else name
            try:
                _look(root, rel, os.path.join(top, name), before, now, gone)
            except OSError:
                continue
    return now, sorted(set(gone))
