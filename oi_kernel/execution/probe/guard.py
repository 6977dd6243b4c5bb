"""The runtime guard: what a step that runs without asking may not do. A part of the probe
(see ``changes.py``), so it runs where the code runs and needs nothing but the standard library.

While a guarded step runs, the probe's one audit hook (``watch._audit``) hands each
audit event to ``check`` first, which raises ``PermissionError`` for: network (connect,
sendto, bind, name lookups, urllib/http/ftp/smtp...), writes outside the workspace or over
files that existed before the step (``open`` with a write mode or flags, ``os.truncate``,
remove, rename, rmtree, chmod...), process creation (subprocess, os.system/exec/spawn/fork,
pty), signals to other processes, native code (``ctypes`` loading a library or looking up
a symbol outside the interpreter's own folders, extension modules imported from elsewhere),
the environment (``os.putenv``/``unsetenv``), resource limits, and reads of secrets (the
home folder's dot files and folders, the Jupyter runtime folder, ``/proc/*/environ``,
``/etc/shadow``...). Each stop is recorded (``_Guard.stops``) even when the code catches
the exception. Changes for which Python raises no audit event (``sys.path``, import hooks,
builtins, IPython's event and input-transformer lists, the exception and display hooks) are
found when the step ends, undone, and recorded as stops the same way.

Who is guarded: the cell of a guarded step (a context variable set around it, so asyncio
callbacks and tasks it schedules stay guarded whenever they run), threads started while it
runs or by guarded code later, and the exit handlers and finalizers it registers. With no
guarded code alive the hook pays one attribute test per event.
"""

import contextvars
import os
import sys
import threading

from .changes import WRITE_FLAGS, _at, _State

# the guarded step (its serial number) the code running now belongs to; 0: none
_GUARDED = contextvars.ContextVar("oi_guarded", default=0)
_get_ident = threading.get_ident
_NETWORK = {
    "socket.connect": "network connection to {1}", "socket.sendto": "network send to {1}",
    "socket.sendmsg": "network send to {1}", "socket.bind": "listening on {1}",
    "socket.getaddrinfo": "name lookup of {0}", "socket.gethostbyname": "name lookup of {0}",
    "socket.gethostbyname_ex": "name lookup of {0}", "socket.gethostbyaddr": "name lookup of {0}",
    "socket.getnameinfo": "name lookup of {0}", "socket.sethostname": "setting the host name",
    "urllib.Request": "web request to {0}", "http.client.connect": "HTTP connection to {1}:{2}",
    "ftplib.connect": "FTP connection to {1}", "smtplib.connect": "mail connection to {1}",
    "poplib.connect": "mail connection to {1}", "imaplib.open": "mail connection to {1}",
    "nntplib.connect": "news connection to {1}", "telnetlib.Telnet.open": "telnet to {1}",
    "webbrowser.open": "opening a browser at {0}",
}
_PROCESS = {
    "subprocess.Popen": "starting the process {1}", "os.system": "running the command {0}",
    "os.exec": "replacing the kernel with {0}", "os.posix_spawn": "starting the process {0}",
    "os.spawn": "starting the process {1}", "os.fork": "forking the kernel",
    "os.forkpty": "forking the kernel", "pty.spawn": "starting the process {0}",
    "os.startfile": "opening {0}", "os.kill": "sending a signal to process {0}",
    "os.killpg": "sending a signal to process group {0}",
    "signal.pthread_kill": "sending a signal to a thread",
    "os.putenv": "setting the environment variable {0}",
    "os.unsetenv": "removing the environment variable {0}",
    "resource.setrlimit": "changing a resource limit", "resource.prlimit": "changing a "
    "resource limit", "sqlite3.enable_load_extension": "enabling SQLite extensions",
    "sqlite3.load_extension": "loading the SQLite extension {1}",
    "ctypes.dlsym/handle": "looking up native function {1}",
    "os.link": "linking {1} to {0}", "os.symlink": "linking {1} to {0}",
    "os.mkfifo": "making the pipe {0}", "os.mknod": "making the device {0}",
}
_CHANGES = {  # event -> (which argument is the path, its dir_fd position, what it does)
    "os.remove": (0, 1, "deleting"), "os.rmdir": (0, 1, "deleting the folder"),
    "shutil.rmtree": (0, 1, "deleting the folder"), "os.truncate": (0, None, "truncating"),
    "os.chmod": (0, 2, "changing permissions of"), "os.chown": (0, 3, "changing the owner of"),
    "os.utime": (0, 3, "changing the times of"), "os.chflags": (0, None, "changing flags of"),
    "os.setxattr": (0, None, "changing attributes of"),
    "os.removexattr": (0, None, "changing attributes of"),
}
# what an installed library's code may do while it is imported (numpy sets OPENBLAS_*;
# matplotlib runs fc-list once to list fonts)
# (urllib3 binds ::1 to see whether IPv6 works)
_LIBRARY_MAY = frozenset({"os.putenv", "os.unsetenv", "subprocess.Popen", "socket.bind"})
_EXTENSIONS = (".so", ".pyd", ".dylib", ".dll")
_SECRET_FILES = ("/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/var/run/secrets",
                 "/run/secrets")


class _Guard:
    on = False  # guarded code may be alive (else the hook returns at once)
    step = False  # a guarded cell runs now
    before = frozenset()  # threads alive when it started (not guarded)
    threads = set()  # threads started by guarded code without ``threading``
    armed = None  # settings of the next cell to guard (``arm``)
    hooked = False  # the IPython events are registered
    checking = False  # ``check`` runs (its own file tests raise no stop)
    root = ""  # the workspace (realpath) of the guarded cell
    created = set()  # paths the guarded cell created (may be rewritten, removed)
    stops = []  # what the guard stopped, for the engine: [{"event", "what"}]
    code_dirs = ()  # the interpreter's own folders (stdlib, site-packages)
    secret_dirs = ()  # folders whose files are not read
    open_dirs = ()  # tools' caches inside secret folders that may be read and written
    saved = None  # state compared when the cell ends (``_snapshot``)
    memory = 0  # bytes above current use the cell may take (RLIMIT_AS); 0: no limit
    rlimit = None  # the limit to put back
    token = None  # of ``_GUARDED`` for the cell
    report = None  # of the last guarded cell (``guard_taken``)
    folders, folders_key = (), None  # ``_folders`` and what it was worked out for
    serial = 0  # of the guarded cell now or last (``_GUARDED``)
    depth = 0  # cells under way inside the guarded one, itself included


def guarded():
    """Whether the code calling now is guarded."""
    if _GUARDED.get():
        return True
    ident = _get_ident()
    return ident in _Guard.threads or (_Guard.step and ident not in _Guard.before)


def check(event, args):
    """Called by the audit hook for every event while ``_Guard.on``: raise for what a
    guarded caller may not do."""
    if _Guard.checking or _State.in_hook or not guarded():
        return
    what = _judge(event, args)
    if what and not (event in _LIBRARY_MAY and _library_import()):
        stop(event, what)


def stop(event, what):
    if not _Guard.step or _GUARDED.get() not in (0, _Guard.serial) or (
            _get_ident() in _Guard.threads):
        what += " (by code an earlier step left running)"
    _Guard.stops.append({"event": event, "what": what})
    raise PermissionError(f"oi_kernel guard: {what} stopped (this step ran without asking)")


def _library_import():
    """Whether the caller is a library being imported from the interpreter's folders: each
    frame up to the first module-level one is code in those folders, and that one is the
    module code of a module whose import is under way (not the cell, nor a library
    function the cell called)."""
    _Guard.checking = True
    try:
        frame = sys._getframe(3)
        code_dirs = _Guard.code_dirs
        while frame is not None:
            filename = frame.f_code.co_filename
            if not _under(_real(filename), code_dirs) or not os.path.isfile(filename):
                return False
            if frame.f_code.co_name == "<module>":
                module = sys.modules.get(frame.f_globals.get("__name__"))
                spec = getattr(module, "__spec__", None)
                return (getattr(module, "__dict__", None) is frame.f_globals
                        and getattr(spec, "_initializing", False) is True)
            frame = frame.f_back
        return False
    finally:
        _Guard.checking = False


def _numeric(host):
    """An address written out (no name to look up: the connection itself is judged)."""
    import socket

    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, host)
            return True
        except (OSError, TypeError, ValueError):
            pass
    return False


def _judge(event, args):
    if event == "socket.getaddrinfo" and args and (args[0] is None or _numeric(args[0])):
        return ""
    text = _NETWORK.get(event) or _PROCESS.get(event)
    if text is not None:
        return text.format(*[_short(a) for a in args], *[""] * 3)
    if event == "open":
        return _judge_open(*(list(args) + [None, None, None])[:3])
    if event in _CHANGES:
        index, fd_at, verb = _CHANGES[event]
        return _judge_change(args[index], args[fd_at] if fd_at is not None and len(args) > fd_at
                             else None, verb)
    if event in ("os.rename", "shutil.move"):
        src = _at(args[0], args[2] if len(args) > 2 else None)
        dst = _at(args[1], args[3] if len(args) > 3 else None)
        return _judge_change(src, None, "moving") or _judge_new(dst, "moving a file over")
    if event == "os.mkdir":
        path = _at(args[0], args[2] if len(args) > 2 else None)
        if path is not None and any(d.startswith(_real(os.fsdecode(path)) + os.sep)
                                    for d in _Guard.open_dirs):
            return ""  # on the way to a tool's cache (~/.config for ~/.config/matplotlib)
        return _judge_new(path, "making the folder")
    if event == "import" and len(args) > 1 and isinstance(args[1], str) and (
            args[1].endswith(_EXTENSIONS) and not _under(_real(args[1]), _Guard.code_dirs)):
        return f"loading the native module {args[1]}"
    if event == "ctypes.dlopen":
        name = args[0]
        if name is None or (isinstance(name, str) and "/" in name
                            and _under(_real(name), _Guard.code_dirs)):
            return ""
        return f"loading the native library {name}"
    if event == "ctypes.dlsym":
        name = getattr(args[0], "_name", None)
        if isinstance(name, str) and "/" in name and _under(_real(name), _Guard.code_dirs):
            return ""
        return f"looking up native function {args[1]} in {name or 'the kernel process'}"
    if event == "sqlite3.connect":
        db = args[0]
        if isinstance(db, (str, bytes, os.PathLike)) and os.fsdecode(db) not in ("", ":memory:"):
            return _judge_new(db, "opening the database")
    return ""


def _judge_open(path, mode, flags):
    if not isinstance(path, (str, bytes, os.PathLike)):
        return ""  # a descriptor: opened before (and judged then)
    writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
        isinstance(flags, int) and bool(flags & WRITE_FLAGS))
    if writing:
        path = os.fsdecode(path)
        if os.path.basename(os.path.dirname(path)) == "__pycache__":
            raise PermissionError("oi_kernel guard: no byte-code cache is written")
        if path in ("/dev/null", "/dev/stdout", "/dev/stderr"):
            return ""
        verb = "appending to" if (isinstance(mode, str) and "a" in mode) or (
            mode is None and isinstance(flags, int) and flags & os.O_APPEND) else "writing"
        return _judge_new(path, verb)
    real = _real(os.fsdecode(path))
    if _secret(real):
        return f"reading {real}"
    return ""


_CODE_SUFFIXES = (".py", ".pyc", ".pth", ".so", ".sh", ".bash", ".zsh")
_CODE_NAMES = ("sitecustomize", "usercustomize")


def _judge_new(path, verb):
    """A path may be written when it is new, inside the workspace (or a tool's cache), or
    was made by this cell."""
    if path is None:
        return f"{verb} a file given relative to a folder descriptor"
    real = _real(os.fsdecode(path))
    if real in _Guard.created or _under(real, _Guard.open_dirs):
        return ""
    if not _under(real, (_Guard.root,)):
        return f"{verb} {real} (outside the workspace)"
    if os.path.lexists(real):
        return f"{verb} the existing file {real}"
    if real.endswith(_CODE_SUFFIXES) or os.path.basename(real).startswith(_CODE_NAMES):
        return f"{verb} the code file {real} (a later import or tool would run it)"
    _Guard.created.add(real)
    return ""


def _judge_change(path, dir_fd, verb):
    if isinstance(path, int):  # a descriptor: the file it names
        try:
            path = os.readlink(f"/proc/self/fd/{path}")
        except OSError:
            return f"{verb} an open file"
    if not isinstance(path, (str, bytes, os.PathLike)):
        return f"{verb} a file"
    path = _at(path, dir_fd)
    if path is None:
        return f"{verb} a file given relative to a folder descriptor"
    real = _real(os.fsdecode(path))
    if real in _Guard.created or _under(real, _Guard.open_dirs):
        return ""
    where = "" if _under(real, (_Guard.root,)) else " (outside the workspace)"
    return f"{verb} {real}{where}"


def _real(path):
    _Guard.checking = True
    try:
        return os.path.realpath(os.path.abspath(path))
    finally:
        _Guard.checking = False


def _under(path, folders):
    return any(path == f or path.startswith(f + os.sep) for f in folders if f)


def _secret(real):
    if real.startswith("/proc/") and real.rsplit("/", 1)[-1] in ("environ", "mem", "auxv"):
        return True
    if _under(real, _SECRET_FILES):
        return True
    return _under(real, _Guard.secret_dirs) and not _under(
        real, _Guard.code_dirs + _Guard.open_dirs)


def _short(value):
    text = value if isinstance(value, str) else (
        os.fsdecode(value) if isinstance(value, bytes) else repr(value))
    if isinstance(value, tuple) and len(value) >= 2 and isinstance(value[0], str):
        text = f"{value[0]}:{value[1]}"
    elif isinstance(value, (list, tuple)) and value and all(
            isinstance(v, (str, bytes, os.PathLike)) for v in value):
        text = " ".join(os.fsdecode(v) for v in value)
    return text if len(text) <= 120 else text[:117] + "..."


# ----------------------------------------------------------------------------- folders
def _folders(settings):
    """The interpreter's folders, the secret ones and the tools' caches (realpaths)."""
    import sysconfig

    code = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        try:
            code.add(sysconfig.get_path(key))
        except KeyError:
            pass
    try:
        import site
        code.update(site.getsitepackages())
        code.add(site.getusersitepackages())
    except Exception:
        pass
    code.update(p for p in sys.path if p and "-packages" in p)
    home = os.path.expanduser("~")
    secret = {settings.get("runtime_dir") or ""}
    try:
        secret.update(os.path.join(home, name) for name in os.listdir(home) if name[:1] == ".")
    except OSError:
        pass
    if os.environ.get("XDG_RUNTIME_DIR"):
        secret.add(os.environ["XDG_RUNTIME_DIR"])
    try:
        from ipykernel.connect import get_connection_file
        secret.add(os.path.dirname(get_connection_file()))
    except Exception:
        pass
    caches = {os.environ.get("MPLCONFIGDIR", ""), os.path.join(home, ".cache", "matplotlib"),
              os.path.join(home, ".config", "matplotlib"), os.path.join(home, ".matplotlib"),
              *settings.get("open_dirs", ())}
    root = _real(settings.get("root") or os.getcwd())
    real = lambda paths: tuple(sorted(  # noqa: E731
        {_real(p) for p in paths if p} - {root, home}))
    return real(code), tuple(p for p in real(secret) if not _under(root, (p,))), real(caches)
