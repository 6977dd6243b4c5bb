"""Which languages a step may use, and how each runs inside an IPython kernel.

Every language runs through the child IPython kernel by a cell magic, so all
steps share one working directory, show as ordinary outputs and export as cells
that a plain ``python3`` kernel can run again. Pure: no I/O except ``shutil.which``.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass

_ALIASES = {
    "python": "python",
    "python3": "python",
    "py": "python",
    "ipython": "python",
    "shell": "shell",
    "bash": "shell",
    "sh": "shell",
    "zsh": "shell",
    "console": "shell",
    "terminal": "shell",
    "javascript": "javascript",
    "js": "javascript",
    "node": "javascript",
    "nodejs": "javascript",
    "r": "r",
    "html": "html",
    "markdown": "markdown",
    "md": "markdown",
}


@dataclass(frozen=True)
class Language:
    name: str
    magic: str  # the first line that makes IPython run the body in this language; "" for python
    program: str  # executable that must exist for it to be offered ("" = always)


LANGUAGES = {
    "python": Language("python", "", ""),
    "shell": Language("shell", "%%bash", "bash"),
    "javascript": Language("javascript", "%%script node", "node"),
    "r": Language("r", "%%script Rscript -", "Rscript"),
    "html": Language("html", "%%html", ""),
    "markdown": Language("markdown", "%%markdown", ""),
}


def normalize_language(name: str | None) -> str | None:
    """Map a fence tag or tool argument to a known language name, or None."""
    if not name:
        return None
    return _ALIASES.get(name.strip().lower())


def available_languages() -> list[str]:
    """The languages whose program exists on this machine, python first."""
    return [n for n, lang in LANGUAGES.items() if not lang.program or shutil.which(lang.program)]


def as_ipython_cell(language: str, code: str) -> str:
    """The source of an IPython cell that runs ``code`` as ``language``."""
    lang = LANGUAGES[normalize_language(language) or language]
    if not lang.magic:
        return code
    return f"{lang.magic}\n{code}"
