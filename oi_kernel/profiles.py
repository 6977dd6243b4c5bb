"""Profiles: named YAML files of settings for one kind of work.

A profile sets the model, sampling temperature, approval policy, limits, the
languages offered to the model, the sandbox, and instructions appended to the
system prompt (or, riskier, a ``system_message`` that replaces it). It is data,
never code: read with ``yaml.safe_load`` from a local file (never a URL),
checked against ``SETTINGS``, then applied to an engine and its child kernel.

Where ``NAME`` is looked for (first match wins):

1. ``.oi/profiles/NAME.yaml`` in the working directory, then in each parent up
   to the git root (the directory holding ``.git``) or the file-system root;
2. ``oi_profiles/NAME.yaml`` in each Jupyter config directory (``jupyter --paths``);
3. the profiles shipped in ``oi_kernel/profiles/``.

A setting's value comes from, lowest precedence first: its default, its
environment variable, the config file, the profile, a magic (``%model`` after
``%profile`` wins). ``describe()`` shows each effective setting and its source.
"""

from __future__ import annotations

import os
import re
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from traitlets import Unicode, default
from traitlets.config import Configurable

from .errors import ConfigError

PROFILE_ENV = "OI_PROFILE"
PROJECT_DIR = Path(".oi") / "profiles"
CONFIG_SUBDIR = "oi_profiles"
BUILTIN_DIR = Path(__file__).parent / "profiles"
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_MISSING = object()

Owner = Literal["engine", "llm", "child"]
Kind = Literal["str", "int", "number", "bool", "languages"]


class ProfileError(ConfigError):
    """A profile could not be found, read or validated."""


# ----------------------------------------------------------------------------- the schema
@dataclass(frozen=True)
class Setting:
    """One profile key: the object whose trait of the same name it sets, and its values."""

    key: str
    owner: Owner
    kind: Kind
    env: tuple[str, ...] = ()
    choices: tuple[str, ...] = ()
    minimum: float | None = None

    @property
    def trait(self) -> str:
        return self.key


def _setting(key: str, owner: Owner, kind: Kind, env: str = "", **kw: Any) -> Setting:
    return Setting(key, owner, kind, tuple(env.split()), **kw)


SETTINGS: dict[str, Setting] = {
    s.key: s
    for s in (
        _setting("model", "llm", "str", "OI_MODEL"),
        _setting("api_base", "llm", "str", "OI_API_BASE"),
        _setting("tool_mode", "llm", "str", "OI_TOOL_MODE", choices=("auto", "tools", "markdown")),
        _setting("temperature", "llm", "number", minimum=0),
        _setting(
            "approval",
            "engine",
            "str",
            "OI_APPROVAL OI_AUTO_RUN",
            choices=("always", "risky", "never"),
        ),
        _setting("max_steps", "engine", "int", "OI_MAX_STEPS", minimum=1),
        _setting("step_timeout", "engine", "number", "OI_STEP_TIMEOUT", minimum=0),
        _setting("max_tokens_per_turn", "engine", "int", "OI_MAX_TOKENS", minimum=0),
        _setting("max_cost_per_turn", "engine", "number", "OI_MAX_COST", minimum=0),
        _setting("max_tokens_per_session", "engine", "int", "OI_MAX_SESSION_TOKENS", minimum=0),
        _setting("max_cost_per_session", "engine", "number", "OI_MAX_SESSION_COST", minimum=0),
        _setting("context_budget", "engine", "int", "OI_CONTEXT_BUDGET", minimum=0),
        _setting("languages", "engine", "languages"),
        _setting("system_message", "engine", "str"),
        _setting("sandbox", "child", "bool", "OI_SANDBOX"),
    )
}
TEXT_KEYS = ("description", "instructions")  # not settings of an object
KNOWN_KEYS = tuple(sorted([*SETTINGS, *TEXT_KEYS]))
_FORBIDDEN = {
    "api_key": "API keys do not belong in a profile (profiles are files people share). "
    "Set OI_API_KEY or the provider's own variable (OPENAI_API_KEY, ...) instead.",
}
_KIND_NAMES = {
    "str": "a string",
    "int": "a whole number",
    "number": "a number",
    "bool": "true or false",
    "languages": "a list of language names",
}


@dataclass
class LoadedProfile:
    """A validated profile: its settings by key, plus its text keys."""

    name: str
    path: Path | None
    settings: dict[str, Any] = field(default_factory=dict)
    instructions: str = ""
    description: str = ""


class Profile(Configurable):
    """Which profile the Open Interpreter kernel and ``%%oi`` apply when they start."""

    name = Unicode(
        config=True,
        help="Name of a profile to apply at start (a YAML file: .oi/profiles/NAME.yaml in the "
        "project, oi_profiles/NAME.yaml in a Jupyter config directory, or a shipped one: "
        "data_analyst, shell_helper, local_small_model). Env: OI_PROFILE, which wins over "
        "this setting (a profile kernelspec sets it). Magic: %profile NAME.",
    )

    @default("name")
    def _name_default(self) -> str:
        return ""


# ----------------------------------------------------------------------------- finding
def _project_dirs(cwd: Path) -> list[Path]:
    """``cwd`` and its parents, up to and including the git root (or ``/``)."""
    dirs = []
    for directory in [cwd, *cwd.parents]:
        dirs.append(directory)
        if (directory / ".git").exists():
            break
    return dirs


def _config_dirs() -> list[Path]:
    from jupyter_core.paths import jupyter_config_path

    return [Path(p) for p in jupyter_config_path()]


def search_paths(name: str, cwd: str | Path | None = None) -> list[Path]:
    """Every place a profile called ``name`` is looked for, in order."""
    here = Path(cwd or os.getcwd()).resolve()
    filename = f"{name}.yaml"
    return [
        *(d / PROJECT_DIR / filename for d in _project_dirs(here)),
        *(d / CONFIG_SUBDIR / filename for d in _config_dirs()),
        BUILTIN_DIR / filename,
    ]


def list_profiles(cwd: str | Path | None = None) -> dict[str, Path]:
    """The profiles that can be selected by name here, each with the file that wins."""
    here = Path(cwd or os.getcwd()).resolve()
    roots = [
        *(d / PROJECT_DIR for d in _project_dirs(here)),
        *(d / CONFIG_SUBDIR for d in _config_dirs()),
        BUILTIN_DIR,
    ]
    found: dict[str, Path] = {}
    for root in roots:
        if root.is_dir():
            for path in sorted(root.glob("*.yaml")):
                found.setdefault(path.stem, path)
    return dict(sorted(found.items()))


def find_profile(name: str, cwd: str | Path | None = None) -> Path:
    """The file of the profile ``name`` (a name, or a local path to a .yaml file)."""
    if "://" in name:
        raise ProfileError(
            f"Profiles are read only from local files; {name!r} looks like a URL. Download it, "
            "read it, and save it as .oi/profiles/NAME.yaml in your project."
        )
    if name.endswith((".yaml", ".yml")) or os.sep in name or "/" in name:
        path = Path(name).expanduser()
        path = path if path.is_absolute() else Path(cwd or os.getcwd()) / path
        if not path.is_file():
            raise ProfileError(f"No profile file {str(path)!r}.")
        return path
    if not _NAME_RE.match(name):
        raise ProfileError(
            f"{name!r} is not a profile name (letters, digits, '.', '_' and '-' only)."
        )
    places = search_paths(name, cwd)
    for path in places:
        if path.is_file():
            return path
    available = ", ".join(list_profiles(cwd)) or "none"
    searched = "\n".join(f"  - {p}" for p in places)
    raise ProfileError(
        f"No profile named {name!r}. Looked in:\n{searched}\nAvailable profiles: {available}."
    )


# ----------------------------------------------------------------------------- reading
def load_profile(name: str, cwd: str | Path | None = None) -> LoadedProfile:
    """Find, read and validate a profile."""
    path = find_profile(name, cwd)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ProfileError(f"Profile {name!r} ({path}) could not be read: {exc}") from exc
    label = path.stem if name.endswith((".yaml", ".yml")) or "/" in name else name
    return parse_profile(text, label, path)


def parse_profile(text: str, name: str, path: Path | None = None) -> LoadedProfile:
    """A profile from YAML text; every problem is a ProfileError naming the file."""
    import yaml

    where = f"Profile {name!r}" + (f" ({path})" if path else "")
    try:
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = exc.problem or exc.context or "unreadable"
        raise ProfileError(f"{where}: invalid YAML{at}: {problem}.") from exc
    except yaml.YAMLError as exc:
        raise ProfileError(f"{where}: invalid YAML: {exc}") from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ProfileError(
            f"{where}: must be a mapping of settings (key: value), got {_type_name(data)}."
        )
    return _validate(data, name, path, where)


def _validate(data: dict[Any, Any], name: str, path: Path | None, where: str) -> LoadedProfile:
    profile = LoadedProfile(name, path)
    for key, value in data.items():
        key = str(key)
        if key in _FORBIDDEN:
            raise ProfileError(f"{where}: {key!r} is not allowed. {_FORBIDDEN[key]}")
        if key in TEXT_KEYS:
            if not isinstance(value, str):
                raise ProfileError(_type_message(where, key, "a string", value))
            setattr(profile, key, value.strip())
        elif key in SETTINGS:
            profile.settings[key] = _check_value(SETTINGS[key], value, where)
        else:
            from difflib import get_close_matches

            close = get_close_matches(key, KNOWN_KEYS, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ProfileError(
                f"{where}: unknown key {key!r}.{hint} Known keys: {', '.join(KNOWN_KEYS)}."
            )
    return profile


def _check_value(setting: Setting, value: Any, where: str) -> Any:
    """The value, checked against the setting's kind, choices and minimum."""
    key, kind = setting.key, setting.kind
    ok = {
        "str": isinstance(value, str),
        "int": isinstance(value, int) and not isinstance(value, bool),
        "number": isinstance(value, (int, float)) and not isinstance(value, bool),
        "bool": isinstance(value, bool),
        "languages": isinstance(value, list) and all(isinstance(v, str) for v in value),
    }[kind]
    if not ok:
        raise ProfileError(_type_message(where, key, _KIND_NAMES[kind], value))
    if setting.choices and value not in setting.choices:
        raise ProfileError(
            f"{where}: {key!r} must be one of {', '.join(setting.choices)}; got {value!r}."
        )
    if setting.minimum is not None and value < setting.minimum:
        raise ProfileError(f"{where}: {key!r} must be at least {setting.minimum:g}; got {value}.")
    if kind == "number":
        return float(value)
    if kind == "languages":
        return _check_languages(value, where)
    return value


def _check_languages(names: list[str], where: str) -> list[str]:
    from .languages import LANGUAGES, normalize_language

    if not names:
        raise ProfileError(f"{where}: 'languages' must list at least one language.")
    result = []
    for name in names:
        language = normalize_language(name)
        if language is None:
            raise ProfileError(
                f"{where}: unknown language {name!r} in 'languages'. Known: {', '.join(LANGUAGES)}."
            )
        if language not in result:
            result.append(language)
    return result


def _type_name(value: Any) -> str:
    names = {
        bool: "a boolean",
        int: "a whole number",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "a mapping",
        type(None): "nothing (null)",
    }
    return names.get(type(value), type(value).__name__)


def _type_message(where: str, key: str, expected: str, value: Any) -> str:
    return f"{where}: {key!r} must be {expected}, got {_type_name(value)} ({value!r})."


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


_states: weakref.WeakKeyDictionary[Any, _State] = weakref.WeakKeyDictionary()


def _state(engine: Any, child: Any = None) -> _State:
    state = _states.get(engine)
    if state is None:
        text = engine.custom_instructions
        state = _states[engine] = _State(base_instructions=text, composed=text)
    if child is not None:
        state.child = child
    return state


def _target(engine: Any, owner: Owner, child: Any) -> Any:
    return {"engine": engine, "llm": engine.llm, "child": child}[owner]


def _config_value(obj: Any, trait: str) -> Any:
    """The value the config file (or command line) gives ``obj.trait``, or _MISSING."""
    config = obj.config
    for cls in type(obj).__mro__:
        section = cls.__name__
        if section in config and trait in config[section]:
            return config[section][trait]
    return _MISSING


def _base_value(obj: Any, trait: str) -> Any:
    """What the trait would be without any profile or magic: config, else env/default."""
    value = _config_value(obj, trait)
    return obj.trait_defaults(trait) if value is _MISSING else value


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
    settings = profile.settings if profile else {}
    if settings.get("sandbox") and child is not None and not child.sandbox:
        from .sandbox import require_bwrap

        require_bwrap()  # refuse before changing anything
    result = Applied(profile)
    old = state.profile.settings if state.profile else {}
    for key, value in old.items():
        target = _target(engine, SETTINGS[key].owner, child)
        if key not in settings and target is not None:
            trait = SETTINGS[key].trait
            if getattr(target, trait) == value:  # not changed by a magic since
                _set(target, key, trait, _base_value(target, trait), result)
    for key, value in settings.items():
        target = _target(engine, SETTINGS[key].owner, child)
        if target is None:
            result.notes.append(
                f"`{key}` is ignored here: code runs in this kernel, not in a child kernel."
            )
            continue
        _set(target, key, SETTINGS[key].trait, value, result)
    state.profile, state.selected_by, state.error = profile, selected_by, ""
    _compose_instructions(engine, state)
    engine._log(
        "profile",
        name=profile.name if profile else None,
        path=str(profile.path) if profile and profile.path else None,
        selected_by=selected_by,
        settings=settings,
    )
    return result


def _set(target: Any, key: str, trait: str, value: Any, result: Applied) -> None:
    old = getattr(target, trait)
    if old != value:
        setattr(target, trait, value)
        result.changes.append(Change(key, old, value))


def apply_startup(engine: Any, child: Any = None) -> str:
    """Apply the profile chosen by OI_PROFILE or ``c.Profile.name``; return its name ("" for
    none). Never raises: a profile that fails to load blocks instructions (through
    ``engine.preflight``) until the user fixes it, picks another or clears it."""
    env = os.environ.get(PROFILE_ENV, "").strip()
    name = env or Profile(parent=engine).name.strip()
    if not name:
        return ""
    selected_by = PROFILE_ENV if env else "c.Profile.name"
    state = _state(engine, child)
    try:
        apply(engine, load_profile(name), child=child, selected_by=selected_by)
    except Exception as exc:  # any failure must block turns, not kill the kernel
        state.error = (
            f"The profile {name!r} (chosen by {selected_by}) could not be applied, so no "
            f"instruction runs until this is fixed:\n{exc}\nFix it and run `%profile {name}`, "
            "choose another with `%profile NAME`, or go on without one: `%profile --clear`."
        )
        engine.log.error("%s", state.error)
    checks = getattr(engine, "preflight", None)
    if checks is not None:
        checks.append(lambda: _check_startup(state))
    return name


def active_profile(engine: Any) -> LoadedProfile | None:
    """The profile applied to ``engine`` (None when there is none)."""
    state = _states.get(engine)
    return state.profile if state else None


def _check_startup(state: _State) -> None:
    if state.error:
        raise ProfileError(state.error)


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
    if target.trait_defaults(setting.trait) == value:
        envs = [e for e in setting.env if os.environ.get(e, "").strip()]
        return f"env {', '.join(envs)}" if envs else "default"
    return "magic"


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
    rows = [f"| `{k}` | {_show(v)} | {src} |" for k, v, src in provenance(engine, child)]
    rows += [f"| instructions | {_show(text)} | {src} |" for src, text in instruction_parts(engine)]
    return (
        f"{head}\n\n| setting | value | from |\n|---|---|---|\n" + "\n".join(rows) + "\n\n"
        "Precedence, lowest first: default < env < config < profile < magic."
    )


def _show(value: Any) -> str:
    if isinstance(value, str):
        text = value.replace("\n", " ").replace("|", "\\|")
        text = text if len(text) <= 60 else text[:57] + "..."
        return f"`{text}`" if text else "(empty)"
    if isinstance(value, list):
        return ", ".join(value) or "(all)"
    if isinstance(value, bool):
        return "on" if value else "off"
    return f"{value:g}" if isinstance(value, float) else str(value)


# ----------------------------------------------------------------------------- commands
def profile_command(engine: Any, arg: str, child: Any = None, selected_by: str = "%profile") -> str:
    """``%profile [NAME | --list | --clear]`` for any front door; returns markdown to show."""
    arg = arg.strip()
    if not arg:
        return describe(engine, child)
    if arg == "--list":
        found = list_profiles()
        if not found:
            return "No profiles found."
        return "| profile | file |\n|---|---|\n" + "\n".join(
            f"| `{n}` | `{p}` |" for n, p in found.items()
        )
    if arg == "--clear":
        return _report(apply(engine, None, child=child, selected_by=selected_by), "Profile cleared")
    if arg.startswith("-"):
        raise ProfileError("Usage: %profile [NAME | --list | --clear]")
    profile = load_profile(arg)
    applied = apply(engine, profile, child=child, selected_by=selected_by)
    return _report(applied, f"Profile **{profile.name}** applied")


def _report(applied: Applied, head: str) -> str:
    if applied.changes:
        items = "; ".join(f"`{c.key}`: {_show(c.old)} → {_show(c.new)}" for c in applied.changes)
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
