"""The administrator's policy (``session.policy``) applied to a session, for every front door.

A user could lower a setting from the environment, ``oi_kernel_config.py``, a profile, a
magic or an API keyword. What is set before the session exists is handled here once:
API keywords that would lower the policy are refused (``check_keywords``), and values
from the environment or the config are raised to the policy's floor with a notice
(``enforce``). Every later change goes through the setting's own ``@validate`` method (in
the engine's, the LLM client's, the child kernel's and the sandbox's class), which asks the
session's ``Floors`` (``config.check_floor``) and refuses it with a ``Refusal`` naming the
policy file: ``%auto_run on``, ``%%oi -y``, ``%model``, ``%limits``, ``%sandbox off``, a
profile, or ``interpreter.engine.approval = ...`` all meet the same check. What is not a
setting is checked before each instruction (``Floors.check_turn``): the model is allowed,
code runs confined when the sandbox is required, and the session log can be written.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from traitlets import TraitError

from oi_kernel import config
from oi_kernel.errors import PolicyError
from oi_kernel.session.policy import APPROVAL_ORDER, APPROVAL_RANK, Policy

CAPS = ("max_cost_per_session", "max_tokens_per_session")


class Refusal(PolicyError, TraitError):
    """A setting the policy refuses (a ``TraitError`` too, so traitlets rolls a refused
    batch of settings back)."""


# ----------------------------------------------------------------------------- the checks
def approval_problem(policy: Policy, value: str) -> str:
    if APPROVAL_RANK.get(value, 0) >= APPROVAL_RANK[policy.approval]:
        return ""
    return (f"Approval `{value}` is not allowed: {policy.where('approval')} requires at least "
            f"`{policy.approval}` ({APPROVAL_ORDER}).")


def limit_problem(policy: Policy, key: str, value: Any) -> str:
    limit = getattr(policy, key)
    if not limit or (value and value <= limit):
        return ""
    shown = "off (0)" if not value else f"{value:g}" if isinstance(value, float) else str(value)
    return (f"`{key}` = {shown} is not allowed: {policy.where(key)} caps it at {limit:g}. "
            "A lower value is fine.")


def model_problem(policy: Policy, model: str) -> str:
    if policy.model_allowed(model):
        return ""
    if policy.strict:
        return f"No instruction is sent to a model. {policy.strict_message()}"
    patterns = ", ".join(f"`{p}`" for p in policy.allowed_model_patterns()) or "none"
    what = f"The model `{model}` is" if model else "No model is configured, and a model is"
    return (f"{what} not allowed by {policy.where('allowed_models')}. Allowed models: "
            f"{patterns}. Choose one with `%model NAME` (or OI_MODEL / c.LLM.model).")


def sandbox_problem(policy: Policy) -> str:
    return (f"The sandbox cannot be turned off: {policy.where('sandbox')} requires it. "
            "Code runs in bubblewrap with no network and writes only to the working directory.")


def check_keywords(policy: Policy, engine_options: dict[str, Any] | None,
                   child_options: dict[str, Any] | None, logging: bool) -> None:
    """Refuse API keywords that would lower the policy (``Interpreter(auto_run=True)``...)."""
    if not policy.active:
        return
    options = engine_options or {}
    problems = []
    if "approval" in options:
        problems.append(approval_problem(policy, options["approval"]))
    for key in ("max_steps", *CAPS):
        if key in options:
            problems.append(limit_problem(policy, key, options[key]))
    if policy.sandbox and (child_options or {}).get("sandbox") is False:
        problems.append(sandbox_problem(policy))
    if policy.log_dir and not logging:
        problems.append(f"The session log cannot be turned off: {policy.where('log_dir')} keeps "
                        f"every session's log in {policy.log_dir}.")
    problems = [p for p in problems if p]
    if problems:
        raise PolicyError("\n".join(problems))


# ----------------------------------------------------------------------------- the child
def gateway_choice(policy: Policy, notices: list[str]) -> Callable[[str], str]:
    """For ``new_child_kernel``: the gateway URL to use given the configured one."""

    def choose(configured: str) -> str:
        if policy.gateway_url:
            if configured and configured != policy.gateway_url:
                notices.append(f"The child kernel runs on the gateway {policy.gateway_url} set "
                               f"by {policy.where('gateway_url')}, not on {configured}.")
            return policy.gateway_url
        if policy.sandbox and configured:
            notices.append(
                f"The gateway {configured} (OI_CHILD_GATEWAY_URL / c.ChildKernel.gateway_url) "
                f"is not used: {policy.where('sandbox')} requires the sandbox, which confines "
                "the child kernel on this machine (a gateway the policy does not name cannot be "
                "checked). The child kernel runs here, sandboxed.")
            return ""
        return configured

    return choose


# ----------------------------------------------------------------------------- floors
@dataclass
class Floors:
    """The policy as the settings' own validators ask it (``oi_kernel.config.check_floor``):
    the settings it guards in this session, and why it refuses a value of one of them."""

    policy: Policy
    session: Any = None
    guarded: set[str] = field(default_factory=set)
    turn_checks: list[str] = field(default_factory=list)  # "model", "confined", "log"

    def check_turn(self) -> None:
        """Before each instruction (``Engine.check_ready``): what is not a setting. Raises a
        ``PolicyError`` that says why no instruction runs."""
        policy, session = self.policy, self.session
        for check in self.turn_checks:
            if check == "model" and (problem := model_problem(policy, session.llm.model)):
                raise PolicyError(problem)
            if check == "confined":
                where = policy.where("sandbox")
                raise PolicyError(
                    f"{where[0].upper()}{where[1:]} requires the sandbox, and %%oi runs code in "
                    "this notebook's own kernel, which cannot be sandboxed. Use the Open "
                    "Interpreter kernel, whose child kernel is.")
            if check == "log":
                self._log_opens()

    def _log_opens(self) -> None:
        policy = self.policy
        try:
            self.session.open_log()
        except Exception as exc:
            raise PolicyError(
                f"{policy.where('log_dir')} keeps every session's log in {policy.log_dir}, and "
                f"it cannot be written ({exc}). No instruction runs without its log: ask your "
                "administrator.") from exc

    def refusal(self, name: str, value: Any) -> Refusal | None:
        if name not in self.guarded:
            return None
        text = self.problem(name, value)
        return Refusal(text) if text else None

    def problem(self, name: str, value: Any) -> str:
        policy = self.policy
        if name == "approval":
            return approval_problem(policy, value)
        if name == "model":
            return model_problem(policy, value) if value else ""
        if name == "sandbox":
            return "" if value else sandbox_problem(policy)
        if name == "gateway_url":
            return "" if value == policy.gateway_url else (
                f"The child kernel's gateway is set by {policy.where('gateway_url')} "
                f"(`{policy.gateway_url}`) and cannot be changed.")
        if name in ("read_paths", "write_paths"):
            return grants_problem(policy, value)
        return limit_problem(policy, name, value)


# ----------------------------------------------------------------------------- applying
def enforce(session: Any, policy: Policy) -> list[str]:
    """Apply ``policy`` to a freshly built session; returns notices for the user."""
    session.policy = policy
    if not policy.active:
        return []
    notices: list[str] = []
    engine, llm, child = session.engine, session.llm, session.child
    floors = Floors(policy, session)
    for obj in (engine, llm, child, getattr(child, "grants", None)):
        if obj is not None:
            obj.floors = floors  # their @validate methods ask it (config.check_floor)
    _engine_rules(engine, policy, notices, floors)
    _model_rule(engine, llm, policy, floors)
    _child_rules(session, child, policy, notices, floors)
    _log_rule(session, policy, notices, floors)
    if policy.strict:
        notices.insert(0, policy.strict_message())
    return notices


def _engine_rules(engine: Any, policy: Policy, notices: list[str], floors: Floors) -> None:
    engine.approval_floor = policy.approval
    if policy.untrusted_ask:
        engine.untrusted_content = "ask"
    engine.known_safe_denied = list(policy.known_safe_denied)
    engine.preview_floor = policy.preview  # core.preview.effective_mode
    _raise_floor(engine, "approval", policy.approval, approval_problem(policy, engine.approval),
                 notices, policy.where("approval"))
    floors.guarded.add("approval")
    for key in ("max_steps", *CAPS):
        limit = getattr(policy, key)
        if not limit:
            continue
        if key in CAPS:
            engine.cap_sources[key] = policy.where(key)
        _raise_floor(engine, key, limit, limit_problem(policy, key, getattr(engine, key)),
                     notices, policy.where(key))
        floors.guarded.add(key)


def _model_rule(engine: Any, llm: Any, policy: Policy, floors: Floors) -> None:
    if not (policy.allowed_models or policy.strict) or getattr(llm, "is_recorded", False):
        return
    floors.guarded.add("model")
    floors.turn_checks.append("model")


def _child_rules(session: Any, child: Any, policy: Policy, notices: list[str],
                 floors: Floors) -> None:
    if child is None:
        if policy.sandbox:
            floors.turn_checks.append("confined")
        return
    if policy.gateway_url:  # confinement is the gateway's (the administrator's) job
        floors.guarded.add("gateway_url")
        return
    _grant_rules(child, policy, notices, floors)
    if policy.sandbox:
        _raise_floor(child, "sandbox", True, "" if child.sandbox else sandbox_problem(policy),
                     notices, policy.where("sandbox"))
        floors.guarded.add("sandbox")


def grants_problem(policy: Policy, paths: list[str]) -> str:
    if policy.sandbox_grants or not paths:
        return ""
    return (f"Sandbox grants are not allowed: {policy.where('sandbox_grants')} keeps the "
            "sandboxed child to its workspace (no read_paths / write_paths, no `%sandbox "
            "allow`). Copy what it needs into the workspace instead.")


def _grant_rules(child: Any, policy: Policy, notices: list[str], floors: Floors) -> None:
    grants = getattr(child, "grants", None)
    if policy.sandbox_grants or grants is None:
        return
    from oi_kernel.execution.sandbox import READ_ENV, WRITE_ENV

    for trait, env in (("read_paths", READ_ENV), ("write_paths", WRITE_ENV)):
        if problem := grants_problem(policy, getattr(grants, trait)):
            origin = _origin(grants, trait)
            origin = env if origin == "the default" else origin  # (its default is the env)
            notices.append(f"{origin} grants {', '.join(getattr(grants, trait))}; not used. "
                           f"{problem}")
            with config.from_source(policy.where("sandbox_grants")):
                grants.set_trait(trait, [])
        floors.guarded.add(trait)


def _log_rule(session: Any, policy: Policy, notices: list[str], floors: Floors) -> None:
    if not policy.log_dir:
        return
    configured = os.environ.get("OI_LOG_DIR", "").strip()
    if configured and os.path.abspath(os.path.expanduser(configured)) != policy.log_dir:
        notices.append(f"Session logs go to {policy.log_dir} ({policy.where('log_dir')}), "
                       f"not to OI_LOG_DIR={configured}.")
    session.log_dir, session.logging = policy.log_dir, True
    floors.turn_checks.append("log")


# ----------------------------------------------------------------------------- helpers
def _raise_floor(obj: Any, trait: str, floor: Any, problem: str, notices: list[str],
                 where: str) -> None:
    """Set ``trait`` to the policy's ``floor`` when its value (from the default, the
    environment or the config) is below it (``problem`` says why); say so unless the value
    was the default."""
    if not problem:
        return
    origin = _origin(obj, trait)
    old = getattr(obj, trait)
    with config.from_source(where):
        obj.set_trait(trait, floor)
    if origin != "the default":
        notices.append(f"{origin} asks for `{trait}` = {old!r}; using {floor!r} instead. "
                       f"{problem}")


def _origin(obj: Any, trait: str) -> str:
    """Where the current value of ``trait`` came from: the config, the environment, or the
    default (API keywords are refused before, see ``check_keywords``)."""
    from oi_kernel.session.profile_state import _config_value
    from oi_kernel.session.profiles import _MISSING, SETTINGS

    if _config_value(obj, trait) is not _MISSING:
        return f"c.{type(obj).__name__}.{trait}"
    setting = SETTINGS.get(trait)
    envs = [e for e in (setting.env if setting else ()) if os.environ.get(e, "").strip()]
    return " / ".join(envs) if envs else "the default"
