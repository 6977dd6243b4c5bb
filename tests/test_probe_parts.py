"""The probe is a package whose parts are modules (issues 33 and 41): each imports on its own
in a fresh interpreter and takes what it uses from the parts before it by relative imports,
while ``BOOT`` still installs all of them as one unit where ``oi_kernel`` cannot be imported
(a sandboxed child, a plain python3 kernel, a remote gateway's kernel)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from oi_kernel.execution import probe
from tests.kernel_client import KernelSession

REPO = Path(__file__).resolve().parents[1]
PROBE_DIR = REPO / "oi_kernel" / "execution" / "probe"


def run(args: list[str], code: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    # (on stdin: the probe's source is over the 128 KiB a single command-line argument may be)
    done = subprocess.run([sys.executable, *args, "-"], input=code, cwd=cwd, env=env,
                          text=True, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.kernel
@pytest.mark.parametrize("part", probe.PARTS)
def test_each_part_imports_alone_in_a_fresh_interpreter(part, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = run([], f"import oi_kernel.execution.probe.{part} as m; print(m.__file__)", tmp_path, env)
    assert Path(out.strip()) == PROBE_DIR / f"{part}.py"  # this worktree's, not an installed copy


@pytest.mark.kernel
def test_the_imported_modules_take_a_checkpoint_and_restore_it(tmp_path):
    """As modules (not joined), the parts work together: the watch is the scan's, and a file
    written after a checkpoint comes back."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    code = (
        "import json, oi_kernel.execution.probe.checkpoints as pc\n"
        "import oi_kernel.execution.probe.changes as p, oi_kernel.execution.probe.watch as pw\n"
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
def test_the_parts_import_only_the_standard_library_and_the_parts_before_them():
    """What lets them travel as source: no absolute import of ``oi_kernel``, and each relative
    import names a part loaded before it (``install`` loads them in ``PARTS`` order)."""
    for index, part in enumerate(probe.PARTS):
        for node in ast.walk(ast.parse((PROBE_DIR / f"{part}.py").read_text())):
            if isinstance(node, ast.Import):
                assert not [a for a in node.names if a.name.split(".")[0] == "oi_kernel"], part
            elif isinstance(node, ast.ImportFrom) and node.level:
                assert node.level == 1 and node.module in probe.PARTS[:index], (part, node.module)
            elif isinstance(node, ast.ImportFrom):
                assert (node.module or "").split(".")[0] != "oi_kernel", part


@pytest.mark.unit
def test_install_makes_a_package_of_the_parts_and_leaves_nothing_on_a_failure():
    name = "_oi_probe_test_install"
    parts = (("a", "X = 1\n"), ("b", "from .a import X\nY = X + 1\n"))
    try:
        top = probe.install(parts, name)
        assert (top.X, top.Y) == (1, 2) and sys.modules[name] is top
        assert sys.modules[f"{name}.b"].X is sys.modules[f"{name}.a"].X
        assert probe.install((), name) is top  # once per process
    finally:
        for key in [k for k in sys.modules if k.startswith(name)]:
            del sys.modules[key]
    with pytest.raises(ImportError):
        probe.install((("a", "X = 1\n"), ("b", "from .c import Z\n")), name)
    assert not [k for k in sys.modules if k.startswith(name)]


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
        f"{probe.BOOT}\n"
        "assert not [n for n in dir() if 'probe' in n or n == 'install'], dir()\n"
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


PLAIN_KERNEL = ("import sys; sys.modules['oi_kernel'] = None\n"  # `import oi_kernel` fails
                "from ipykernel.kernelapp import launch_new_instance; launch_new_instance()")


@pytest.mark.kernel
def test_the_probe_loads_into_a_plain_python3_kernel_without_oi_kernel(tmp_path):
    """As ``ChildRunner`` sends it to any child (a remote gateway's kernel has no oi_kernel):
    ``BOOT`` as a silent execution, then the probe called in a user expression."""
    from jupyter_client.kernelspec import KernelSpecManager

    spec = tmp_path / "kernels" / "plain"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-I", "-c", PLAIN_KERNEL, "-f", "{connection_file}"],
        "display_name": "plain python3", "language": "python"}))
    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    specs = KernelSpecManager(kernel_dirs=[str(tmp_path / "kernels")])
    with KernelSession("plain", env=env, cwd=str(work), kernel_spec_manager=specs) as k:
        assert "ModuleNotFoundError" in k.execute("import oi_kernel").text
        assert k.execute(probe.BOOT, silent=True).status == "ok"

        def call(*args: str) -> dict:
            expression = f"__import__('sys').modules['_oi_probe'].call({', '.join(args)})"
            reply = k.execute("", silent=True, user_expressions={"r": expression}).reply
            return json.loads(ast.literal_eval(reply["content"]["user_expressions"]["r"]
                                               ["data"]["text/plain"]))

        assert k.execute("x = 1; open('a.txt', 'w').write('before')").status == "ok"
        assert call("'checkpoint'", "1", "'.oi_checkpoints/s1'")["id"] == 1
        assert k.execute("x = 2; open('a.txt', 'w').write('after')").status == "ok"
        assert call("'restore'", "1")["restored"] == ["a.txt"]
        shown = k.execute("print(x, open('a.txt').read(), sorted(n for n in dir() if 'probe' "
                          "in n), sorted(m for m, v in __import__('sys').modules.items() "
                          "if m.startswith('oi_kernel') and v is not None))").stdout
        assert shown.split() == ["1", "before", "[]", "[]"]


@pytest.mark.unit
def test_copy_capped_copies_under_its_cap_and_nothing_over_it(tmp_path, monkeypatch):
    """The one capped copy the preview's scratch copy and verify's working copy share: named
    folders and files left out at every depth (a left-out folder's files not counted), links
    kept as links, nothing copied over the cap, and each caller's own words for that."""
    from oi_kernel.errors import OIError
    from oi_kernel.execution.probe import scratch
    from oi_kernel.record import verify

    src = tmp_path / "src"
    (src / "sub" / ".git").mkdir(parents=True)
    (src / "sub" / ".git" / "HEAD").write_text("x" * 500)
    (src / "sub" / "data.txt").write_text("12345")
    (src / ".git").write_text("a file named so")
    (src / "link").symlink_to("sub/data.txt")

    assert scratch.copy_capped(src, tmp_path / "a", {".git"}, 100)
    copied = sorted(str(p.relative_to(tmp_path / "a")) for p in (tmp_path / "a").rglob("*"))
    assert copied == ["link", "sub", "sub/data.txt"]
    assert os.readlink(tmp_path / "a" / "link") == "sub/data.txt"
    with pytest.raises(FileExistsError):
        scratch.copy_capped(src, tmp_path / "a", {".git"}, 100)
    (tmp_path / "e").mkdir()  # (verify copies into a folder that is there)
    assert scratch.copy_capped(src, tmp_path / "e", {".git"}, 100, dirs_exist_ok=True)
    assert (tmp_path / "e" / "sub" / "data.txt").read_text() == "12345"

    assert not scratch.copy_capped(src, tmp_path / "b", {".git"}, 20)
    assert not (tmp_path / "b").exists()
    monkeypatch.setattr(scratch, "SCRATCH_MAX_BYTES", 20)
    assert "too large for a scratch copy" in scratch.make_scratch(src, tmp_path / "c", {".git"})
    monkeypatch.setattr(verify, "MAX_COPY_BYTES", 20)
    with pytest.raises(OIError, match="--in-place"):
        verify._copy_dir(src, tmp_path / "d")
    assert not (tmp_path / "c").exists() and not (tmp_path / "d").exists()
