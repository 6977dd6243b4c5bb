"""Change summaries list the user's files only (issue 31): tools' folders of a home directory,
notebooks the frontend saves, the session log and the user's patterns (gitignore syntax,
the project's .gitignore) are left out, pruned during the walk; rollback follows the same
rules. The probe in this process, then a real kernel started in a directory that looks like
a home."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from oi_kernel.core import change_ignore as CI
from tests import llm_server as S
from tests.kernel_client import KernelSession
from tests.test_kernel import kernel_env

TOOL_FILES = {
    ".ipython/profile_default/history.sqlite": "h",
    ".ipython/profile_default/history.sqlite-journal": "j",
    ".jupyter/lab/workspaces/default-37a8.jupyterlab-workspace": "{}",
    ".local/share/jupyter/runtime/kernel-1.json": "{}",
    ".cache/matplotlib/fontlist.json": "[]",
    ".config/app/settings.toml": "a = 1",
    ".ipynb_checkpoints/analysis-checkpoint.ipynb": "{}",
    ".virtual_documents/analysis.ipynb": "",
    "__pycache__/mod.cpython-311.pyc": "",
    ".git/index": "",
    "node_modules/x/index.js": "",
    ".python_history": "",
}


def home_like(root: Path, ipython: bool = True) -> None:
    for rel, text in TOOL_FILES.items():
        if rel.startswith(".ipython/") and not ipython:
            continue  # a real kernel creates its own history there
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "analysis.ipynb").write_text("{}")
    (root / "sales.csv").write_text("month,total\n1,3\n")


def touch_everything(root: Path) -> None:
    """What tools and the frontend do while a step runs."""
    for rel in TOOL_FILES:
        (root / rel).write_text("changed by a tool, longer than before")
    (root / "analysis.ipynb").write_text('{"cells": []}')  # the frontend's autosave
    (root / ".~analysis.ipynb").write_text("{}")  # its atomic save's temporary file


@pytest.fixture
def probe():
    from oi_kernel.execution.probe import local_probe

    module = local_probe()
    yield module
    defaults, _ = CI.probe_settings("", [], False)
    module.configure(**defaults)


def scanned(probe, root: Path, patterns=(), gitignore=True) -> dict:
    settings, problem = CI.probe_settings(str(root), list(patterns), gitignore)
    assert problem == ""
    probe.configure(**settings)
    found, complete = probe.scan(str(root), budget_s=10)
    assert complete
    return found


@pytest.mark.unit
def test_tools_folders_are_pruned_and_user_files_listed(probe, tmp_path):
    home_like(tmp_path)
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "q1.txt").write_text("x")
    assert sorted(scanned(probe, tmp_path)) == ["analysis.ipynb", "reports/q1.txt", "sales.csv"]


@pytest.mark.unit
def test_a_notebook_saved_by_the_frontend_is_not_a_change_but_a_new_one_is(probe, tmp_path):
    home_like(tmp_path)
    before = scanned(probe, tmp_path)
    touch_everything(tmp_path)
    (tmp_path / "report.ipynb").write_text("{}")
    (tmp_path / "data.csv").write_text("a\n1\n")
    after = scanned(probe, tmp_path)
    assert [(c["path"], c["change"]) for c in probe.diff_files(before, after)] == [
        ("data.csv", "created"), ("report.ipynb", "created")]


@pytest.mark.unit
def test_patterns_and_the_gitignore_in_gitignore_syntax(probe, tmp_path):
    (tmp_path / ".gitignore").write_text("scratch/\n*.tmp\n!keep.tmp\n# a comment\n")
    for rel in ("scratch/a.txt", "x.tmp", "keep.tmp", "deep/y.tmp", "deep/z.txt", "out/b.log",
                "out/c.txt", ".config/app.toml"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    found = scanned(probe, tmp_path, patterns=["out/*.log", "!.config/"])
    assert sorted(found) == [".config/app.toml", ".gitignore", "deep/z.txt", "keep.tmp",
                             "out/c.txt"]
    assert "x.tmp" in scanned(probe, tmp_path, gitignore=False)


@pytest.mark.unit
def test_the_repository_roots_gitignore_applies_below_it(probe, tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("/project/build/\n*.bak\n")
    work = tmp_path / "project"
    for rel in ("build/a.o", "b.bak", "c.py"):
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_text("x")
    assert sorted(scanned(probe, work)) == ["c.py"]


@pytest.mark.unit
def test_ignored_is_the_same_rule_for_single_paths(probe, tmp_path):
    scanned(probe, tmp_path, patterns=["scratch/"])
    assert probe.ignored(".ipython/profile_default/history.sqlite")
    assert probe.ignored("scratch/deep/file.txt") and probe.ignored("scratch", True)
    assert probe.ignored(".~analysis.ipynb") and probe.ignored(".python_history")
    assert not probe.ignored("data.csv") and not probe.ignored("src/.env")


@pytest.mark.unit
def test_without_pathspec_the_builtin_list_still_applies(monkeypatch, tmp_path):
    def missing(lines):
        raise ImportError("no pathspec")

    monkeypatch.setattr(CI, "_compiled", missing)
    settings, problem = CI.probe_settings(str(tmp_path), ["*.tmp"], True)
    assert "pip install pathspec" in problem
    assert settings["rules"] == [] and ".ipython" in settings["skip_dirs"]


# ----------------------------------------------------------------------------- a real kernel
STEP_ONE = (
    "import pathlib, time\n"
    "for _rel in {!r}:\n"
    "    pathlib.Path(_rel).write_text('changed by a tool, longer than before')\n"
    "pathlib.Path('analysis.ipynb').write_text('{{\"cells\": []}}')\n"
    "pathlib.Path('scratch.tmp').write_text('ignored by .gitignore')\n"
    "open('data.csv', 'w').write('month,total\\n1,3\\n')\n"
).format(sorted(r for r in TOOL_FILES if not r.startswith(".ipython/")))


@pytest.mark.kernel
@pytest.mark.timeout(240)
def test_a_session_in_a_home_directory_lists_only_the_users_files(_server, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    home_like(home, ipython=False)
    (home / ".gitignore").write_text("*.tmp\n")
    env = kernel_env(_server, home, OI_AUTO_RUN="1", IPYTHONDIR=str(home / ".ipython"),
                     JUPYTER_CONFIG_DIR=str(home / ".jupyter"), HOME=str(home))
    with KernelSession(env=env, cwd=str(home)) as ks:
        _server.enqueue(S.tool_call("total = 3\nprint(total)"),
                        S.tool_call(STEP_ONE), S.text("Saved data.csv."))
        cell = ks.execute("save the totals as data.csv", timeout=120)
        assert cell.status == "ok", cell.text
        history = home / ".ipython" / "profile_default" / "history.sqlite"
        assert os.path.getsize(history) > 100  # the child kernel really wrote its history
        shown = [m["content"]["data"]["text/plain"] for m in cell.of_type("display_data")
                 if "oi-changes" in m["content"]["data"].get("text/html", "")]
        assert shown == ["1 variable changed:\n  total: int 3 (new)",
                         "1 file changed:\n  data.csv (created, 16 bytes)"], shown
        told = [m["content"] for m in _server.requests[-1]["messages"] if m["role"] == "tool"]
        summary = told[-1].split("What the code changed:")[1]
        assert summary.strip() == "- data.csv (created, 16 bytes)", told[-1]
        undone = ks.execute("%undo").text
        assert "Files removed: `data.csv`" in undone, undone
        assert "not restored" not in undone.lower(), undone
        assert not (home / "data.csv").exists()
        assert (home / "sales.csv").read_text() == "month,total\n1,3\n"
        # tools' files and the notebook keep what the tools wrote (never rolled back)
        assert (home / ".jupyter/lab/workspaces/default-37a8.jupyterlab-workspace"
                ).read_text().startswith("changed by a tool")
        assert (home / "analysis.ipynb").read_text() == '{"cells": []}'
