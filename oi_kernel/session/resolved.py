"""Every setting of a session, resolved once, with its value and where that value came from.

A setting's value comes from the first of these that sets it, highest precedence first:

1. a session command (``%approval``, ``%model``, ``%limits``, ``%sandbox``...; in Python, an
   assignment such as ``interpreter.engine.approval = ...``: "this session");
2. the administrator's policy, which raises a value to its floor (``session.policy``);
3. the profile (``%profile NAME``, ``OI_PROFILE``, ``c.Profile.name``);
4. a keyword argument (``Interpreter(auto_run=True)``, ``build_session(engine_options=...)``);
5. the traitlets config (``c.Engine.max_steps`` in ``oi_kernel_config.py`` or the command line);
6. the environment variable (``OI_MAX_STEPS``);
7. the default.

A later source may only be refused, never silently lowered: the policy's floors refuse a
lower value whatever its source. The configurable objects remember where each value was set
(``oi_kernel.config.Remembered``); ``resolve`` reads that into one frozen ``Settings``, and
``%config`` (``%oi config``) shows it. ``model_description`` says what the model settings mean.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from oi_kernel import config

_SECRET = re.compile(r"(key|token|password|headers)$", re.IGNORECASE)  # api_key, gateway_token
_MISSING = object()


@dataclass(frozen=True)
class Setting:
    """One setting: its section (``c.SECTION.name``), value and source."""

    section: str
    name: str
    value: Any
    source: str

    def line(self) -> str:
        return f"- `{self.name}`: {_show(self.name, self.value)} — {self.source}"


@dataclass(frozen=True)
class Settings:
    """The settings of a session at one moment: immutable, each with its source."""

    items: tuple[Setting, ...]
    policy_rules: tuple[str, ...] = ()

    def __getitem__(self, name: str) -> Setting:
        for item in self.items:
            if item.name == name or f"{item.section}.{item.name}" == name:
                return item
        raise KeyError(name)

    def markdown(self, pattern: str = "") -> str:
        """The settings (those whose name contains ``pattern``), grouped by section."""
        chosen = [i for i in self.items if pattern.lower() in f"{i.section}.{i.name}".lower()]
        if not chosen:
            return f"No setting matches `{pattern}`. `%config` lists them all."
        parts = []
        if self.policy_rules and not pattern:
            parts.append("**Administrator's policy:** " + "; ".join(self.policy_rules) + ".")
        for section in dict.fromkeys(i.section for i in chosen):
            lines = [i.line() for i in chosen if i.section == section]
            parts.append(f"**{section}** (`c.{section}.*`)\n\n" + "\n".join(lines))
        parts.append("Sources, highest first: session command > administrator's policy > "
                     "profile > keyword argument > config > environment variable > default "
                     "(docs/settings.md).")
        return "\n\n".join(parts)


def _owners(session: Any) -> list[tuple[str, Any]]:
    engine, child = session.engine, session.child
    owners = [("Engine", engine), ("LLM", engine.llm), ("ChildKernel", child),
              ("Sandbox", getattr(child, "grants", None)), ("Tools", engine.tool_settings)]
    return [(section, obj) for section, obj in owners if hasattr(obj, "setting_sources")]


def resolve(session: Any) -> Settings:
    """The session's settings now, each with its source."""
    items = []
    for section, obj in _owners(session):
        for name in sorted(obj.traits(config=True)):
            items.append(Setting(section, name, getattr(obj, name), source_of(obj, name)))
    policy = getattr(session, "policy", None)
    rules = tuple(policy.rules()) if policy is not None and policy.active else ()
    return Settings(tuple(items), rules)


def source_of(obj: Any, name: str) -> str:
    """Where ``obj.name``'s value came from, in words."""
    recorded = obj.setting_sources.get(name)
    configured = _config_value(obj, name)
    if recorded == config.CONFIG or (recorded is None and configured is not _MISSING
                                     and configured == getattr(obj, name)):
        return f"c.{_config_section(obj, name)}.{name}"
    if recorded is not None:
        return recorded
    env = obj.traits()[name].metadata.get("env")
    if obj.trait_metadata(name, "env_kind") == "elsewhere" and os.environ.get(env, "").strip():
        return env  # read by its user beside the setting (OI_MCP_CONFIG)
    return "default"  # (the environment step records the variable it used)


def _config_section(obj: Any, name: str) -> str:
    for cls in type(obj).__mro__:
        if cls.__name__ in obj.config and name in obj.config[cls.__name__]:
            return cls.__name__
    return type(obj).__name__


def _config_value(obj: Any, name: str) -> Any:
    section = _config_section(obj, name)
    values = obj.config.get(section, {})
    return values[name] if name in values else _MISSING


def _show(name: str, value: Any) -> str:
    if _SECRET.search(name):
        return "(set)" if value else "(not set)"
    if isinstance(value, str):
        text = " ".join(value.split())
        return f"`{text[:57]}...`" if len(text) > 60 else (f"`{text}`" if text else "(empty)")
    if isinstance(value, (list, tuple)):
        return ", ".join(f"`{v}`" for v in value) or "(none)"
    if isinstance(value, bool):
        return "on" if value else "off"
    return f"`{value:g}`" if isinstance(value, float) else f"`{value}`"


def model_description(llm: Any, engine: Any) -> str:
    """Small-model mode and how the model proposes code, each with the reason."""
    on, why = llm.small_model_verdict()
    lines = [f"- Small-model mode: **{'on' if on else 'off'}**, {why}."]
    if on:
        samples = engine.small_model_samples
        lines.append("  The model gets a short prompt with worked examples close to the "
                     "instruction, its drafts are checked before you are asked and compared "
                     f"with {f'up to {samples}' if samples > 0 else 'no'} more samples "
                     "(OI_SMALL_MODEL_SAMPLES), a reply that is only code is recognised as "
                     f"code, and each instruction gets at most {engine.handling.step_limit()} LLM calls.")
    if llm.is_embedded:
        code = "fenced code blocks (the embedded model has no tool calls)"
    elif said := llm.tools_refused():
        code = f"fenced code blocks: the server rejected tools ({said})"
    elif llm.uses_tools():
        code = "the execute tool (function calling)"
    elif llm.tool_mode == "markdown":
        code = "fenced code blocks (tool_mode markdown)"
    elif on:
        code = "fenced code blocks (small-model mode; OI_TOOL_MODE=tools for tool calls)"
    else:
        code = "fenced code blocks (the model does not support tool calls)"
    lines.append(f"- Code comes as {code}.")
    return "\n".join(lines)
