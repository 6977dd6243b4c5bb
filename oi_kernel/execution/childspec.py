"""The child kernel's launch spec: a kernelspec derived for the sandbox or the memory cap.

The child is always started by jupyter_client from a kernelspec. When it is sandboxed or
memory-capped, ``write_child_spec`` derives one from the configured kernelspec (``python3``
by default) in the child's private directory::

    sandboxed:  bwrap <sandbox_root> -- python .../confine.py [--memory N] --canary-socket P
                    --report R -- -f {connection_file}
    capped:     python -m oi_kernel.execution.limits --memory N -- python -m ipykernel_launcher ...

The private directory (0700, short: unix socket paths are limited to ~107 bytes)::

    oi-XXXX/ipc/     the connection file and the child's sockets; the only part the child sees
    oi-XXXX/spec/    the derived kernelspec, the empty file bound over hidden files
    oi-XXXX/canary/  a listening socket the sandboxed child must fail to reach (bound in
                     read-write, like a write grant: the start-up check of the protections)
    oi-XXXX/pinned/  hard links to the child's sockets, which the wrapper connects through

Pinning: the child owns ``ipc/``. It could replace a socket file with a symlink and drop our
connection; ZeroMQ would then reconnect, from outside the sandbox, to wherever the link
points. Hard links to the inodes the child bound, in a directory it cannot see, reconnect
to the same socket or to nothing. They are made before any user code runs.

SIGINT would kill bwrap's monitor, so the sandboxed spec asks for ``interrupt_mode: message``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import socket
import stat
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oi_kernel.errors import ChildKernelError
from oi_kernel.execution import confine, sandbox_root
from oi_kernel.execution.sandbox import Sandbox, SandboxError, bwrap_version, require_bwrap

CHILD_SPEC_NAME = "oi-child"
_CHANNELS = ("shell", "iopub", "stdin", "control", "hb")
_LAUNCHERS = (["-m", "ipykernel_launcher"], ["-m", "ipykernel"])


@dataclass
class ChildSpec:
    """The derived kernelspec of one child start, and its sandbox checks."""

    name: str
    spec_root: str
    ipc_dir: str
    sandboxed: bool = False
    canary: socket.socket | None = None
    report: str = ""
    grants: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
    notes: list[str] = field(default_factory=list)

    def refusal(self) -> str:
        """What the sandboxed child said when it refused to run ("" when nothing)."""
        with contextlib.suppress(OSError):
            return Path(self.report).read_text().strip() if self.report else ""
        return ""

    async def pin(self, km: Any, timeout: float) -> None:
        """Wait for the child's five sockets, hard-link them out of its reach and point the
        kernel manager (and so every client) at the links."""
        info = km.get_connection_info()
        pinned = os.path.join(os.path.dirname(self.ipc_dir), "pinned")
        os.mkdir(pinned, 0o700)
        deadline = time.monotonic() + timeout
        for channel in _CHANNELS:
            port = info[f"{channel}_port"]
            source, link = f"{info['ip']}-{port}", os.path.join(pinned, f"k-{port}")
            while not os.path.lexists(source):  # noqa: ASYNC240 - one local stat
                if not await km.is_alive():
                    raise self.failed("the child exited before binding its sockets")
                if time.monotonic() > deadline:
                    raise self.failed(f"the child did not bind {source} in {timeout:g} s")
                await asyncio.sleep(0.005)
            os.link(source, link, follow_symlinks=False)
            if not stat.S_ISSOCK(os.lstat(link).st_mode):
                raise self.failed(f"{source} is not a socket the kernel bound")
        km._close_control_socket()  # it connected by the old path right after the launch
        km.ip = os.path.join(pinned, "k")

    def verify(self) -> None:
        """After the child answered: the planted socket must not have been reached."""
        if self.canary is None:
            return
        try:
            connection, _ = self.canary.accept()
        except BlockingIOError:
            return
        connection.close()
        raise self.failed("a unix socket outside the child accepted a connection from it")

    def failed(self, why: str) -> SandboxError:
        said = self.refusal() or f"{why}; its stderr, in the Jupyter server's log, says more"
        return SandboxError(
            f"The sandbox's protections could not be confirmed ({said}), so the child "
            "kernel was stopped before running any code. Code will not run unsandboxed; "
            "`%sandbox off` runs it without the sandbox."
        )

    def close(self) -> None:
        if self.canary is not None:
            self.canary.close()
            self.canary = None


def resolve_python(argv: Sequence[str]) -> list[str]:
    """argv with a bare ``python``/``python3`` replaced by our interpreter, as jupyter_client
    does for argv[0] (it cannot once the command is wrapped)."""
    names = {"python", f"python{sys.version_info[0]}",
             f"python{sys.version_info[0]}.{sys.version_info[1]}"}
    argv = list(argv)
    if argv and argv[0] in names:
        argv[0] = sys.executable
    return argv


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
    private_dir: str,
    kernel_name: str,
    *,
    workspace: str,
    sandbox: bool = False,
    memory_limit: int = 0,
    home: str | None = None,
    grants: Sandbox | None = None,
    protected: Sequence[str] = (),
) -> ChildSpec:
    """Write the derived kernelspec under ``private_dir/spec``.

    Raises ChildKernelError when the sandbox cannot work here, a grant is refused, or the
    base kernelspec is missing, not local, or (sandboxed) not an IPython kernel."""
    bwrap = require_bwrap() if sandbox else ""
    base = _base_spec(kernel_name)
    _check_local(base, kernel_name)
    argv = resolve_python(base.argv)
    spec = ChildSpec(CHILD_SPEC_NAME, os.path.join(private_dir, "spec"),
                     os.path.join(private_dir, "ipc"))
    os.makedirs(spec.spec_root, exist_ok=True)
    if sandbox:
        argv = _sandboxed_argv(spec, bwrap, argv, kernel_name, workspace, memory_limit,
                               home if home is not None else os.path.expanduser("~"),
                               grants or Sandbox(), protected, base.resource_dir)
    elif memory_limit:
        from oi_kernel.execution.limits import launcher_argv

        argv = launcher_argv(memory_limit, argv)
    metadata = {k: v for k, v in (base.metadata or {}).items() if k != "kernel_provisioner"}
    derived = {
        "argv": argv,
        "display_name": f"{base.display_name} (oi child)",
        "language": base.language,
        "interrupt_mode": "message" if sandbox else base.interrupt_mode,
        "env": dict(base.env or {}),
        "metadata": metadata,
    }
    directory = Path(spec.spec_root, CHILD_SPEC_NAME)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "kernel.json").write_text(json.dumps(derived, indent=1))
    return spec


def _sandboxed_argv(spec: ChildSpec, bwrap: str, argv: list[str], kernel_name: str,
                    workspace: str, memory: int, home: str, grants: Sandbox,
                    protected: Sequence[str], resource_dir: str) -> list[str]:
    workspace = os.path.realpath(workspace)
    home = os.path.realpath(home) if home else "/"
    if workspace == "/" or home == workspace or home.startswith(workspace + "/"):
        what = "/ (everything)" if workspace == "/" else f"{workspace}, your home directory or above it"
        raise SandboxError(
            f"The sandbox makes the working directory writable, and it is {what}: shell "
            "startup files and Jupyter configuration there would run code outside the "
            "sandbox later. Start Jupyter in a project directory, or set c.ChildKernel.cwd."
        )
    if len(argv) < 3 or argv[1:3] not in _LAUNCHERS:
        raise SandboxError(
            f"The sandbox starts IPython kernels (argv `python -m ipykernel_launcher -f "
            f"{{connection_file}}`); the kernelspec '{kernel_name}' runs `{' '.join(argv)}`. "
            "Choose an IPython kernelspec (OI_CHILD_KERNEL / c.ChildKernel.kernel_name)."
        )
    python = shutil.which(argv[0]) or argv[0]
    if not os.path.isabs(python):
        raise SandboxError(f"The child's interpreter {argv[0]!r} was not found on PATH.")
    spec.grants = grants.resolved(home, workspace)
    read, write = spec.grants
    private = os.path.dirname(spec.ipc_dir)
    canary_dir = os.path.join(private, "canary")
    os.makedirs(canary_dir, mode=0o700, exist_ok=True)
    spec.canary = _listen(os.path.join(canary_dir, "s"))
    spec.report = os.path.join(spec.ipc_dir, "refused.txt")
    empty, empty_dir = Path(spec.spec_root, "empty"), Path(spec.spec_root, "empty.d")
    empty.write_bytes(b"")
    empty.chmod(0o444)
    empty_dir.mkdir(0o555)
    for path in protected:  # e.g. the session log's directory, created lazily otherwise
        visible = [workspace, *read, *write]
        if not os.path.lexists(path) and sandbox_root.under(os.path.realpath(path), visible):
            os.makedirs(path, exist_ok=True)
    from jupyter_core.paths import jupyter_runtime_dir

    launcher = os.path.realpath(confine.__file__)
    layout = sandbox_root.Layout(
        workspace=workspace, ipc_dir=spec.ipc_dir, home=home, empty_file=str(empty),
        empty_dir=str(empty_dir),
        launcher=launcher, python_dirs=sandbox_root.python_dirs(python, resource_dir, home),
        read_paths=read, write_paths=(*write, canary_dir),
        protected=(*protected, jupyter_runtime_dir()),
        own_install=sandbox_root.own_install_dirs(),
        as_pid_1=confine.landlock_abi() == 0, disable_userns=bwrap_version(bwrap) >= (0, 8),
    )
    if layout.as_pid_1:
        spec.notes.append("no Landlock on this kernel: the sandboxed kernel runs as pid 1")
    options = ["--memory", str(memory)] if memory else []
    options += ["--canary-socket", spec.canary.getsockname(), "--report", spec.report]
    spec.sandboxed = True
    return [*sandbox_root.bwrap_argv(bwrap, layout), python, launcher, *options, "--",
            *argv[3:]]


def _listen(path: str) -> socket.socket:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(4)
    listener.setblocking(False)
    return listener
