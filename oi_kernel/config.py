"""Settings that cannot kill the kernel: a bad value is reported and the default kept.

A kernel that raises while it starts is a dead kernel: the frontend shows "kernel
died" and nothing else. A mistyped value in ``oi_kernel_config.py``
(``c.Engine.max_steps = "ten"``) or in the environment (``OI_MAX_STEPS=abc``) must not
do that, nor be silently ignored. Here such a value is rejected with a warning that
quotes the setting's help text, the default is used, and the kernel shows the
warnings in the next cell it runs (they also go to the kernel's log).

Configurable classes derive from ``Remembered``, which routes their config through
``load_config_tolerantly`` and remembers where each value came from (the config, a keyword
argument, a profile, the administrator's policy, a session command: ``from_source``);
their environment variables (each trait's ``env`` tag) are read by the environment step
here (``apply_environment``, ``environment_value``) before their config, so the config, a
keyword argument and everything later override them and the source is exact (the kernel's
and the magic's own settings go through the same step). ``oi_kernel.session.resolved`` turns
that into the settings with their sources.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import fields, make_dataclass
from typing import Any

from traitlets import All, observe
from traitlets.config import Configurable

_warnings: list[str] = []
_lock = threading.Lock()
_log = logging.getLogger("oi_kernel.config")
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def warn(text: str) -> None:
    """Record a configuration problem for the user (shown once by the kernel)."""
    _log.warning("%s", text)
    with _lock:
        if text not in _warnings:
            _warnings.append(text)


def take_warnings() -> list[str]:
    """The problems recorded since the last call (each is returned once)."""
    with _lock:
        taken = list(_warnings)
        _warnings.clear()
    return taken


def _explain(help_text: str) -> str:
    help_text = " ".join(help_text.split())
    return f"\n  ({help_text})" if help_text else ""


def _bad_env(name: str, raw: str, expected: str, default: Any, help_text: str) -> None:
    using = "ignored" if default in ("", None) else f"using {default!r}"
    warn(f"{name}={raw!r} is not {expected}; {using}.{_explain(help_text)}")


def env_int(name: str, default: int, *, minimum: int | None = None, help: str = "") -> int:
    """A whole number from ``$name``; ``default`` (with a warning) when it is not one."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        _bad_env(name, raw, "a whole number", default, help)
        return default
    if minimum is not None and value < minimum:
        _bad_env(name, raw, f"at least {minimum}", default, help)
        return default
    return value


def env_float(name: str, default: float, *, minimum: float | None = None, help: str = "") -> float:
    """A number from ``$name``; ``default`` (with a warning) when it is not one."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        _bad_env(name, raw, "a number", default, help)
        return default
    if value != value or (minimum is not None and value < minimum):  # NaN, or too small
        _bad_env(name, raw, f"a number of at least {minimum:g}", default, help)
        return default
    return value


def env_choice(name: str, choices: Iterable[str], default: str, *, help: str = "") -> str:
    """One of ``choices`` from ``$name`` (case-insensitive); else ``default`` with a warning."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    options = list(choices)
    if raw.lower() in options:
        return raw.lower()
    _bad_env(name, raw, "one of " + "/".join(options), default, help)
    return default


def env_flag(name: str, *, help: str = "") -> bool | None:
    """True/False from ``$name`` (1/0, true/false, yes/no, on/off); None when unset or bad
    (bad values are reported)."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    if raw.lower() in _TRUE:
        return True
    if raw.lower() in _FALSE:
        return False
    warn(f"{name}={raw!r} is not on/off (1/0, true/false, yes/no); ignored.{_explain(help)}")
    return None


Loader = Callable[[Any, Any, Any], None]


def load_config_tolerantly(
    obj: Any, load: Loader, cfg: Any, section_names: Any = None, traits: Any = None
) -> None:
    """``Configurable._load_config`` that rejects bad values one by one instead of raising.

    ``load`` is the base class's ``_load_config``. When it fails, every value is loaded
    on its own; one that fails its trait's validation (or an observer's check) is
    reported with the trait's help and the previous value is put back.
    """
    before = dict(obj._trait_values)
    sources = dict(getattr(obj, "setting_sources", {}))
    try:
        load(cfg, section_names, traits)
        return
    except Exception:  # some value is bad: find which, keep the good ones
        pass
    from traitlets.config import Config

    section = type(obj).__name__
    values = list(obj._find_my_config(cfg).items())
    for name, _ in values:  # undo what the failed load left behind
        _restore(obj, name, before.get(name, _MISSING))
    for name, value in values:
        try:
            load(Config({section: {name: value}}), section_names, traits)
        except Exception as exc:
            _restore(obj, name, before.get(name, _MISSING))
            _restore_source(obj, name, sources.get(name))
            trait = obj.traits().get(name)
            help_text = getattr(trait, "help", "") if trait is not None else ""
            now = getattr(obj, name, None)
            warn(
                f"Ignored c.{section}.{name} = {value!r} from the configuration: "
                f"{_reason(exc)} Using {now!r}.{_explain(help_text)}"
            )


_MISSING = object()


def _restore(obj: Any, name: str, before: Any) -> None:
    try:
        if before is _MISSING:
            obj._trait_values.pop(name, None)
        else:
            obj.set_trait(name, before)
    except Exception:  # the old value was valid; if putting it back fails, the default stays
        obj._trait_values.pop(name, None)


def _restore_source(obj: Any, name: str, source: str | None) -> None:
    """The source of the value put back (the environment's, say), not "config"."""
    recorded = getattr(obj, "setting_sources", None)
    if recorded is not None:
        if source is None:
            recorded.pop(name, None)
        else:
            recorded[name] = source


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if text.endswith(".") else text + "."


# ----------------------------------------------------------------------------- sources
CONFIG = "config"  # shown as c.Section.name by oi_kernel.session.resolved
FORGET = ""  # from_source(FORGET): the value goes back to config / environment / default
_source: ContextVar[str | None] = ContextVar("oi_setting_source", default=None)


@contextmanager
def from_source(label: str) -> Iterator[None]:
    """Values set inside this block are remembered as coming from ``label`` ("profile
    data_analyst", "%approval", the policy file...)."""
    token = _source.set(label)
    try:
        yield
    finally:
        _source.reset(token)


def check_floor(obj: Any, name: str, value: Any) -> Any:
    """``value`` for ``obj.name``, unless the administrator's policy refuses it: then its
    ``Refusal`` (a ``TraitError``: the setting keeps its value). The classes' own
    ``@validate`` methods call this for the settings a policy may guard."""
    floors = getattr(obj, "floors", None)
    if floors is not None and (refusal := floors.refusal(name, value)) is not None:
        raise refusal
    return value


# ------------------------------------------------------------- the environment step
def apply_environment(obj: Any) -> None:
    """The environment step for ``obj``: each configurable setting whose variable is set
    (``environment_value``) takes its value, remembered as coming from that variable. A value
    the setting refuses (its ``@validate``) is reported with the variable and the reason, and
    the default stays. Call it before the config is loaded: everything later overrides it."""
    for name in obj.trait_names(config=True):
        if (found := environment_value(obj, name)) is not None:
            _set_from(obj, name, *found)


def _set_from(obj: Any, name: str, value: Any, env: str) -> None:
    with from_source(env):
        try:
            obj.set_trait(name, value)
        except Exception as exc:  # the setting's own check refused it (a TraitError)
            raw = os.environ.get(env, "").strip()
            warn(f"{env}={raw!r} is refused: {_reason(exc)} It is ignored: fix or unset "
                 f"{env}.{_explain(obj.traits()[name].help)}")
            return
    _restore_source(obj, name, env)  # (also when it equals the default: no change event)


def environment_value(obj: Any, name: str) -> tuple[Any, str] | None:
    """The value of setting ``name`` from its environment variable (the trait's ``env``
    tag; ``env_also``: a flag that means ``env_also_value``; ``env_fallbacks``: variables read,
    in order, when ``env`` is unset) and that variable's name; None when it is unset or bad (a
    bad one is reported with how to fix it: ``warn``). How it is read follows the trait's
    type (text is stripped; Bool: 1/0, true/false, yes/no, on/off), or its ``env_kind`` tag
    ("number": at least 0; "text": as given; "patterns": comma-separated; "paths": separated
    by ``os.pathsep``; "elsewhere": read by its user beside the setting, not as its value)."""
    trait = obj.traits()[name]
    env, meta = trait.metadata.get("env"), trait.metadata
    if meta.get("env_kind") == "elsewhere":
        return None
    for variable in (env, *meta.get("env_fallbacks", ())) if env else ():
        raw = os.environ.get(variable)
        if raw is not None and (raw.strip() or meta.get("env_kind") == "text"):
            value = _read(trait, variable, meta.get("env_kind") or type(trait).__name__)
            return None if value is _MISSING else (value, variable)
    also = meta.get("env_also")
    if also and env_flag(also, help=trait.help):
        return meta["env_also_value"], also
    return None


def _read(trait: Any, env: str, kind: str) -> Any:
    raw, default, help_text = os.environ[env], trait.default(), trait.help
    stripped = raw.strip()
    if kind == "text":
        return raw
    if kind in ("patterns", "paths"):
        separator = "," if kind == "patterns" else os.pathsep
        return [p.strip() for p in raw.split(separator) if p.strip()]
    if kind == "Unicode":
        return stripped
    if kind == "Bool":
        flag = env_flag(env, help=help_text)
        return _MISSING if flag is None else flag
    if kind == "Enum":
        if stripped.lower() in trait.values:
            return stripped.lower()
        _bad_env(env, stripped, "one of " + "/".join(trait.values), default, help_text)
        return _MISSING
    if kind == "number":
        value = _number(env, stripped, float, 0, default or 0,  # ("using 0", not "0.0")
                        "A number of at least 0 (0 = off).")
        return value if value is _MISSING else type(default)(value)
    return _number(env, stripped, float if kind == "Float" else int, _minimum(trait), default,
                   help_text)


def _minimum(trait: Any) -> Any:
    """The least value the environment may give (the trait's ``env_min`` tag)."""
    return trait.metadata.get("env_min")


def _number(env: str, raw: str, kind: type, minimum: Any, default: Any, help_text: str) -> Any:
    whole = kind is int
    try:
        value = kind(raw)
    except ValueError:
        _bad_env(env, raw, "a whole number" if whole else "a number", default, help_text)
        return _MISSING
    if value != value or (minimum is not None and value < minimum):  # NaN, or too small
        expected = f"at least {minimum}" if whole else f"a number of at least {minimum:g}"
        _bad_env(env, raw, expected, default, help_text)
        return _MISSING
    return value


def frozen_class(configurable: type, name: str, module: str, doc: str) -> type:
    """A frozen dataclass with one field per configurable trait of ``configurable`` (the
    trait is the one declaration): the class of what one turn reads (``freeze_into``)."""
    made = make_dataclass(name, [(n, Any) for n in sorted(configurable.class_traits(config=True))],
                          frozen=True, slots=True)
    made.__module__, made.__doc__ = module, doc
    return made


def freeze_into(kind: type, obj: Any) -> Any:
    """``obj``'s settings now, as a ``kind`` made by ``frozen_class`` (lists as tuples)."""
    values = {f.name: getattr(obj, f.name) for f in fields(kind)}
    return kind(**{k: tuple(v) if isinstance(v, list) else v for k, v in values.items()})


class Remembered(Configurable):
    """A configurable whose bad config values are reported, not fatal, and which remembers
    where each setting's value came from (``setting_sources``: trait name -> source; a trait
    missing there has its environment or default value). ``floors``: the administrator's
    policy for this session (``session.policy_rules.Floors``), which ``check_floor`` asks."""

    floors: Any = None

    def __init__(self, **kwargs: Any) -> None:
        self.setting_sources: dict[str, str] = {}
        apply_environment(self)  # lowest but the default: config and the rest override
        current = _source.get()
        with from_source("keyword argument" if current is None else current):
            super().__init__(**kwargs)

    def _load_config(self, cfg: Any, section_names: Any = None, traits: Any = None) -> None:
        """A bad value in the config is reported and ignored (``load_config_tolerantly``)."""
        with from_source(CONFIG):
            load_config_tolerantly(self, super()._load_config, cfg, section_names, traits)

    @observe(All)
    def _remember_source(self, change: Any) -> None:
        name = change["name"]
        if not self.trait_metadata(name, "config"):
            return
        source = _source.get()
        sources = self.__dict__.setdefault("setting_sources", {})
        if source == FORGET:
            sources.pop(name, None)
        else:
            sources[name] = "this session" if source is None else source
