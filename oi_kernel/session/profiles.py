"""Profiles: named YAML files of settings for one kind of work.

A profile sets the model, sampling temperature, approval policy, limits, the
languages offered to the model, the sandbox, and instructions appended to the
system prompt (or, riskier, a ``system_message`` that replaces it). It is data,
never code: read with ``yaml.safe_load`` from a local file (never a URL),
checked against ``SETTINGS``; ``profile_state`` applies it to an engine and its child.

Where ``NAME`` is looked for (first match wins):

1. ``.oi/profiles/NAME.yaml`` in the working directory, then in each parent up
   to the git root (the directory holding ``.git``) or the file-system root;
2. ``oi_profiles/NAME.yaml`` in each Jupyter config directory (``jupyter --paths``);
3. the profiles shipped in ``oi_kernel/data/profiles/``.

A setting's value comes from, lowest precedence first: its default, its
environment variable, the config file, the profile, a magic (``%model`` after
``%profile`` wins). ``describe()`` shows each effective setting and its source.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from traitlets import Unicode, default
from traitlets.config import Configurable

from oi_kernel.core.four_eyes import APPROVALS
from oi_kernel.errors import ConfigError

PROFILE_ENV = "OI_PROFILE"
PROJECT_DIR = Path(".oi") / "profiles"
CONFIG_SUBDIR = "oi_profiles"
BUILTIN_DIR = Path(__file__).parent.parent / "data" / "profiles"
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_MISSING = object()

Owner = Literal["engine", "llm", "child", "sandbox", "tools"]
Kind = Literal["str", "int", "number", "bool", "languages", "paths", "names"]


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
    attr: str = ""  # the trait's name when it is not the key

    @property
    def trait(self) -> str:
        return self.attr or self.key


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
            choices=APPROVALS,  # four-eyes, four-eyes-all: see core.four_eyes
        ),
        _setting("max_steps", "engine", "int", "OI_MAX_STEPS", minimum=1),
        _setting("step_timeout", "engine", "number", "OI_STEP_TIMEOUT", minimum=0),
        _setting("max_tokens_per_turn", "engine", "int", "OI_MAX_TOKENS", minimum=0),
        _setting("max_cost_per_turn", "engine", "number", "OI_MAX_COST", minimum=0),
        _setting("max_tokens_per_session", "engine", "int", "OI_MAX_SESSION_TOKENS", minimum=0),
        _setting("max_cost_per_session", "engine", "number", "OI_MAX_SESSION_COST", minimum=0),
        _setting("context_budget", "engine", "int", "OI_CONTEXT_BUDGET", minimum=0),
        _setting("languages", "engine", "languages"),
        _setting("known_safe", "engine", "names"),
        _setting("system_message", "engine", "str"),
        _setting("sandbox", "child", "bool", "OI_SANDBOX"),
        _setting("sandbox_read_paths", "sandbox", "paths", "OI_SANDBOX_READ", attr="read_paths"),
        _setting("sandbox_write_paths", "sandbox", "paths", "OI_SANDBOX_WRITE",
                 attr="write_paths"),
        _setting("mcp_config", "tools", "str"),
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
    "paths": "a list of paths",
    "names": "a list of names, e.g. [\"mylib.*\", \".summarise\"]",
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
    ).tag(env=PROFILE_ENV)

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
        "paths": isinstance(value, list) and all(isinstance(v, str) and v for v in value),
        "names": isinstance(value, list) and all(isinstance(v, str) and v for v in value),
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
    from oi_kernel.languages import LANGUAGES, normalize_language

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
