"""The ACP sessions kept between agent processes: ``session/load``, ``session/resume``,
``session/fork`` and ``session/list`` read them.

After each prompt a session's conversation is written to ``<log dir>/acp-sessions/<id>.json``
(the ``%save`` format, secrets redacted) with an ``acp`` entry: the session's cwd and its
title (the first instruction). Listing reads only that entry and the file's time; a file
that cannot be read is left out of the list, and loading it says why.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

SESSION_ID = re.compile(r"^acp-[0-9a-f]{16}$")
TITLE_CHARS = 80
PAGE = 50  # sessions per session/list page


@dataclass
class Kept:
    """What the list shows of one kept session."""

    session_id: str
    cwd: str
    title: str
    updated_at: str  # ISO 8601, UTC
    mtime: float


def directory() -> Path:
    from oi_kernel.record.session_log import default_log_dir

    return default_log_dir() / "acp-sessions"


def path_of(session_id: str) -> Path:
    """Where the session ``session_id`` is kept (``directory()`` for "")."""
    return directory() / (f"{session_id}.json" if session_id else "")


def is_kept(session_id: str) -> bool:
    return bool(SESSION_ID.match(session_id or "")) and path_of(session_id).is_file()


def title_of(messages: list[dict[str, Any]], turn_starts: list[int]) -> str:
    """The first instruction's first line, shortened: what a session list shows."""
    for start in turn_starts[:1]:
        content = messages[start].get("content") if start < len(messages) else ""
        line = (content if isinstance(content, str) else "").strip().split("\n", 1)[0]
        return line if len(line) <= TITLE_CHARS else line[:TITLE_CHARS - 1].rstrip() + "…"
    return ""


def write(session_id: str, document: dict[str, Any], cwd: str) -> None:
    """Keep a conversation document (``record.saved.to_document``) for ``session_id``;
    OSError when the file cannot be written."""
    document = {**document, "acp": {
        "cwd": cwd, "title": title_of(document.get("messages") or [],
                                      document.get("turn_starts") or [])}}
    target = path_of(session_id)
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text(json.dumps(document), encoding="utf-8")
    os.replace(tmp, target)


def read_document(session_id: str) -> dict[str, Any]:
    """The kept document of ``session_id``; OIError saying what is wrong."""
    from oi_kernel.errors import OIError

    target = path_of(session_id)
    try:
        doc = json.loads(target.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise OIError(f"The saved session {target} cannot be read ({exc}): start a new "
                      "session with session/new.") from None
    if not isinstance(doc, dict):
        raise OIError(f"The saved session {target} is not a conversation: start a new "
                      "session with session/new.")
    return doc


def kept(cwd: str | None = None) -> list[Kept]:
    """The kept sessions (of ``cwd`` only, when given), the most recent first."""
    found: list[Kept] = []
    for path in directory().glob("acp-*.json") if directory().is_dir() else []:
        if not SESSION_ID.match(path.stem):
            continue
        try:
            entry = json.loads(path.read_text(encoding="utf-8")).get("acp") or {}
            mtime = path.stat().st_mtime
        except (OSError, UnicodeDecodeError, ValueError, AttributeError):
            continue  # unreadable: session/load of it says why
        where = str(entry.get("cwd") or "")
        if not where or cwd is not None and os.path.normpath(where) != os.path.normpath(cwd):
            continue
        updated = datetime.fromtimestamp(mtime, timezone.utc).isoformat(timespec="seconds")
        found.append(Kept(path.stem, where, str(entry.get("title") or ""), updated, mtime))
    return sorted(found, key=lambda k: (-k.mtime, k.session_id))


def page(items: list[Kept], cursor: str | None) -> tuple[list[Kept], str | None]:
    """One page of ``items`` from ``cursor`` (an offset from an earlier page) and the next
    page's cursor; ValueError for a cursor this agent did not make."""
    start = 0
    if cursor:
        if not cursor.isdigit():
            raise ValueError(cursor)
        start = int(cursor)
    end = start + PAGE
    return items[start:end], (str(end) if end < len(items) else None)
