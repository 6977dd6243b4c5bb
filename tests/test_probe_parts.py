"""The probe's three parts are modules (issue 33): each imports on its own in a fresh
interpreter and names what it takes from the parts before it, while ``probe_loader`` still
sends one self-contained source that runs where ``oi_kernel`` cannot be imported (a sandboxed
or remote child)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from oi_kernel.execution import probe_loader

REPO = Path(__file__).resolve().parents[1]
PROBE_DIR = REPO / "oi_kernel" / "execution"


def run(args: list[str], code: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run([sys.executable, *args, "-c", code], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.kernel
@pytest.mark.parametrize("part", probe_loader.PARTS)
def test_each_part_imports_alone_in_a_fresh_interpreter(part, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = run([], f"import oi_kernel.execution.{part} as m; print(m.__file__)", tmp_path, env)
    assert Path(out.strip()) == PROBE_DIR / f"{part}.py"  # this worktree's, not an installed copy


@pytest.mark.kernel
def test_the_imported_modules_take_a_checkpoint_and_restore_it(tmp_path):
    """As modules (not joined), the parts work together: the watch is the scan's, and a file
    written after a checkpoint comes back."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    code = (
        "import json, oi_kernel.execution.probe_checkpoints as pc, oi_kernel.execution.probe as p\n"
        "import oi_kernel.execution.probe_watch as pw\n"
        "assert p._State.watcher is pw._Watch\n"
        "open('a.txt', 'w').write('before')\n"
        "print(pc.call('checkpoint', 1, '.oi_checkpoints/s1'))\n"
        "open('a.txt', 'w').write('after')\n"
        "print(pc.call('restore', 1))\n"
        "print(open('a.txt').read())\n")
    lines = run([], code, tmp_path, env).splitlines()
    assert json.loads(lines[0])["id"] == 1
    assert json.loads(lines[1])["restored"] == ["a.txt"]
    assert lines[2] == "before"


@pytest.mark.unit
def test_the_joined_source_imports_nothing_of_oi_kernel():
    imported = set()
    for node in ast.walk(ast.parse(probe_loader.SOURCE)):
        if isinstance(node, ast.Import):
            imported |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module or "")
    assert imported and not {m for m in imported if m.split(".")[0] == "oi_kernel"}


@pytest.mark.unit
def test_every_import_between_parts_is_left_out_and_nothing_else():
    """What the loader drops is exactly the parts' imports of each other (in any layout)."""
    for part in probe_loader.PARTS:
        text = (PROBE_DIR / f"{part}.py").read_text()
        kept = probe_loader._PART_IMPORT.sub("", text)
        tree = ast.parse(kept)
        assert not [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                    and (n.module or "").startswith("oi_kernel")], part
        # only import statements went: every other statement is still there
        def body(t):
            return [ast.dump(n) for n in t.body if not isinstance(n, ast.ImportFrom)]
        assert body(tree) == body(ast.parse(text)), part
    one_line = "import os\nfrom oi_kernel.execution.probe import Settings, scan\nx = 1\n"
    assert probe_loader._PART_IMPORT.sub("", one_line) == "import os\nx = 1\n"


@pytest.mark.kernel
def test_the_boot_expression_runs_where_oi_kernel_cannot_be_imported(tmp_path):
    """``BOOT`` as the child runs it, in an interpreter without site-packages or this
    repository on its path: the probe installs, checkpoints and restores."""
    code = (
        "import sys, json\n"
        "try:\n"
        "    import oi_kernel\n"
        "    raise SystemExit('oi_kernel is importable here')\n"
        "except ImportError:\n"
        "    pass\n"
        f"{probe_loader.BOOT}\n"
        "probe = sys.modules['_oi_probe']\n"
        "open('a.txt', 'w').write('before')\n"
        "x = 1\n"
        "print(probe.call('checkpoint', 1, '.oi_checkpoints/s1',\n"
        "                 settings={'copy_max_bytes': 0}))\n"  # a fork, not a copy
        "x = 2\n"
        "open('a.txt', 'w').write('after')\n"
        "print(probe.call('restore', 1))\n"
        "print(open('a.txt').read(), x, probe._State.watcher is probe._Watch)\n"
        "print(sorted(m for m in sys.modules if m.startswith('oi_kernel')))\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    lines = run(["-I", "-S"], code, tmp_path, env).splitlines()
    assert json.loads(lines[0])["fork"] is True
    report = json.loads(lines[1])
    assert report["restored"] == ["a.txt"] and "x" in report["variables"]
    assert lines[2] == "before 1 True"
    assert lines[3] == "[]"
