"""Who made a decision: a person's name, from what the frontend says, else the Hub, else the OS.

A card click and a stdin answer carry the frontend's ``username`` in their message header.
That name is what the client claims, not an authenticated identity: jupyter_server passes
message headers through unchanged, and JupyterLab 4 sends ``""`` there (its kernel
connections are made without a username). Ordinary jupyter_client sessions send the OS
user or the placeholder ``username``. A missing or meaningless name falls back to
``JUPYTERHUB_USER`` (the Hub user of a single-user server), then to the OS user.
"""

from __future__ import annotations

import functools
import getpass
import os
from collections.abc import Mapping
from typing import Any

# Not a person: empty, jupyter_client's and other clients' placeholders, and the markers a
# Decision's ``by`` already uses for decisions nobody clicked (a header claiming "auto"
# must not make a click look like an automatic run).
GENERIC = frozenset({"", "username", "anonymous", "user", "unknown", "nobody", "none", "null",
                     "auto", "replay", "policy", "interrupt"})
MAX_NAME = 64
FALLBACK = "user"  # nothing at all is known (no Hub, no OS user)


def clean(name: Any) -> str:
    """``name`` as a person's name, or "" when it names nobody: printable characters only
    (controls and invisible formatting characters are dropped), at most ``MAX_NAME``."""
    if not isinstance(name, str):
        return ""
    kept = "".join(ch for ch in name.strip() if ch.isprintable() and not _invisible(ch))
    kept = kept[:MAX_NAME].strip()
    return "" if kept.casefold() in GENERIC else kept


def _invisible(ch: str) -> bool:
    code = ord(ch)
    return (0x200B <= code <= 0x200F or 0x202A <= code <= 0x202E or 0x2060 <= code <= 0x206F
            or code == 0xFEFF)


def person(claimed: Any = None, env: Mapping[str, str] | None = None) -> str:
    """The name of whoever acted: ``claimed`` (the message header's username) when it names
    someone, else ``JUPYTERHUB_USER``, else the OS user."""
    env = os.environ if env is None else env
    for name in (claimed, env.get("JUPYTERHUB_USER")):
        if found := clean(name):
            return found
    try:
        return clean(_os_user()) or FALLBACK
    except Exception:  # no user name in the environment nor in the password database
        return FALLBACK


def _os_user() -> str:
    """``getpass.getuser()``, reading the password database once: the kernel asks on every
    request (``from_message``), and each lookup opened and parsed ``/etc/passwd``."""
    for name in ("LOGNAME", "USER", "LNAME", "USERNAME"):  # getuser's order
        if user := os.environ.get(name):
            return user
    return _account_name(os.getuid()) if hasattr(os, "getuid") else getpass.getuser()


@functools.lru_cache(maxsize=4)
def _account_name(uid: int) -> str:
    import pwd

    return pwd.getpwuid(uid).pw_name


def from_message(msg: Mapping[str, Any] | None) -> str:
    """The person who sent a Jupyter message (its header's ``username``, with the fallbacks)."""
    header = (msg or {}).get("header") or {}
    return person(header.get("username") if isinstance(header, Mapping) else None)


def same_person(a: str, b: str) -> bool:
    """Whether two names are one person (case does not make a second person)."""
    return bool(a) and a.strip().casefold() == b.strip().casefold()
