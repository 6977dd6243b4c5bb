"""Checking that a notebook still reproduces: ``verify_notebook`` re-runs it in a fresh
kernel, in a copy of its directory, and compares the outputs after removing what is
expected to vary (addresses, timings, dates, temporary paths). Replay compares its steps
with the same normalisation (``compare_outputs``)."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from oi_kernel.errors import OIError
from oi_kernel.record.export import _text
from oi_kernel.record.notebook_run import notebook_client, read_notebook

if TYPE_CHECKING:
    from nbformat import NotebookNode

MAX_COPY_BYTES = 2 * 1024**3
_COPY_IGNORE = (".git", "node_modules", ".venv", "venv", "__pycache__", ".ipynb_checkpoints")

# ---------------------------------------------------------------- verify

CheckStatus = Literal["same", "different", "error", "skipped", "kept"]


@dataclass
class CellCheck:
    """The result for one code cell; ``index`` is its position in ``nb.cells``."""

    index: int
    status: CheckStatus
    detail: str = ""
    execution_count: int | None = None


@dataclass
class VerifyReport:
    """The outcome of ``verify_notebook``; ``ok`` only if every code cell is "same" (or
    "kept": an MCP tool call whose server is not reachable here keeps its recorded
    result, and the report says so)."""

    ok: bool
    cells: list[CellCheck] = field(default_factory=list)
    notebook: str = ""
    workdir: str = ""
    claims: list[str] = field(default_factory=list)  # traced numbers no longer printed

    def format(self) -> str:
        """A table of the cells and a one-line verdict, for a terminal."""
        lines = [f"{'cell':>4}  {'In':>4}  {'status':<9}  detail"]
        for c in self.cells:
            count = "" if c.execution_count is None else f"[{c.execution_count}]"
            lines.append(f"{c.index:>4}  {count:>4}  {c.status:<9}  {c.detail}".rstrip())
        same = sum(c.status == "same" for c in self.cells)
        kept = sum(c.status == "kept" for c in self.cells)
        verdict = "OK" if self.ok else "FAILED"
        lines += [f"claim: {problem}" for problem in self.claims]
        lines.append(
            f"{verdict}: {same} of {len(self.cells)} code cells reproduce their recorded outputs"
            + (f"; {kept} MCP tool call(s) kept their recorded result (server not reachable)"
               if kept else "")
            + (f" ({self.notebook})" if self.notebook else "")
        )
        return "\n".join(lines)


def verify_notebook(
    path: str | Path,
    *,
    cwd: str | Path | None = None,
    in_place: bool = False,
    timeout: int = 120,
    kernel_name: str | None = None,
    inputs_dir: str | Path | None = None,
) -> VerifyReport:
    """Re-run the notebook in a fresh kernel and compare each code cell's outputs.

    It runs in a temporary copy of ``cwd`` (default: the notebook's directory), so
    files the notebook reads are there and nothing it writes touches the original;
    ``in_place=True`` runs in ``cwd`` itself. ``timeout`` is per cell, in seconds.
    The notebook file is never modified. Before anything runs, the files the session read
    (``metadata.oi_kernel.inputs`` of an export) must be there as the session read them:
    taken from the notebook's folder, else from ``inputs_dir``; ``InputsError`` names each
    one missing or changed (``record.inputs``).
    """

    path = Path(path).expanduser()
    nb = read_notebook(path)
    source_dir = Path(cwd).expanduser() if cwd is not None else path.parent
    source_dir = source_dir.resolve()
    kernel = kernel_name or nb.metadata.get("kernelspec", {}).get("name") or "python3"
    recorded = [(i, c) for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    roots = {str(source_dir)}
    logged_cwd = nb.metadata.get("oi_kernel", {}).get("cwd")
    if logged_cwd:
        roots.add(str(logged_cwd))
    if in_place:
        _ready_inputs(nb, source_dir, None, path)  # checked only: nothing copied into it
        fresh = _run(nb, source_dir, kernel, timeout)
        return _check_claims(_compare(recorded, fresh, roots, path, source_dir), nb, fresh)
    with tempfile.TemporaryDirectory(prefix="oi-verify-") as tmp:
        workdir = Path(tmp) / (source_dir.name or "work")
        _copy_dir(source_dir, workdir)
        _ready_inputs(nb, workdir, inputs_dir, path)
        fresh = _run(nb, workdir, kernel, timeout)
        roots |= {str(workdir), os.path.realpath(workdir)}
        return _check_claims(_compare(recorded, fresh, roots, path, workdir), nb, fresh)


def _check_claims(report: VerifyReport, nb: NotebookNode, fresh: dict[int, Any]
                  ) -> VerifyReport:
    """The answers' traced numbers must still be printed by their cells
    (``record.claims_cells``): each one that is not fails the report, by name."""
    from oi_kernel.record.claims_cells import claim_problems

    report.claims = claim_problems(nb, fresh)
    report.ok = report.ok and not report.claims
    return report


def _ready_inputs(nb: NotebookNode, workdir: Path, inputs_dir: str | Path | None,
                  notebook: Path) -> None:
    """The session's inputs in ``workdir`` as it read them, or ``InputsError`` before
    anything runs (``record.inputs``)."""
    from oi_kernel.record.inputs import stage_inputs

    folder = Path(inputs_dir).expanduser().resolve() if inputs_dir is not None else None
    if folder is not None and not folder.is_dir():
        raise OIError(f"--inputs {inputs_dir}: no such folder.")
    stage_inputs(nb, workdir, folder, notebook)


def _copy_dir(src: Path, dst: Path) -> None:
    from oi_kernel.execution.probe.scratch import copy_capped  # (the probe's, stdlib only)

    if not copy_capped(src, dst, _COPY_IGNORE, MAX_COPY_BYTES, dirs_exist_ok=True):
        raise OIError(
            f"{src} holds more than {MAX_COPY_BYTES // 1024**3} GB; too much to copy for a "
            "verification run. Pass --cwd (cwd=) a smaller directory with the notebook's "
            "input files, or --in-place (in_place=True) to run in it directly."
        )


def _run(nb: NotebookNode, workdir: Path, kernel: str, timeout: int) -> dict[int, Any]:
    """Execute a copy of ``nb`` cell by cell; cell index -> new outputs, or an error string."""
    import copy

    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    work = copy.deepcopy(nb)
    results: dict[int, Any] = {}
    with notebook_client(work, kernel, timeout, workdir, allow_errors=True) as client:
        for index, cell in enumerate(work.cells):
            if cell.cell_type != "code":
                continue
            try:
                client.execute_cell(cell, index)
            except CellTimeoutError:
                results[index] = f"timed out after {timeout} s; later cells not run"
                break
            except DeadKernelError:
                results[index] = "the kernel died; later cells not run"
                break
            results[index] = cell.outputs
    return results


def _compare(
    recorded: list[tuple[int, Any]],
    fresh: dict[int, Any],
    roots: set[str],
    path: Path,
    workdir: Path,
) -> VerifyReport:
    checks = []
    for index, cell in recorded:
        count = cell.get("execution_count")
        new = fresh.get(index)
        if new is None:
            checks.append(CellCheck(index, "skipped", "not run", count))
        elif isinstance(new, str):
            checks.append(CellCheck(index, "error", new, count))
        elif (why := _unreachable_tool(cell, new)):
            checks.append(CellCheck(index, "kept", why, count))
        else:
            status, detail = compare_outputs(cell.outputs, new, roots)
            checks.append(CellCheck(index, status, detail, count))
    ok = all(c.status in ("same", "kept") for c in checks)
    return VerifyReport(ok, checks, notebook=str(path), workdir=str(workdir))


def _unreachable_tool(cell: Any, new: list[Any]) -> str:
    """Why an MCP tool cell could not run here ("" when it ran or is not one)."""
    tool = cell.get("metadata", {}).get("oi_kernel", {}).get("tool")
    if not tool:
        return ""
    for out in new:
        if out.get("output_type") == "error" and out.get("ename") == "ToolUnreachable":
            return (f"MCP server {tool.get('server')!r} not reachable: recorded result kept "
                    f"({_clip(str(out.get('evalue', '')), 80)})")
    return ""


def compare_outputs(
    recorded: list[Any], new: list[Any], roots: Iterable[str] = ()
) -> tuple[CheckStatus, str]:
    """("same", "") or ("different"/"error", first differing line) for two output lists."""
    old_n, new_n = normalize_outputs(recorded, roots), normalize_outputs(new, roots)
    if old_n == new_n:
        return "same", ""
    old_err, new_err = old_n.get("error"), new_n.get("error")
    if new_err and not old_err:
        return "error", f"raised {new_err} when re-run"
    for key in sorted(set(old_n) | set(new_n)):
        a, b = old_n.get(key), new_n.get(key)
        if a != b:
            return "different", f"{key}: {_first_difference(a, b)}"
    return "different", ""  # unreachable: the dicts differ in some key


def _first_difference(a: str | None, b: str | None) -> str:
    if a is None:
        return f"new output {_clip(b)}"
    if b is None:
        return f"missing now (was {_clip(a)})"
    old_lines, new_lines = a.splitlines(), b.splitlines()
    for n, (x, y) in enumerate(zip(old_lines, new_lines, strict=False), start=1):
        if x != y:
            return f"line {n}: recorded {_clip(x)}, now {_clip(y)}"
    n = min(len(old_lines), len(new_lines)) + 1
    if len(old_lines) > len(new_lines):
        return f"line {n}: recorded {_clip(old_lines[n - 1])}, now nothing"
    return f"line {n}: recorded nothing, now {_clip(new_lines[n - 1])}"


def _clip(text: str | None, width: int = 60) -> str:
    text = text or ""
    return repr(text if len(text) <= width else text[: width - 1] + "…")


# ---------------------------------------------------------------- normalisation

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_VOLATILE = [
    (re.compile(r"(?m)^(CPU times|Wall time|Elapsed time):.*$"), r"\1: <TIME>"),
    (re.compile(r"\[\d+:\d+(?::\d+)?<[^\]]*\]"), "[<TQDM>]"),  # tqdm "[00:01<00:00, 5.0it/s]"
    (re.compile(r"\d+(?:\.\d+)?\s?(?:it/s|s/it|B/s|[kMG]B/s)"), "<RATE>"),
    (
        re.compile(
            r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
        ),
        "<DATE>",
    ),
    (re.compile(r"\b\d{1,2}:\d{2}:\d{2}(?:\.\d+)?\b"), "<TIME>"),
    (re.compile(r"0x[0-9a-fA-F]{4,}"), "0x<ADDR>"),
    (
        re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I),
        "<UUID>",
    ),
    (
        re.compile(
            r"\d+\.\d+(?:e[-+]?\d+)?\s?(?:ns|µs|μs|us|ms|s|sec|secs|seconds)\b"
            r"|\b\d+\s?(?:ns|µs|μs|us|ms|sec|secs|seconds)\b"
        ),
        "<TIME>",
    ),
    (re.compile(r"(?:/tmp|/var/folders|/private/var/folders)/[^\s'\"),\]]+"), "<TMP>"),
    (re.compile(r"\b(In|Out)\s?\[\d+\]"), r"\1[N]"),
    (re.compile(r"[ \t]+$", re.M), ""),
]
_PRESENCE_ONLY = ("image/", "application/vnd.jupyter.widget-view+json", "application/pdf")


def normalize_text(text: str, roots: Iterable[str] = ()) -> str:
    """``text`` with ANSI codes, run directories and volatile values replaced by markers."""
    text = _ANSI.sub("", text)
    for root in sorted({r for r in roots if r and r != "/"}, key=len, reverse=True):
        text = text.replace(root, "<CWD>")
    for pattern, repl in _VOLATILE:
        text = pattern.sub(repl, text)
    return text.strip("\n")


def normalize_outputs(outputs: list[Any], roots: Iterable[str] = ()) -> dict[str, str]:
    """A comparable form of a cell's outputs: streams joined per name, rich outputs in order."""
    roots = list(roots)
    streams: dict[str, str] = {}
    result: dict[str, str] = {}
    rich = 0
    for o in outputs:
        kind = o.get("output_type")
        if kind == "stream":
            name = o.get("name", "stdout")
            streams[name] = streams.get(name, "") + _text(o.get("text"))
        elif kind in ("display_data", "execute_result"):
            rich += 1
            result[f"{kind} {rich}"] = _normalize_bundle(o.get("data") or {}, roots)
        elif kind == "error":
            result["error"] = str(o.get("ename", ""))
    for name, text in streams.items():
        result[name] = normalize_text(text, roots)
    return {k: v for k, v in result.items() if v or k == "error"}


def _normalize_bundle(data: dict[str, Any], roots: list[str]) -> str:
    mimes = sorted(data)
    present = [m for m in mimes if m.startswith(_PRESENCE_ONLY)]
    shown = (
        "text/plain"
        if "text/plain" in data
        else next((m for m in mimes if m not in present and isinstance(data[m], (str, list))), None)
    )
    parts = [f"[{m}]" for m in present]
    if shown is not None:
        parts.append(normalize_text(_text(data[shown]), roots))
    return "\n".join(parts)
