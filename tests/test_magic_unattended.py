"""``%%oi`` in a python3 notebook that nobody watches: run by nbclient (``jupyter nbconvert
--execute``) and papermill, as users run notebooks in batch. Neither renders widgets nor
offers stdin, so a block that needs approval is refused at once, with how to allow code
(never a cell waiting for a card nobody sees); ``%oi auto_run on`` before it lets it run.
A real python3 kernel, litellm over HTTP to the scripted server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from tests import llm_server as S
from tests.env import oi_env

pytestmark = pytest.mark.timeout(240)
INSTRUCTION = "%%oi\nprint the square of seven"
CELL_TIMEOUT = 120  # a card nobody sees would end in this timeout, not in the refusal


def squaring(body: dict) -> S.Response:
    last = body["messages"][-1]
    if last["role"] == "tool":
        return S.text(f"The square is {last['content'].strip()}.")
    return S.tool_call("print(7 * 7)", text="Squaring.")


def magic_notebook(path: Path, auto_run: bool) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    sources = ["%load_ext oi_kernel", *(["%oi auto_run on"] if auto_run else []), INSTRUCTION]
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    nbformat.write(nb, path)
    return path


def run_batch(tool: str, llm: S.ScriptedLLMServer, tmp: Path, source: Path,
              allow_errors: bool = False) -> subprocess.CompletedProcess[str]:
    """``source`` run by nbconvert (nbclient) or papermill into ``tmp/out.ipynb``, without
    litellm's debugging output (``LITELLM_LOG``) whatever the caller's environment."""
    env = {**os.environ, **oi_env(llm, tmp, OI_AUTO_RUN="0", OI_APPROVAL_UI="auto",
                                  JUPYTER_RUNTIME_DIR=str(tmp / "runtime"))}
    env.pop("LITELLM_LOG", None)
    if tool == "nbconvert":  # nbclient
        args = ["-m", "jupyter", "nbconvert", "--execute", "--to", "notebook",
                *(["--allow-errors"] if allow_errors else []),
                f"--ExecutePreprocessor.timeout={CELL_TIMEOUT}", "--output", "out.ipynb",
                str(source)]
    else:
        args = ["-m", "papermill", str(source), str(tmp / "out.ipynb"),
                "--execution-timeout", str(CELL_TIMEOUT)]
    return subprocess.run([sys.executable, *args], capture_output=True, text=True,
                          timeout=200, env=env, cwd=tmp)


def oi_cell_text(path: Path) -> str:
    nb = nbformat.read(path, as_version=4)
    [cell] = [c for c in nb.cells if c.source == INSTRUCTION]
    parts = []
    for out in cell.get("outputs", []):
        if out["output_type"] == "stream":
            parts.append(out["text"])
        elif out["output_type"] == "error":
            parts.append(f"{out['ename']}: {out['evalue']}")
        else:
            parts.append(out.get("data", {}).get("text/plain", ""))
    return "\n".join(parts)


@pytest.mark.parametrize("tool", ["nbconvert", "papermill"])
def test_nobody_to_ask_refuses_at_once_and_says_how_to_allow(tool, llm_server, tmp_path):
    llm_server.set_fallback(squaring)
    source = magic_notebook(tmp_path / "in.ipynb", auto_run=False)
    done = run_batch(tool, llm_server, tmp_path, source)
    assert done.returncode != 0, done.stdout + done.stderr
    output = done.stderr + done.stdout
    assert "ApprovalUnavailableError" in output, output[-3000:]
    assert "CellTimeoutError" not in output and "timed out" not in output
    for fix in ("%oi auto_run on", "%%oi -y", "OI_AUTO_RUN=1"):
        assert fix in output
    assert "OI_APPROVAL_UI=widget" not in output  # the setting that would hang
    if tool == "papermill":  # papermill saves the failed notebook: the cell says it too
        text = oi_cell_text(tmp_path / "out.ipynb")
        assert "ApprovalUnavailableError" in text and "%oi auto_run on" in text
        assert "49" not in text
    assert len(llm_server.requests) == 1  # refused before anything ran or was sent back


@pytest.mark.parametrize("tool", ["nbconvert", "papermill"])
def test_auto_run_on_lets_the_code_run(tool, llm_server, tmp_path):
    llm_server.set_fallback(squaring)
    source = magic_notebook(tmp_path / "in.ipynb", auto_run=True)
    done = run_batch(tool, llm_server, tmp_path, source)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    text = oi_cell_text(tmp_path / "out.ipynb")
    assert "49" in text and "The square is 49." in text
    assert len(llm_server.requests) == 2
