"""Running a notebook with nbclient, shared by ``verify`` and headless runs: the client
with a kernel started in a working directory, and one message for a missing kernelspec."""

from __future__ import annotations

import contextlib
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


def make_client(nb: Any, kernel: str, timeout: int, cwd: str | Path, *,
                allow_errors: bool = False) -> Any:
    """An nbclient ``NotebookClient`` for ``nb`` whose kernel will run in ``cwd``."""
    from nbclient import NotebookClient

    return NotebookClient(nb, timeout=timeout, kernel_name=kernel, allow_errors=allow_errors,
                          resources={"metadata": {"path": str(Path(cwd).expanduser())}})


@contextlib.contextmanager
def notebook_client(nb: Any, kernel: str, timeout: int, cwd: str | Path, *,
                    allow_errors: bool = False, env: Mapping[str, str] | None = None
                    ) -> Iterator[Any]:
    """``make_client``'s client with its kernel started and stopped around the block; a
    missing kernelspec raises ``missing_kernel``."""
    from jupyter_client.kernelspec import NoSuchKernel

    client = make_client(nb, kernel, timeout, cwd, allow_errors=allow_errors)
    try:
        with client.setup_kernel(**({"env": dict(env)} if env is not None else {})):
            yield client
    except NoSuchKernel:
        raise missing_kernel(kernel) from None
