"""What each step changed, and undo that rolls back: pure text, the probe in this process,
then a real kernel, ``%%oi`` and the API talking to the scripted server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oi_kernel.core import changes as C
from tests import llm_server as S
from tests.kernel_client import KernelSession
from tests.test_kernel import kernel_env

SILENT_STEP = (
    "alpha_var = 2\n"
    "beta_var = [1, 2, 3]\n"
    "open('made.txt', 'w').write('new file')\n"
    "_ = open('kept.txt', 'w').write('overwritten')\n"
)


# ----------------------------------------------------------------------------- pure text
@pytest.mark.parametrize("change, line", [
    ({"name": "df", "change": "new", "after": "DataFrame 1000×5"}, "df: DataFrame 1000×5 (new)"),
    ({"name": "x", "change": "changed", "before": "int 1", "after": "int 2"}, "x: int 1 → 2"),
    ({"name": "tmp", "change": "deleted", "before": "str 'a'"}, "tmp deleted"),
    ({"name": "xs", "change": "changed", "before": "list[3]", "after": "list[3]"},
     "xs: list[3] (changed in place)"),
    ({"name": "v", "change": "changed", "before": "int 1", "after": "str 'a'"},
     "v: int 1 → str 'a'"),
])
def test_variable_lines(change, line):
    assert C.change_lines({"variables": [change], "files": []}) == [line]


def test_file_lines_headline_and_cut_scan():
    changes = {"variables": [], "scan_complete": False, "files": [
        {"path": "out.csv", "change": "created", "size": 1200},
        {"path": "a.txt", "change": "modified", "size": 12, "before_size": 5},
        {"path": "old.txt", "change": "deleted", "before_size": 3}]}
    lines = C.change_lines(changes)
    assert lines[:3] == ["out.csv (created, 1.2 kB)", "a.txt (modified, 5 bytes → 12 bytes)",
                         "old.txt (deleted)"]
    assert "scan cut short" in lines[3]
    assert C.headline(changes) == "3 files changed"


def test_model_summary_is_bounded_and_long_cell_summaries_collapse():
    many = {"variables": [{"name": f"v{i}", "change": "new", "after": "int 1"}
                          for i in range(100)], "files": []}
    text = C.for_model(many, max_lines=10)
    assert text.count("\n- ") == 11 and "... and 90 more changes" in text
    markup, plain = C.for_cell(many)
    assert "<details class='oi-changes'>" in markup  # collapsed
    short = C.for_cell({"variables": many["variables"][:2], "files": []})[0]
    assert "<details class='oi-changes' open>" in short
    assert C.for_cell({"variables": [], "files": []}) is None and C.for_model(None) == ""


# ----------------------------------------------------------------------------- the probe
PROBE_SCRIPT = """
import json, os, socket, sys, threading
sys.path.insert(0, {repo!r})
from oi_kernel.execution.probe import local_probe
P = local_probe()
class C:
    def __init__(self): self.v = 1
obj, data = C(), {{"rows": [1, 2]}}
alias = data
lock = threading.Lock()
gen = (i for i in range(3))
mixed = [1, socket.socket()]
def f(): return 1
P.call("checkpoint", 1, os.path.abspath("store"))
obj.v = 99
data["rows"].append(3)
del C
def f(): return 2
gen = None
new_name = 5
report = json.loads(P.call("restore", 1))
print(json.dumps(dict(problems=report["problems"], removed=report["removed_variables"],
    v=obj.v, cls=type(obj).__name__, f=f(), rows=data["rows"], same=alias is data,
    lock=type(lock).__name__, mixed="mixed" in dir(), new="new_name" in dir())))
"""


def test_restore_copies_back_mutated_objects_and_names_what_it_cannot(tmp_path):
    import subprocess
    import sys

    repo = str(Path(__file__).resolve().parent.parent)
    out = subprocess.run([sys.executable, "-c", PROBE_SCRIPT.format(repo=repo)], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout.splitlines()[-1])
    assert (r["v"], r["cls"], r["f"], r["rows"], r["same"]) == (1, "C", 1, [1, 2], True)
    assert r["lock"] == "lock" and not r["mixed"] and not r["new"]
    assert r["removed"] == ["new_name"]
    problems = {p["name"]: p for p in r["problems"]}
    assert set(problems) == {"lock", "gen", "mixed"}
    assert "cannot pickle" in problems["lock"]["why"] and problems["lock"]["type"] == "lock"
    assert "gone or was not held" in problems["gen"]["why"]


# ----------------------------------------------------------------------------- the kernel
@pytest.fixture(scope="module")
def rk(_server, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rollback")
    with KernelSession(env=kernel_env(_server, tmp, OI_AUTO_RUN="1"), cwd=str(tmp)) as ks:
        ks.tmp = tmp
        yield ks


@pytest.fixture
def k(rk, _server):
    _server.reset()
    assert rk.execute("%reset").status == "ok"
    py(rk, "get_ipython().run_line_magic('reset', '-f')")
    for p in rk.tmp.iterdir():
        if p.is_file():
            p.unlink()
    return rk


def py(ks, code: str) -> str:
    return ks.execute("%%python\n" + code).stdout


def test_a_silent_step_is_summarized_for_the_model_and_the_cell(k, _server):
    (k.tmp / "kept.txt").write_text("original")
    py(k, "alpha_var = 1")
    _server.enqueue(S.tool_call(SILENT_STEP), S.text("Done."))
    cell = k.execute("set things up quietly")
    assert cell.status == "ok"
    result = [m["content"] for m in _server.requests[-1]["messages"] if m["role"] == "tool"][-1]
    assert "printed nothing" in result
    assert "What the code changed:" in result
    for line in ("alpha_var: int 1 → 2", "beta_var: list[3] (new)",
                 "made.txt (created, 8 bytes)", "kept.txt (modified, 8 bytes → 11 bytes)"):
        assert line in result
    shown = [o for o in cell.of_type("display_data") if "text/html" in o["content"]["data"]
             and "oi-changes" in o["content"]["data"]["text/html"]]
    assert len(shown) == 1
    assert "alpha_var: int 1 → 2" in shown[0]["content"]["data"]["text/plain"]
    assert shown[0]["content"]["metadata"]["oi"]["changes"]["files"]
    assert "_oi_probe" not in py(k, "print(sorted(n for n in dir() if 'oi' in n))")


def test_undo_restores_variables_and_files_and_names_what_it_cannot(k, _server):
    (k.tmp / "kept.txt").write_text("original")
    py(k, "alpha_var = 1\nimport socket\nconn = socket.socket()")
    _server.enqueue(S.tool_call(SILENT_STEP + "conn.close()\n"), S.text("Done."))
    assert k.execute("change things").status == "ok"
    listed = k.execute("%checkpoints").text
    assert "change things" in listed
    undone = k.execute("%undo").text
    assert "Rolled back to before instruction" in undone
    assert "`conn` (socket" in undone  # named, never silently wrong
    assert "Files restored: `kept.txt`" in undone and "Files removed: `made.txt`" in undone
    state = py(k, "print(alpha_var, 'beta_var' in dir(), type(conn).__name__)")
    assert state == "1 False socket\n"
    assert "Files not restored" not in undone
    assert (k.tmp / "kept.txt").read_text() == "original"
    assert not (k.tmp / "made.txt").exists()


def test_undo_keeps_the_users_own_new_files_and_exports(k, _server):
    """Undo puts the kernel back (variables, and files the kernel wrote: steps and direct
    cells alike) but never removes what appeared from outside it between steps: a file the
    user wrote by hand, an export of the session."""
    _server.enqueue(S.tool_call("open('made.txt', 'w').write('by a step')"), S.text("Done."))
    assert k.execute("make a file").status == "ok"
    (k.tmp / "mine.txt").write_text("written by the user meanwhile")
    py(k, "open('direct.txt', 'w').write('a direct cell')")
    assert k.execute(f"%export {k.tmp / 'session.ipynb'}").status == "ok"
    undone = k.execute("%undo").text
    assert "Files removed: `direct.txt`, `made.txt`." in undone
    assert not (k.tmp / "made.txt").exists() and not (k.tmp / "direct.txt").exists()
    left = undone.split("Files left in place")[1]
    for name in ("mine.txt", "session.ipynb"):
        assert (k.tmp / name).exists(), (name, undone)
        assert f"`{name}`" in left, undone


def test_undo_two_and_restore_k(k, _server):
    py(k, "n = 0")
    for i in range(1, 4):
        _server.enqueue(S.tool_call(f"n = {i}\nopen('f{i}.txt', 'w').write('x')"),
                        S.text("ok"))
        assert k.execute(f"set n to {i}").status == "ok"
    assert "Rolled back" in k.execute("%undo 2").text
    assert py(k, "print(n)") == "1\n"
    assert sorted(p.name for p in k.tmp.iterdir() if p.is_file()) == ["f1.txt"]
    rows = [line.split("|") for line in k.execute("%checkpoints").text.splitlines()]
    numbers = [int(r[1]) for r in rows if len(r) > 3 and "set n to" in r[3]]
    assert len(numbers) == 1 and "set n to 1" in [r[3].strip() for r in rows if len(r) > 3]
    restored = k.execute(f"%restore {numbers[0]}").text
    assert "Rolled back" in restored and "Forgot 1 instruction" in restored
    assert py(k, "print(n)") == "0\n" and not (k.tmp / "f1.txt").exists()
    assert "There is no checkpoint 999" in k.execute("%restore 999").text


def test_undo_after_a_restart_restores_files_and_says_variables_are_gone(k, _server):
    (k.tmp / "kept.txt").write_text("original")
    _server.enqueue(S.tool_call("v = 5\nopen('kept.txt', 'w').write('changed')"), S.text("ok"))
    assert k.execute("change kept").status == "ok"
    assert k.execute("%%python\nimport os; os._exit(1)").status in ("ok", "error")
    undone = k.execute("%undo").text
    assert "Variables were not restored" in undone and "restarted" in undone
    assert "Files restored: `kept.txt`" in undone
    assert (k.tmp / "kept.txt").read_text() == "original"


def test_log_and_export_keep_the_changes(k, _server, tmp_path):
    _server.enqueue(S.tool_call("gamma = 3"), S.text("ok"))
    assert k.execute("make gamma").status == "ok"
    log_path = k.execute("%log").text.split("`")[1]
    records = [json.loads(line) for line in Path(log_path).read_text().splitlines()]
    execs = [r for r in records if r["event"] == "execution" and r.get("code") == "gamma = 3"]
    assert execs[-1]["changes"]["variables"][0]["name"] == "gamma"
    assert any(r["event"] == "checkpoint" for r in records)
    out = tmp_path / "x.ipynb"
    assert k.execute(f"%export {out}").status == "ok"
    nb = json.loads(out.read_text())
    metas = [c["metadata"].get("oi_kernel", {}) for c in nb["cells"] if c["cell_type"] == "code"]
    assert any((m.get("changes") or {}).get("variables") for m in metas)


# ----------------------------------------------------------------------------- %%oi
def test_magic_summarizes_and_undoes_in_the_users_namespace(llm_server, tmp_path):
    from tests.env import oi_env

    (tmp_path / "kept.txt").write_text("original")
    env = oi_env(llm_server, tmp_path, OI_AUTO_RUN="1")
    with KernelSession(kernel_name="python3", env=env, cwd=str(tmp_path)) as ks:
        assert ks.execute("%load_ext oi_kernel").status == "ok"
        assert ks.execute("alpha_var = 1\nimport threading\nlock = threading.Lock()").status == "ok"
        llm_server.enqueue(S.tool_call(SILENT_STEP), S.text("Done."))
        cell = ks.execute("%%oi\nset things up quietly")
        assert cell.status == "ok", cell.text
        result = [m["content"] for m in llm_server.requests[-1]["messages"]
                  if m["role"] == "tool"][-1]
        assert "alpha_var: int 1 → 2" in result and "made.txt (created, 8 bytes)" in result
        assert "beta_var: list[3] (new)" in cell.text  # shown in the cell
        assert "set things up quietly" in ks.execute("%oi checkpoints").text
        undone = ks.execute("%oi undo").text
        assert "Rolled back" in undone and "`lock` (lock" in undone
        assert ks.execute("print(alpha_var, 'beta_var' in dir())").stdout == "1 False\n"
        assert (tmp_path / "kept.txt").read_text() == "original"
        assert not (tmp_path / "made.txt").exists()


def test_magic_undo_two_and_restore_k(llm_server, tmp_path):
    from tests.env import oi_env

    env = oi_env(llm_server, tmp_path, OI_AUTO_RUN="1")
    with KernelSession(kernel_name="python3", env=env, cwd=str(tmp_path)) as ks:
        assert ks.execute("%load_ext oi_kernel").status == "ok"
        assert ks.execute("n = 0").status == "ok"
        for i in range(1, 4):
            llm_server.enqueue(S.tool_call(f"n = {i}\nopen('f{i}.txt', 'w').write('x')"),
                               S.text("ok"))
            assert ks.execute(f"%%oi\nset n to {i}").status == "ok"
        assert "Rolled back" in ks.execute("%oi undo 2").text
        assert ks.execute("print(n)").stdout == "1\n"
        assert sorted(p.name for p in tmp_path.glob("f*.txt")) == ["f1.txt"]
        rows = [line.split("|") for line in ks.execute("%oi checkpoints").text.splitlines()]
        numbers = [int(r[1]) for r in rows if len(r) > 3 and "set n to 1" in r[3]]
        assert len(numbers) == 1
        assert "Rolled back" in ks.execute(f"%oi restore {numbers[0]}").text
        assert ks.execute("print(n)").stdout == "0\n" and not (tmp_path / "f1.txt").exists()


# ----------------------------------------------------------------------------- the API
def test_api_undo_two_names_what_it_cannot_restore_and_survives_a_restart(llm_server,
                                                                         tmp_path):
    from tests.test_api import make

    with make(llm_server, tmp_path, auto_run=True) as it:
        it.run_code("n = 0")
        for i in range(1, 3):
            llm_server.enqueue(S.tool_call(f"n = {i}\nimport threading\nlock{i} = "
                                           "threading.Lock()"), S.text("ok"))
            list(it.chat(f"set n to {i}"))
        undone = it.undo(2)
        assert "Rolled back" in undone and "`lock" in undone  # a lock cannot be kept
        assert it.run_code("print(n)").text.strip() == "0"
        (tmp_path / "kept.txt").write_text("original")
        llm_server.enqueue(S.tool_call("n = 9\nopen('kept.txt', 'w').write('changed')"),
                           S.text("ok"))
        list(it.chat("change kept"))
        it.restart()
        undone = it.undo()
        assert "Variables were not restored" in undone and "Files restored: `kept.txt`" in undone
        assert (tmp_path / "kept.txt").read_text() == "original"


def test_a_file_over_the_size_budget_is_named_not_restored(llm_server, tmp_path):
    from tests.test_api import make

    (tmp_path / "big.txt").write_text("b" * 1000)
    (tmp_path / "small.txt").write_text("s")
    with make(llm_server, tmp_path, auto_run=True) as it:
        it.engine.max_file_bytes = 100
        llm_server.enqueue(S.tool_call("for f in ('big.txt', 'small.txt'):\n"
                                       "    open(f, 'w').write('changed')"), S.text("ok"))
        list(it.chat("change both"))
        undone = it.undo()
    assert "big.txt (1,000 bytes: over the size budget)" in undone
    assert (tmp_path / "small.txt").read_text() == "s"
    assert (tmp_path / "big.txt").read_text() == "changed"


def test_api_changes_undo_checkpoints_and_restore(llm_server, tmp_path):
    from tests.test_api import make

    (tmp_path / "kept.txt").write_text("original")
    with make(llm_server, tmp_path, auto_run=True) as it:
        it.run_code("alpha_var = 1")
        llm_server.enqueue(S.tool_call(SILENT_STEP), S.text("Done."))
        outputs = [c for c in it.chat("set things up") if type(c).__name__ == "OutputChunk"]
        assert "alpha_var: int 1 → 2" in outputs[0].changes_text
        assert outputs[0].changes["files"]
        llm_server.enqueue(S.tool_call("alpha_var = 3"), S.text("Done."))
        list(it.chat("three"))
        assert [c.instruction for c in it.checkpoints] == ["set things up", "three"]
        assert "Rolled back" in it.undo()
        assert it.run_code("print(alpha_var)").text.strip() == "2"
        assert "Rolled back" in it.restore(it.checkpoints[0].number)
        assert it.run_code("print(alpha_var, 'beta_var' in dir())").text.strip() == "1 False"
        assert (tmp_path / "kept.txt").read_text() == "original"
        assert it.checkpoints == [] and "Nothing to undo" in it.undo()
        list(it.chat("one more"))  # (the scripted server answers "Done.")
        assert (tmp_path / ".oi_checkpoints" / ".gitignore").read_text().endswith("*\n")
    assert not (tmp_path / ".oi_checkpoints").exists()  # the session's saved files are gone


# ----------------------------------------------------------------------------- the sandbox
def test_undo_in_the_sandbox_restores_the_workspace(_server, tmp_path_factory):
    from oi_kernel.execution import sandbox

    if sandbox.unavailable():  # CI and this machine have bubblewrap: this runs there
        pytest.fail(f"bubblewrap is needed for this test: {sandbox.unavailable()}")
    workspace = tmp_path_factory.mktemp("boxed-rollback")
    (workspace / "data.csv").write_text("a,b\n1,2\n")
    env = kernel_env(_server, workspace, OI_SANDBOX="1", OI_AUTO_RUN="1")
    with KernelSession(env=env, cwd=str(workspace)) as ks:
        ks.execute("%%python\nrows = 1")
        _server.enqueue(S.tool_call(
            "rows = 2\nimport os\nos.remove('data.csv')\n_ = open('out.txt', 'w').write('x')"),
            S.text("ok"))
        cell = ks.execute("clean up")
        assert "data.csv (deleted)" in cell.text and "rows: int 1 → 2" in cell.text
        undone = ks.execute("%undo").text
        assert "Files restored: `data.csv`" in undone and "Files removed: `out.txt`" in undone
        assert (workspace / "data.csv").read_text() == "a,b\n1,2\n"
        assert not (workspace / "out.txt").exists()
        assert ks.execute("%%python\nprint(rows)").stdout == "1\n"


def test_a_scan_says_which_folders_it_listed_to_the_end(tmp_path):
    from oi_kernel.execution.probe import local_probe

    probe = local_probe()
    for i in range(3000):
        folder = tmp_path / f"d{i // 100:02d}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{i}.txt").write_text("x")
    listed: set = set()
    _, complete = probe.scan(str(tmp_path), budget_s=0.0, listed=listed)
    assert complete is False and len(listed) < 31
    full: set = set()
    found, complete = probe.scan(str(tmp_path), budget_s=30, listed=full)
    assert complete and len(found) == 3000 and {"", "d00", "d29"} <= full


def test_the_view_adds_changes_to_the_decided_record_or_shows_them_under_the_step():
    from oi_kernel.core import events as E
    from oi_kernel.core.types import CodeBlock, Decision, StepRecord
    from oi_kernel.session.view import TurnView

    sent: list = []
    view = TurnView(lambda kind, content: sent.append((kind, content)))
    changed = {"variables": [{"name": "x", "change": "new", "after": "int 1"}], "files": []}
    carded = Decision("run", "x = 1", shown={"display_id": "card-1", "html": "<div>record</div>",
                                             "plain": "[step 1]"})
    view(E.StepDone(StepRecord(1, CodeBlock("python", "x = 1"), carded, "ok", changes=changed)))
    kind, content = sent[-1]
    assert kind == "update_display_data" and content["transient"]["display_id"] == "card-1"
    assert content["data"]["text/html"].startswith("<div>record</div><details")
    assert content["data"]["text/plain"] == "[step 1]\n1 variable changed:\n  x: int 1 (new)"
    auto = Decision("run", "x = 1", by="auto")
    view(E.StepDone(StepRecord(2, CodeBlock("python", "x = 1"), auto, "ok", changes=changed)))
    assert sent[-1][0] == "display_data" and "x: int 1 (new)" in sent[-1][1]["data"]["text/html"]
    view(E.StepDone(StepRecord(3, CodeBlock("python", "pass"), auto, "ok", changes=None)))
    assert len(sent) == 2  # nothing changed: nothing shown
