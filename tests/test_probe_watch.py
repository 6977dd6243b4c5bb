"""The probe's file scan kept current by inotify (issue 31, speed): after any sequence of
file operations a watched scan must equal a full walk of the folder, and a tree that cannot
be watched must still be scanned in full. The probe runs in this process (``local_probe``),
on a real folder."""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

import pytest

from oi_kernel.core import change_ignore as CI

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")


@pytest.fixture
def probe():
    from oi_kernel.execution.probe import local_probe

    module = local_probe()
    module._Watch.drop()
    module._Watch.broken, module._Watch.unwatchable = False, None
    defaults, _ = CI.probe_settings("", [], False)
    module.configure(**defaults, watch=True, scan_budget_s=10.0)
    yield module
    module._Watch.drop()
    module.configure(**defaults, scan_budget_s=0.05)


def same_as_a_full_walk(probe, root: Path) -> dict:
    listed_w, listed_f = set(), set()
    watched, complete = probe.scan(str(root), listed=listed_w)
    full, complete_full = probe._walk(str(root), budget_s=10, listed=listed_f)
    assert complete and complete_full
    assert watched == full
    assert listed_w == listed_f
    return watched


def operations(root: Path, rng: random.Random):
    """One random file operation at a time (what a step might do)."""
    while True:
        files = sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink())
        links = sorted(p for p in root.rglob("*") if p.is_symlink())
        folders = sorted([root] + [p for p in root.rglob("*") if p.is_dir()
                                   and not p.is_symlink()])
        folder = rng.choice(folders)
        op = rng.choice(["create", "append", "truncate", "remove", "rename", "move", "mkdir",
                         "rmtree", "utime", "symlink", "hardlink", "replace", "tool"])
        target = rng.choice(files) if files else None
        if op == "create" or target is None:
            (folder / f"n{rng.randrange(10**6)}.txt").write_text("new")
        elif op == "append":
            with open(target, "a") as fh:
                fh.write("more")
        elif op == "truncate":
            os.truncate(target, 0)
        elif op == "remove":
            rng.choice([target, *links]).unlink()
        elif op == "rename":
            target.rename(target.with_name(f"r{rng.randrange(10**6)}"))
        elif op == "move":
            target.rename(folder / f"m{rng.randrange(10**6)}")
        elif op == "mkdir":
            sub = folder / f"d{rng.randrange(10**6)}"
            sub.mkdir()
            (sub / "inside.txt").write_text("in a new folder")
        elif op == "rmtree":
            if folder != root:
                import shutil

                shutil.rmtree(folder)
        elif op == "utime":
            os.utime(target, ns=(10**18, 10**18))
        elif op == "symlink":
            (folder / f"s{rng.randrange(10**6)}").symlink_to(target)
        elif op == "hardlink":  # (not from a folder never scanned: see _Watch's limits)
            if ".cache" not in folder.parts:
                os.link(target, folder / f"h{rng.randrange(10**6)}")
        elif op == "replace":  # an atomic save: write a temporary, rename it over the file
            tmp = target.with_name(target.name + ".tmp")
            tmp.write_text("replaced content")
            os.replace(tmp, target)
        elif op == "tool":  # in a tools' folder: never listed
            (root / ".cache").mkdir(exist_ok=True)
            (root / ".cache" / f"c{rng.randrange(10**6)}").write_text("cache")
        yield op


@pytest.mark.unit
@pytest.mark.parametrize("seed", range(10))
def test_a_watched_scan_equals_a_full_walk_after_any_operations(probe, tmp_path, seed):
    rng = random.Random(seed)
    for i in range(30):
        (tmp_path / f"d{i % 4}").mkdir(exist_ok=True)
        (tmp_path / f"d{i % 4}" / f"f{i}.txt").write_text("x" * i)
    same_as_a_full_walk(probe, tmp_path)
    assert probe._Watch.files is not None  # the first scan set up the watching
    ops = operations(tmp_path, rng)
    for _ in range(40):
        for _ in range(rng.randrange(1, 4)):  # several operations between two scans
            next(ops)
        same_as_a_full_walk(probe, tmp_path)


@pytest.mark.unit
def test_a_step_that_writes_is_seen_by_end(probe, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data.csv").write_text("a,b\n")
    probe.begin()
    probe.begin()  # the second begin's scan comes from the watch
    with open(tmp_path / "data.csv", "a") as fh:
        fh.write("1,2\n")
    (tmp_path / "out.txt").write_text("new")
    changes = probe.end()
    assert [(f["path"], f["change"]) for f in changes["files"]] == [
        ("data.csv", "modified"), ("out.txt", "created")]
    assert changes["scan_complete"] is True


@pytest.mark.unit
def test_a_tree_that_cannot_be_watched_is_scanned_in_full(probe, tmp_path):
    for i in range(5):
        (tmp_path / f"f{i}").write_text("x")
    probe.configure(max_files=3)  # more files than the cap: never watched
    found, complete = probe.scan(str(tmp_path))
    assert len(found) == 3 and complete is False
    assert probe._Watch.files is None
    probe.configure(max_files=20_000)
    assert probe.scan(str(tmp_path)) == (probe._walk(str(tmp_path), budget_s=10)[0], True)


@pytest.mark.unit
def test_without_inotify_every_scan_is_a_full_walk(probe, tmp_path, monkeypatch):
    monkeypatch.setattr(probe._Watch, "broken", True)
    (tmp_path / "a").write_text("x")
    assert probe.scan(str(tmp_path)) == ({"a": probe.scan(str(tmp_path))[0]["a"]}, True)
    (tmp_path / "b").write_text("y")
    assert sorted(probe.scan(str(tmp_path))[0]) == ["a", "b"]
    assert probe._Watch.files is None
