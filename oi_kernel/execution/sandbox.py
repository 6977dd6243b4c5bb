"""The child kernel's sandbox: whether it can work here, and what it is granted.

With the sandbox on (``c.ChildKernel.sandbox``, ``OI_SANDBOX=1``, ``%sandbox on``) the child
runs in bubblewrap with a deny-by-default root (``sandbox_root``: system dirs and the
Python installation read-only, the workspace read-write, a private /tmp and an empty
$HOME; nothing else), no network, its own pid namespace, no capabilities, and a Landlock
domain plus a seccomp filter it installs itself once its sockets are bound (``confine``):
no unix socket outside its own can be reached, even in a granted directory. The
derived kernelspec, the socket pinning and the start-up check are ``childspec``.

More of the file system is visible only through explicit grants (``Sandbox.read_paths``,
``Sandbox.write_paths``, their environment variables, a profile, ``%sandbox allow``); the
grants are checked here (``check_grant``) and shown by ``%sandbox`` and the status bar.

Where bwrap, user namespaces or seccomp are missing, ``require_bwrap`` raises a
``ChildKernelError`` saying so: the child never silently runs unconfined.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from typing import Any

from traitlets import List, Unicode, validate
from traitlets.config import LoggingConfigurable

from oi_kernel import config
from oi_kernel.errors import ChildKernelError
from oi_kernel.safety.redact import is_secret_name

READ_ENV, WRITE_ENV = "OI_SANDBOX_READ", "OI_SANDBOX_WRITE"
# Variables kept even though their names look secret (none of them hold a secret).
_NOT_SECRET = frozenset({"SSH_AUTH_SOCK"})
# Never granted: pseudo file systems, and (for writing) places whose files run code later.
_NEVER = ("/proc", "/sys", "/dev")
_NEVER_WRITE = ("/", "/usr", "/etc", "/bin", "/sbin", "/lib", "/lib64", "/boot", "/var",
                "/opt", "/root", "/home", "/run", "/srv", "/tmp", "/var/tmp")


class SandboxError(ChildKernelError):
    """The sandbox cannot be set up, or a grant is refused."""


# ------------------------------------------------------------------ grants
def _real(path: str, cwd: str | None) -> str:
    """``path`` (``~`` expanded, relative to ``cwd``) with every link resolved."""
    return os.path.realpath(os.path.join(cwd or os.getcwd(), os.path.expanduser(path)))


def check_grant(path: str, write: bool, home: str | None = None, cwd: str | None = None) -> str:
    """The real path of a grant, or a SandboxError that says what to do instead."""
    shown, path = path, path.strip()
    if not path:
        raise SandboxError("An empty path cannot be granted.")
    real = _real(path, cwd)
    if not os.path.exists(real):
        raise SandboxError(f"Cannot grant {shown!r}: it does not exist ({real}). Create it "
                           "first, or remove the grant (`%sandbox revoke PATH`).")
    if any(real == p or real.startswith(p + "/") for p in _NEVER):
        raise SandboxError(f"Cannot grant {shown!r}: {real} is a kernel file system the "
                           "sandbox provides its own view of.")
    if real == "/":
        raise SandboxError("Cannot grant / (everything): grant the directories code needs.")
    home = os.path.realpath(home or os.path.expanduser("~"))
    if write and (real in _NEVER_WRITE or home == real or home.startswith(real + "/")):
        raise SandboxError(
            f"Cannot grant {shown!r} for writing: {real} holds files that run code outside "
            "the sandbox later (shell startup files, Jupyter/IPython configuration, other "
            "environments). Grant a subdirectory for writing, or this one read-only."
        )
    return real


class Sandbox(config.Remembered, LoggingConfigurable):
    """What the sandboxed child may see besides the workspace: explicit grants."""

    read_paths = List(
        Unicode(),
        config=True,
        help="Files or directories the sandboxed child may read (nothing outside the "
        "workspace and the Python installation is visible otherwise). Credentials in "
        "$HOME stay hidden inside them. Env: OI_SANDBOX_READ (paths separated by "
        f"'{os.pathsep}'). Magic: %sandbox allow PATH.",
    ).tag(env=READ_ENV, env_kind="paths")
    write_paths = List(
        Unicode(),
        config=True,
        help="Directories the sandboxed child may read and write besides the workspace. "
        "Not $HOME or a system directory. Env: OI_SANDBOX_WRITE (paths separated by "
        f"'{os.pathsep}'). Magic: %sandbox allow PATH --write.",
    ).tag(env=WRITE_ENV, env_kind="paths")


    @validate("read_paths", "write_paths")
    def _within_policy(self, proposal: Any) -> Any:
        return config.check_floor(self, proposal["trait"].name, proposal["value"])

    def resolved(self, home: str | None = None, cwd: str | None = None
                 ) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(read, write) as real paths; SandboxError naming the first bad grant."""
        read = [check_grant(p, False, home, cwd) for p in self.read_paths]
        write = [check_grant(p, True, home, cwd) for p in self.write_paths]
        return tuple(dict.fromkeys(p for p in read if p not in write)), tuple(dict.fromkeys(write))

    def allow(self, path: str, write: bool, cwd: str | None = None) -> tuple[str, bool]:
        """Grant ``path`` (checked now); returns (real path, whether anything changed)."""
        real = check_grant(path, write, cwd=cwd)
        before = (list(self.read_paths), list(self.write_paths))
        self.revoke(real, cwd=cwd)
        if write:
            self.write_paths = [*self.write_paths, real]
        else:
            self.read_paths = [*self.read_paths, real]
        return real, before != (self.read_paths, self.write_paths)

    def revoke(self, path: str, cwd: str | None = None) -> bool:
        """Remove every grant of ``path``; whether there was one."""
        target = _real(path, cwd)

        def keep(paths: list[str]) -> list[str]:
            return [p for p in paths if _real(p, cwd) != target]

        read, write = keep(self.read_paths), keep(self.write_paths)
        changed = (read, write) != (self.read_paths, self.write_paths)
        self.read_paths, self.write_paths = read, write
        return changed


# ------------------------------------------------------------------ availability
_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")
_CHECK_FLAGS = ("--unshare-user", "--cap-drop", "ALL", "--ro-bind", "/", "/", "--dev", "/dev",
                "--proc", "/proc", "--unshare-net", "--unshare-pid", "--die-with-parent")


@functools.lru_cache(maxsize=4)
def bwrap_version(bwrap: str) -> tuple[int, ...]:
    """bubblewrap's version (``(0, 8, 0)``); ``()`` when it cannot tell."""
    try:
        out = subprocess.run([bwrap, "--version"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return ()
    match = _VERSION.search(out.stdout)
    return tuple(int(g) for g in match.groups() if g is not None) if match else ()


@functools.lru_cache(maxsize=4)
def unavailable(bwrap: str = "bwrap") -> str:
    """An empty string when the sandbox can work here, else what is missing.

    Checked once per process (cached): bubblewrap runs and can create its namespaces
    without capabilities, and the kernel has seccomp filters. Landlock is not required
    (without it bwrap runs the kernel as the sandbox's pid 1)."""
    path = shutil.which(bwrap)
    if path is None:
        return (
            f"bubblewrap ('{bwrap}') is not installed. Install it (Debian/Ubuntu: "
            "`apt install bubblewrap`, Fedora: `dnf install bubblewrap`)."
        )
    try:
        done = subprocess.run(
            [path, *_CHECK_FLAGS, "true"], capture_output=True, text=True, timeout=20
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap ({path}) could not be run: {exc}."
    if done.returncode != 0:
        detail = done.stderr.strip() or f"exit code {done.returncode}"
        return (
            f"bubblewrap ({path}) cannot create the namespaces it needs: {detail}. "
            "Unprivileged user namespaces may be disabled (sysctl "
            "kernel.unprivileged_userns_clone=1, or kernel.apparmor_restrict_unprivileged_userns=0 "
            "on Ubuntu 24.04), or a container forbids them (Docker: --security-opt "
            "seccomp=unconfined or run without the sandbox)."
        )
    from oi_kernel.execution.confine import seccomp_available

    if not seccomp_available():
        return (f"this Linux kernel ({os.uname().release}, {os.uname().machine}) has no seccomp "
                "filters the sandbox can use (CONFIG_SECCOMP_FILTER, x86_64 or aarch64).")
    return ""


def require_bwrap(bwrap: str = "bwrap") -> str:
    """The path of a working bwrap, or a SandboxError naming what is missing."""
    problem = unavailable(bwrap)
    if problem:
        raise SandboxError(
            "The sandbox was requested (OI_SANDBOX=1 / c.ChildKernel.sandbox / %sandbox on) but "
            f"cannot be set up: {problem}\nCode will not run unsandboxed; turn the sandbox off "
            "with `%sandbox off` (or unset OI_SANDBOX) to run code without it."
        )
    return shutil.which(bwrap) or bwrap


def mechanism() -> str:
    """One line: what confines the child on this machine."""
    from oi_kernel.execution.confine import landlock_abi

    abi = landlock_abi()
    scope = (f"Landlock ABI {abi} keeps bwrap's pid 1 out of reach" if abi else
             "no Landlock: the kernel runs as the sandbox's pid 1 (orphaned processes are "
             "not reaped)")
    return f"seccomp (no new unix sockets, no ptrace, no io_uring); {scope}"


def child_env(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` without secret-looking variables (API keys, tokens, passwords)."""
    return {k: v for k, v in environ.items() if k in _NOT_SECRET or not is_secret_name(k)}


def grant_lines(grants: Sandbox) -> str:
    """Markdown bullets: the read-only and the read-write grants."""
    def listed(paths: list[str]) -> str:
        return ", ".join(f"`{p}`" for p in paths) if paths else "none"

    return (f"- read-only grants: {listed(list(grants.read_paths))}\n"
            f"- read-write grants: {listed(list(grants.write_paths))}")


def describe(on: bool, workspace: str, grants: Sandbox, prefix: str = "%") -> str:
    """Markdown for ``%sandbox``: on/off, what is visible, the grants and how to add one."""
    if not on:
        text = "Sandbox is **off**: Python runs with your own permissions and network."
        if grants.read_paths or grants.write_paths:
            text += f" Grants kept for when it is on:\n\n{grant_lines(grants)}"
        return text
    return (
        "Sandbox is **on**: Python runs inside bubblewrap with no network and sees only the "
        f"system and Python directories (read-only), `{workspace}` (read-write), a private "
        "/tmp and an empty home directory. Unix sockets outside its own cannot be reached, "
        "even in granted directories.\n\n"
        f"{grant_lines(grants)}\n- protection: {mechanism()}\n\n"
        f"`{prefix}sandbox allow PATH [--write]` grants more (Python restarts); "
        f"`{prefix}sandbox revoke PATH` takes a grant back."
    )
