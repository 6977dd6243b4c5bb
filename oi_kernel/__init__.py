"""Open Interpreter for Jupyter.

Importing this package is cheap on purpose: litellm, ipywidgets and the kernel
machinery load only when something uses them.
"""

from __future__ import annotations

__version__ = "0.1.0"


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """Where the prebuilt JupyterLab extension lives (for `jupyter labextension develop`)."""
    return [{"src": "labextension", "dest": "oi-kernel"}]
