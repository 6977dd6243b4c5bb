"""The ``oi-kernel`` command line: install, export, verify, replay, run, quickstart."""

from __future__ import annotations

from oi_kernel.cli.app import main

__all__ = ["main"]
