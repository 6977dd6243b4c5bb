"""The Open Interpreter kernel: the Jupyter protocol layer (``OIKernel``), its application,
the child-kernel proxy and the widget-state merger. ``oi_kernel.kernel.OIKernel`` is the
entry point the kernel application names."""

from __future__ import annotations

from typing import Any

__all__ = ["OIKernel"]


def __getattr__(name: str) -> Any:
    if name == "OIKernel":
        from oi_kernel.kernel.kernel import OIKernel

        return OIKernel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
