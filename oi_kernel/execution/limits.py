"""The memory limit of the child kernel: sizes, and the launcher in its kernelspec.

The child's kernelspec argv starts with ``python -m oi_kernel.execution.limits --memory
2G -- <the kernel's own argv>``: the launcher sets ``RLIMIT_AS`` and ``exec``s the kernel,
so it works inside the sandbox or outside it, and a runaway allocation raises
``MemoryError`` in the kernel instead of bringing the machine down. Pure apart from
``main`` (the launcher). Stdlib only, cheap to import.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence

_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)


def parse_size(value: str | int | float | None) -> int:
    """Bytes from ``2G``, ``512M``, ``1.5GiB``, ``1048576`` (``""``/``0``/None mean no limit: 0).

    Units are binary (K = 1024). Raises ``ValueError`` with a usable message.
    """
    if value is None or value == "":
        return 0
    if isinstance(value, (int, float)):
        if value < 0:
            raise ValueError(f"A size cannot be negative: {value}")
        return int(value)
    match = _SIZE.match(value)
    if not match:
        raise ValueError(
            f"Not a size: {value!r}. Use bytes or a number with K, M, G or T, e.g. '2G' or '512M'."
        )
    number, unit = match.groups()
    return int(float(number) * _UNITS[unit.lower()])


def format_size(size: int) -> str:
    """``2147483648`` -> ``2 GiB``; whole units when exact, else one decimal."""
    for unit, factor in (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if size >= factor:
            value = size / factor
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{size} bytes"


def launcher_argv(memory: int, argv: Sequence[str], python: str = sys.executable) -> list[str]:
    """``argv`` behind the launcher that caps its address space at ``memory`` bytes."""
    return [python, "-m", "oi_kernel.execution.limits", "--memory", str(memory), "--", *argv]


# ------------------------------------------------------------------ the launcher
def _set_memory_limit(memory: int) -> None:
    import resource

    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        memory = min(memory, hard)
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m oi_kernel.execution.limits --memory SIZE -- CMD ARGS...``: cap memory, exec CMD."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m oi_kernel.execution.limits",
        description="Run a command with its address space capped (RLIMIT_AS).",
    )
    parser.add_argument("--memory", default="0", help="e.g. 2G, 512M or bytes; 0 = no cap")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- CMD ARGS...")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command to run (put it after --)")
    try:
        memory = parse_size(args.memory)
        if memory:
            _set_memory_limit(memory)
        os.execvp(command[0], command)
    except (ValueError, OSError) as exc:
        print(f"oi_kernel.execution.limits: cannot run {command[0]}: {exc}", file=sys.stderr)
        sys.exit(127)


if __name__ == "__main__":
    main()
