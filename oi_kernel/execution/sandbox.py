"""The child kernel's launch spec: bubblewrap confinement and the memory limit.

The child is always started by jupyter_client from a kernelspec. When it must be
sandboxed or memory-capped, ``write_child_spec`` derives a kernelspec from the
configured one (``python3`` by default) in the child's private directory, whose
argv wraps the original::

    bwrap <confinement> -- python -m oi_kernel.execution.limits --memory 2G -- python -m ipykernel_launcher -f {connection_file}

Confinement (``bwrap_argv``): the whole file system read-only, the workspace
(the kernel's working directory) and the private ipc directory writable, a
private ``/tmp``, ``/run`` and ``/dev``, a fresh ``/proc``; no network (only
``lo``: the host's loopback is unreachable), its own pid, ipc and uts
namespaces; credential files in the home directory hidden; it dies with us.
Secret-looking environment variables never reach it (``child_env``), and
``JPY_PARENT_PID`` is unset (with its own pid namespace ipykernel would take the
missing parent for dead and exit at once). SIGINT would kill bwrap's monitor, so
the derived spec asks for ``interrupt_mode: message``.

Where bwrap or the namespaces it needs are missing, ``require_bwrap`` raises a
``ChildKernelError`` saying so: the child never silently runs unconfined.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from oi_kernel.errors import ChildKernelError
from oi_kernel.safety.redact import is_secret_name

CHILD_SPEC_NAME = "oi-child"

# Credentials under $HOME that sandboxed code must not read (hidden when they exist).
HIDDEN_IN_HOME = (
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".config/gh",
    ".kube",
    ".docker",
    ".netrc",
    ".git-credentials",
    ".pypirc",
    ".npmrc",
)

# Variables kept even though their names look secret (none of them hold a secret).
_NOT_SECRET = frozenset({"SSH_AUTH_SOCK"})

_PROBE_FLAGS = ("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc")
_PROBE_FLAGS += ("--unshare-net", "--unshare-pid", "--die-with-parent")


# ------------------------------------------------------------------ availability
@functools.lru_cache(maxsize=4)
def probe(bwrap: str = "bwrap") -> str:
    """An empty string when bubblewrap can confine a process here, else what is missing.

    Checked once per process (the answer is cached).
    """
    path = shutil.which(bwrap)
    if path is None:
        return (
            f"bubblewrap ('{bwrap}') is not installed. Install it (Debian/Ubuntu: "
            "`apt install bubblewrap`, Fedora: `dnf install bubblewrap`)."
        )
    try:
        done = subprocess.run(
            [path, *_PROBE_FLAGS, "true"], capture_output=True, text=True, timeout=20
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
    return ""


def require_bwrap(bwrap: str = "bwrap") -> str:
    """The path of a working bwrap, or a ChildKernelError naming what is missing."""
    problem = probe(bwrap)
    if problem:
        raise ChildKernelError(
            "The sandbox was requested (OI_SANDBOX=1 / c.ChildKernel.sandbox / %sandbox on) but "
            f"cannot be set up: {problem}\nCode will not run unsandboxed; turn the sandbox off "
            "with `%sandbox off` (or unset OI_SANDBOX) to run code without it."
        )
    return shutil.which(bwrap) or bwrap


# ------------------------------------------------------------------ pure parts
def hidden_paths(home: str | os.PathLike[str]) -> list[tuple[str, bool]]:
    """The credential paths under ``home`` that exist, each with ``True`` for a directory."""
    out = []
    for rel in HIDDEN_IN_HOME:
        path = os.path.join(home, rel)
        if os.path.lexists(path):
            out.append((path, os.path.isdir(path)))
    return out


def bwrap_argv(
    bwrap: str,
    workspace: str,
    private_dir: str,
    hidden: Sequence[tuple[str, bool]] = (),
    extra_hidden_dirs: Sequence[str] = (),
    empty_file: str = "",
    readonly: Sequence[str] = (),
) -> list[str]:
    """bwrap and its confinement flags, ending with ``--`` (the command follows).

    Later mounts override earlier ones: ``/tmp`` becomes private before the
    workspace and the private directory (both often under /tmp) are bound back in,
    and the credentials are hidden last, even inside a workspace that holds them:
    directories under an empty tmpfs, files under ``empty_file`` (an empty regular
    file; /dev/null would not do, bind mounts are ``nodev``).
    """
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    argv += ["--tmpfs", "/tmp", "--tmpfs", "/run"]
    for path in readonly:  # the Python installation, when it lives under /tmp or /run
        argv += ["--ro-bind", path, path]
    argv += ["--bind", workspace, workspace, "--bind", private_dir, private_dir]
    for path in extra_hidden_dirs:
        argv += ["--tmpfs", path]
    for path, is_dir in hidden:
        argv += ["--tmpfs", path] if is_dir else ["--ro-bind", empty_file, path]
    argv += ["--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    argv += ["--die-with-parent", "--new-session", "--unsetenv", "JPY_PARENT_PID"]
    argv += ["--chdir", workspace, "--"]
    return argv


_MASKED = ("/tmp", "/run")


def masked_runtime_paths(extra: Sequence[str] = ()) -> list[str]:
    """Directories the child's Python needs that the private /tmp and /run would hide
    (a virtual environment or checkout under /tmp, as CI clones often are)."""
    import oi_kernel

    candidates = [sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable)),
                  os.path.dirname(os.path.dirname(os.path.abspath(oi_kernel.__file__))),
                  *sys.path, *extra]
    found: list[str] = []
    for path in sorted({os.path.realpath(p) for p in candidates if p}, key=len):
        if not os.path.isdir(path) or not any(path.startswith(m + "/") for m in _MASKED):
            continue
        if not any(path == f or path.startswith(f + "/") for f in found):
            found.append(path)
    return found


def child_env(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` without secret-looking variables (API keys, tokens, passwords)."""
    return {k: v for k, v in environ.items() if k in _NOT_SECRET or not is_secret_name(k)}


def resolve_python(argv: Sequence[str]) -> list[str]:
    """argv with a bare ``python``/``python3`` replaced by our interpreter, as jupyter_client
    does for argv[0] (it cannot once the command is wrapped)."""
    names = {
        "python",
        f"python{sys.version_info[0]}",
        f"python{sys.version_info[0]}.{sys.version_info[1]}",
    }
    argv = list(argv)
    if argv and argv[0] in names:
        argv[0] = sys.executable
    return argv


# ------------------------------------------------------------------ the derived kernelspec
def _base_spec(kernel_name: str) -> Any:
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        return KernelSpecManager().get_kernel_spec(kernel_name)
    except NoSuchKernel as exc:
        raise ChildKernelError(
            f"No kernelspec named '{kernel_name}' for the child kernel. Check "
            "`jupyter kernelspec list`, or choose another with OI_CHILD_KERNEL / "
            "c.ChildKernel.kernel_name."
        ) from exc


def _check_local(spec: Any, kernel_name: str) -> None:
    provisioner = (spec.metadata or {}).get("kernel_provisioner", {}).get("provisioner_name")
    if provisioner not in (None, "local-provisioner"):
        raise ChildKernelError(
            f"The child kernelspec '{kernel_name}' is started by the provisioner "
            f"'{provisioner}', which may run it elsewhere: the sandbox and the memory limit only "
            "apply to local kernels. Turn them off or choose a local kernelspec."
        )


def write_child_spec(
    spec_root: str,
    kernel_name: str,
    *,
    workspace: str,
    private_dir: str,
    sandbox: bool = False,
    memory_limit: int = 0,
    home: str | None = None,
) -> str:
    """Write the derived kernelspec under ``spec_root``; returns its name.

    Raises ChildKernelError when the sandbox cannot work here or the base
    kernelspec is missing or not local.
    """
    bwrap = require_bwrap() if sandbox else ""
    base = _base_spec(kernel_name)
    _check_local(base, kernel_name)
    argv = resolve_python(base.argv)
    if memory_limit:
        from oi_kernel.execution.limits import launcher_argv

        argv = launcher_argv(memory_limit, argv)
    interrupt_mode = base.interrupt_mode
    if sandbox:
        from jupyter_core.paths import jupyter_runtime_dir

        if os.path.realpath(workspace) == "/":
            raise ChildKernelError(
                "The sandbox makes the working directory writable, and it is / (everything). "
                "Start Jupyter in a project directory, or set c.ChildKernel.cwd."
            )

        home = home if home is not None else os.path.expanduser("~")
        runtime = jupyter_runtime_dir()  # other kernels' connection files (with their keys)
        empty = Path(spec_root, "empty")
        empty.parent.mkdir(parents=True, exist_ok=True)
        empty.write_bytes(b"")
        empty.chmod(0o444)
        prefix = bwrap_argv(
            bwrap,
            os.path.realpath(workspace),
            os.path.realpath(private_dir),
            hidden_paths(home),
            [runtime] if os.path.isdir(runtime) else [],
            str(empty),
            masked_runtime_paths([base.resource_dir]),
        )
        argv = prefix + argv
        interrupt_mode = "message"
    metadata = {k: v for k, v in (base.metadata or {}).items() if k != "kernel_provisioner"}
    spec = {
        "argv": argv,
        "display_name": f"{base.display_name} (oi child)",
        "language": base.language,
        "interrupt_mode": interrupt_mode,
        "env": dict(base.env or {}),
        "metadata": metadata,
    }
    directory = Path(spec_root, CHILD_SPEC_NAME)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "kernel.json").write_text(json.dumps(spec, indent=1))
    return CHILD_SPEC_NAME
