"""papermill runs a notebook of instructions on the Open Interpreter kernel:
``papermill in.ipynb out.ipynb -k open-interpreter -p n 5``.

The parameters arrive as a ``%%python`` cell (oi_kernel/cli/papermill.py registers the
translator); code runs when the notebook allows it (``%auto_run on``) or the policy does
(OI_AUTO_RUN / OI_APPROVAL in papermill's environment); with neither, nothing can approve
it, and the cell fails at once with an error that says how to allow it (no hang).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from tests import llm_server as S
from tests.env import oi_env

pytestmark = pytest.mark.timeout(180)
PAPERMILL = [sys.executable, "-m", "papermill"]
INSTRUCTION = "print the square of n"


def square_of_n(body: dict) -> S.Response:
    last = body["messages"][-1]
    if last["role"] == "tool":
        return S.text(f"The square is {last['content'].strip()}.")
    return S.tool_call("print(n * n)", text="Squaring n.")


def notebook(path: Path, auto_run_cell: bool) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "open-interpreter", "display_name": "Open Interpreter",
                                 "language": "markdown"}
    params = nbformat.v4.new_code_cell("%%python\nn: int = 3  # the number to square")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params]
    if auto_run_cell:
        nb.cells.append(nbformat.v4.new_code_cell("%auto_run on"))
    nb.cells.append(nbformat.v4.new_code_cell(INSTRUCTION))
    nbformat.write(nb, path)
    return path


def papermill(llm: S.ScriptedLLMServer, tmp: Path, *args: str, **env: str
              ) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **oi_env(
        llm, tmp, **{"OI_PROFILE": "", "OI_AUTO_RUN": "0", "OI_APPROVAL": "always",
                     "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"), **env})}
    return subprocess.run([*PAPERMILL, *args], capture_output=True, text=True, timeout=150,
                          env=full_env, cwd=tmp)


def cell_text(cell: dict) -> str:
    """What a cell shows, as text; consecutive pieces of one stream joined as frontends do."""
    parts: list[str] = []
    previous = None
    for out in cell.get("outputs", []):
        stream = out.get("name") if out["output_type"] == "stream" else None
        if stream and stream == previous:
            parts[-1] += out["text"]
        elif stream:
            parts.append(out["text"])
        elif out["output_type"] == "error":
            parts.append(f"{out['ename']}: {out['evalue']}")
        else:
            parts.append(out.get("data", {}).get("text/plain", ""))
        previous = stream
    return "\n".join(parts)


def instruction_cell(nb: nbformat.NotebookNode) -> dict:
    [cell] = [c for c in nb.cells if c.source == INSTRUCTION]
    return cell


def test_parameters_and_auto_run_from_the_notebook(llm_server, tmp_path):
    llm_server.set_fallback(square_of_n)
    source = notebook(tmp_path / "in.ipynb", auto_run_cell=True)
    done = papermill(llm_server, tmp_path, str(source), "out.ipynb", "-k", "open-interpreter",
                     "-p", "n", "5")
    assert done.returncode == 0, done.stderr[-3000:]
    out = nbformat.read(tmp_path / "out.ipynb", as_version=4)
    injected = [c for c in out.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert [c.source for c in injected] == ["%%python\n# Parameters\nn = 5\n"]
    [cell] = [c for c in out.cells if c.source == INSTRUCTION]
    streams = [o.text for o in cell.outputs if o.output_type == "stream"]
    assert "".join(streams) == "Squaring n.\n25\nThe square is 25.\n"
    # each reply whole (the child's print may arrive in pieces, as from any ipykernel)
    assert streams[0] == "Squaring n.\n" and streams[-1] == "The square is 25.\n"
    assert "[step 1: python]\nprint(n * n)" in cell_text(cell)


def square_in_a_fence(body: dict) -> S.Response:
    last = body["messages"][-1]
    if INSTRUCTION in str(last["content"]) and "25" not in str(last["content"]):
        return S.text("Squaring n.\n```python\nprint(n * n)\n```\n")
    return S.text("The square is 25.")


@pytest.mark.kernel
def test_each_fenced_proposal_appears_once(llm_server, tmp_path):
    """Issue 31: the fenced reply printed the code, so the step does not print it again."""
    llm_server.set_fallback(square_in_a_fence)
    source = notebook(tmp_path / "in.ipynb", auto_run_cell=True)
    done = papermill(llm_server, tmp_path, str(source), "out.ipynb", "-k", "open-interpreter",
                     "-p", "n", "5")
    assert done.returncode == 0, done.stderr[-3000:]
    text = cell_text(instruction_cell(nbformat.read(tmp_path / "out.ipynb", as_version=4)))
    assert text.count("print(n * n)") == 1, text
    assert "[step 1: python] (the code above)" in text and "25" in text


def recovers_from_a_typo(body: dict) -> S.Response:
    tools = [m for m in body["messages"] if m["role"] == "tool"]
    if not tools:
        return S.tool_call("print(m * m)")
    if len(tools) == 1:
        return S.tool_call("print(n * n)")
    return S.text("The square is 25.")


@pytest.mark.kernel
def test_a_recovered_error_is_compact_and_does_not_fail_the_run(llm_server, tmp_path):
    """Issue 31: the step's error is a compact display, not an error output (papermill
    fails a run on any error output); the model fixed it."""
    llm_server.set_fallback(recovers_from_a_typo)
    source = notebook(tmp_path / "in.ipynb", auto_run_cell=True)
    done = papermill(llm_server, tmp_path, str(source), "out.ipynb", "-k", "open-interpreter",
                     "-p", "n", "5")
    assert done.returncode == 0, done.stderr[-3000:]
    cell = instruction_cell(nbformat.read(tmp_path / "out.ipynb", as_version=4))
    assert [o for o in cell.outputs if o.output_type == "error"] == []
    text = cell_text(cell)
    assert "NameError: name 'm' is not defined" in text and "%last_error" in text
    assert "The square is 25." in text


def test_auto_run_from_the_policy(llm_server, tmp_path):
    llm_server.set_fallback(square_of_n)
    source = notebook(tmp_path / "in.ipynb", auto_run_cell=False)
    done = papermill(llm_server, tmp_path, str(source), "out.ipynb", "-k", "open-interpreter",
                     "-p", "n", "7", OI_APPROVAL="never")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "The square is 49." in cell_text(instruction_cell(
        nbformat.read(tmp_path / "out.ipynb", as_version=4)))


def test_nothing_can_approve_a_clear_error_in_the_cell(llm_server, tmp_path):
    llm_server.set_fallback(square_of_n)
    source = notebook(tmp_path / "in.ipynb", auto_run_cell=False)
    done = papermill(llm_server, tmp_path, str(source), "out.ipynb", "-k", "open-interpreter",
                     "-p", "n", "5")
    assert done.returncode != 0
    assert "This code was not run: it needs your approval" in done.stderr
    out = nbformat.read(tmp_path / "out.ipynb", as_version=4)
    text = cell_text(instruction_cell(out))
    assert "ApprovalUnavailableError: This code was not run" in text
    assert "%auto_run on" in text and "OI_AUTO_RUN=1" in text and "papermill" in text
    assert "print(n * n)" in text  # what was refused is shown
    assert "25" not in text
    assert len(llm_server.requests) == 1  # refused before anything ran or was sent back


def test_help_notebook_lists_the_parameters(llm_server, tmp_path):
    source = notebook(tmp_path / "in.ipynb", auto_run_cell=False)
    done = papermill(llm_server, tmp_path, str(source), "--help-notebook", "-k",
                     "open-interpreter")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "n: int (default 3)" in done.stdout and "the number to square" in done.stdout
