"""The kernel's side of the warm host (``llm/warm_host.py``): a per-user process that holds
litellm imported and answers the kernel's LLM requests, so the kernel never waits for
litellm's import (~3 s of CPU) nor competes with it for the GIL while the user's first
cells run.

At start (``python -m oi_kernel`` unless the environment points at the embedded model, and
``boundary.warm_up`` in a process that is ours) the kernel connects to the host for its
environment, or starts one (niced, in a session of its own), and keeps one connection open
for its lifetime: the host says hello at once (a stale socket or a hung host is found out
in seconds) and exits when no kernel has been attached for ``OI_WARM_HOST_IDLE`` seconds
(120 by default). The socket lives in an owner-only directory (``OI_WARM_HOST_DIR``, else
``$XDG_RUNTIME_DIR/oi-kernel`` or ``/tmp/oi-kernel-UID``, mode 0700; the host also checks
the peer's uid): nothing leaves the machine, and litellm stays the one boundary to every
provider, in the host. Hosts are told apart by the interpreter, every module of ours, litellm
and the environment (keys, proxies), so a kernel never uses another version's or another
environment's litellm.

What needs the kernel's own process never goes to the host, decided before a request is
sent (``remote.serves``): the embedded model (``local/...``), anything registered in the
kernel's litellm. Whenever the host cannot serve (``OI_WARM_HOST=0``, ``LITELLM_LOG`` set:
the user debugs litellm and sees its lines as before; no safe directory, it failed to start
or died, litellm imported in the kernel: the kernel then lets go of the host) the kernel
takes the plain path: litellm imported here, as before (logged only).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

SWITCH_ENV = "OI_WARM_HOST"  # "0": never use a warm host
IDLE_ENV = "OI_WARM_HOST_IDLE"
DIR_ENV = "OI_WARM_HOST_DIR"  # the sockets' directory (owner-only), instead of the default
NICE_ENV = "OI_WARM_HOST_NICE"
DEFAULT_IDLE_S = 120.0
DEFAULT_NICE = 10
READY_TIMEOUT_S = 120.0  # the host's litellm import on a very loaded machine
BIND_TIMEOUT_S = 20.0
HELLO_TIMEOUT_S = 10.0  # a live host says hello at once, before its import is done
STALE_S = 86400.0  # a key's files no host has used for a day are removed
LOG_LIMIT = 1 << 20  # the hosts' log beside the socket starts again past this size
# Not part of a host's identity: they differ per kernel, or are sent with each request.
# (OI_*: our settings, read by the kernel; the LLM's are sent with each request.)
VOLATILE_PREFIXES = ("OI_", "JPY_", "JUPYTER_", "PYTEST_", "COV_CORE_")
VOLATILE = frozenset({"_", "PWD", "OLDPWD", "SHLVL", "KERNEL_ID"})
SUN_PATH_MAX = 100

log = logging.getLogger(__name__)


class HostGone(Exception):
    """The host did not answer: the kernel falls back to litellm in its own process."""


def runtime_dir() -> str | None:
    """An owner-only directory for the host's socket, or None when there is none safe."""
    candidates = [os.environ[DIR_ENV]] if os.environ.get(DIR_ENV) else []
    if base := os.environ.get("XDG_RUNTIME_DIR"):
        candidates.append(os.path.join(base, "oi-kernel"))
    candidates.append(os.path.join(tempfile.gettempdir(), f"oi-kernel-{os.getuid()}"))
    for path in candidates:
        try:
            os.makedirs(path, mode=0o700, exist_ok=True)
            info = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() \
                and not info.st_mode & 0o077 and len(path) < SUN_PATH_MAX - 30:
            return path
    return None


def host_key(environ: dict[str, str] | None = None) -> str:
    """What a host must share with the kernel: interpreter, code (every module of ours, by
    modification time: an edited or reinstalled package gets a host of its own), litellm,
    environment (``environ``: as the process was started, before ipykernel set its own)."""
    import importlib.util

    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    stamps = code_stamps(package)
    spec = importlib.util.find_spec("litellm")
    stamps.append(_mtime(spec.origin) if spec and spec.origin else 0.0)
    env = sorted((k, v) for k, v in (os.environ if environ is None else environ).items()
                 if k not in VOLATILE and not k.startswith(VOLATILE_PREFIXES))
    parts = [sys.executable, sys.version, package, json.dumps(stamps), json.dumps(env)]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:20]


def code_stamps(package: str) -> list:
    """(module, modification time) of every Python file of the package (~200: ~10 ms)."""
    stamps: list = []
    for root, dirs, files in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d not in ("__pycache__", "labextension"))
        stamps.extend((os.path.relpath(os.path.join(root, name), package),
                       _mtime(os.path.join(root, name)))
                      for name in sorted(files) if name.endswith(".py"))
    return stamps


def _mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0


def idle_seconds() -> float:
    try:
        return max(0.5, float(os.environ.get(IDLE_ENV, DEFAULT_IDLE_S)))
    except ValueError:
        return DEFAULT_IDLE_S


def spawn(path: str) -> subprocess.Popen:
    """Start a host for ``path`` in a session of its own (a kernel interrupt, which signals
    the kernel's process group, does not reach it); its output goes to a log beside it."""
    sweep(os.path.dirname(path))
    log_path = path[: -len(".sock")] + ".log"
    with open(log_path, "wb" if _mtime(log_path) and os.path.getsize(log_path) > LOG_LIMIT
              else "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "oi_kernel.llm.warm_host", path, str(idle_seconds())],
            stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True,
            close_fds=True)


def sweep(directory: str, older_than_s: float = STALE_S) -> None:
    """Remove what hosts gone for a day left in the directory (lock, log, socket), one key
    each; a lock that a host holds is left alone."""
    import fcntl

    now = time.time()
    for name in os.listdir(directory):
        if not name.endswith(".sock.lock"):
            continue
        base = os.path.join(directory, name[: -len(".sock.lock")])
        if now - max(_mtime(base + ".sock.lock"), _mtime(base + ".log")) < older_than_s:
            continue
        with contextlib.suppress(OSError), open(base + ".sock.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # OSError: a host holds it
            for leftover in (base + ".sock", base + ".log", base + ".sock.lock"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(leftover)


def dial(path: str, timeout: float | None = None) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        return None
    return sock


def read_line(sock: socket.socket) -> bytes:
    """One newline-ended message from a blocking socket (b"" when it closed)."""
    data = bytearray()
    while not data.endswith(b"\n"):
        piece = sock.recv(65536)
        if not piece:
            return b""
        data += piece
    return bytes(data)


class Link:
    """One kernel's attachment to its warm host: started in a thread, ready when the host
    has imported litellm; ``call`` asks it a question synchronously."""

    def __init__(self, who: str = "kernel") -> None:
        self.who = who  # what attaches, for the host's log: a kernel or a Jupyter server
        self.path = ""
        self.ok = False
        self.dead = False
        self.process: subprocess.Popen | None = None
        self._ready = threading.Event()
        self._attached: socket.socket | None = None
        # the environment now, at start: ipykernel sets variables of its own (MPLBACKEND)
        # while the link attaches, and a server's host (``integrations/server``) has none
        self._environ = dict(os.environ)

    def start(self) -> None:
        threading.Thread(target=self._attach, name="oi-warm-host", daemon=True).start()

    def _attach(self) -> None:
        try:
            directory = runtime_dir()
            if directory is None:
                raise HostGone("no owner-only directory for the socket")
            self.path = os.path.join(directory, f"host-{host_key(self._environ)}.sock")
            sock = dial(self.path, HELLO_TIMEOUT_S) or self._spawn_and_dial()
            self._attached = sock
            self._handshake(sock)
            if self.dead:  # released meanwhile
                self.release()
                return
            self.ok = True
            log.info("warm host ready at %s", self.path)
        except Exception as exc:  # noqa: BLE001 - any failure means: the plain path
            self.release()
            log.info("warm host unavailable (%s): litellm is imported in the kernel", exc)
        finally:
            self._ready.set()

    def _handshake(self, sock: socket.socket) -> None:
        """Attach: a hello at once (a stale or hung host is found out in seconds), then
        ``ok`` once the host has imported litellm; the connection then stays open."""
        sock.sendall(json.dumps({"op": "attach", "kernel": os.getpid(),
                                 "who": self.who}).encode() + b"\n")
        with sock.makefile("rb") as lines:  # a warm host's two lines may come in one packet
            hello = json.loads(lines.readline() or b"{}")
            if "hello" not in hello:
                raise HostGone("the host did not say hello")
            sock.settimeout(READY_TIMEOUT_S)
            answer = json.loads(lines.readline() or b"{}")
        if not answer.get("ok"):
            raise HostGone(f"the host could not import litellm: {answer.get('error')}")
        sock.settimeout(None)

    def release(self) -> None:
        """This kernel does not need the host (its model runs here): detach, so the host
        leaves once idle."""
        self.dead = True
        if self._attached is not None:
            with contextlib.suppress(OSError):
                self._attached.shutdown(socket.SHUT_RDWR)
            self._attached.close()

    def _spawn_and_dial(self) -> socket.socket:
        self.process = spawn(self.path)
        deadline = time.monotonic() + BIND_TIMEOUT_S
        while time.monotonic() < deadline:  # another kernel's host may win the lock: wait
            if (sock := dial(self.path, HELLO_TIMEOUT_S)) is not None:
                return sock
            time.sleep(0.02)
        raise HostGone("the host did not open its socket")

    def wait(self, timeout: float = READY_TIMEOUT_S) -> bool:
        """Whether the host serves (waits for its import to finish)."""
        self._ready.wait(timeout)
        return self.ok and not self.dead

    def call(self, name: str, *args: Any) -> Any:
        """litellm's answer to ``name(*args)`` in the host; HostGone when it cannot say."""
        sock = dial(self.path, timeout=60)
        if sock is None:
            self.dead = True
            raise HostGone("the host's socket is gone")
        with sock:
            try:
                sock.sendall(json.dumps({"op": "call", "name": name, "args": args}).encode()
                             + b"\n")
                answer = json.loads(read_line(sock) or b"null")
            except (OSError, ValueError) as exc:
                self.dead = True
                raise HostGone(str(exc)) from exc
        if not isinstance(answer, dict):
            self.dead = True
            raise HostGone("the host closed the connection")
        if "error" in answer:
            raise RemoteError(answer["error"])
        return answer["value"]


class RemoteError(Exception):
    """litellm raised in the host (e.g. ``get_model_info`` of an unknown model)."""


_link: Link | None = None


def start(who: str = "kernel") -> bool:
    """Attach this process (a kernel, or a Jupyter server that keeps a host warm for its
    kernels: ``integrations/server``) to its warm host, starting one if needed, in the
    background. False when hosts are switched off (``OI_WARM_HOST=0``)."""
    global _link
    if os.environ.get(SWITCH_ENV, "1").strip() == "0":
        return False
    if os.environ.get("LITELLM_LOG"):  # library_logs.DEBUG_ENV: its lines shown here
        return False
    if _link is None:
        _link = Link(who)
        _link.start()
    return True


def release() -> None:
    """Let go of the host (started early, from the environment alone) when the kernel's
    model turns out to be one only the kernel's own process can run."""
    if _link is not None:
        _link.release()


def link() -> Link | None:
    """The link, when the host may serve: attached or still starting, litellm not imported
    in this process by anyone (a user's config that imports it keeps the plain path)."""
    if _link is None or _link.dead or "litellm" in sys.modules:
        return None
    return _link
