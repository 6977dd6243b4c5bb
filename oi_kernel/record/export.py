"""Session log -> notebook.

``export_notebook`` turns a session log into an ordinary ``python3`` notebook:
each instruction as a markdown cell, then exactly the code that ran (the edited
text when the user edited it) with the outputs it produced, and provenance in the
metadata; ``record.verify`` checks that it still reproduces. A code cell whose code hides
characters (bidi controls, escapes, zero-width characters, mixed-script names) keeps the
real code, so the notebook reproduces what ran, and is preceded by a markdown note showing
it with each hidden character marked (``safety.visible``), also listed in its metadata.

nbformat is imported inside the functions so that importing this module stays cheap.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oi_kernel.core.types import code_hash
from oi_kernel.errors import OIError
from oi_kernel.languages import as_ipython_cell
from oi_kernel.record.claims_cells import answer_cell, link_claims
from oi_kernel.record.inputs import Inputs
from oi_kernel.record.records import (
    AnswerCheckRecord,
    ChildRestartRecord,
    DecisionRecord,
    DirectRecord,
    ExecutionRecord,
    LLMRequestRecord,
    Record,
    SessionStartRecord,
    TurnStartRecord,
    as_records,
)
from oi_kernel.safety.visible import hidden_findings, needs_marking, visible

if TYPE_CHECKING:
    from nbformat import NotebookNode

KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
FAILED_STATUSES = frozenset({"error", "interrupted", "died"})


# ---------------------------------------------------------------- export


def export_notebook(
    log_path: str | Path,
    out_path: str | Path,
    *,
    include_failed: bool = False,
    force: bool = False,
    title: str | None = None,
) -> Path:
    """Write the notebook of the session in ``log_path`` to ``out_path``; return its path.

    Refuses to overwrite an existing file unless ``force``. Lines of the log that
    can't be read are skipped with a warning (a torn last line silently).
    """
    from oi_kernel.record.session_log import read_records_report

    out = Path(out_path).expanduser()
    if out.exists() and not force:
        raise OIError(f"{out} exists; pass --force (or force=True) to overwrite.")
    records, problems = read_records_report(log_path)
    if not records:
        raise OIError(f"{log_path} holds no events; is it an oi_kernel session log?")
    serious = [p for p in problems if "incomplete last event" not in p]
    if serious:
        warnings.warn(f"{log_path}: " + "; ".join(serious), stacklevel=2)
    nb = build_notebook(records, include_failed=include_failed, log_path=log_path, title=title)
    _write_notebook(nb, out)
    return out


def _write_notebook(nb: NotebookNode, out: Path) -> None:
    import nbformat

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp{os.getpid()}")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            nbformat.write(nb, f)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)


def build_notebook(
    records: Iterable[Record | Mapping[str, Any]],
    *,
    include_failed: bool = False,
    log_path: str | Path | None = None,
    title: str | None = None,
) -> NotebookNode:
    """The notebook of a session's records (typed, or lines as ``read_log`` gives them; see
    docs/session-log.md), validated.

    ``title`` None gives a default heading with the session's provenance; ``""``
    leaves the heading cell out.
    """
    import nbformat

    records = as_records(records)
    builder = _Builder(include_failed)
    for record in records:
        builder.add(record)
    start = builder.start or SessionStartRecord()
    meta = {
        "version": _version(),
        "session": start.session or next((r.session for r in records if r.session), None),
        "log": str(Path(log_path).resolve()) if log_path is not None else None,
        "model": start.model or None,
        "kernel": start.kernel or None,
        "cwd": start.cwd or None,
        "started": start.time or next((r.time for r in records if r.time), None),
        "exported_at": _utc_now(),
    }
    if inputs := builder.inputs.as_list():
        meta["inputs"] = inputs  # path, size, sha256, the step that read it first
    cells = builder.cells
    if title != "":
        cells.insert(0, _markdown(_title_text(title, meta)))
    for i, cell in enumerate(cells):
        cell["id"] = f"oi-{i}"
    link_claims(cells, builder.step_cells)
    nb = nbformat.v4.new_notebook(
        cells=cells,
        metadata={
            "kernelspec": dict(KERNELSPEC),
            "language_info": {"name": "python", "file_extension": ".py"},
            "oi_kernel": meta,
        },
    )
    try:
        nbformat.validate(nb)
    except nbformat.ValidationError as exc:
        raise OIError(f"The exported notebook is not valid nbformat: {exc.message}") from exc
    return nb


class _Builder:
    """Walks the records in order and collects the cells."""

    def __init__(self, include_failed: bool) -> None:
        self.include_failed = include_failed
        self.cells: list[Any] = []
        self.start: SessionStartRecord | None = None
        self.count = 0
        self.decisions: dict[tuple[int | None, int | None], DecisionRecord] = {}
        self.model = ""  # of the latest llm_request
        self.step_cells: dict[tuple[int | None, int | None], Any] = {}  # (turn, step) -> cell
        self.inputs = Inputs()  # the workspace files the steps read (record.inputs)

    def add(self, r: Record) -> None:
        match r:
            case SessionStartRecord():
                self.start = self.start or r
            case TurnStartRecord():
                self.cells.append(_markdown(_instruction_text(r.turn, r.instruction)))
            case LLMRequestRecord() if r.model:
                self.model = r.model
            case DecisionRecord():
                self.decisions[(r.turn, r.step)] = r
            case ExecutionRecord():
                decision = self.decisions.get((r.turn, r.step))
                # a skipped or stopped step ran nothing, whatever the log says
                if decision is None or decision.action not in ("skipped", "stopped"):
                    cells = self.count
                    self._code(r, self._execution_meta(r, decision))
                    self.inputs.add(r.changes, self.count if self.count > cells else None)
                    if self.count > cells:  # a code cell was added: the step's
                        self.step_cells[(r.turn, r.step)] = self.cells[-1]
            case DirectRecord():
                self._code(r, self._direct_meta(r))
            case AnswerCheckRecord() if r.answer.strip():
                self.cells.append(answer_cell(r.answer, r.turn, list(r.claims), r.note))
            case ChildRestartRecord():
                reason = f": {r.reason}" if r.reason else ""
                self.cells.append(_markdown(f"*(The kernel restarted here{reason}.)*"))

    def _execution_meta(self, r: ExecutionRecord, decision: DecisionRecord | None
                        ) -> dict[str, Any]:
        return {
            "turn": r.turn,
            "step": r.step,
            "sha256": r.sha256 or None,
            "decision": (decision.action or None) if decision else None,
            "by": (decision.by or None) if decision else None,
            "language": r.language or None,
            "model": self.model or (self.start.model if self.start else "") or None,
            "time": r.time or None,
            "tool": ({"server": r.server, "tool": r.server_tool}
                     if r.tool_kind == "mcp" else None),
            "changes": r.changes or None,  # what the step changed (variables, files)
        }

    def _direct_meta(self, r: DirectRecord) -> dict[str, Any]:
        return {
            "direct": r.kind or None,
            "sha256": code_hash(r.code),
            "language": "python",
            "time": r.time or None,
        }

    def _code(self, r: ExecutionRecord | DirectRecord, meta: dict[str, Any]) -> None:
        import nbformat

        if r.status != "ok" and not (self.include_failed and r.status in FAILED_STATUSES):
            return
        source = _source(r)
        language = r.language if isinstance(r, ExecutionRecord) else ""
        if source is None:
            self.cells.append(
                _markdown(f"*(A step in {language!r}, which this version can't export.)*")
            )
            return
        if isinstance(r, ExecutionRecord) and r.sha256 and code_hash(r.code) != r.sha256:
            meta["sha256_mismatch"] = True  # usually a secret redacted out of the code
        if r.status != "ok":
            meta["failed"] = r.status
            self.cells.append(_markdown(f"*(This step failed when it ran: {r.status}.)*"))
        found = [str(f) for f in hidden_findings(r.code, language)]
        if found or needs_marking(source):
            meta["hidden_characters"] = found
            self.cells.append(_markdown(hidden_note(source, found)))
        self.count += 1
        outputs = [o for o in (_output(o, self.count) for o in r.outputs) if o]
        self.cells.append(
            nbformat.v4.new_code_cell(
                source=source,
                execution_count=self.count,
                outputs=outputs,
                metadata={"oi_kernel": {k: v for k, v in meta.items() if v is not None}},
            )
        )


def hidden_note(source: str, findings: list[str]) -> str:
    """The markdown shown above a cell whose code hides characters: what they are and where,
    and the code with each one marked."""
    shown = visible(source)
    fence = "````" if "```" in shown else "```"
    items = "\n".join(f"- {visible(f)}" for f in findings)
    return ("⚠️ **The next cell holds characters that show differently from what runs.** "
            "The cell keeps the code exactly as it ran; here it is with each one marked "
            f"⟦…⟧:\n\n{items}\n\n{fence}python\n{shown}\n{fence}")


def _source(r: ExecutionRecord | DirectRecord) -> str | None:
    """The IPython source of an execution or direct record; None if not exportable."""
    if isinstance(r, DirectRecord):
        if r.kind == "shell" and not r.code.lstrip().startswith(("!", "%")):
            return "!" + r.code
        return r.code
    if r.tool_kind == "mcp":
        return tool_call_source(r.server, r.server_tool, r.code)
    try:
        return as_ipython_cell(r.language or "python", r.code)
    except KeyError:
        return None


def tool_call_source(server: str, tool: str, arguments_json: str) -> str:
    """The code cell of an MCP tool step: the same call through a small helper."""
    import json

    try:
        arguments = json.loads(arguments_json or "{}")
    except json.JSONDecodeError:
        arguments = {}
    args = repr(arguments)
    return ("from oi_kernel.execution.mcp.notebook import call_tool\n"
            f"call_tool({server!r}, {tool!r}, {args});")


def _output(o: Any, count: int) -> Any:
    """A clean nbformat v4 output from a recorded one; None for an unknown kind."""
    import nbformat

    if not isinstance(o, dict):
        return None
    kind = o.get("output_type")
    if kind == "stream":
        return nbformat.v4.new_output(
            "stream", name=o.get("name", "stdout"), text=_text(o.get("text"))
        )
    if kind in ("display_data", "execute_result"):
        out = nbformat.v4.new_output(
            "display_data", data=dict(o.get("data") or {}), metadata=dict(o.get("metadata") or {})
        )
        if kind == "execute_result":
            out["output_type"] = "execute_result"
            out["execution_count"] = count
        return out
    if kind == "error":
        return nbformat.v4.new_output(
            "error",
            ename=str(o.get("ename", "")),
            evalue=str(o.get("evalue", "")),
            traceback=[str(line) for line in o.get("traceback") or []],
        )
    return None


def _markdown(text: str) -> Any:
    import nbformat

    return nbformat.v4.new_markdown_cell(text)


def _instruction_text(turn: Any, instruction: Any) -> str:
    text = str(instruction or "").strip()
    label = f"**Instruction {turn}:**" if turn is not None else "**Instruction:**"
    return f"{label} {text}" if "\n" not in text else f"{label}\n\n{text}"


def _title_text(title: str | None, meta: dict[str, Any]) -> str:
    lines = [f"# {title or 'Open Interpreter session'}", ""]
    facts = [
        ("Session", meta["session"]),
        ("Started", meta["started"]),
        ("Model", meta["model"]),
        ("Working directory", meta["cwd"]),
        ("Log", meta["log"]),
        ("Exported", f"{meta['exported_at']} by oi_kernel {meta['version']}"),
    ]
    lines += [f"- {name}: `{value}`" for name, value in facts if value]
    return "\n".join(lines)


def _text(value: Any) -> str:
    if isinstance(value, list):
        return "".join(str(v) for v in value)
    return "" if value is None else str(value)


def _version() -> str:
    from oi_kernel._version import __version__

    return __version__


def _utc_now() -> str:
    from oi_kernel.record.session_log import utc_now

    return utc_now()
