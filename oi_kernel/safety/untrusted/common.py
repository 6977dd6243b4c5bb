"""What a source of outside text is, and how it is named (shared by the readers)."""

from __future__ import annotations

import re
from dataclasses import dataclass

Taint = dict[str, tuple["Source", ...]]  # variable name -> the sources its value came from


@dataclass(frozen=True)
class Source:
    """One place outside text came from. ``kind``: file, notebook, url, program, tool,
    clipboard, database or code (code the review could not read); ``name`` is empty when
    the code computes it (``detail`` then says how, e.g. the expression)."""

    kind: str
    name: str = ""
    detail: str = ""

    @property
    def label(self) -> str:
        """Short, for the session log: ``notes.txt``, ``https://x/y``, ``srv › tool``."""
        if self.name:
            return self.name
        return {"file": "a file whose name is computed",
                "url": "an address that is computed",
                "program": "a command that is computed",
                "code": "code the review could not read"}.get(self.kind, self.kind) + (
            f" ({self.detail})" if self.detail else "")

    def phrase(self) -> str:
        """What came in, in words: "the text of notes.txt", "the result of the MCP tool
        srv › tool"."""
        label = self.label
        return {
            "file": f"the text of {label}",
            "notebook": f"the outputs of the notebook {label}",
            "url": f"the response from {label}",
            "program": f"the output of {label if not self.name else '`' + label + '`'}",
            "tool": f"the result of the MCP tool {label}",
            "clipboard": "the text of the clipboard",
            "database": f"the rows of the database {label}" if self.name
            else "the rows of a database",
            "code": f"the output of {label}",
        }.get(self.kind, f"the text of {label}")

    @property
    def verb(self) -> str:
        return {"url": "fetched", "program": "run", "tool": "called", "code": "run"}.get(
            self.kind, "read")


UNREADABLE = Source("code", "", "")

URL = re.compile(r"^(?:https?|ftp|s3|gs|wss?)://\S+$", re.IGNORECASE)


def file_or_url(text: str, kind: str) -> Source:
    if URL.match(text):
        return Source("url", text)
    if text.endswith(".ipynb"):
        return Source("notebook", text)
    return Source(kind if kind != "url" else "file", text)


def unique(sources: list[Source] | tuple[Source, ...]) -> list[Source]:
    return list(dict.fromkeys(sources))

