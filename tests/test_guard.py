"""The runtime guard's parts outside a kernel: which steps are guarded, what a stop makes the
question say, the probe's parts joined without clashing names, the guard in an IPython shell
of its own process (exit handlers, reads of secrets, native code, imports of the data
libraries), and the harness that measures the review and the guard against a corpus."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from oi_kernel.core import guard
from oi_kernel.core.types import ApprovalRequest, CodeBlock, Decision
from oi_kernel.execution import probe
from oi_kernel.safety.risk import MEDIUM, Flag

REPO = Path(__file__).resolve().parent.parent


def _request(flags=(), tool=""):
    return ApprovalRequest(1, 1, CodeBlock("python", "x = 1", tool=tool or None),
                           flags=list(flags))


FLAG = Flag(1, "network", MEDIUM, "connects")


@pytest.mark.unit
@pytest.mark.parametrize(("mode", "approval", "flags", "by", "tool", "expected"), [
    ("risky", "risky", (), "auto", "", True),  # let through by the review: guarded
    ("risky", "risky", (FLAG,), "auto", "", False),  # flagged, yet unasked: Run all (a person)
    ("risky", "risky", (), "ann", "", False),  # approved by a person
    ("risky", "never", (), "auto", "", False),  # auto-run: the user's choice
    ("unasked", "never", (), "auto", "", True),
    ("unasked", "risky", (FLAG,), "auto", "", True),
    ("unasked", "always", (), "ann", "", False),
    ("off", "risky", (), "auto", "", False),
    ("risky", "risky", (), "auto", "srv__tool", False),  # a tool runs on its server
])
def test_which_steps_are_guarded(mode, approval, flags, by, tool, expected):
    request = _request(flags, tool)
    assert guard.guarded(mode, approval, request, Decision("run", "x = 1", by=by)) is expected


@pytest.mark.unit
def test_a_stop_says_what_was_stopped():
    stop = guard.GuardStop([{"event": "socket.connect", "what": "network connection to "
                             "10.0.0.5:443"}])
    (flag,) = stop.flags()
    assert flag.severity == "high" and flag.category == guard.STOP_CATEGORY
    assert "network connection to 10.0.0.5:443" in flag.reason
    assert "without the guard" in flag.reason
    assert "network connection to 10.0.0.5:443" in stop.declined()
    assert stop.record()["stops"][0]["event"] == "socket.connect"


@pytest.mark.unit
def test_limits_are_read_from_the_result():
    class Result:
        outputs = [{"output_type": "error", "ename": "MemoryError"}]

    memory = guard.stop_of({"stops": []}, Result(), 60, "2G", False)
    assert memory is not None and memory.limit == "memory" and "2G" in memory.flags()[0].reason
    timed = guard.stop_of(None, None, 60, "2G", True)
    assert timed is not None and timed.limit == "time" and "60 s" in timed.summary()
    assert guard.stop_of({"stops": []}, Result(), 60, "", False) is None  # no memory limit


@pytest.mark.unit
def test_probe_parts_define_each_name_once():
    """Gathered into the one probe (``install`` gives it every part's names), a name two
    parts define would silently replace the other
    (the guard's ``begin``/``end`` once replaced the change summary's)."""
    seen: dict[str, str] = {}
    clashes = []
    for part in probe.PARTS:
        tree = ast.parse((Path(probe.__file__).parent / f"{part}.py").read_text())
        for node in tree.body:
            names = ([node.name] if isinstance(node, (ast.FunctionDef, ast.ClassDef)) else
                     [t.id for t in getattr(node, "targets", []) if isinstance(t, ast.Name)])
            for name in names:
                if name in seen and seen[name] != part:
                    clashes.append(f"{name}: {seen[name]} and {part}")
                seen.setdefault(name, part)
    assert clashes == []


SHELL_SCRIPT = """
import json, os, sys
from IPython.core.interactiveshell import InteractiveShell
from oi_kernel.execution.probe import local_probe
shell, probe = InteractiveShell.instance(), local_probe()
results = {}
for name, code in json.loads(sys.argv[1]).items():
    probe.call("guard", {"root": os.getcwd(), "memory": 0})
    shell.run_cell(code, store_history=False)
    results[name] = json.loads(probe.call("guard_report"))["stops"]
print("RESULTS" + json.dumps(results), flush=True)
"""


def _run_guarded(tmp_path: Path, cells: dict[str, str]) -> tuple[dict, subprocess.CompletedProcess]:
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / ".netrc").write_text("machine x password secret\n")
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "data.csv").write_text("a\n1\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home"), "PYTHONPATH": str(REPO),
           "MPLBACKEND": "Agg"}
    proc = subprocess.run([sys.executable, "-c", SHELL_SCRIPT, json.dumps(cells)],
                          cwd=tmp_path / "ws", env=env, capture_output=True, text=True,
                          timeout=120)
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("RESULTS"))
    return json.loads(line[7:]), proc


@pytest.mark.kernel
def test_guard_in_a_shell_of_its_own(tmp_path):
    results, proc = _run_guarded(tmp_path, {
        "data": "import numpy, pandas as pd, matplotlib.pyplot as plt\n"
                "df = pd.read_csv('data.csv'); plt.plot(df.a); plt.savefig('fig.png')",
        "secret": "import os\nopen(os.path.expanduser('~/.netrc')).read()",
        "environ": "open('/proc/self/environ').read()",
        "native": "import ctypes\nctypes.CDLL('libc.so.6').getpid()",
        "atexit": "import atexit, os\natexit.register(os.remove, 'data.csv')",
        "hook": "get_ipython().events.register('post_run_cell', lambda r: None)",
        "caught": "try:\n    import os; os.remove('data.csv')\nexcept PermissionError:\n    pass",
        "module": "name = 'sea' + 'born.py'\nopen(name, 'w').write('import os')",
    })
    assert results["data"] == []  # the data libraries import, read and plot unhindered
    assert (tmp_path / "ws" / "fig.png").exists()
    assert "reading" in results["secret"][0]["what"] and ".netrc" in results["secret"][0]["what"]
    assert "environ" in results["environ"][0]["what"]
    assert "libc.so.6" in results["native"][0]["what"]
    assert results["atexit"] == []  # registered (guarded): stopped when it runs, at exit
    assert "post_run_cell" in results["hook"][0]["what"]
    assert "deleting" in results["caught"][0]["what"]  # recorded though the code caught it
    assert (tmp_path / "ws" / "data.csv").read_text() == "a\n1\n"  # the exit handler too
    assert "oi_kernel guard: deleting" in proc.stderr
    # a new file that a later import would run is code, not data: stopped, not written
    assert "seaborn.py" in results["module"][0]["what"]
    assert not (tmp_path / "ws" / "seaborn.py").exists()


CORPUS = """# a tiny corpus
#%%
print("hello")
total = 1 + 1
#%%
import os
os.truncate("data.csv", 0)
#%%
import time
while True:
    time.sleep(0.1)
#%%
print(total)
"""


@pytest.mark.kernel
def test_risk_guard_harness_runs_a_corpus(tmp_path):
    corpus = tmp_path / "mini"
    corpus.mkdir()
    (corpus / "things.py").write_text(CORPUS)
    (corpus / "make_workspace.py").write_text(textwrap.dedent("""
        import pathlib, sys
        pathlib.Path(sys.argv[1], "data.csv").write_text("a\\n1\\n")
    """))
    out = tmp_path / "result.md"
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "risk_guard.py"),
                           "--corpus", str(corpus), "--time", "2", "--write", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    row = next(ln for ln in out.read_text().splitlines() if ln.startswith("| things"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "4"  # snippets
    asked, guarded, limited, ran = (int(c.split()[0]) for c in cells[2:6])
    assert asked + guarded == 1  # the truncation: asked by the review, or stopped at run time
    assert limited == 1  # the endless loop
    assert ran == 2  # print, and the namespace shared with the first snippet
    assert cells[6] == "0"  # neither raised


OI_MAGIC_SCRIPT = """
import asyncio, os
from IPython.core.interactiveshell import InteractiveShell
from oi_kernel.core.types import CodeBlock
from oi_kernel.execution.shell import InterruptGuard, ShellExecutor

executor = ShellExecutor(InteractiveShell.instance(), InterruptGuard(set()))

async def main():
    await executor.arm_guard({"root": os.getcwd(), "memory": "2G"})
    guarded = await executor.run(CodeBlock("python", "open('data.csv', 'w').write('')"))
    print("GUARDED", guarded.status, (await executor.guard_report())["stops"][0]["what"])
    approved = await executor.run(CodeBlock("python", "open('data.csv', 'w').write('new')"))
    print("APPROVED", approved.status, open("data.csv").read())

asyncio.run(main())
"""


@pytest.mark.kernel
def test_oi_magic_executor_guards_in_the_users_process(tmp_path):
    """``%%oi`` runs steps in the user's own shell (``ShellExecutor``): the same guard."""
    (tmp_path / "data.csv").write_text("a\n1\n")
    proc = subprocess.run([sys.executable, "-c", OI_MAGIC_SCRIPT], cwd=tmp_path,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
                               "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, timeout=120)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(("GUARDED", "APPROVED"))]
    assert lines[0].startswith("GUARDED error writing the existing file"), proc.stderr[-500:]
    assert lines[1] == "APPROVED ok new"  # the next step, not armed, runs unguarded
