"""``%%oi`` and ``%oi`` in ordinary IPython kernels (``%load_ext oi_kernel``).

``run_cell`` / ``run_cell_sync`` are what a ``%%oi`` cell is rewritten to call, ``run_line``
what a cell of ``%oi`` command lines becomes."""

from __future__ import annotations

from oi_kernel.magics.magics import (
    OIMagics,
    load,
    run_cell,
    run_cell_sync,
    run_line,
    unload,
)

__all__ = ["OIMagics", "load", "run_cell", "run_cell_sync", "run_line", "unload"]
