"""Run notebooks without a browser: ``oi-kernel run`` and ``oi-kernel quickstart``.

``run_notebook`` executes a notebook of instructions with nbclient (code runs without
asking by default, since nobody is there to approve it), optionally injecting
papermill-style parameters in a Python cell after the one tagged ``parameters`` (first
when none), and writes the executed notebook
plus the export of its session log (what really ran, as a reproducible python3
notebook). The kernel is given a session id, which names its log.

``quickstart`` copies the shipped quickstart notebook into a working directory and
opens it in JupyterLab on the Open Interpreter kernel, or runs it headless when there is
no display.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oi_kernel.cli.install import KERNEL_NAME, ensure_kernelspec
from oi_kernel.core import approval_modes
from oi_kernel.errors import NotConfiguredError, OIError
from oi_kernel.record.notebook_run import (
    ipc_kernel_manager,
    make_client,
    missing_kernel,
    read_notebook,
)

PARAMETERS_TAG = "parameters"
INJECTED_TAG = "injected-parameters"
APPROVALS = approval_modes.UNATTENDED  # nobody is there to approve


@dataclass
class RunResult:
    """What ``run_notebook`` produced."""

    output: Path
    exports: list[Path] = field(default_factory=list)
    logs: list[Path] = field(default_factory=list)
    error: str = ""  # empty when every cell ran
    duration_s: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.error

    def format(self) -> str:
        lines = [f"Executed notebook: {self.output}"]
        lines += [f"Export (what ran, as a python3 notebook): {p}" for p in self.exports]
        lines += [f"Session log: {p}" for p in self.logs]
        if not self.logs:
            lines.append("No session log was written (nothing ran), so there is no export.")
        lines += self.notes
        if self.error:
            lines.append(f"Stopped with an error: {self.error}")
        return "\n".join(lines)


# ----------------------------------------------------------------------------- parameters


def parse_parameters(items: Iterable[str]) -> dict[str, Any]:
    """``["n=3", "name=sales"]`` -> ``{"n": 3, "name": "sales"}`` (Python literals, else text)."""
    params: dict[str, Any] = {}
    for item in items:
        name, sep, raw = item.partition("=")
        name = name.strip()
        if not sep or not name.isidentifier():
            raise OIError(f"Bad parameter {item!r}: use -p NAME=VALUE (NAME a Python identifier).")
        try:
            params[name] = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            params[name] = raw
    return params


def parameters_source(params: Mapping[str, Any], instruction_kernel: bool) -> str:
    """The code of the injected cell; ``%%python`` first on the Open Interpreter kernel."""
    body = "\n".join(f"{name} = {value!r}" for name, value in params.items())
    return f"%%python\n{body}" if instruction_kernel else body


def inject_parameters(nb: Any, params: Mapping[str, Any], instruction_kernel: bool) -> None:
    """Put a cell tagged ``injected-parameters`` after the ``parameters`` cell (or first),
    replacing one a previous run injected."""
    import nbformat

    if not params:
        return
    nb.cells = [c for c in nb.cells if INJECTED_TAG not in c.get("metadata", {}).get("tags", [])]
    cell = nbformat.v4.new_code_cell(parameters_source(params, instruction_kernel))
    cell.metadata["tags"] = [INJECTED_TAG]
    tagged = [
        i for i, c in enumerate(nb.cells) if PARAMETERS_TAG in c.get("metadata", {}).get("tags", [])
    ]
    nb.cells.insert(tagged[0] + 1 if tagged else 0, cell)


# ----------------------------------------------------------------------------- kernelspec


def _kernel_language(name: str) -> str:
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        return KernelSpecManager().get_kernel_spec(name).language.lower()
    except NoSuchKernel:
        raise missing_kernel(name) from None


# ----------------------------------------------------------------------------- run


def default_output(path: Path) -> Path:
    return path.with_name(f"{path.stem}-run.ipynb")


def export_path(output: Path) -> Path:
    return output.with_name(f"{output.stem}-export.ipynb")


def _policy_allowing(approval: str) -> Any:
    """The administrator's policy, once ``approval`` is known to be a headless mode it
    allows (checked now, not in every cell)."""
    if approval not in APPROVALS:
        raise OIError(f"--approval must be one of {', '.join(APPROVALS)}, not {approval!r}.")
    from oi_kernel.session.policy import load_policy
    from oi_kernel.session.policy_rules import approval_problem

    policy = load_policy()
    if problem := approval_problem(policy, approval):
        fix = ("Run it with --approval risky: blocks that are not known to be safe are then "
               "refused, since no one can approve them." if policy.approval == "risky" else
               "A headless run cannot ask anyone, so the model's code cannot run here.")
        raise OIError(f"{problem} {fix}")
    return policy


def run_notebook(
    path: str | Path,
    output: str | Path | None = None,
    *,
    approval: str = "never",
    parameters: Mapping[str, Any] | None = None,
    timeout: int = 600,
    kernel_name: str | None = None,
    cwd: str | Path | None = None,
    allow_errors: bool = False,
    env: Mapping[str, str] | None = None,
) -> RunResult:
    """Execute ``path`` and write the result to ``output`` (default ``NAME-run.ipynb``) and
    its session's export to ``NAME-run-export.ipynb``. ``approval``: "never" runs every
    block; "risky" refuses (as a cell error) blocks that would ask under ``%approval risky``
    (not known to be safe, or flagged by the risk review), since no one can approve them. ``timeout`` is per cell, in seconds. The run stops at the first failing
    cell unless ``allow_errors``. ``env`` adds variables for the kernel."""
    import nbformat

    policy = _policy_allowing(approval)
    path = Path(path).expanduser()
    nb = read_notebook(path)
    out = Path(output).expanduser() if output else default_output(path)
    kernel = kernel_name or nb.metadata.get("kernelspec", {}).get("name") or KERNEL_NAME
    if kernel == KERNEL_NAME:
        ensure_kernelspec()
    language = _kernel_language(kernel)
    if parameters and language not in ("python", "markdown"):
        raise OIError(
            f"Parameters can be injected into Python and Open Interpreter notebooks, not into "
            f"a {language} kernel ({kernel})."
        )
    inject_parameters(nb, parameters or {}, instruction_kernel=language != "python")
    log_dir = Path(policy.log_dir) if policy.log_dir else _log_dir(env)  # the policy's wins
    session_id = f"run-{uuid.uuid4().hex[:12]}"
    started = time.monotonic()
    kernel_env = _kernel_env(approval, log_dir, session_id, env)
    error = _execute(nb, kernel, timeout, allow_errors, cwd or path.parent, kernel_env)
    result = RunResult(out, error=error, duration_s=time.monotonic() - started)
    result.logs = sorted(log_dir.glob(f"*-{session_id}.jsonl")) if log_dir.is_dir() else []
    nb.metadata["oi_run"] = {
        "source": str(path),
        "approval": approval,
        "parameters": {k: repr(v) for k, v in (parameters or {}).items()},
        "duration_s": round(result.duration_s, 2),
        "logs": [str(p) for p in result.logs],
        "error": error,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, out)
    result.exports, result.notes = _export(result.logs, out)
    return result


def _log_dir(env: Mapping[str, str] | None) -> Path:
    from oi_kernel.record.session_log import default_log_dir

    configured = (env or {}).get("OI_LOG_DIR") or os.environ.get("OI_LOG_DIR")
    return Path(configured).expanduser() if configured else default_log_dir()


def _kernel_env(approval: str, log_dir: Path, session_id: str,
                extra: Mapping[str, str] | None) -> dict[str, str]:
    """The kernel's environment: the approval policy, where its log goes, and the session id
    that names the log (so two runs at once each find their own)."""
    env = {**os.environ, **(extra or {})}
    env.update(
        OI_APPROVAL=approval,
        OI_AUTO_RUN="1" if approval == "never" else "0",
        OI_LOG_DIR=str(log_dir),
        OI_SESSION_ID=session_id,
        OI_SESSION_KIND="headless",
    )
    env.setdefault("OI_STEP_TIMEOUT", "300")  # headless: a stuck step ends the step, not the run
    return env


def _execute(
    nb: Any, kernel: str, timeout: int, allow_errors: bool, cwd: str | Path, env: dict[str, str]
) -> str:
    """Run every cell in place; the first error as text ("" when none)."""
    from jupyter_client.kernelspec import NoSuchKernel
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    try:
        with ipc_kernel_manager(kernel) as km:
            make_client(nb, kernel, timeout, cwd, allow_errors=allow_errors, km=km).execute(
                env=env, cleanup_kc=True)  # shut down after, as with nbclient's own manager
    except CellTimeoutError:
        return f"a cell did not finish within {timeout} s (raise it with --timeout)"
    except DeadKernelError as exc:
        return f"the kernel died: {exc}"
    except CellExecutionError as exc:
        return f"{exc.ename}: {exc.evalue}".strip() or str(exc)
    except NoSuchKernel:
        return str(missing_kernel(kernel))
    return ""


def _export(logs: list[Path], out: Path) -> tuple[list[Path], list[str]]:
    """Export each new session log next to ``out``; (exports, problems)."""
    from oi_kernel.record.export import export_notebook

    exports, notes = [], []
    for i, log in enumerate(logs):
        target = export_path(out)
        if i:
            target = target.with_name(f"{target.stem}-{i + 1}.ipynb")
        try:
            exports.append(export_notebook(log, target, force=True))
        except OIError as exc:
            notes.append(f"Could not export {log}: {exc}")
    return exports, notes


# ----------------------------------------------------------------------------- quickstart


def shipped_notebooks() -> Path:
    """The demo notebooks: the repository's notebooks/ (editable install) or the copy a
    wheel installs under ``<prefix>/share/oi-kernel/notebooks``."""
    candidates = [
        Path(__file__).resolve().parents[2] / "notebooks",
        Path(sys.prefix) / "share" / "oi-kernel" / "notebooks",
    ]
    for candidate in candidates:
        if (candidate / "quickstart.ipynb").is_file():
            return candidate
    raise OIError(
        "The demo notebooks are not installed (looked in "
        + ", ".join(str(c) for c in candidates)
        + "). Reinstall oi-kernel."
    )


def copy_quickstart(workdir: Path) -> Path:
    """Copy quickstart.ipynb (and the demo data) into ``workdir``; never overwrite."""
    source = shipped_notebooks()
    workdir.mkdir(parents=True, exist_ok=True)
    target = workdir / "quickstart.ipynb"
    if not target.exists():
        shutil.copy(source / "quickstart.ipynb", target)
    if (source / "data").is_dir() and not (workdir / "data").exists():
        shutil.copytree(source / "data", workdir / "data")
    return target


def has_display() -> bool:
    """Whether a browser can be opened here (not CI, and a display on Linux)."""
    if os.environ.get("CI"):
        return False
    if sys.platform.startswith("linux"):
        return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    return True


def model_problem() -> str:
    """Why instructions cannot run with the current settings ("" when a model is set)."""
    from oi_kernel.llm.client import LLM

    try:
        LLM().check_configured()
    except (NotConfiguredError, OIError) as exc:
        return str(exc)
    return ""


def quickstart(workdir: Path, headless: bool | None = None, timeout: int = 600) -> int:
    """Open the quickstart in JupyterLab, or run it headless; returns an exit code."""
    ensure_kernelspec()
    notebook = copy_quickstart(workdir)
    problem = model_problem()
    if headless is None:
        headless = not has_display()
    if not headless and not _has_jupyterlab():
        print(
            "JupyterLab is not installed (pip install jupyterlab); running the quickstart "
            "headless instead."
        )
        headless = True
    if problem:
        print(problem, file=sys.stderr)
        if headless:
            return 2
    if headless:
        print(f"Running {notebook} headless (code runs without asking)...")
        result = run_notebook(notebook, timeout=timeout)
        print(result.format())
        return 0 if result.ok else 1
    print(f"Opening {notebook} in JupyterLab on the Open Interpreter kernel (Ctrl+C to stop).")
    command = [sys.executable, "-m", "jupyterlab", notebook.name]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")  # Jupyter refuses to run as root otherwise
    return subprocess.call(command, cwd=workdir)


def _has_jupyterlab() -> bool:
    import importlib.util

    return importlib.util.find_spec("jupyterlab") is not None
