"""Keep secrets out of LLM context, logs and exported notebooks.

Two kinds of text are replaced by ``[REDACTED]``: the exact values of secret
environment variables (collected by ``secret_values_from_env``), and strings
shaped like well-known API keys, bearer tokens and private-key blocks. Plain
hex digests (sha256 of code, git commit ids) are left alone on purpose: the
session log stores them. Pure: stdlib only, no I/O.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import lru_cache
from typing import Any, Protocol

REDACTED = "[REDACTED]"
MIN_SECRET_LENGTH = 8

# A name part such as ``KEY`` or ``TOKEN`` must be a whole ``_``-separated word,
# so OPENAI_API_KEY matches while TOKENIZERS_PARALLELISM and KEYBOARD do not.
_SECRET_NAME = re.compile(
    r"(?:^|_)(?:KEY|APIKEY|TOKEN|PAT|PASSPHRASE|CREDENTIALS?)(?:$|_)|SECRET|PASSWORD|PASSWD"
)

# Key-shaped strings. Each needs a prefix that ordinary words and hex digests
# do not have; the lookbehinds keep them from starting inside a longer word.
_KEY_PATTERNS = (
    # OpenAI / Anthropic style: sk-..., sk-proj-..., sk-ant-...; a digit is
    # required so that words like "sk-learn-is-a-library" survive.
    r"(?<![\w-])sk-(?=[\w-]*\d)[\w-]{20,}",
    r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Za-z0-9])",
    r"(?<![A-Za-z0-9])gh[pousr]_[A-Za-z0-9]{30,}",
    r"(?<![A-Za-z0-9])github_pat_\w{22,}",
    r"(?<![A-Za-z0-9])xox[abposr]-[A-Za-z0-9-]{10,}",
    r"(?<![A-Za-z0-9])AIza[0-9A-Za-z_-]{35}",
    r"(?<![A-Za-z0-9])hf_[A-Za-z0-9]{30,}",
    r"(?<![A-Za-z0-9])[sr]k_live_[A-Za-z0-9]{20,}",
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)",
)
# The "Bearer " prefix is kept so the redacted text still reads naturally.
_BEARER = r"(?P<bearer>\b[Bb]earer\s+)(?=[\w.~+/=-]*\d)[\w.~+/=-]{8,}"


def is_secret_name(name: str) -> bool:
    """True for variable names like ``OPENAI_API_KEY``, ``GITHUB_TOKEN``, ``DB_PASSWORD``."""
    return bool(_SECRET_NAME.search(name.upper()))


def secret_values_from_env(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of secret-named variables in ``environ`` (default ``os.environ``), longest first.

    Values shorter than ``MIN_SECRET_LENGTH`` are ignored: replacing them
    everywhere would redact ordinary words.
    """
    if environ is None:
        return list(per_environ("secret_values", lambda: secret_values_from_env(os.environ)))
    values = {v for k, v in environ.items() if is_secret_name(k) and len(v) >= MIN_SECRET_LENGTH}
    return sorted(values, key=lambda v: (-len(v), v))


_by_environ: dict[str, tuple[Any, Any]] = {}


def per_environ(name: str, compute: Callable[[], Any]) -> Any:
    """``compute()``, computed again only when ``os.environ`` has changed since the last call
    under this ``name``. Scanning the environment in Python costs ~0.1 ms a time, on every
    log write of every cell (benchmarks/overhead.py); copying and comparing CPython's
    underlying dict is done in C."""
    data = getattr(os.environ, "_data", None)
    current = data if isinstance(data, dict) else tuple(os.environ.items())
    hit = _by_environ.get(name)
    if hit is not None and hit[0] == current:
        return hit[1]
    value = compute()
    _by_environ[name] = (dict(current) if isinstance(current, dict) else current, value)
    return value


# Every key shape above contains one of these literally: text holding none of them (and none of
# the secret values) cannot match, so it skips the regex (most output, and by far the fastest
# check for megabytes of it). Keep in step with _KEY_PATTERNS and _BEARER.
_NEEDLES = ("sk-", "AKIA", "ASIA", "gh", "github_pat_", "xox", "AIza", "hf_", "k_live_",
            "-----BEGIN", "earer")


class _Redactor:
    def __init__(self, secrets: tuple[str, ...]) -> None:
        parts = [re.escape(s) for s in secrets]  # one pattern: the secrets, longest first
        parts.extend(_KEY_PATTERNS)  # and every key shape
        parts.append(_BEARER)
        self.pattern = re.compile("|".join(parts))
        self.needles = (*_NEEDLES, *secrets)

    def sub(self, text: str) -> str:
        if not any(needle in text for needle in self.needles):
            return text
        return self.pattern.sub(_replacement, text)


@lru_cache(maxsize=32)
def _compile(secrets: tuple[str, ...]) -> _Redactor:
    return _Redactor(secrets)


def _pattern(secrets: Iterable[str]) -> _Redactor:
    unique = {s for s in secrets if s}
    return _compile(tuple(sorted(unique, key=lambda s: (-len(s), s))))


def _replacement(match: re.Match[str]) -> str:
    prefix = match.group("bearer")
    return f"{prefix}{REDACTED}" if prefix else REDACTED


def _apply(redactor: _Redactor, text: str) -> str:
    return redactor.sub(text)


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every secret value and key-shaped string replaced by ``[REDACTED]``."""
    return _apply(_pattern(secrets), text)


def _redact_with(obj: Any, pattern: _Redactor) -> Any:
    if isinstance(obj, str):
        return _apply(pattern, obj)
    if isinstance(obj, dict):
        return {_redact_with(k, pattern): _redact_with(v, pattern) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_redact_with(v, pattern) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_redact_with(v, pattern) for v in obj)
    return obj


def redact_obj(obj: Any, secrets: Iterable[str] = ()) -> Any:
    """A copy of a JSON-like structure (dict, list, str, ...) with every string redacted."""
    return _redact_with(obj, _pattern(secrets))


class KeyHolder(Protocol):
    """What ``SecretSet`` asks of the model (``core.model.Model`` has it): its key values."""

    def secrets(self) -> list[str]: ...


class SecretSet:
    """The secret values of one session, the same for the LLM's context, the session log,
    saved conversations and exports: the model's ``api_key``, every ``*_API_KEY`` and
    every secret-named environment variable (``*_TOKEN``, ``*_PASSWORD``, ``*_SECRET``...).

    Read again on each use: the environment can change during a session (``%%oi`` code runs
    in the user's own process), and reading it costs microseconds."""

    def __init__(self, llm: KeyHolder | None = None, extra: Iterable[str] = ()) -> None:
        self.llm = llm
        self.extra = [v for v in extra if v]

    def values(self) -> list[str]:
        """Every secret value, longest first."""
        keys = self.llm.secrets() if self.llm is not None else []
        found = {*keys, *secret_values_from_env(), *self.extra}
        return sorted(found, key=lambda v: (-len(v), v))

    def __iter__(self) -> Iterator[str]:
        return iter(self.values())

    def redact(self, text: str) -> str:
        return redact(text, self.values())
