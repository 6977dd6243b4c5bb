"""Limits on what one instruction may consume: memory, running time, tokens and cost.

Three pieces, all small:

* the memory-limit launcher of the child kernel. Its kernelspec argv starts with
  ``python -m oi_kernel.limits --memory 2G -- <the kernel's own argv>``; the
  launcher sets ``RLIMIT_AS`` and ``exec``s the kernel, so it works inside the
  sandbox or outside it, and a runaway allocation raises ``MemoryError`` in the
  kernel instead of bringing the machine down;
* ``cap_notice``: which token or cost cap an instruction or the session has hit,
  as the message the user sees (the engine checks it before each LLM call);
* ``timeout_feedback``: what the LLM is told when a block ran past the step timeout.

Pure apart from ``main`` (which is the launcher). Stdlib only, cheap to import.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .conversation import Usage

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
    return [python, "-m", "oi_kernel.limits", "--memory", str(memory), "--", *argv]


def env_number(name: str, default: float = 0) -> float:
    """A non-negative number from the environment; ``default`` (with a warning shown in the
    next cell) when it is not one."""
    from .config import env_float

    return env_float(name, default, minimum=0, help="A number of at least 0 (0 = off).")


# ------------------------------------------------------------------ step timeout
def timeout_feedback(seconds: float) -> str:
    """What the LLM reads when a block was stopped by the step timeout."""
    return (
        f"The code was stopped: it ran longer than the step timeout of {seconds:g} s and was "
        "interrupted (if it did not stop, the Python kernel was restarted and its variables are "
        "lost). Make the code faster, work on a sample first, or split the work into smaller "
        "steps."
    )


def timeout_notice(seconds: float) -> str:
    """What the user reads when a block was stopped by the step timeout."""
    return (
        f"This step ran longer than the step timeout ({seconds:g} s) and was stopped. "
        "Raise it with OI_STEP_TIMEOUT / c.Engine.step_timeout (0 turns it off)."
    )


# ------------------------------------------------------------------ token and cost caps
@dataclass(frozen=True)
class Caps:
    """Token and cost caps per instruction and per session; 0 means no cap."""

    tokens_per_turn: int = 0
    cost_per_turn: float = 0.0
    tokens_per_session: int = 0
    cost_per_session: float = 0.0


_CAPS = (  # (field of Caps, whose usage, kind, environment variable)
    ("tokens_per_turn", "turn", "token", "OI_MAX_TOKENS"),
    ("cost_per_turn", "turn", "cost", "OI_MAX_COST"),
    ("tokens_per_session", "session", "token", "OI_MAX_SESSION_TOKENS"),
    ("cost_per_session", "session", "cost", "OI_MAX_SESSION_COST"),
)


def cap_notice(caps: Caps, turn: Usage, session: Usage) -> str:
    """The message for the first cap that ``turn`` or ``session`` usage reached; "" if none.

    A cost cap cannot be checked while the cost is unknown (the model has no
    price in litellm's table); it is then not reported as hit.
    """
    for name, scope, kind, env in _CAPS:
        cap = getattr(caps, name)
        usage = turn if scope == "turn" else session
        used = usage.prompt_tokens + usage.completion_tokens if kind == "token" else usage.cost
        if not cap or used is None or used < cap:
            continue
        where = "this instruction" if scope == "turn" else "this session"
        amount = f"{used:,} tokens" if kind == "token" else f"${used:.4f}"
        limit = f"{cap:,}" if kind == "token" else f"${cap:g}"
        return (
            f"Stopped: {where} used {amount}, reaching the {kind} cap of {limit}. "
            f"Raise it with {env} / c.Engine.max_{name} / `%limits max_{name}=...` (0 turns it off)"
            + (", or start a new session." if scope == "session" else ".")
        )
    return ""


# ------------------------------------------------------------------ the launcher
def _set_memory_limit(memory: int) -> None:
    import resource

    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        memory = min(memory, hard)
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m oi_kernel.limits --memory SIZE -- CMD ARGS...``: cap memory, exec CMD."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m oi_kernel.limits",
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
        print(f"oi_kernel.limits: cannot run {command[0]}: {exc}", file=sys.stderr)
        sys.exit(127)


if __name__ == "__main__":
    main()
