"""The confinement the sandboxed child applies to itself, then its IPython kernel.

The sandboxed kernelspec runs this file with the child's own interpreter, in place of
``-m ipykernel_launcher`` (that interpreter may not have oi_kernel installed, so the file is
stdlib only and runs as a script; bubblewrap binds it read-only)::

    python .../confine.py [--memory BYTES] [--canary-socket PATH] [--report PATH] -- \\
        -f {connection_file} [ipykernel arguments...]

Order of events; each step fails closed (the process exits with ``EXIT_REFUSED`` and says
why on its original stderr and in the ``--report`` file instead of running unconfined):

1. The memory cap (``RLIMIT_AS``), when asked for.
2. A **Landlock** domain, entered while the process is single-threaded (before Landlock ABI 8
   it binds the calling thread only). Its rules matter less than the domain itself: code in
   a domain cannot ptrace, or open ``/proc/PID/mem`` of, a process outside it (from ABI 1),
   nor signal it or reach its abstract unix sockets (ABI 6). That keeps bwrap's pid 1, which
   has no seccomp filter, out of reach. Without Landlock the wrapper starts bwrap with
   ``--as-pid-1`` instead (there is then no other process in the sandbox).
3. ipykernel's ``IPKernelApp.initialize``: it binds its five ipc sockets in the private
   directory (the heartbeat from its own thread: we wait for its socket file).
4. **seccomp**, on every thread (``SECCOMP_FILTER_FLAG_TSYNC``: ZeroMQ's I/O threads and
   ipykernel's heartbeat, iopub and control threads exist by now). Refused:
   ``socket(AF_UNIX)`` (EACCES: no new unix socket, so no connect() to another process's
   socket, whatever the file system shows); ``socketpair(AF_UNIX)`` other than stream or
   seqpacket (a datagram end could sendto() any path); io_uring (its socket and connect
   operations bypass seccomp); ptrace, process_vm_readv/writev, pidfd_getfd; keyctl,
   add_key, request_key; new user namespaces (unshare/clone with CLONE_NEWUSER; clone3
   answers ENOSYS so the C library falls back to clone, whose flags can be checked);
   any foreign architecture's system calls (i386 ``int 0x80``, x32, AArch32: ENOSYS).
5. Self-tests, before any user code: ``socket(AF_UNIX)`` now fails on every thread's
   filter; a unix socket the wrapper planted in a bound directory (``--canary-socket``)
   cannot be connected to; bwrap's pid 1 cannot be opened through ``/proc/1/mem``.
6. ``IPKernelApp.start()``.

The price: code in the sandbox cannot create unix sockets at all (``multiprocessing.Manager``
and the ``forkserver`` start method fail; fork and spawn work) and cannot ptrace (gdb,
strace, py-spy).
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
import sys
import time
from collections.abc import Sequence
from typing import Any

EXIT_REFUSED = 78  # EX_CONFIG: the wrapper reports the ``--report`` text
PR_SET_NO_NEW_PRIVS = 38
SECCOMP_SET_MODE_FILTER, SECCOMP_GET_ACTION_AVAIL = 1, 2
SECCOMP_FILTER_FLAG_TSYNC = 1
RET_ALLOW, RET_ERRNO = 0x7FFF0000, 0x00050000
AF_UNIX, SOCK_STREAM, SOCK_SEQPACKET, SOCK_TYPE_MASK = 1, 1, 5, 0xF
CLONE_NEWUSER = 0x10000000
X32_SYSCALL_BIT = 0x40000000

# Per machine: the audit architecture and the numbers of the system calls the filter names
# (from asm/unistd_64.h and asm-generic/unistd.h). Only x86_64 has been run; aarch64's
# numbers were checked against the headers.
ARCHES: dict[str, tuple[int, dict[str, int]]] = {
    "x86_64": (0xC000003E, {
        "socket": 41, "socketpair": 53, "clone": 56, "unshare": 272, "clone3": 435,
        "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "pidfd_getfd": 438,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
        "keyctl": 250, "add_key": 248, "request_key": 249, "seccomp": 317,
    }),
    "aarch64": (0xC00000B7, {
        "socket": 198, "socketpair": 199, "clone": 220, "unshare": 97, "clone3": 435,
        "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "pidfd_getfd": 438,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
        "keyctl": 219, "add_key": 217, "request_key": 218, "seccomp": 277,
    }),
}
REFUSED_EPERM = ("io_uring_setup", "io_uring_enter", "io_uring_register", "ptrace",
                 "process_vm_readv", "process_vm_writev", "pidfd_getfd", "keyctl", "add_key",
                 "request_key")
LANDLOCK_CREATE_RULESET, LANDLOCK_RESTRICT_SELF = 444, 446  # the same on every architecture
LANDLOCK_CREATE_RULESET_VERSION = 1
LL_FS_MAKE_CHAR, LL_FS_MAKE_BLOCK = 1 << 6, 1 << 11
LL_SCOPE_ABSTRACT_UNIX_SOCKET, LL_SCOPE_SIGNAL = 1 << 0, 1 << 1
NO_LANDLOCK_ENV = "OI_SANDBOX_SIMULATE_NO_LANDLOCK"  # tests: behave as on a kernel without it

_libc: Any = None


def _c() -> Any:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
    return _libc


def _syscall(number: int, *args: Any) -> int:
    """A raw system call; returns its result (negative: see ctypes.get_errno())."""
    wrapped = [a if not isinstance(a, int) else ctypes.c_long(a) for a in args]
    return int(_c().syscall(ctypes.c_long(number), *wrapped))


def _no_new_privs() -> None:
    """prctl(PR_SET_NO_NEW_PRIVS): required before an unprivileged process may install a
    seccomp filter or enter a Landlock domain (and no setuid program gains anything)."""
    if _c().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise _fail("prctl(PR_SET_NO_NEW_PRIVS)")


def _fail(what: str) -> OSError:
    code = ctypes.get_errno()
    return OSError(code, f"{what}: {os.strerror(code)}")


def machine() -> tuple[int, dict[str, int]]:
    """This machine's audit architecture and system-call numbers; OSError where unknown."""
    name = os.uname().machine
    if name not in ARCHES:
        raise OSError(errno.ENOSYS, f"no seccomp filter for the {name} architecture "
                      f"(known: {', '.join(ARCHES)})")
    return ARCHES[name]


# ------------------------------------------------------------------ seccomp
def _jump(target: int, pc: int) -> int:
    offset = target - pc - 1
    if not 0 <= offset < 256:
        raise ValueError(f"BPF jump out of range: {offset}")
    return offset


def build_filter(name: str | None = None) -> bytes:
    """The classic-BPF seccomp program (see the module docstring for what it refuses)."""
    audit_arch, nr = ARCHES[name] if name else machine()
    x86 = (name or os.uname().machine) == "x86_64"
    code: list[tuple[int, Any, Any, int]] = []  # (opcode, jt, jf, k); jumps name labels
    labels: dict[str, int] = {}
    ld, jeq, jge, jset, ret, and_ = 0x20, 0x15, 0x35, 0x45, 0x06, 0x54

    def op(opcode: int, k: int, jt: Any = 0, jf: Any = 0) -> None:
        code.append((opcode, jt, jf, k))

    def arg(i: int) -> int:  # low 32 bits of seccomp_data.args[i] (little endian)
        return 16 + 8 * i

    op(ld, 4)  # seccomp_data.arch
    op(jeq, audit_arch, 0, "foreign")
    op(ld, 0)  # seccomp_data.nr
    if x86:
        op(jge, X32_SYSCALL_BIT, "foreign", 0)
    op(jeq, nr["socket"], "socket")
    op(jeq, nr["socketpair"], "socketpair")
    op(jeq, nr["clone"], "flags0")
    op(jeq, nr["unshare"], "flags0")
    op(jeq, nr["clone3"], "foreign")
    for call in REFUSED_EPERM:
        op(jeq, nr[call], "eperm")
    op(ret, RET_ALLOW)
    labels["socket"] = len(code)
    op(ld, arg(0))
    op(jeq, AF_UNIX, "eacces", "allow")
    labels["socketpair"] = len(code)
    op(ld, arg(0))
    op(jeq, AF_UNIX, 0, "allow")
    op(ld, arg(1))
    op(and_, SOCK_TYPE_MASK)
    op(jeq, SOCK_STREAM, "allow")
    op(jeq, SOCK_SEQPACKET, "allow", "eacces")
    labels["flags0"] = len(code)  # clone(flags, ...) / unshare(flags): no new user namespace
    op(ld, arg(0))
    op(jset, CLONE_NEWUSER, "eperm", "allow")
    for label, value in (("allow", RET_ALLOW), ("eacces", RET_ERRNO | errno.EACCES),
                         ("eperm", RET_ERRNO | errno.EPERM), ("foreign", RET_ERRNO | errno.ENOSYS)):
        labels[label] = len(code)
        op(ret, value)
    out = b""
    for pc, (opcode, jt, jf, k) in enumerate(code):
        jt = _jump(labels[jt], pc) if isinstance(jt, str) else jt
        jf = _jump(labels[jf], pc) if isinstance(jf, str) else jf
        out += struct.pack("HBBI", opcode, jt, jf, k)
    return out


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def seccomp_available() -> bool:
    """Whether this kernel has seccomp filters with RET_ERRNO (asks without installing)."""
    try:
        _audit, nr = machine()
    except OSError:
        return False
    action = ctypes.c_uint32(RET_ERRNO)
    return _syscall(nr["seccomp"], SECCOMP_GET_ACTION_AVAIL, 0, ctypes.byref(action)) == 0


def install_seccomp() -> None:
    """Install the filter on every thread of this process (TSYNC). Raises OSError."""
    _audit, nr = machine()
    program = build_filter()
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _Program(len(program) // 8, ctypes.addressof(buffer))
    _no_new_privs()
    result = _syscall(nr["seccomp"], SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC,
                      ctypes.byref(fprog))
    if result < 0:
        raise _fail("seccomp(SET_MODE_FILTER, TSYNC)")
    if result > 0:  # the id of a thread that could not take the filter
        raise OSError(errno.EBUSY, f"seccomp: thread {result} could not be synchronised")


# ------------------------------------------------------------------ Landlock
class _Ruleset(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


def landlock_abi() -> int:
    """The Landlock ABI version of this kernel; 0 when there is none (Linux < 5.13, or
    Landlock not in the active security modules)."""
    if os.environ.get(NO_LANDLOCK_ENV):
        return 0
    version = _syscall(LANDLOCK_CREATE_RULESET, None, 0, LANDLOCK_CREATE_RULESET_VERSION)
    return max(version, 0)


def enter_landlock() -> int:
    """Enter a Landlock domain (see the module docstring); returns the ABI, 0 for none.

    Device creation is the file-system right handled (with no rule, so it is denied); the
    point is the domain's scoping. Must run while the process has a single thread."""
    abi = landlock_abi()
    if abi == 0:
        return 0
    scoped = LL_SCOPE_ABSTRACT_UNIX_SOCKET | LL_SCOPE_SIGNAL if abi >= 6 else 0
    ruleset = _Ruleset(LL_FS_MAKE_CHAR | LL_FS_MAKE_BLOCK, 0, scoped)
    size = ctypes.sizeof(ruleset) if abi >= 6 else 16  # ``scoped`` arrived with ABI 6
    fd = _syscall(LANDLOCK_CREATE_RULESET, ctypes.byref(ruleset), size, 0)
    if fd < 0:
        raise _fail("landlock_create_ruleset")
    try:
        _no_new_privs()
        if _syscall(LANDLOCK_RESTRICT_SELF, fd, 0) != 0:
            raise _fail("landlock_restrict_self")
    finally:
        os.close(fd)
    return abi


# ------------------------------------------------------------------ self-tests
def check_confined(canary_socket: str = "") -> str:
    """Why the protections are not in force in this process ("" when they are)."""
    import socket

    try:
        socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close()
        return "socket(AF_UNIX) still works after the seccomp filter"
    except PermissionError:
        pass
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/status") as status:
                mode = [line.split()[1] for line in status if line.startswith("Seccomp:")]
        except OSError:
            continue  # the thread ended
        if mode != ["2"]:
            return f"thread {task} has no seccomp filter (Seccomp: {mode})"
    if canary_socket:
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
                client.settimeout(2)
                client.connect(canary_socket)
            return f"a unix socket planted outside the child ({canary_socket}) accepted connect()"
        except PermissionError:
            pass
        except OSError as exc:
            return f"connect() to the planted socket {canary_socket} failed the wrong way: {exc}"
    if os.getpid() != 1:  # bwrap's pid 1 has no filter: it must be out of reach
        try:
            open("/proc/1/mem", "rb").close()
            return "/proc/1/mem (bwrap's unfiltered pid 1) can be opened"
        except OSError:
            pass
    return ""


def _explain_refused_sockets() -> None:
    """Give user code a PermissionError that says why a unix socket is refused (the message
    only; the filter is what refuses)."""
    import socket

    plain_init = socket.socket.__init__

    def init(self: Any, family: Any = -1, type: Any = -1, proto: Any = -1,
             fileno: Any = None) -> None:
        try:
            plain_init(self, family, type, proto, fileno)
        except PermissionError as exc:
            if family == socket.AF_UNIX and fileno is None:
                raise PermissionError(
                    errno.EACCES, "the oi sandbox refuses new unix-domain sockets (they could "
                    "reach programs outside the sandbox); use TCP on 127.0.0.1 inside it, or "
                    "turn the sandbox off with %sandbox off") from exc
            raise

    socket.socket.__init__ = init  # type: ignore[method-assign]


# ------------------------------------------------------------------ the launcher
class _Options:
    def __init__(self, argv: Sequence[str]) -> None:
        self.memory, self.canary_socket, self.report = 0, "", ""
        args = list(argv)
        while args and args[0] != "--":
            flag = args.pop(0)
            if flag not in ("--memory", "--canary-socket", "--report") or not args:
                raise SystemExit(f"confine.py: bad option {flag!r} (see the module docstring)")
            value = args.pop(0)
            if flag == "--memory":
                self.memory = int(value)
            elif flag == "--canary-socket":
                self.canary_socket = value
            else:
                self.report = value
        self.kernel_argv = args[1:]


class _Launcher:
    def __init__(self, options: _Options) -> None:
        self.options = options
        self.stderr = os.dup(2)  # ipykernel takes over sys.stderr and fd 2 (sent to iopub)

    def refuse(self, why: str) -> None:
        text = f"oi sandbox: {why}; the kernel refuses to run unconfined.\n"
        os.write(self.stderr, text.encode())
        if self.options.report:
            try:
                with open(self.options.report, "w") as report:
                    report.write(text)
            except OSError:
                pass
        os._exit(EXIT_REFUSED)

    def run(self) -> None:
        if self.options.memory:
            import resource

            memory = self.options.memory
            _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
            if hard != resource.RLIM_INFINITY:
                memory = min(memory, hard)
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        threads = len(os.listdir("/proc/self/task"))
        if threads != 1:
            self.refuse(f"{threads} threads exist before Landlock")
        try:
            abi = enter_landlock()
        except OSError as exc:
            self.refuse(str(exc))
        if abi == 0 and os.getpid() != 1:
            self.refuse("no Landlock here, and bwrap's pid 1 shares the sandbox (the wrapper "
                        "should have started bwrap with --as-pid-1)")
        os.environ["OI_SANDBOX_LANDLOCK_ABI"] = str(abi)
        app = self.kernel_app()
        app.initialize(self.options.kernel_argv)
        if os.getpid() == 1:
            _interrupt_as_pid_1(app.kernel)
        app.start()

    def kernel_app(self) -> Any:
        from ipykernel.kernelapp import IPKernelApp

        launcher = self

        class ConfinedKernelApp(IPKernelApp):
            def initialize(self, argv: Any = None) -> None:
                super().initialize(argv)
                if self.subapp is None:
                    launcher.confine(self)

        app = ConfinedKernelApp.instance()
        # Our parent is bwrap's pid 1 (or nobody, as pid 1): no parent polling, and no
        # "connect another client with --existing" banner on the wrapper's terminal.
        app.parent_handle = 1
        return app

    def confine(self, app: Any) -> None:
        """Between binding the sockets and running any code: seccomp and the self-tests."""
        if app.transport != "ipc":
            self.refuse(f"the sandboxed child needs transport=ipc, not {app.transport}")
        ports = (app.shell_port, app.iopub_port, app.stdin_port, app.control_port, app.hb_port)
        paths = [f"{app.ip}-{port}" for port in ports]
        deadline = time.monotonic() + 30
        while not all(os.path.exists(p) for p in paths):  # the heartbeat binds in its thread
            if time.monotonic() > deadline:
                self.refuse(f"the kernel did not bind its sockets ({', '.join(paths)})")
            time.sleep(0.001)
        try:
            install_seccomp()
        except OSError as exc:
            self.refuse(str(exc))
        problem = check_confined(self.options.canary_socket)
        if problem:
            self.refuse(problem)
        _explain_refused_sockets()


def _interrupt_as_pid_1(kernel: Any) -> None:
    """As pid 1 in its own session, ipykernel's message-mode interrupt would call
    killpg(1, SIGINT), that is kill(-1, SIGINT): every process but the kernel. Signal the
    kernel itself (it has a SIGINT handler, so pid 1's protection lets the signal in)."""
    import signal

    kernel._send_interrupt_children = lambda: os.kill(1, signal.SIGINT)


def main(argv: Sequence[str]) -> None:
    # Run as a script, our own directory is sys.path[0]: its modules must not shadow the
    # kernel's (this package has a shell.py, a wire.py...).
    here = os.path.dirname(os.path.realpath(__file__))
    if sys.path and os.path.realpath(sys.path[0] or ".") == here:
        del sys.path[0]
    _Launcher(_Options(argv)).run()


if __name__ == "__main__":
    main(sys.argv[1:])
