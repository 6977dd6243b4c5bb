"""Running a notebook with nbclient, shared by ``verify`` and headless runs: the client
with a kernel started in a working directory, and one message for a missing kernelspec.

The kernel talks to us over IPC sockets in a private 0700 directory, not TCP on loopback:
no port for another local user to reach, and no "Kernel is running over TCP without
encryption" warning on every run."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from oi_kernel.errors import OIError

OI_KERNEL_NAME = "open-interpreter"


def missing_kernel(name: str) -> OIError:
    """The error for a kernelspec that is not installed, saying how to get it."""
    if name == OI_KERNEL_NAME:
        hint = "install it with `oi-kernel install --sys-prefix`"
    else:
        hint = ("install one (`python -m ipykernel install --user`) or choose another "
                "(--kernel NAME / kernel_name=) from `jupyter kernelspec list`")
    return OIError(f"No kernel named {name!r} is installed: {hint}.")


def read_notebook(path: Path) -> Any:
    """A notebook file as nbformat v4; an OIError that says what is wrong otherwise."""
    import nbformat

    try:
        return nbformat.read(path, as_version=4)
    except FileNotFoundError:
        raise OIError(f"No notebook at {path}.") from None
    except Exception as exc:
        raise OIError(f"Cannot read {path} as a notebook: {exc}") from exc


@contextlib.contextmanager
def ipc_kernel_manager(kernel: str) -> Iterator[Any]:
    """A kernel manager for ``kernel`` whose sockets and connection file live in a private
    temporary directory (removed afterwards)."""
    from jupyter_client.manager import AsyncKernelManager

    folder = Path(tempfile.mkdtemp(prefix="oi-run-"))  # 0700; short path for socket names
    try:
        yield AsyncKernelManager(kernel_name=kernel, transport="ipc", ip=str(folder / "k"),
                                 connection_file=str(folder / "kernel.json"))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def make_client(nb: Any, kernel: str, timeout: int, cwd: str | Path, *,
                allow_errors: bool = False, km: Any = None) -> Any:
    """An nbclient ``NotebookClient`` for ``nb`` whose kernel will run in ``cwd`` (started by
    ``km`` when given, e.g. ``ipc_kernel_manager``'s)."""
    from nbclient import NotebookClient

    return NotebookClient(nb, timeout=timeout, kernel_name=kernel, allow_errors=allow_errors,
                          resources={"metadata": {"path": str(Path(cwd).expanduser())}},
                          **({"km": km} if km is not None else {}))


@contextlib.contextmanager
def notebook_client(nb: Any, kernel: str, timeout: int, cwd: str | Path, *,
                    allow_errors: bool = False, env: Mapping[str, str] | None = None
                    ) -> Iterator[Any]:
    """``make_client``'s client with its kernel started and stopped around the block; a
    missing kernelspec raises ``missing_kernel``."""
    from jupyter_client.kernelspec import NoSuchKernel

    try:
        with ipc_kernel_manager(kernel) as km:
            client = make_client(nb, kernel, timeout, cwd, allow_errors=allow_errors, km=km)
            # cleanup_kc: shut the kernel down after, as nbclient does with a manager of its own
            with client.setup_kernel(cleanup_kc=True,
                                     **({"env": dict(env)} if env is not None else {})):
                yield client
    except NoSuchKernel:
        raise missing_kernel(kernel) from None
