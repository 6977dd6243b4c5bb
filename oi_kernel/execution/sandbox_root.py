"""What the sandboxed child can see: a deny-by-default root for bubblewrap.

The root starts empty (bwrap's own tmpfs, remounted read-only at the end), and only what a
Python kernel needs is bound into it (``bwrap_argv``):

* read-only: ``/usr`` and the ``/bin /sbin /lib*`` entries (symlinks again on merged-/usr
  systems), ``/etc`` minus its sensitive files, the child's Python installation wherever it
  lives (prefixes, site-packages, user site, ``sys.path`` entries, editable source trees,
  the kernelspec's resource dir: also under /tmp, /root or /opt), the launcher
  (``confine.py``), and the read grants;
* read-write: the workspace, the child's private ipc directory, the write grants;
* fresh and private: ``/tmp``, ``/dev``, ``/proc`` (its own pid namespace) and an empty
  ``$HOME`` that vanishes with the child;
* absent: the rest of ``$HOME``, ``/root``, ``/home``, ``/var``, ``/srv``, ``/mnt``,
  ``/media``, ``/opt``, ``/run``, ``/sys``, ``/boot``.

Mounts are emitted parent-first (by depth, then by kind), so a deeper mount always lands on
top whatever order the inputs came in. Inside the writable areas, things that would later
run code *outside* the sandbox are bound read-only again: the install dirs of the child's and
the wrapper's Python (a ``.pth`` file runs at every start), other virtual environments,
``.git`` (hooks, ``core.fsmonitor``) and ``.oi`` (project profiles). Hidden last, even inside
a workspace or a grant: sensitive ``/etc`` files, credentials under ``$HOME``, and the
wrapper's own files (its connection file, the session log, Jupyter's runtime directory).
"""

from __future__ import annotations

import functools
import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

SYSTEM_DIRS = ("/usr",)
SYSTEM_LINKS_OR_DIRS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")

# Hidden whatever their mode: some are world-readable on some systems, and the sandbox may
# run as their owner (root, or the user who owns a file with a token in it).
SENSITIVE_ETC = (
    "/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers",
    "/etc/sudoers.d", "/etc/security/opasswd", "/etc/ssl/private", "/etc/pki/tls/private",
    "/etc/pki/CA/private", "/etc/krb5.keytab", "/etc/ipsec.secrets", "/etc/ipsec.d/private",
    "/etc/ppp/chap-secrets", "/etc/ppp/pap-secrets", "/etc/NetworkManager/system-connections",
    "/etc/wpa_supplicant", "/etc/wireguard", "/etc/openvpn", "/etc/letsencrypt", "/etc/docker",
    "/etc/kubernetes", "/etc/rancher", "/etc/libvirt/secrets", "/etc/cups/ssl",
    "/etc/pip.conf", "/etc/npmrc", "/etc/.pwd.lock", "/etc/machine-id",
)
SSH_HOST_KEYS = "/etc/ssh/ssh_host_"

# Credentials under $HOME: hidden again when the workspace or a grant covers them.
HIDDEN_IN_HOME = (
    ".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".config/gh", ".kube", ".docker",
    ".netrc", ".git-credentials", ".pypirc", ".npmrc", ".local/share/jupyter/runtime",
)

# In a writable area, bound read-only again: they would run code outside the sandbox later.
PERSISTENCE_DIRS = (".git", ".oi")

# Never bound as part of "the Python installation", even when sys.path names them: they
# would expose everything below (a PYTHONPATH=$HOME would undo the design).
TOO_BROAD = ("/", "/home", "/root", "/var", "/var/tmp", "/run", "/tmp", "/srv", "/mnt",
             "/media", "/opt", "/usr", "/etc", "/proc", "/sys", "/dev", "/boot")

TMPFS, RW, RO, PROTECT, HIDE = range(5)  # mount kinds, in the order they stack


@dataclass(frozen=True)
class Layout:
    """Everything ``bwrap_argv`` binds, as absolute paths."""

    workspace: str
    ipc_dir: str  # the child's connection file and sockets (read-write)
    home: str
    empty_file: str  # an empty regular file, bound over hidden files
    empty_dir: str  # an empty read-only directory, bound over hidden directories
    launcher: str  # confine.py
    python_dirs: tuple[tuple[str, bool], ...] = ()  # (path, is an install dir)
    read_paths: tuple[str, ...] = ()
    write_paths: tuple[str, ...] = ()
    protected: tuple[str, ...] = ()  # hidden even where the workspace or a grant shows them
    own_install: tuple[str, ...] = ()  # the wrapper's Python: read-only where writable
    as_pid_1: bool = False  # no Landlock here: no unfiltered bwrap process in the sandbox
    disable_userns: bool = True  # bwrap >= 0.8


def under(path: str, roots: Iterable[str]) -> bool:
    """Whether ``path`` is one of ``roots`` or inside one."""
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def _bind(flag: str, path: str) -> list[list[str]]:
    """``flag real real``, plus ``flag real path`` when ``path`` goes through a symlink (the
    child may name it either way)."""
    real = os.path.realpath(path)
    binds = [[flag, real, real]]
    if os.path.abspath(path) != real:
        binds.append([flag, real, os.path.abspath(path)])
    return binds


def _hide(path: str, is_dir: bool, layout: Layout) -> list[str]:
    """Bind something empty and read-only over ``path`` (it reads as empty; writes fail)."""
    return ["--ro-bind", layout.empty_dir if is_dir else layout.empty_file, path]


def bwrap_argv(bwrap: str, layout: Layout) -> list[str]:
    """bwrap and its flags, ending with ``--`` (the launcher's command follows)."""
    argv = [bwrap, "--unshare-user", "--cap-drop", "ALL"]
    argv += ["--disable-userns"] if layout.disable_userns else []
    argv += ["--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
             "--unshare-cgroup-try", "--die-with-parent", "--new-session"]
    argv += ["--as-pid-1"] if layout.as_pid_1 else []
    for path in SYSTEM_DIRS:
        argv += ["--ro-bind", path, path]
    for path in SYSTEM_LINKS_OR_DIRS:
        if os.path.islink(path):
            argv += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            argv += ["--ro-bind", path, path]
    argv += ["--ro-bind", "/etc", "/etc", "--dev", "/dev", "--proc", "/proc"]
    for _dest, _kind, args in sorted(_mounts(layout), key=lambda m: (_depth(m[0]), m[1])):
        argv += args
    argv += ["--remount-ro", "/"]  # the root tmpfs itself (mount points only)
    argv += ["--unsetenv", "JPY_PARENT_PID", "--setenv", "HOME", layout.home,
             "--chdir", layout.workspace, "--"]
    return argv


def _depth(path: str) -> int:
    return path.rstrip("/").count("/")


def _mounts(layout: Layout) -> list[tuple[str, int, list[str]]]:
    """(destination, kind, bwrap arguments) for everything below the system dirs."""
    mounts: list[tuple[str, int, list[str]]] = []

    def add(kind: int, args: list[str]) -> None:
        mounts.append((args[-1], kind, args))

    add(TMPFS, ["--tmpfs", "/tmp"])
    if os.path.realpath(layout.home) != "/":
        add(TMPFS, ["--tmpfs", layout.home])  # an empty, private, throw-away home
    writable = [layout.workspace, layout.ipc_dir, *layout.write_paths]
    visible = [*writable, *layout.read_paths]
    for path in writable:
        for args in _bind("--bind", path):
            add(RW, args)
    for path in layout.read_paths:
        if not under(path, writable):
            for args in _bind("--ro-bind", path):
                add(RO, args)
    for path, install in layout.python_dirs:
        if under(path, visible) and not install:
            continue  # e.g. an editable source tree in the workspace stays writable
        if any(under(w, [path]) and w != path for w in writable):
            continue  # an ancestor of a writable area: read-only would not cover it anyway
        for args in _bind("--ro-bind", path):
            add(PROTECT if under(path, writable) else RO, args)
    add(PROTECT if under(layout.launcher, writable) else RO,
        ["--ro-bind", layout.launcher, layout.launcher])
    for path in persistence_paths(layout.workspace, layout.write_paths, layout.own_install):
        add(PROTECT, ["--ro-bind", path, path])
    for path, is_dir in sensitive_etc():
        add(HIDE, _hide(path, is_dir, layout))
    hidden = [os.path.join(layout.home, rel) for rel in HIDDEN_IN_HOME]
    for path in {*hidden, *layout.protected}:
        if os.path.lexists(path) and under(os.path.realpath(path), visible):
            real = os.path.realpath(path)
            add(HIDE, _hide(real, os.path.isdir(real), layout))
    return mounts


def persistence_paths(workspace: str, write_paths: Sequence[str] = (),
                      own_install: Sequence[str] = ()) -> list[str]:
    """Existing paths in the writable areas that run code outside the sandbox later: ``.git``,
    ``.oi``, virtual environments one level down, the wrapper's own install dirs."""
    roots = [workspace, *write_paths]
    found = [p for p in own_install if under(p, roots) and os.path.isdir(p)]
    for root in roots:
        for name in PERSISTENCE_DIRS:
            path = os.path.join(root, name)
            if os.path.isdir(path) and not os.path.islink(path):
                found.append(path)
        try:
            entries = list(os.scandir(root))
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False) and os.path.isfile(
                    os.path.join(entry.path, "pyvenv.cfg")):
                found.append(entry.path)
    return sorted(set(found))


@functools.lru_cache(maxsize=1)
def sensitive_etc() -> tuple[tuple[str, bool], ...]:
    """(path, is_dir) to hide under /etc: the fixed list, ssh host private keys, and every
    entry that is not world-readable (its owner thought it secret). ~10-20 ms, cached."""
    found: dict[str, bool] = {}
    for path in SENSITIVE_ETC:
        try:
            found[path] = stat.S_ISDIR(os.lstat(path).st_mode)
        except OSError:
            pass

    def walk(directory: str) -> None:
        try:
            entries = list(os.scandir(directory))
        except OSError:
            return
        for entry in entries:
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
            except OSError:
                continue
            if stat.S_ISLNK(mode):
                continue
            host_key = entry.path.startswith(SSH_HOST_KEYS) and not entry.path.endswith(".pub")
            if host_key or not mode & stat.S_IROTH:
                found[entry.path] = stat.S_ISDIR(mode)
            elif stat.S_ISDIR(mode) and entry.path not in found:
                walk(entry.path)

    walk("/etc")
    dirs = [p for p, is_dir in found.items() if is_dir]
    return tuple(sorted((p, d) for p, d in found.items() if not under(p, [x for x in dirs
                                                                       if x != p])))


# ------------------------------------------------------------------ the child's Python
_ASK_PYTHON = r"""
import json, os, sys, site
from urllib.parse import unquote, urlparse
install = [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix,
           os.path.dirname(os.path.realpath(sys.executable)), *site.getsitepackages()]
try:
    install.append(site.getusersitepackages())
except Exception:
    pass
other = list(sys.path)
try:
    import importlib.metadata as md
    for dist in md.distributions():  # editable installs: their trees are not on sys.path
        try:
            url = json.loads(dist.read_text("direct_url.json") or "{}")
        except Exception:
            continue
        if url.get("dir_info", {}).get("editable") and url.get("url", "").startswith("file:"):
            other.append(unquote(urlparse(url["url"]).path))
except Exception:
    pass
print(json.dumps({"install": install, "other": other}))
"""


def ask_python(python: str) -> dict[str, list[str]]:
    """The install dirs and other import dirs of ``python`` (in-process when it is ours:
    the same path, not the same binary — a venv's python is a link to its base's)."""
    if os.path.abspath(python) == os.path.abspath(sys.executable):
        scope: dict[str, object] = {"__name__": "oi_sandbox_ask"}
        from contextlib import redirect_stdout
        from io import StringIO

        out = StringIO()
        with redirect_stdout(out):
            exec(_ASK_PYTHON, scope)  # noqa: S102 - our own constant text
        return json.loads(out.getvalue())
    done = subprocess.run([python, "-c", _ASK_PYTHON], capture_output=True, text=True,
                          timeout=60, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


@functools.lru_cache(maxsize=8)
def python_dirs(python: str, resource_dir: str = "", home: str = "") -> tuple[tuple[str, bool], ...]:
    """(path, is an install dir) for what the child's interpreter needs outside the system
    dirs. Install dirs stay read-only even inside the workspace; the others (sys.path
    entries, editable trees, the kernelspec's resource dir) are bound only where they are
    not visible anyway. Cached per wrapper process and interpreter."""
    found = ask_python(python)
    install = minimal_dirs(found["install"], home)
    other = minimal_dirs(found["other"] + ([resource_dir] if resource_dir else []), home)
    return tuple((p, True) for p in install) + tuple(
        (p, False) for p in other if not under(p, install))


def own_install_dirs() -> tuple[str, ...]:
    """The wrapper's own install dirs and package (its venv may be the workspace's ``.venv``;
    an editable checkout may be the workspace)."""
    import site

    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # .../oi_kernel
    dirs = [sys.prefix, *site.getsitepackages(), package]
    return tuple(os.path.realpath(d) for d in dirs if os.path.realpath(d) not in TOO_BROAD)


def minimal_dirs(candidates: Sequence[str], home: str = "") -> tuple[str, ...]:
    """Existing directories among ``candidates`` (absolute), without those under the system
    dirs or under another candidate, and never a too-broad one (``TOO_BROAD``, ``home`` or
    one of its ancestors)."""
    home = os.path.realpath(home or os.path.expanduser("~"))
    keep: list[str] = []
    for path in sorted({os.path.abspath(p) for p in candidates if p}, key=len):
        if not os.path.isdir(path):
            continue
        real = os.path.realpath(path)
        if real in TOO_BROAD or path in TOO_BROAD or under(home, [real]):
            continue
        if under(real, [*SYSTEM_DIRS, "/etc"]) and path == real:
            continue
        if not under(path, keep):
            keep.append(path)
    return tuple(keep)
