"""Limits the engine checks: token and cost caps per instruction and per session, and what
the user and the LLM are told when a step ran past the step timeout. Pure, stdlib only."""

from __future__ import annotations

from dataclasses import dataclass

from oi_kernel.config import env_float
from oi_kernel.core.types import Usage


def env_number(name: str, default: float = 0) -> float:
    """A non-negative number from the environment; ``default`` (with a warning shown in the
    next cell) when it is not one."""
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


def cap_notice(caps: Caps, turn: Usage, session: Usage,
               sources: dict[str, str] | None = None) -> str:
    """The message for the first cap that ``turn`` or ``session`` usage reached; "" if none.
    ``sources`` names who set a cap the user cannot raise (``max_<field>``: "the
    administrator's policy (FILE)").

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
        source = (sources or {}).get(f"max_{name}")
        if source:
            return (f"Stopped: {where} used {amount}, reaching the {kind} cap of {limit} set by "
                    f"{source}. Start a new session, or ask your administrator.")
        return (
            f"Stopped: {where} used {amount}, reaching the {kind} cap of {limit}. "
            f"Raise it with {env} / c.Engine.max_{name} / `%limits max_{name}=...` (0 turns it off)"
            + (", or start a new session." if scope == "session" else ".")
        )
    return ""
