"""``oi-kernel verify`` of an export moved to another folder, as a user meets it: a session on
the Open Interpreter kernel reads ``data/sales.csv`` (and writes ``summary.txt``, which is an
output, not an input); ``%export`` records the files it read (path, size, sha256, the step);
the export is copied into a new folder, and ``verify`` there names what it needs before
running anything, takes it from ``--inputs DIR``, and names an input whose content changed.
A real kernel, litellm over HTTP to the scripted server, the real CLI."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from tests import llm_server as S
from tests.env import oi_env
from tests.kernel_client import KernelSession

pytestmark = pytest.mark.timeout(300)
SALES = "month,revenue\njan,100\nfeb,250\nmar,175\n"
STEP_1 = ("import csv\nrows = list(csv.DictReader(open('data/sales.csv')))\n"
          "total = sum(int(r['revenue']) for r in rows)\nprint('total', total)")
STEP_2 = ("with open('summary.txt', 'w') as f:\n    f.write(f'total {total}')\n"
          "print(open('summary.txt').read())")


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    """A session that read data/sales.csv in its first step, exported beside its data."""
    work = tmp_path_factory.mktemp("session")
    (work / "data").mkdir()
    (work / "data" / "sales.csv").write_text(SALES)
    with S.ScriptedLLMServer() as server:
        server.enqueue(S.tool_call(STEP_1), S.tool_call(STEP_2), S.text("Total written."))
        env = oi_env(server, work, OI_AUTO_RUN="1")
        with KernelSession(env=env, cwd=str(work)) as ks:
            result = ks.execute("add up the revenue in data/sales.csv and write a summary")
            assert result.status == "ok" and "total 525" in result.text, result.text
            assert ks.execute("%export session.ipynb").status == "ok"
    return work


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "oi_kernel.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=240, env=os.environ.copy())


def test_the_export_records_what_the_session_read(exported):
    nb = nbformat.read(exported / "session.ipynb", as_version=4)
    inputs = nb.metadata["oi_kernel"]["inputs"]
    digest = hashlib.sha256(SALES.encode()).hexdigest()
    assert inputs == [{"path": "data/sales.csv", "size": len(SALES), "sha256": digest,
                       "step": 1}], json.dumps(inputs)
    # summary.txt was written by the session before it was read back: an output
    assert all(i["path"] != "summary.txt" for i in inputs)


def test_verify_beside_its_inputs_passes(exported):
    done = cli("verify", "session.ipynb", cwd=exported)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "OK: 2 of 2 code cells reproduce" in done.stdout


def test_moved_without_its_inputs_names_them_before_running(exported, tmp_path):
    shutil.copy(exported / "session.ipynb", tmp_path / "session.ipynb")
    done = cli("verify", "session.ipynb", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "needs data/sales.csv, read in step 1: missing" in done.stderr
    assert "--inputs DIR" in done.stderr and "Nothing was run" in done.stderr
    assert "NameError" not in done.stderr + done.stdout  # no cascade: nothing ran
    assert "FileNotFoundError" not in done.stderr + done.stdout


def test_moved_with_inputs_dir_passes_and_leaves_the_folder_alone(exported, tmp_path):
    shutil.copy(exported / "session.ipynb", tmp_path / "session.ipynb")
    done = cli("verify", "session.ipynb", "--inputs", str(exported), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "OK: 2 of 2 code cells reproduce" in done.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["session.ipynb"]  # ran in a copy


def test_an_input_that_changed_is_named(exported, tmp_path):
    shutil.copy(exported / "session.ipynb", tmp_path / "session.ipynb")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "sales.csv").write_text(SALES.replace("250", "260"))  # same size
    done = cli("verify", "session.ipynb", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "needs data/sales.csv, read in step 1: changed: its sha256" in done.stderr
    (tmp_path / "data" / "sales.csv").write_text(SALES + "apr,1\n")
    done = cli("verify", "session.ipynb", cwd=tmp_path)
    grown = len(SALES) + len("apr,1\n")
    assert f"changed: {grown} bytes, the session read {len(SALES)}" in done.stderr, done.stderr
    assert f"Looked beside the notebook ({tmp_path})" in done.stderr
