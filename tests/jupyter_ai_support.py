"""JupyterLab with Jupyter AI 3.2 next to oi-kernel, for the browser tests of both together.

Jupyter AI 3.2 pins an older agent-client-protocol and MCP SDK than the shared test
environment has, so it runs from a virtual environment of its own, created on first use in
``$OI_TEST_JAI_VENV`` (default ``~/.cache/oi-kernel-tests/jupyter-ai-<version>-<key>``) with
the package index pip is configured for: ``jupyter-ai==<version>`` and this source tree's
package with the lab extra, installed as a user installs them (the prebuilt lab extension,
the kernelspec, the persona's entry point). The key is a hash of what an install copies from
the tree besides Python code (pyproject.toml, the prebuilt lab extension, the kernelspec),
so a change there builds a new venv; the Python code itself comes from this tree
(``PYTHONPATH``), as in every other test.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.browser_support import REPO, LabServer

JUPYTER_AI_VERSION = "3.2.0"
CACHE = Path.home() / ".cache" / "oi-kernel-tests"
READY = "oi-kernel-tests-ready"  # written last: a venv without it is half built
# Jupyter AI's pieces, as `jupyter labextension list` and the lab's settings name them
CHAT_PLUGIN = "jupyterlab-chat-extension:factory"
PERSONA_ID = "jupyter-ai-personas::oi_kernel::OpenInterpreterPersona"


def install_key() -> str:
    """A hash of the files an install takes from the tree besides the Python code."""
    digest = hashlib.sha256()
    files = [REPO / "pyproject.toml"]
    for folder in (REPO / "oi_kernel" / "labextension", REPO / "kernelspec"):
        files += sorted(p for p in folder.rglob("*") if p.is_file())
    for path in files:
        digest.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def venv_dir() -> Path:
    chosen = os.environ.get("OI_TEST_JAI_VENV")
    if chosen:
        return Path(chosen)
    return CACHE / f"jupyter-ai-{JUPYTER_AI_VERSION}-{install_key()}"


def jupyter_ai_venv() -> Path:
    """The venv with Jupyter AI and oi-kernel (created when missing); returns its folder."""
    venv = venv_dir()
    if (venv / READY).exists():
        return venv
    if not os.environ.get("OI_TEST_JAI_VENV"):  # older keys: superseded, each ~700 MB
        for old in CACHE.glob(f"jupyter-ai-{JUPYTER_AI_VERSION}-*"):
            if old != venv:
                shutil.rmtree(old, ignore_errors=True)
    python = getattr(sys, "_base_executable", None) or sys.executable
    subprocess.run([python, "-m", "venv", "--clear", str(venv)], check=True, timeout=120)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
           f"jupyter-ai=={JUPYTER_AI_VERSION}", f"{REPO}[lab]"]
    done = subprocess.run(pip, capture_output=True, text=True, timeout=900, cwd=venv)
    if done.returncode:
        raise RuntimeError(f"installing Jupyter AI {JUPYTER_AI_VERSION} and oi-kernel into "
                           f"{venv} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    check = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "check"],
                           capture_output=True, text=True, timeout=120)
    if check.returncode:
        raise RuntimeError(f"pip check in {venv}:\n{check.stdout}{check.stderr}")
    (venv / READY).write_text(f"jupyter-ai=={JUPYTER_AI_VERSION} {install_key()}\n")
    return venv


def jupyter_ai_lab(base: Path, env: dict[str, str], settings: dict[str, dict[str, Any]],
                   extra_args: list[str] = ()) -> LabServer:
    """A ``LabServer`` (not started) running the venv's JupyterLab with this tree's code:
    kernels and the persona's ``oi-kernel acp`` run the venv's Python with ``PYTHONPATH``
    on this tree; kernelspecs and lab extensions are the venv's (a private data dir keeps a
    user-level kernelspec out)."""
    venv = jupyter_ai_venv()
    server = LabServer(base, {"PYTHONPATH": str(REPO), "JUPYTER_DATA_DIR": str(base / "data"),
                              "VIRTUAL_ENV": str(venv),
                              "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
                              **env}, settings)
    server.args[0] = str(venv / "bin" / "python")
    # Jupyter AI's MCP server on a free port of its own (its default, 3001, is one for all)
    server.args += ["--MCPExtensionApp.mcp_port=0", *extra_args]
    return server
