"""Profiles applied to a session: which one is active, what it changed, the instructions
composed from config + profile + ``%instructions``, where each effective setting came from,
and the ``%profile`` / ``%instructions`` commands. Reading and checking profile files is
``oi_kernel.session.profiles``."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from oi_kernel import config
from oi_kernel.core.events import ProfileApplied
from oi_kernel.errors import PolicyError
from oi_kernel.session.profiles import (
    _MISSING,
    PROFILE_ENV,
    SETTINGS,
    LoadedProfile,
    Owner,
    Profile,
    ProfileError,
    Setting,
    list_profiles,
    load_profile,
)


# ----------------------------------------------------------------------------- applying
@dataclass
class Change:
    key: str
    old: Any
    new: Any


@dataclass
class Applied:
    """What applying (or clearing) a profile did."""

    profile: LoadedProfile | None
    changes: list[Change] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class _State:
    """Per engine: the active profile, session instructions and any start-up failure."""

    profile: LoadedProfile | None = None
    selected_by: str = ""
    session_instructions: list[str] = field(default_factory=list)
    base_instructions: str = ""
    composed: str = ""
    error: str = ""
    child: Any = None

    def check_turn(self) -> None:
        """Before each instruction (``Engine.check_ready``): a start-up profile that failed
        blocks instructions until it is fixed, replaced or cleared."""
        if self.error:
            raise ProfileError(self.error)


def _state(engine: Any, child: Any = None) -> _State:
    """The engine's profile state (kept in ``engine.profile_state``, made on first use)."""
    state = engine.profile_state
    if state is None:
        text = engine.custom_instructions
        state = engine.profile_state = _State(base_instructions=text, composed=text)
    if child is not None:
        state.child = child
    return state


def _target(engine: Any, owner: Owner, child: Any) -> Any:
    grants = getattr(child, "grants", None)
    return {"engine": engine, "llm": engine.llm, "child": child, "sandbox": grants,
            "tools": engine.tool_settings}[owner]


def _config_value(obj: Any, trait: str) -> Any:
    """The value the config file (or command line) gives ``obj.trait``, or _MISSING."""
    config = obj.config
    for cls in type(obj).__mro__:
        section = cls.__name__
        if section in config and trait in config[section]:
            return config[section][trait]
    return _MISSING


def _base_value(obj: Any, trait: str) -> tuple[Any, str]:
    """What the trait would be without any profile or magic: config, else env/default; and
    the source to remember (``config.FORGET``: the config's or the default)."""
    value = _config_value(obj, trait)
    if value is not _MISSING:
        return value, config.FORGET
    found = config.environment_value(obj, trait)
    if found is not None:
        return found
    return obj.trait_defaults(trait), config.FORGET


def apply(
    engine: Any,
    profile: LoadedProfile | None,
    *,
    child: Any = None,
    selected_by: str = "%profile",
) -> Applied:
    """Make ``profile`` the active one (None: no profile).

    Settings the previous profile set, and nobody changed since, go back to their
    config/env/default value; then the new profile's settings are set. The sandbox
    needs the child kernel; restarting a running child is the caller's business.
    """
    state = _state(engine, child)
    child = state.child
    settings = dict(profile.settings) if profile else {}
    on_gateway = child is not None and bool(getattr(child, "gateway_url", ""))
    if on_gateway and "sandbox" in settings:
        del settings["sandbox"]
        gateway_note = (f"`sandbox` is left to the gateway: the child kernel runs on "
                        f"{child.gateway_url}, where confinement is the gateway's job.")
    else:
        gateway_note = ""
    if settings.get("sandbox") and child is not None and not child.sandbox:
        from oi_kernel.execution.sandbox import require_bwrap

        require_bwrap()  # refuse before changing anything
    result = Applied(profile)
    old = state.profile.settings if state.profile else {}
    for key, value in old.items():
        target = _target(engine, SETTINGS[key].owner, child)
        if key not in settings and target is not None:
            trait = SETTINGS[key].trait
            if getattr(target, trait) == value:  # not changed by a magic since
                base, source = _base_value(target, trait)
                _set(target, key, trait, base, result, source)
    for key, value in settings.items():
        target = _target(engine, SETTINGS[key].owner, child)
        if target is None:
            result.notes.append(
                f"`{key}` is ignored here: code runs in this kernel, not in a child kernel."
            )
            continue
        _set(target, key, SETTINGS[key].trait, value, result, f"profile {profile.name}")
    if gateway_note:
        result.notes.append(gateway_note)
    state.profile, state.selected_by, state.error = profile, selected_by, ""
    _compose_instructions(engine, state)
    engine.publish(ProfileApplied(
        name=profile.name if profile else None,
        path=str(profile.path) if profile and profile.path else None,
        selected_by=selected_by,
        settings=settings,
    ))
    return result


def _set(target: Any, key: str, trait: str, value: Any, result: Applied, source: str) -> None:
    old = getattr(target, trait)
    if old == value and source and hasattr(target, "setting_sources"):
        target.setting_sources[trait] = source  # the profile sets it too (to what it was)
    if old != value:
        try:
            with config.from_source(source):  # remembered for %config (session.resolved)
                setattr(target, trait, value)
        except PolicyError as exc:  # the administrator's policy wins over a profile
            result.notes.append(f"`{key}: {_show(value)}` was not applied: {exc}")
            return
        result.changes.append(Change(key, old, value))


def apply_startup(engine: Any, child: Any = None) -> str:
    """Apply the profile chosen by OI_PROFILE or ``c.Profile.name``; return its name ("" for
    none). Never raises: a profile that fails to load blocks instructions (``_State.check_turn``,
    asked by ``Engine.check_ready``) until the user fixes it, picks another or clears it."""
    env = os.environ.get(PROFILE_ENV, "").strip()
    name = env or Profile(parent=engine).name.strip()
    if not name:
        return ""
    selected_by = PROFILE_ENV if env else "c.Profile.name"
    state = _state(engine, child)
    try:
        applied = apply(engine, load_profile(name), child=child, selected_by=selected_by)
        for note in applied.notes:  # shown with the configuration problems
            config.warn(f"Profile {name!r} ({selected_by}): {note}")
    except Exception as exc:  # any failure must block turns, not kill the kernel
        state.error = (
            f"The profile {name!r} (chosen by {selected_by}) could not be applied, so no "
            f"instruction runs until this is fixed:\n{exc}\nFix it and run `%profile {name}`, "
            "choose another with `%profile NAME`, or go on without one: `%profile --clear`."
        )
        engine.log.error("%s", state.error)
    return name


def active_profile(engine: Any) -> LoadedProfile | None:
    """The profile applied to ``engine`` (None when there is none)."""
    state = engine.profile_state
    return state.profile if state else None


# ----------------------------------------------------------------------------- instructions
def _compose_instructions(engine: Any, state: _State) -> None:
    """engine.custom_instructions = the configured text + the profile's + the session's."""
    if engine.custom_instructions != state.composed:  # set by someone else: keep it as base
        state.base_instructions = engine.custom_instructions
    parts = [state.base_instructions, state.profile.instructions if state.profile else ""]
    parts += state.session_instructions
    state.composed = "\n\n".join(p.strip() for p in parts if p.strip())
    engine.custom_instructions = state.composed


def add_instructions(engine: Any, text: str) -> None:
    """Append custom instructions for the rest of the session."""
    state = _state(engine)
    state.session_instructions.append(text.strip())
    _compose_instructions(engine, state)


def clear_instructions(engine: Any) -> None:
    """Drop the instructions added with ``%instructions`` (the profile's stay)."""
    state = _state(engine)
    state.session_instructions.clear()
    _compose_instructions(engine, state)


def instruction_parts(engine: Any) -> list[tuple[str, str]]:
    """Each piece of the custom instructions with its source, in prompt order."""
    state = _state(engine)
    _compose_instructions(engine, state)
    parts = []
    if state.base_instructions.strip():
        from_config = _config_value(engine, "custom_instructions") == state.base_instructions
        parts.append(("config" if from_config else "set in this session", state.base_instructions))
    if state.profile and state.profile.instructions:
        parts.append((f"profile {state.profile.name}", state.profile.instructions))
    parts += [("%instructions", text) for text in state.session_instructions]
    return parts


# ----------------------------------------------------------------------------- provenance
def provenance(engine: Any, child: Any = None) -> list[tuple[str, Any, str]]:
    """(key, effective value, source) for every profile setting that applies here.

    Sources: ``default``, ``env NAME``, ``config``, ``profile NAME``, ``magic`` (changed in
    this session, e.g. by ``%model``).
    """
    state = _state(engine, child)
    rows = []
    for key, setting in SETTINGS.items():
        target = _target(engine, setting.owner, state.child)
        if target is not None:
            rows.append((key, getattr(target, setting.trait), _source(target, setting, state)))
    return rows


def _source(target: Any, setting: Setting, state: _State) -> str:
    value = getattr(target, setting.trait)
    profile = state.profile
    if profile and setting.key in profile.settings and profile.settings[setting.key] == value:
        return f"profile {profile.name}"
    configured = _config_value(target, setting.trait)
    if configured is not _MISSING:
        return "config" if configured == value else "magic"
    recorded = getattr(target, "setting_sources", {}).get(setting.trait)
    if recorded in setting.env:  # the environment step's (config.apply_environment)
        return f"env {recorded}"
    return "default" if target.trait_defaults(setting.trait) == value else "magic"


def describe(engine: Any, child: Any = None) -> str:
    """Markdown: the active profile and every effective setting with its source."""
    state = _state(engine, child)
    if state.error:
        head = "⚠️ " + state.error.replace("\n", "  \n")
    elif state.profile:
        p = state.profile
        head = f"Profile **{p.name}**" + (f" (`{p.path}`)" if p.path else "")
        head += f", chosen by {state.selected_by}."
        if p.description:
            head += f" {p.description}"
    else:
        head = "No profile is active (`%profile NAME` applies one; `%profile --list` lists them)."
    rows = [f"| `{k}` | {_show(v, SETTINGS[k].kind)} | {src} |"
            for k, v, src in provenance(engine, child)]
    rows += [f"| instructions | {_show(text)} | {src} |" for src, text in instruction_parts(engine)]
    return (
        f"{head}\n\n| setting | value | from |\n|---|---|---|\n" + "\n".join(rows) + "\n\n"
        "Precedence, lowest first: default < env < config < profile < magic."
    )


def _show(value: Any, kind: str = "") -> str:
    if isinstance(value, str):
        text = value.replace("\n", " ").replace("|", "\\|")
        text = text if len(text) <= 60 else text[:57] + "..."
        return f"`{text}`" if text else "(empty)"
    if isinstance(value, list):
        return ", ".join(value) or ("(none)" if kind in ("paths", "names") else "(all)")
    if isinstance(value, bool):
        return "on" if value else "off"
    return f"{value:g}" if isinstance(value, float) else str(value)


# ----------------------------------------------------------------------------- commands
def profile_command(engine: Any, arg: str, child: Any = None, selected_by: str = "%profile",
                    cwd: str | None = None) -> str:
    """``%profile [NAME | --list | --clear]`` for any front door; returns markdown to show
    (a project's profiles are looked for from ``cwd``, by default the process's directory)."""
    arg = arg.strip()
    if not arg:
        return describe(engine, child)
    if arg == "--list":
        found = list_profiles(cwd)
        if not found:
            return "No profiles found."
        return "| profile | file |\n|---|---|\n" + "\n".join(
            f"| `{n}` | `{p}` |" for n, p in found.items()
        )
    if arg == "--clear":
        return _report(apply(engine, None, child=child, selected_by=selected_by), "Profile cleared")
    if arg.startswith("-"):
        raise ProfileError("Usage: %profile [NAME | --list | --clear]")
    profile = load_profile(arg, cwd)
    applied = apply(engine, profile, child=child, selected_by=selected_by)
    return _report(applied, f"Profile **{profile.name}** applied")


def _report(applied: Applied, head: str) -> str:
    if applied.changes:
        items = "; ".join(f"`{c.key}`: {_show(c.old, SETTINGS[c.key].kind)} → "
                          f"{_show(c.new, SETTINGS[c.key].kind)}" for c in applied.changes)
        text = f"{head}: {items}."
    else:
        text = f"{head}; no setting changed."
    if applied.profile and applied.profile.instructions:
        text += " Its instructions are appended to the system prompt."
    if applied.profile and "system_message" in applied.profile.settings:
        text += (
            " ⚠️ It replaces the built-in system prompt: if the model stops proposing "
            "runnable code, the profile's `system_message` is why."
        )
    for note in applied.notes:
        text += f" {note}"
    return text + " `%profile` shows every setting and where it came from."


def instructions_command(engine: Any, arg: str) -> str:
    """``%instructions [TEXT | --clear]``; returns markdown to show."""
    arg = arg.strip()
    if arg == "--clear":
        clear_instructions(engine)
        rest = instruction_parts(engine)
        tail = f" Still in effect: {', '.join(src for src, _ in rest)}." if rest else ""
        return "Session instructions cleared." + tail
    if arg.startswith("--"):
        raise ProfileError("Usage: %instructions [TEXT | --clear]")
    if arg:
        add_instructions(engine, arg)
        return "Added to the custom instructions (sent with every request from now on)."
    parts = instruction_parts(engine)
    if not parts:
        return "No custom instructions. Add some: `%instructions Always use pandas.`"
    return "\n\n".join(f"**{src}:**\n\n> " + text.replace("\n", "\n> ") for src, text in parts)
