"""What a cell of the Open Interpreter kernel is, and whether a terminal should keep reading it.

Pure (no kernel, no I/O). A cell is one of:

- ``python``: ``%%python`` and a body of Python, run in the child without the model;
- ``magic``: another cell magic (``%%bash``, ``%%javascript``, ``%%html``, ...), run in the
  child (an IPython kernel) as it is, without the model;
- ``shell``: only ``!command`` lines, run in the child;
- ``commands``: only ``%command`` lines (``session.commands``);
- ``instruction``: anything else, for the model.

``is_exit``: ``exit``, ``quit``, ``exit()`` or ``quit()`` alone leaves a terminal client, as in
IPython (the kernel answers with the ``ask_exit`` payload; nothing goes to the model).

``is_complete`` answers the protocol's ``is_complete_request``, which terminals (jupyter
console) use to decide whether Enter runs the cell or starts a new line: an instruction
is complete as typed (prose is never "incomplete"); a cell magic without a body is
incomplete; a ``%%python`` body is judged as Python, other cell magics as IPython judges
them (complete after a blank line).
"""

from __future__ import annotations

import re
from typing import Any, Literal

_MAGIC_RE = re.compile(r"%%([A-Za-z_][\w.]*)(?:[ \t]|$)", re.M)
Kind = Literal["python", "magic", "shell", "commands", "instruction"]


def classify(code: str) -> tuple[Kind, str]:
    """The cell's kind and what runs: the body of ``%%python``, the whole cell of another
    magic, the ``!`` lines of a shell cell, the command lines, or the instruction."""
    stripped = code.lstrip()
    if stripped.startswith("%%python") and _magic_name(stripped) == "python":
        return "python", stripped.split("\n", 1)[1] if "\n" in stripped else ""
    if stripped.startswith("%%") and _magic_name(stripped):
        return "magic", stripped
    lines = [ln for ln in code.strip().splitlines() if ln.strip()]
    if lines and all(ln.lstrip().startswith("!") for ln in lines):
        return "shell", "\n".join(ln.lstrip() for ln in lines)
    if lines and all(ln.lstrip().startswith("%") for ln in lines):
        return "commands", "\n".join(ln.strip() for ln in lines)
    return "instruction", code.strip()


EXIT_WORDS = frozenset({"exit", "quit", "exit()", "quit()"})
# What IPython's `exit` puts in its execute_reply: jupyter console leaves (and shuts down the
# kernel it started); notebook frontends ignore it.
EXIT_PAYLOAD = {"source": "ask_exit", "keepkernel": False}


def is_exit(code: str) -> bool:
    """Whether the cell is ``exit``/``quit`` (with or without ``()``) and nothing else."""
    return code.strip() in EXIT_WORDS


def _magic_name(stripped: str) -> str:
    """``%%bash -x`` -> "bash"; "" when the first line is not a cell magic."""
    m = _MAGIC_RE.match(stripped)
    return m[1] if m else ""


def is_complete(code: str) -> dict[str, Any]:
    """The ``is_complete_reply`` content for ``code`` (status, and indent when incomplete)."""
    kind, body = classify(code)
    if kind not in ("python", "magic"):
        return {"status": "complete"}
    if kind == "python":
        rest = code.lstrip().split("\n", 1)
        if len(rest) == 1 or not rest[1]:
            return {"status": "incomplete", "indent": ""}  # `%%python` and nothing below yet
        if not body.strip():
            return {"status": "complete"}  # a blank line under it ends the cell
    status, indent = _check_complete(body)
    if status == "incomplete":
        return {"status": "incomplete", "indent": " " * (indent or 0)}
    return {"status": status}


def _check_complete(code: str) -> tuple[str, int | None]:
    """IPython's own judgement (IPython is loaded in this process already)."""
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager().check_complete(code)
