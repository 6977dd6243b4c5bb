"""Open Interpreter for Jupyter.

Importing this package is cheap on purpose: litellm, ipywidgets and the kernel
machinery load only when something uses them.
"""

from __future__ import annotations

from oi_kernel._version import __version__ as __version__  # written in _version.py only


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """Where the prebuilt JupyterLab extension lives (for `jupyter labextension develop`)."""
    return [{"src": "labextension", "dest": "oi-kernel"}]


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    """The Jupyter server extension: it starts the warm model host when Jupyter starts
    (``integrations/server.py``)."""
    return [{"module": "oi_kernel.integrations.server"}]


def load_ipython_extension(ipython: object) -> None:
    """``%load_ext oi_kernel``: the ``%%oi`` and ``%oi`` magics in this IPython shell."""
    from oi_kernel.magics.magics import load

    load(ipython)


def unload_ipython_extension(ipython: object) -> None:
    """``%unload_ext oi_kernel``: remove the magics, their input transformer and handlers."""
    from oi_kernel.magics.magics import unload

    unload(ipython)


_LAZY_API = ("Interpreter",)


def __getattr__(name: str) -> object:
    """``from oi_kernel import Interpreter`` imports the API module only when asked."""
    if name in _LAZY_API:
        from oi_kernel.api import interpreter as api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
