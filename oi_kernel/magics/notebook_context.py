"""What ``%%oi`` knows about the notebook it runs in: the cells run before it.

IPython keeps each cell's source (``In``, ``history_manager.input_hist_raw``) and output value
(``Out``); a ``post_run_cell`` hook (``CellErrors``) keeps each failing cell's error, read from
the execution result (never IPython's custom exception handler: there is only one, and other
extensions use it). From these, ``NotebookContext``

- writes the note the model gets with an instruction: the last ``c.Engine.notebook_context_cells``
  cells (source, a compact form of what they showed) and, when the last of them failed, its
  error as the compact error view shows it (``core.output_text.compact_error``); within a
  character budget, secrets masked like everything the model reads;
- replaces ``{In[3]}``, ``{Out[3]}``, ``{Err[3]}`` in an instruction by that cell's source,
  output (what it printed and displayed, as text, where IPython 9 keeps it; else its value) or
  error (``{In[-1]}``: the cell just before this one), as Jupyter AI's magics do; a
  reference to a cell that does not exist (or has no output, or did not fail) is refused with
  a message saying so, before anything is sent.

Cells that were themselves ``%%oi`` instructions or ``%oi`` commands are left out of the note:
the conversation already holds them. IPython 8 keeps no printed output: there only output
values (``Out``) are shown.
"""

from __future__ import annotations

import re
import traceback
from collections.abc import Callable
from typing import Any

from oi_kernel.core.output_text import compact_error, strip_ansi, truncate_middle

SOURCE_CHARS = 1500  # one cell's source in the note
OUTPUT_CHARS = 600  # one cell's output value in the note
NOTE_CHARS = 6000  # the whole note (less when c.Engine.context_budget is small)
KEPT_ERRORS = 100  # failing cells remembered
_REFERENCE = re.compile(r"\{(In|Out|Err)\[(-?\d+)\]\}")
_OI_CELL = re.compile(r"\s*%%?oi(?=\s|$)")


class MissingCellError(ValueError):
    """An ``{In[n]}``-style reference names nothing; the message says what exists."""


def error_output(shell: Any, error: BaseException) -> dict[str, Any]:
    """``error`` as an nbformat error output, its traceback as IPython shows it."""
    etype = type(error)
    try:
        render = getattr(error, "_render_traceback_", None)
        if render is not None:
            lines = list(render())
        elif isinstance(error, SyntaxError):
            lines = shell.SyntaxTB.structured_traceback(etype, error, error.__traceback__)
        else:
            lines = shell.InteractiveTB.structured_traceback(etype, error, error.__traceback__)
    except Exception:  # a traceback formatter that fails must not cost the cell anything
        lines = traceback.format_exception(etype, error, error.__traceback__)
    return {"output_type": "error", "ename": etype.__name__, "evalue": str(error),
            "traceback": [str(line) for line in lines]}


def compact_error_text(output: dict[str, Any]) -> str:
    """The error line and the user-code frames, as the compact error view shows them."""
    line, frames, hidden = compact_error(output)
    left_out = [f"[{hidden} library frame{'s' if hidden != 1 else ''} left out]"] if hidden else []
    return "\n".join([line, *frames, *left_out])


class CellErrors:
    """The ``post_run_cell`` hook: each failing cell's error, by execution count."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self.errors: dict[int, dict[str, Any]] = {}

    def __call__(self, result: Any) -> None:
        count = getattr(result, "execution_count", None)
        if not isinstance(count, int):  # code %%oi runs itself (store_history=False)
            return
        error = getattr(result, "error_in_exec", None) or getattr(result, "error_before_exec", None)
        if error is None:
            self.errors.pop(count, None)
            return
        self.errors[count] = error_output(self.shell, error)
        for old in sorted(self.errors)[:-KEPT_ERRORS]:
            del self.errors[old]

    def install(self) -> None:
        self.shell.events.register("post_run_cell", self)

    def uninstall(self) -> None:
        try:
            self.shell.events.unregister("post_run_cell", self)
        except ValueError:
            pass


class NotebookContext:
    """The cells run before the current one, as the model is told about them."""

    def __init__(self, shell: Any, errors: CellErrors, redact: Callable[[str], str]) -> None:
        self.shell = shell
        self.errors = errors
        self.redact = redact

    # ------------------------------------------------------------ the cells
    @property
    def current(self) -> int:
        """The execution count of the cell running now (the ``%%oi`` cell: its source is the
        last one IPython stored; IPython 9 counts the next cell up before running this one)."""
        return len(self.shell.history_manager.input_hist_raw) - 1

    def source(self, n: int) -> str | None:
        history = self.shell.history_manager.input_hist_raw
        return history[n] if 0 < n < self.current else None

    def output(self, n: int) -> str | None:
        """What cell ``n`` showed, as text: printed output and displays where IPython keeps
        them (IPython 9's ``history_manager.outputs``), else its output value (``Out``)."""
        if not 0 < n < self.current:
            return None
        manager = self.shell.history_manager
        kept = getattr(manager, "outputs", None)
        parts = [_output_text(item) for item in (kept.get(n, []) if kept is not None else [])]
        if not parts and n in manager.output_hist:
            parts = [self._value_text(manager.output_hist[n])]
        text = "".join(part for part in parts if part)
        return strip_ansi(text) if text else None

    def _value_text(self, value: Any) -> str:
        try:
            return str(self.shell.display_formatter.formatters["text/plain"](value)) + "\n"
        except Exception:  # a broken __repr__ must not cost the instruction
            return f"<{type(value).__name__} object>\n"

    def error(self, n: int) -> str | None:
        output = self.errors.errors.get(n)
        return compact_error_text(output) if output is not None and n < self.current else None

    # ------------------------------------------------------------ {In[3]} references
    def interpolate(self, instruction: str) -> str:
        """``instruction`` with each ``{In[n]}``, ``{Out[n]}``, ``{Err[n]}`` replaced;
        raises ``MissingCellError`` naming the first one that refers to nothing."""

        def replace(found: re.Match[str]) -> str:
            kind, number = found.group(1), int(found.group(2))
            n = self.current + number if number < 0 else number
            text = {"In": self.source, "Out": self.output, "Err": self.error}[kind](n)
            if text is None:
                raise MissingCellError(self._missing(found.group(0), kind, n))
            return self.redact(text.rstrip("\n"))

        return _REFERENCE.sub(replace, instruction)

    def _missing(self, reference: str, kind: str, n: int) -> str:
        runs = (f"cells In[1] to In[{self.current - 1}] have run before this one"
                if self.current > 1 else "no cell has run before this one")
        if self.source(n) is None:
            return (f"{reference}: there is no cell {n} in this kernel's history ({runs}). "
                    "Use the number in the cell's `In [n]:` prompt, or a negative one "
                    "({In[-1]} is the cell just before).")
        if kind == "Out":
            return (f"{reference}: cell {n} showed no output. Refer to its source with "
                    f"{{In[{n}]}}.")
        return (f"{reference}: cell {n} did not fail (or failed before %load_ext oi_kernel), so "
                "it has no error to show.")

    # ------------------------------------------------------------ the note for the model
    def note(self, cells: int, limit: int = NOTE_CHARS) -> str:
        """The last ``cells`` cells (newest kept first when the note is full), secrets masked."""
        if cells <= 0:
            return ""
        blocks: list[str] = []
        used = 0
        recent = self._recent(cells)
        for n in recent:
            block = self._block(n, previous=n == recent[0])
            if used + len(block) > limit:
                if not blocks:
                    blocks.append(truncate_middle(block, limit))
                break
            blocks.append(block)
            used += len(block)
        if not blocks:
            return ""
        head = (f"\n\n[The notebook's recent cells; this instruction is cell In[{self.current}]. "
                "{In[n]}/{Out[n]}/{Err[n]} in an instruction refer to them]\n")
        return self.redact(head + "\n".join(reversed(blocks)))

    def _recent(self, cells: int) -> list[int]:
        """Execution counts of the last ``cells`` cells that are not ``%%oi``/``%oi`` cells,
        newest first."""
        found: list[int] = []
        for n in range(self.current - 1, 0, -1):
            source = self.source(n)
            if source is None or not source.strip() or _is_oi_cell(source):
                continue
            found.append(n)
            if len(found) == cells:
                break
        return found

    def _block(self, n: int, previous: bool) -> str:
        """One cell; ``previous``: the newest one (its error in full, older ones in a line)."""
        lines = [f"In [{n}]:", truncate_middle((self.source(n) or "").rstrip("\n"), SOURCE_CHARS)]
        if (output := self.output(n)) is not None:
            lines += [f"Out[{n}]:", truncate_middle(output.rstrip("\n"), OUTPUT_CHARS)]
        if (error := self.error(n)) is not None:
            if previous:
                lines += [f"Err[{n}] (the last cell before this instruction failed):", error]
            else:
                lines.append(f"Err[{n}]: {error.splitlines()[0]}")
        return "\n".join(lines) + "\n"


def _output_text(item: Any) -> str:
    """One kept output (IPython's ``HistoryOutput``) as text: streams, and text/plain of the rest."""
    bundle = getattr(item, "bundle", None) or {}
    kind = getattr(item, "output_type", "")
    if kind in ("out_stream", "err_stream"):
        text = "".join(bundle.get("stream", []))
        return f"[stderr] {text}" if kind == "err_stream" and text else text
    plain = bundle.get("text/plain", "")
    text = "".join(plain) if isinstance(plain, list) else str(plain)
    return text + "\n" if text and not text.endswith("\n") else text


def _is_oi_cell(source: str) -> bool:
    """A ``%%oi`` instruction or a cell of ``%oi`` commands (the conversation has them)."""
    lines = [line for line in source.splitlines() if line.strip()]
    if not lines or _OI_CELL.match(lines[0]) is None:
        return False
    return lines[0].lstrip().startswith("%%") or all(_OI_CELL.match(line) for line in lines)


def prepare(context: NotebookContext | None, instruction: str, *, use: bool, cells: int,
            budget_tokens: int) -> tuple[str, str]:
    """The instruction with its references replaced, and the note to send with it.
    ``budget_tokens``: ``c.Engine.context_budget`` (0: automatic); the note takes at most a
    quarter of a set budget (about 4 characters a token)."""
    if context is None:
        return instruction, ""
    instruction = context.interpolate(instruction)
    if not use:
        return instruction, ""
    limit = min(NOTE_CHARS, budget_tokens) if budget_tokens > 0 else NOTE_CHARS
    return instruction, context.note(cells, limit)
