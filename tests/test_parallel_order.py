"""How scripts/test's parallel pass orders and splits the suite (tests/conftest.py): a worker
takes whole modules, the longest first, and every test that drives Chromium is left to the
serial pass."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests import conftest

REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.unit


class FakeItem:
    def __init__(self, nodeid: str, lane: str) -> None:
        self.nodeid = nodeid
        self.lane = lane

    def iter_markers(self) -> list[pytest.Mark]:
        return [pytest.mark.__getattr__(self.lane).mark]


def test_the_longest_modules_go_first_and_a_module_stays_in_order(monkeypatch) -> None:
    monkeypatch.setattr(conftest, "MODULE_SECONDS", {"test_long": 300})
    items = [
        FakeItem("tests/test_pure.py::test_a", "unit"),
        FakeItem("tests/test_pure.py::test_b", "unit"),
        FakeItem("tests/test_two.py::test_a", "kernel"),
        FakeItem("tests/test_two.py::test_b[x]", "kernel"),
        FakeItem("tests/test_long.py::test_z", "kernel"),
        FakeItem("tests/test_long.py::test_a", "kernel"),
        FakeItem("tests/test_one.py::test_a", "kernel"),
    ]
    conftest._longest_modules_first(items)  # type: ignore[arg-type]
    assert [i.nodeid for i in items] == [
        "tests/test_long.py::test_z",  # listed: 300 s
        "tests/test_long.py::test_a",
        "tests/test_two.py::test_a",  # not listed: 2 s per kernel test
        "tests/test_two.py::test_b[x]",
        "tests/test_one.py::test_a",
        "tests/test_pure.py::test_a",  # unit tests cost next to nothing
        "tests/test_pure.py::test_b",
    ]


def test_equal_modules_keep_their_collection_order() -> None:
    items = [FakeItem(f"tests/test_{name}.py::test_x", "kernel") for name in "cab"]
    conftest._longest_modules_first(items)  # type: ignore[arg-type]
    assert [i.nodeid for i in items] == [f"tests/test_{name}.py::test_x" for name in "cab"]


@pytest.mark.kernel
def test_the_parallel_pass_leaves_out_every_browser_test() -> None:
    """What scripts/test's parallel pass selects (-m "not serial") from the browser modules
    (and any module that drives Chromium) is nothing."""
    modules = sorted(str(p.relative_to(REPO)) for p in (REPO / "tests").glob("test_*.py")
                     if p.name.startswith("test_browser") or p.name == "test_notebook7.py")
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                           "-p", "no:cacheprovider", "-m", "not serial", *modules],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 5, done.stdout[-2000:]  # no tests collected
    deselected = re.search(r"no tests collected \((\d+) deselected\)", done.stdout)
    assert deselected and int(deselected.group(1)) >= len(modules), done.stdout[-2000:]


def test_a_test_driving_chromium_is_serial_whatever_its_lane() -> None:
    launch, playwright = "launch_" + "chromium", "sync_" + "playwright"  # (not this test)
    assert conftest._CHROMIUM.search(f"browser = {launch}(pw)")
    assert conftest._CHROMIUM.search(f"with {playwright}() as pw:")
    assert not conftest._CHROMIUM.search("KernelSession(env=env)  # not in Chromium")
