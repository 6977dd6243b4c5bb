"""The administrator's policy (``session.policy``) applied to a session, for every front door.

A user could lower a setting from the environment, ``oi_kernel_config.py``, a profile, a
magic or an API keyword. What is set before the session exists is handled here once:
API keywords that would lower the policy are refused (``check_keywords``), and values
from the environment or the config are raised to the policy's floor with a notice
(``enforce``). Every later change goes through a traitlets validator registered on the
engine, the LLM client or the child kernel, which refuses it with a ``Refusal`` naming the
policy file: ``%auto_run on``, ``%%oi -y``, ``%model``, ``%limits``, ``%sandbox off``, a
profile, or ``interpreter.engine.approval = ...`` all meet the same check. What is not a
setting is checked before each instruction (``engine.preflight``): the model is allowed,
code runs confined when the sandbox is required, and the session log can be written.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from traitlets import TraitError

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


# ----------------------------------------------------------------------------- applying
def enforce(session: Any, policy: Policy) -> list[str]:
    """Apply ``policy`` to a freshly built session; returns notices for the user."""
    session.policy = policy
    if not policy.active:
        return []
    notices: list[str] = []
    engine, llm, child = session.engine, session.llm, session.child
    _engine_rules(engine, policy, notices)
    _model_rule(engine, llm, policy)
    _child_rules(session, child, policy, notices)
    _log_rule(session, policy, notices)
    if policy.strict:
        notices.insert(0, policy.strict_message())
    return notices


def _engine_rules(engine: Any, policy: Policy, notices: list[str]) -> None:
    engine.approval_floor = policy.approval
    if policy.untrusted_ask:
        engine.untrusted_content = "ask"
    engine.known_safe_denied = list(policy.known_safe_denied)
    engine.preview_floor = policy.preview  # core.preview.effective_mode
    _raise_floor(engine, "approval", policy.approval, approval_problem(policy, engine.approval),
                 notices)
    _guard(engine, "approval", lambda v: approval_problem(policy, v))
    for key in ("max_steps", *CAPS):
        limit = getattr(policy, key)
        if not limit:
            continue
        if key in CAPS:
            engine.cap_sources[key] = policy.where(key)
        _raise_floor(engine, key, limit, limit_problem(policy, key, getattr(engine, key)),
                     notices)
        _guard(engine, key, lambda v, key=key: limit_problem(policy, key, v))


def _model_rule(engine: Any, llm: Any, policy: Policy) -> None:
    if not (policy.allowed_models or policy.strict) or getattr(llm, "is_recorded", False):
        return

    def check_set(value: str) -> str:
        return model_problem(policy, value) if value else ""

    _guard(llm, "model", check_set)

    def check_turn() -> None:
        if problem := model_problem(policy, llm.model):
            raise PolicyError(problem)

    engine.preflight.append(check_turn)


def _child_rules(session: Any, child: Any, policy: Policy, notices: list[str]) -> None:
    if child is None:
        if policy.sandbox:
            def confined() -> None:
                raise PolicyError(
                    f"{policy.where('sandbox')[0].upper()}{policy.where('sandbox')[1:]} requires "
                    "the sandbox, and %%oi runs code in this notebook's own kernel, which cannot "
                    "be sandboxed. Use the Open Interpreter kernel, whose child kernel is.")

            session.engine.preflight.append(confined)
        return
    if policy.gateway_url:  # confinement is the gateway's (the administrator's) job
        def check_url(value: str) -> str:
            return "" if value == policy.gateway_url else (
                f"The child kernel's gateway is set by {policy.where('gateway_url')} "
                f"(`{policy.gateway_url}`) and cannot be changed.")

        _guard(child, "gateway_url", check_url)
        return
    _grant_rules(child, policy, notices)
    if policy.sandbox:
        _raise_floor(child, "sandbox", True, "" if child.sandbox else sandbox_problem(policy),
                     notices)
        _guard(child, "sandbox", lambda v: "" if v else sandbox_problem(policy))


def grants_problem(policy: Policy, paths: list[str]) -> str:
    if policy.sandbox_grants or not paths:
        return ""
    return (f"Sandbox grants are not allowed: {policy.where('sandbox_grants')} keeps the "
            "sandboxed child to its workspace (no read_paths / write_paths, no `%sandbox "
            "allow`). Copy what it needs into the workspace instead.")


def _grant_rules(child: Any, policy: Policy, notices: list[str]) -> None:
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
            grants.set_trait(trait, [])
        _guard(grants, trait, lambda v: grants_problem(policy, v))


def _log_rule(session: Any, policy: Policy, notices: list[str]) -> None:
    if not policy.log_dir:
        return
    configured = os.environ.get("OI_LOG_DIR", "").strip()
    if configured and os.path.abspath(os.path.expanduser(configured)) != policy.log_dir:
        notices.append(f"Session logs go to {policy.log_dir} ({policy.where('log_dir')}), "
                       f"not to OI_LOG_DIR={configured}.")
    session.log_dir, session.logging = policy.log_dir, True

    def log_opens() -> None:
        try:
            session.open_log()
        except Exception as exc:
            raise PolicyError(
                f"{policy.where('log_dir')} keeps every session's log in {policy.log_dir}, and "
                f"it cannot be written ({exc}). No instruction runs without its log: ask your "
                "administrator.") from exc

    session.engine.preflight.append(log_opens)


# ----------------------------------------------------------------------------- helpers
def _raise_floor(obj: Any, trait: str, floor: Any, problem: str, notices: list[str]) -> None:
    """Set ``trait`` to the policy's ``floor`` when its value (from the default, the
    environment or the config) is below it (``problem`` says why); say so unless the value
    was the default."""
    if not problem:
        return
    origin = _origin(obj, trait)
    old = getattr(obj, trait)
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


def _guard(obj: Any, trait: str, problem: Callable[[Any], str]) -> None:
    """Refuse every later value of ``obj.trait`` for which ``problem`` is not empty (after
    the trait's own validator, if it has one)."""
    previous = obj._trait_validators.get(trait)

    def validate(owner: Any, proposal: Any) -> Any:
        value = previous(owner, proposal) if previous is not None else proposal["value"]
        if text := problem(value):
            raise Refusal(text)
        return value

    obj._register_validator(validate, (trait,))
