"""Every front door the README names, from the extra that names it: scripts/release-check runs
this inside a fresh venv holding the built wheel with the ``all`` extra (outside the source
tree). For each door it checks that its extra requires the package that brings it (the wheel's
metadata) and that the door works there:

    lab        jupyter lab --version
    notebook   jupyter notebook --version
    console    `exit` piped into jupyter console --kernel open-interpreter: the banner, a quiet exit
    papermill  papermill -k open-interpreter -p n 5 on a notebook of %%python cells: 25
    acp        oi-kernel acp answers an ACP initialize request on stdio
    mcp        the MCP SDK's client imports
    gateway    jupyter_server's gateway kernel manager imports

and that ``all`` holds every one of them. None of this calls a model. Exit 0 when all pass.

    python release_extras.py
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

BIN = Path(sys.executable).parent
# extra -> the distribution that brings its door
DOORS = {
    "lab": "jupyterlab",
    "notebook": "notebook",
    "console": "jupyter-console",
    "papermill": "papermill",
    "acp": "agent-client-protocol",
    "mcp": "mcp",
    "gateway": "jupyter-server",
}
INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": 1, "clientCapabilities": {}}}


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def extras_of(dist: str) -> dict[str, set[str]]:
    """extra -> the distributions it requires (hatchling writes an extra that names others,
    ``oi-kernel[a,b]``, as their requirements)."""
    found: dict[str, set[str]] = {}
    for req in metadata.requires(dist) or []:
        m = re.search(r"""extra\s*==\s*["']([^"']+)["']""", req)
        if m:
            name = re.match(r"[A-Za-z0-9_.-]+", req.split(";")[0].strip())[0]
            found.setdefault(m[1], set()).add(norm(name))
    return found


def run(*args: str, stdin: str | None = None, timeout: float = 120) -> str:
    done = subprocess.run(list(args), input=stdin, capture_output=True, text=True,
                          timeout=timeout)
    if done.returncode != 0:
        raise SystemExit(f"release-extras: {' '.join(args)} failed ({done.returncode}):\n"
                         f"{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return done.stdout + done.stderr


def check_console() -> str:
    args = (str(BIN / "jupyter"), "console", "--kernel", "open-interpreter", "--simple-prompt")
    out = run(*args, stdin="exit\n", timeout=60)
    assert "exit (or Ctrl-D) leaves" in out and "Traceback" not in out, out
    return "jupyter console: the banner says how to leave; `exit` left"


def check_papermill(work: Path) -> str:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "open-interpreter", "display_name": "Open Interpreter",
                                 "language": "markdown"}
    params = nbformat.v4.new_code_cell("%%python\nn = 3")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell("%%python\nprint('square', n * n)")]
    nbformat.write(nb, work / "in.ipynb")
    run(str(BIN / "papermill"), str(work / "in.ipynb"), str(work / "out.ipynb"),
        "-k", "open-interpreter", "-p", "n", "5")
    out = nbformat.read(work / "out.ipynb", as_version=4)
    shown = "".join(o.get("text", "") for o in out.cells[-1].outputs)
    assert "square 25" in shown, shown
    return "papermill -k open-interpreter -p n 5: square 25"


def check_acp() -> str:
    done = subprocess.run([str(BIN / "oi-kernel"), "acp"], input=json.dumps(INITIALIZE) + "\n",
                          capture_output=True, text=True, timeout=60)
    reply = json.loads(done.stdout.splitlines()[0])
    assert reply["result"]["agentInfo"]["name"] == "oi-kernel", reply
    return "oi-kernel acp: answered initialize"


def main() -> int:
    started = time.monotonic()
    extras = extras_of("oi-kernel")
    for extra, dist in DOORS.items():
        assert dist in extras.get(extra, set()), f"the {extra!r} extra does not require {dist}"
        missing = extras[extra] - extras.get("all", set())
        assert not missing, f"'all' lacks what {extra!r} brings: {sorted(missing)}"
    print(f"extras: {', '.join(f'{e} -> {d}' for e, d in DOORS.items())}; all holds each")
    with tempfile.TemporaryDirectory() as tmp:
        results = [
            run(str(BIN / "jupyter"), "lab", "--version").strip() + " (jupyter lab)",
            run(str(BIN / "jupyter"), "notebook", "--version").strip() + " (jupyter notebook)",
            check_console(),
            check_papermill(Path(tmp)),
            check_acp(),
            run(sys.executable, "-c", "from mcp import ClientSession; print('mcp client')"),
            run(sys.executable, "-c", "from jupyter_server.gateway.managers import "
                "GatewayKernelManager; print('gateway kernel manager')"),
        ]
    for line in results:
        print(" ", line.strip())
    print(f"every front door works from its extra ({time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
