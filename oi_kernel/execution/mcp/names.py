"""Tool names every provider accepts, and how many tools fit in a request.

OpenAI and Anthropic accept ``^[a-zA-Z0-9_-]{1,64}$``; Gemini wants a letter or ``_``
first and at most 63-64 characters; litellm passes names through unchanged. So a tool is
offered as ``server__tool`` cleaned to ``^[a-zA-Z][a-zA-Z0-9_-]{0,62}$``, with a short
hash when that is too long or taken, and a table maps the name back (a name is never
parsed). Names are assigned in a stable order so they stay the same between requests.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

VALID_NAME = re.compile(r"^[a-zA-Z][a-zA-Z0-9_-]{0,62}$")
MAX_NAME = 63
_BAD = re.compile(r"[^a-zA-Z0-9_-]+")


def clean(text: str) -> str:
    out = _BAD.sub("_", text)
    out = re.sub(r"_{2,}", "_", out).strip("_-")
    return out or "x"


def tool_name(server: str, tool: str, taken: set[str]) -> str:
    """A valid name for ``tool`` of ``server``, not in ``taken`` (which it is added to)."""
    name = f"{clean(server)[:20]}__{clean(tool)}"
    if not name[0].isalpha():
        name = "m" + name
    if len(name) > MAX_NAME or name in taken:
        digest = hashlib.sha1(f"{server}\0{tool}".encode()).hexdigest()
        name = f"{name[:56]}_{digest[:6]}"
        n = 6
        while name in taken:  # a collision of hashes too: lengthen the hash
            n += 1
            name = f"{name[:MAX_NAME - n - 1]}_{digest[:n]}"
    taken.add(name)
    return name


def trimmed_schema(schema: Any) -> dict[str, Any]:
    """The input schema as sent: a JSON object schema without ``$schema``/``title``."""
    if not isinstance(schema, dict):
        return {"type": "object", "properties": {}}
    out = {k: v for k, v in schema.items() if k not in ("$schema", "title")}
    out.setdefault("type", "object")
    if out.get("type") == "object":
        out.setdefault("properties", {})
    return out


def short_description(text: str | None, limit: int = 600) -> str:
    """The description's first paragraph, cut to ``limit`` characters."""
    text = (text or "").strip()
    first = text.split("\n\n", 1)[0].strip()
    return first if len(first) <= limit else first[: limit - 1].rstrip() + "…"


def estimate_tokens(tool: dict[str, Any]) -> int:
    """About how many tokens a tool definition costs (compact JSON, ~3.5 characters a
    token: on the high side of what providers count, so the budget is kept)."""
    return int(len(json.dumps(tool, separators=(",", ":"), ensure_ascii=False)) / 3.5) + 8
