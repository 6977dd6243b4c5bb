"""What an MCP tool tells the model, made visible and checked.

A tool's description and input schema reach the model as text the user never wrote: a
server can hide instructions in them ("tool poisoning": invisible characters, text aimed
at the model such as "ignore previous instructions" or "<IMPORTANT>"), or change them
after the user started trusting the tool (a "rug pull"). This module is pure: the
*version* of a tool (what is hashed and pinned), the findings of a description, the
text a person is shown (invisible characters as visible markers) and the difference
between two versions as a unified diff.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from oi_kernel.safety.visible import describe, hidden_in, visible


def hidden_characters(text: str) -> list[str]:
    """The distinct invisible/control characters of ``text`` as ``U+200B ZERO WIDTH SPACE``."""
    seen: dict[str, None] = {}
    for line in text.split("\n"):
        for col, _kind in hidden_in(line):
            seen.setdefault(describe(line[col]), None)
    return list(seen)


# Text aimed at the model rather than at a person who reads what the tool does. A
# heuristic (the list says what it catches, not everything an attacker can write).
_INSTRUCTIONS = [
    (re.compile(r"\b(ignore|disregard|forget|override)\b[^.\n]{0,40}\b(previous|prior|above|"
                r"earlier|other|all|system|user'?s?)\b[^.\n]{0,30}\b(instructions?|prompts?|"
                r"rules|messages?|requests?|tools?)\b", re.I), "tells the model to ignore its instructions"),
    (re.compile(r"\bignore (the|this) user\b", re.I), "tells the model to ignore the user"),
    (re.compile(r"\b(do not|don'?t|never|without)\b[^.\n]{0,20}\b(tell|telling|inform|informing|"
                r"mention|mentioning|reveal|revealing|show|showing|notify|notifying|alert|"
                r"alerting|ask|asking)\b[^.\n]{0,20}\b(the )?user\b", re.I),
     "tells the model to hide something from the user"),
    (re.compile(r"<\s*/?\s*(important|system|instructions?|secret|hidden|admin|override)\b[^>]*>",
                re.I), "carries a tag aimed at the model (<IMPORTANT>, <SYSTEM>, ...)"),
    (re.compile(r"\b(system prompt|you are now|new instructions|before using this tool|"
                r"before (calling|using) any (other )?tool)\b", re.I),
     "addresses the model with instructions"),
    (re.compile(r"(~/\.ssh|\bid_rsa\b|\.aws/credentials|\bmcp\.json\b|\.netrc\b|/etc/passwd|"
                r"\bprivate key\b|\bsecret keys?\b)", re.I),
     "mentions secrets or credential files"),
]


def findings(text: str) -> list[str]:
    """Why ``text`` (a description, or the strings of a schema) looks poisoned; [] when
    nothing was found."""
    out = []
    hidden = hidden_characters(text)
    if hidden:
        shown = ", ".join(hidden[:4]) + (" ..." if len(hidden) > 4 else "")
        out.append(f"contains invisible or control characters ({shown})")
    for pattern, why in _INSTRUCTIONS:
        match = pattern.search(text)
        if match and why not in out:
            out.append(f"{why}: \u201c{visible(match.group(0))[:80]}\u201d")
    return out


def _strings(value: Any) -> list[str]:
    """Every string inside a JSON value (keys too): a schema's descriptions reach the model."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (str(k), *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


@dataclass
class ToolVersion:
    """What a server said about one tool: the pinned and compared part."""

    description: str  # the server's whole description
    schema: dict[str, Any] = field(default_factory=dict)  # its input schema, as sent
    annotations: dict[str, Any] = field(default_factory=dict)
    title: str = ""

    def canonical(self) -> dict[str, Any]:
        return {"title": self.title, "description": self.description, "schema": self.schema,
                "annotations": self.annotations}

    @cached_property
    def sha256(self) -> str:  # (a version is never changed once made)
        text = json.dumps(self.canonical(), sort_keys=True, ensure_ascii=False,
                          separators=(",", ":"), default=str)
        return hashlib.sha256(text.encode()).hexdigest()

    def findings(self) -> list[str]:
        """What looks poisoned in the description, the title or the schema's text."""
        found = findings(self.description) + findings(self.title)
        schema_text = "\n".join(_strings(self.schema))
        found += [f"its input schema {f}" for f in findings(schema_text)]
        return list(dict.fromkeys(found))

    def text(self) -> str:
        """The version as lines a person reads (and a diff compares), invisible characters
        marked."""
        lines = []
        if self.title:
            lines.append(f"title: {visible(self.title)}")
        lines.append("description:")
        lines += ["  " + line for line in visible(self.description).splitlines() or [""]]
        lines.append("input schema:")
        lines += ["  " + line for line in visible(json.dumps(
            self.schema, indent=1, sort_keys=True, ensure_ascii=False, default=str)).splitlines()]
        if self.annotations:
            lines.append("annotations: " + visible(json.dumps(
                self.annotations, sort_keys=True, ensure_ascii=False, default=str)))
        return "\n".join(lines)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ToolVersion:
        return cls(description=str(data.get("description", "")),
                   schema=data.get("schema") if isinstance(data.get("schema"), dict) else {},
                   annotations=(data.get("annotations")
                                if isinstance(data.get("annotations"), dict) else {}),
                   title=str(data.get("title", "") or ""))


def version_of(tool: Any) -> ToolVersion:
    """The version of an SDK ``Tool`` object."""
    notes = getattr(tool, "annotations", None)
    if notes is not None and hasattr(notes, "model_dump"):
        notes = notes.model_dump(exclude_none=True, by_alias=True)
    schema = getattr(tool, "input_schema", None)
    return ToolVersion(description=str(getattr(tool, "description", "") or ""),
                       schema=schema if isinstance(schema, dict) else {},
                       annotations=notes if isinstance(notes, dict) else {},
                       title=str(getattr(tool, "title", "") or ""))


def diff(old: ToolVersion, new: ToolVersion, old_label: str, new_label: str = "now",
         limit: int = 40) -> str:
    """A unified diff of two versions (invisible characters marked), at most ``limit``
    lines."""
    lines = list(difflib.unified_diff(old.text().splitlines(), new.text().splitlines(),
                                      old_label, new_label, n=1, lineterm=""))
    if len(lines) > limit:
        lines = lines[:limit] + [f"... ({len(lines) - limit} more lines of difference)"]
    return "\n".join(lines)
