"""Session log -> notebook, and checking that the notebook still reproduces.

``export_notebook`` turns a session log into an ordinary ``python3`` notebook:
each instruction as a markdown cell, then exactly the code that ran (the edited
text when the user edited it) with the outputs it produced, and provenance in the
metadata. ``verify_notebook`` re-runs such a notebook in a fresh kernel, in a
copy of its directory, and compares the outputs after removing what is expected
to vary (addresses, timings, dates, temporary paths).

nbformat and nbclient are imported inside the functions so that importing this
module stays cheap.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from oi_kernel.conversation import code_hash
from oi_kernel.errors import OIError
from oi_kernel.languages import as_ipython_cell

if TYPE_CHECKING:
    from nbformat import NotebookNode

KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
FAILED_STATUSES = frozenset({"error", "interrupted", "died"})
MAX_COPY_BYTES = 2 * 1024**3
_COPY_IGNORE = (".git", "node_modules", ".venv", "venv", "__pycache__", ".ipynb_checkpoints")


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
    from oi_kernel.session_log import read_log_report

    out = Path(out_path).expanduser()
    if out.exists() and not force:
        raise OIError(f"{out} exists; pass --force (or force=True) to overwrite.")
    records, problems = read_log_report(log_path)
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
    records: list[dict[str, Any]],
    *,
    include_failed: bool = False,
    log_path: str | Path | None = None,
    title: str | None = None,
) -> NotebookNode:
    """The notebook of a session's records (see docs/session-log.md), validated.

    ``title`` None gives a default heading with the session's provenance; ``""``
    leaves the heading cell out.
    """
    import nbformat

    builder = _Builder(include_failed)
    for record in records:
        builder.add(record)
    start = builder.start
    meta = {
        "version": _version(),
        "session": start.get("session") or _first(records, "session"),
        "log": str(Path(log_path).resolve()) if log_path is not None else None,
        "model": start.get("model"),
        "kernel": start.get("kernel"),
        "cwd": start.get("cwd"),
        "started": start.get("t") or _first(records, "t"),
        "exported_at": _utc_now(),
    }
    cells = builder.cells
    if title != "":
        cells.insert(0, _markdown(_title_text(title, meta)))
    for i, cell in enumerate(cells):
        cell["id"] = f"oi-{i}"
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
        self.start: dict[str, Any] = {}
        self.count = 0
        self.decisions: dict[tuple[Any, Any], dict[str, Any]] = {}
        self.model: str | None = None  # of the latest llm_request

    def add(self, r: dict[str, Any]) -> None:
        event = r.get("event")
        key = (r.get("turn"), r.get("step"))
        if event == "session_start" and not self.start:
            self.start = r
        elif event == "turn_start":
            self.cells.append(_markdown(_instruction_text(r.get("turn"), r.get("instruction"))))
        elif event == "llm_request" and r.get("model"):
            self.model = r["model"]
        elif event == "decision":
            self.decisions[key] = r
        elif event == "execution":
            self._code(r, self._execution_meta(r))
        elif event == "direct":
            self._code(r, self._direct_meta(r))
        elif event == "child_restart":
            reason = f": {r['reason']}" if r.get("reason") else ""
            self.cells.append(_markdown(f"*(The kernel restarted here{reason}.)*"))

    def _execution_meta(self, r: dict[str, Any]) -> dict[str, Any]:
        decision = self.decisions.get((r.get("turn"), r.get("step")), {})
        return {
            "turn": r.get("turn"),
            "step": r.get("step"),
            "sha256": r.get("sha256"),
            "decision": decision.get("action"),
            "by": decision.get("by"),
            "language": r.get("language"),
            "model": self.model or self.start.get("model"),
            "time": r.get("t"),
        }

    def _direct_meta(self, r: dict[str, Any]) -> dict[str, Any]:
        return {
            "direct": r.get("kind"),
            "sha256": code_hash(r.get("code") or ""),
            "language": "python",
            "time": r.get("t"),
        }

    def _code(self, r: dict[str, Any], meta: dict[str, Any]) -> None:
        import nbformat

        status = r.get("status")
        decision = meta.get("decision")
        if decision in ("skipped", "stopped"):  # nothing ran, whatever the log says
            return
        if status != "ok" and not (self.include_failed and status in FAILED_STATUSES):
            return
        source = _source(r)
        if source is None:
            lang = r.get("language")
            self.cells.append(
                _markdown(f"*(A step in {lang!r}, which this version can't export.)*")
            )
            return
        if r.get("event") == "execution" and r.get("sha256"):
            if code_hash(r.get("code") or "") != r["sha256"]:
                meta["sha256_mismatch"] = True  # usually a secret redacted out of the code
        if status != "ok":
            meta["failed"] = status
            self.cells.append(_markdown(f"*(This step failed when it ran: {status}.)*"))
        self.count += 1
        outputs = [o for o in (_output(o, self.count) for o in r.get("outputs") or []) if o]
        self.cells.append(
            nbformat.v4.new_code_cell(
                source=source,
                execution_count=self.count,
                outputs=outputs,
                metadata={"oi_kernel": {k: v for k, v in meta.items() if v is not None}},
            )
        )


def _source(r: dict[str, Any]) -> str | None:
    """The IPython source of an execution or direct record; None if not exportable."""
    code = r.get("code") or ""
    if r.get("event") == "direct":
        if r.get("kind") == "shell" and not code.lstrip().startswith(("!", "%")):
            return "!" + code
        return code
    try:
        return as_ipython_cell(r.get("language") or "python", code)
    except KeyError:
        return None


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


def _first(records: list[dict[str, Any]], key: str) -> Any:
    return next((r[key] for r in records if r.get(key)), None)


def _version() -> str:
    from oi_kernel import __version__

    return __version__


def _utc_now() -> str:
    from oi_kernel.session_log import utc_now

    return utc_now()


# ---------------------------------------------------------------- verify

CheckStatus = Literal["same", "different", "error", "skipped"]


@dataclass
class CellCheck:
    """The result for one code cell; ``index`` is its position in ``nb.cells``."""

    index: int
    status: CheckStatus
    detail: str = ""
    execution_count: int | None = None


@dataclass
class VerifyReport:
    """The outcome of ``verify_notebook``; ``ok`` only if every code cell is "same"."""

    ok: bool
    cells: list[CellCheck] = field(default_factory=list)
    notebook: str = ""
    workdir: str = ""

    def format(self) -> str:
        """A table of the cells and a one-line verdict, for a terminal."""
        lines = [f"{'cell':>4}  {'In':>4}  {'status':<9}  detail"]
        for c in self.cells:
            count = "" if c.execution_count is None else f"[{c.execution_count}]"
            lines.append(f"{c.index:>4}  {count:>4}  {c.status:<9}  {c.detail}".rstrip())
        same = sum(c.status == "same" for c in self.cells)
        verdict = "OK" if self.ok else "FAILED"
        lines.append(
            f"{verdict}: {same} of {len(self.cells)} code cells reproduce their recorded outputs"
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
) -> VerifyReport:
    """Re-run the notebook in a fresh kernel and compare each code cell's outputs.

    It runs in a temporary copy of ``cwd`` (default: the notebook's directory), so
    files the notebook reads are there and nothing it writes touches the original;
    ``in_place=True`` runs in ``cwd`` itself. ``timeout`` is per cell, in seconds.
    The notebook file is never modified.
    """
    import nbformat

    path = Path(path).expanduser()
    try:
        nb = nbformat.read(path, as_version=4)
    except FileNotFoundError:
        raise OIError(f"No notebook at {path}.") from None
    except Exception as exc:
        raise OIError(f"Cannot read {path} as a notebook: {exc}") from exc
    source_dir = Path(cwd).expanduser() if cwd is not None else path.parent
    source_dir = source_dir.resolve()
    kernel = kernel_name or nb.metadata.get("kernelspec", {}).get("name") or "python3"
    recorded = [(i, c) for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    roots = {str(source_dir)}
    logged_cwd = nb.metadata.get("oi_kernel", {}).get("cwd")
    if logged_cwd:
        roots.add(str(logged_cwd))
    if in_place:
        fresh = _run(nb, source_dir, kernel, timeout)
        return _compare(recorded, fresh, roots, path, source_dir)
    with tempfile.TemporaryDirectory(prefix="oi-verify-") as tmp:
        workdir = Path(tmp) / (source_dir.name or "work")
        _copy_dir(source_dir, workdir)
        fresh = _run(nb, workdir, kernel, timeout)
        roots |= {str(workdir), os.path.realpath(workdir)}
        return _compare(recorded, fresh, roots, path, workdir)


def _copy_dir(src: Path, dst: Path) -> None:
    total = 0
    for root, dirs, files in os.walk(src):
        dirs[:] = [d for d in dirs if d not in _COPY_IGNORE]
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                continue
        if total > MAX_COPY_BYTES:
            raise OIError(
                f"{src} holds more than {MAX_COPY_BYTES // 1024**3} GB; too much to copy for a "
                "verification run. Pass --cwd (cwd=) a smaller directory with the notebook's "
                "input files, or --in-place (in_place=True) to run in it directly."
            )
    shutil.copytree(
        src, dst, symlinks=True, ignore=shutil.ignore_patterns(*_COPY_IGNORE), dirs_exist_ok=True
    )


def _run(nb: NotebookNode, workdir: Path, kernel: str, timeout: int) -> dict[int, Any]:
    """Execute a copy of ``nb`` cell by cell; cell index -> new outputs, or an error string."""
    import copy

    from jupyter_client.kernelspec import NoSuchKernel
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    work = copy.deepcopy(nb)
    client = NotebookClient(
        work,
        timeout=timeout,
        kernel_name=kernel,
        allow_errors=True,
        resources={"metadata": {"path": str(workdir)}},
    )
    results: dict[int, Any] = {}
    try:
        with client.setup_kernel():
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
    except NoSuchKernel:
        raise OIError(
            f"No kernel named {kernel!r} is installed. Install one (python -m ipykernel "
            "install --user) or pass --kernel (kernel_name=) with a name from "
            "`jupyter kernelspec list`."
        ) from None
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
        else:
            status, detail = compare_outputs(cell.outputs, new, roots)
            checks.append(CellCheck(index, status, detail, count))
    ok = all(c.status == "same" for c in checks)
    return VerifyReport(ok, checks, notebook=str(path), workdir=str(workdir))


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
