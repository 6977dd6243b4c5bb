"""Checkpoints of a namespace of builtin data are a copy pickled at once, not a fork (issue 31:
a fork costs page tables, a copied page for every page written until the next checkpoint,
and its teardown, ~25 ms of CPU per instruction); anything else still gets a fork, and a
fork still dies with the process that made it. The probe runs in a fresh interpreter (it
keeps the checkpoints of ``__main__``'s namespace)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


HEADER = f"""
import json, os, sys
sys.path.insert(0, {str(REPO)!r})
from oi_kernel.execution.probe import local_probe
P = local_probe()
def cp(i, **settings):
    return json.loads(P.call("checkpoint", i, os.path.abspath("store"), settings=settings))
def restore(i):
    return json.loads(P.call("restore", i))
"""


def run(code: str, cwd: Path) -> dict:
    done = subprocess.run([sys.executable, "-c", HEADER + code], cwd=cwd, text=True,
                          capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.kernel
def test_builtin_data_is_copied_not_forked_and_restored_exactly(tmp_path):
    r = run("""
nested = {"rows": [1, 2.5, -0.0, 10**40, "text", b"raw", None, True], (1, "k"): {3, 4}}
alias = nested
cyc = [1]
cyc.append(cyc)
fs = frozenset({"a"})
def f(): return 1
_info = cp(1)
nested["rows"].append("later")
alias = None
cyc[0] = 99
del fs
def f(): return 2
new_name = 5
report = restore(1)
print(json.dumps(dict(info=_info, report=report, rows=repr(nested["rows"]),
    key=repr(nested[(1, "k")]), same=alias is nested, cyc=cyc[0], loop=cyc[1] is cyc,
    fs=repr(fs), f=f(), new="new_name" in dir(),
    types=[type(v).__name__ for v in (nested, fs)])))
""", tmp_path)
    assert r["info"]["copy"] is True and r["info"]["fork"] is False
    assert r["rows"] == "[1, 2.5, -0.0, 10000000000000000000000000000000000000000, 'text', " \
                        "b'raw', None, True]"
    assert r["key"] == "{3, 4}" and r["same"] is True  # shared between names: still shared
    assert (r["cyc"], r["loop"]) == (1, True)
    assert r["fs"] == "frozenset({'a'})"
    assert r["f"] == 1 and not r["new"]  # functions by reference; new names removed
    assert r["types"] == ["dict", "frozenset"]
    assert r["report"]["problems"] == [] and r["report"]["removed_variables"] == ["new_name"]


@pytest.mark.kernel
def test_anything_else_is_forked_and_its_code_is_not_run_at_checkpoint(tmp_path):
    """An instance (even inside a list), a subclass of a builtin: a fork, and pickling
    code of the user's (``__reduce__``) runs only in the fork, at restore."""
    r = run("""
_calls = []
class Noisy:
    def __reduce__(self):
        _calls.append("reduce")
        return (Noisy, ())
class Text(str):
    pass
_infos = {}
items = [1, Noisy()]
_infos["instance in a list"] = cp(1)
restore(1)
del items
t = Text("x")
_infos["str subclass"] = cp(2)
t = None
restore(2)
_t_kind = type(t).__name__
del t
z = 1 + 2j
_infos["complex"] = cp(3)
del z
buf = bytearray(b"ab")
_infos["bytearray"] = cp(4)
del buf
big = list(range(1000))
_infos["over the budget"] = cp(5, copy_max_bytes=1000)
big.append(1)
restore(5)
print(json.dumps(dict(infos=_infos, calls=_calls, t=_t_kind, big=len(big))))
""", tmp_path)
    for why, info in r["infos"].items():
        assert (info["fork"], info["copy"]) == (True, False), why
    assert r["calls"] == [] and r["t"] == "Text" and r["big"] == 1000


@pytest.mark.kernel
def test_a_forked_checkpoint_restores_and_the_fork_dies_with_its_process(tmp_path):
    code = HEADER + """
class Box:
    def __init__(self, v): self.v = v
box = Box(1)
_info = cp(1)
box.v = 2
report = restore(1)
print(json.dumps(dict(info=_info, v=box.v, problems=report["problems"])))
cp(2)
print(P._State.checkpoints[2].pid, flush=True)
import time
worker = os.fork()
if worker == 0:  # a worker of the user's holds the fork's pipe open: no end-of-file for it
    time.sleep(60)
    os._exit(0)
print(worker, flush=True)
sys.stdin.read()  # until the test kills this process
"""
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=tmp_path, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    worker = None
    try:
        first = json.loads(proc.stdout.readline())
        fork = int(proc.stdout.readline())
        worker = int(proc.stdout.readline())
        assert first["info"]["fork"] is True and first["v"] == 1 and first["problems"] == []
        assert alive(fork)
    finally:
        proc.kill()
        proc.wait()
    try:
        deadline = time.monotonic() + 10
        while alive(fork) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(fork), "a checkpoint's fork outlived its process"
    finally:
        if worker:
            os.kill(worker, 9)


def alive(pid: int) -> bool:
    """Running (a zombie waiting for whoever adopted it to collect it is not)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.unit
def test_the_copy_refuses_other_objects_before_their_code_runs_and_keeps_gc_as_it_was():
    """The pickler's safety net (an object put in after the walk) and the collector paused
    only while pickling."""
    import gc
    import io
    import pickle

    from oi_kernel.execution.probe import values as PC

    calls = []

    class Noisy:
        def __reduce__(self):
            calls.append("reduce")
            return (Noisy, ())

    with pytest.raises(pickle.PicklingError, match="not builtin data: Noisy"):
        PC._PlainPickler(io.BytesIO(), protocol=5).dump({"a": [1, Noisy()]})
    assert calls == []
    assert not PC._plain_within([[1, (2, Noisy())]], 1000)
    assert PC._plain_within([{"k": [1, 2.5, "x", b"y", None, True, frozenset({3})]}], 1000)
    assert not PC._plain_within(["x" * 2000], 1000)
    assert not PC._plain_within([[[i] for i in range(PC._MAX_CONTAINERS)]], 10**9)
    assert PC._plain_within([[[i] for i in range(PC._MAX_CONTAINERS - 1)]], 10**9)
    values = {"a": [1, 2], "b": "text"}
    was = gc.isenabled()
    try:
        for enabled in (True, False):
            (gc.enable if enabled else gc.disable)()
            copy = PC._copy_plain(values, {"a": None, "b": None})
            assert pickle.loads(copy) == (values, {}) and gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
