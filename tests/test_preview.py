"""Preview (issue 44) as an API user meets it: each step is previewed in a disposable copy of
the real child kernel (nothing real changes, byte for byte), then Run does it for real.
A real child IPython kernel; litellm talks HTTP to the scripted server."""

from __future__ import annotations

import hashlib
from pathlib import Path

from oi_kernel import Interpreter
from oi_kernel.api.chunks import OutputChunk
from oi_kernel.core.types import ApprovalRequest
from oi_kernel.record.session_log import read_log
from tests import llm_server as S

KEY = "sk-test-not-a-real-key-123456"


def make(server: S.ScriptedLLMServer, tmp: Path, **kw) -> Interpreter:
    (tmp / "ws").mkdir(exist_ok=True)
    return Interpreter("openai/scripted", api_base=server.url, api_key=KEY,
                       log_dir=tmp / "logs", cwd=tmp / "ws", **kw)


def tree(root: Path) -> dict[str, str]:
    """Every file under ``root``, by content hash (byte-for-byte comparison)."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


class PreviewFirst:
    """An approval callback that previews each step once, keeps what the preview said and
    what the workspace held meanwhile, then runs it."""

    def __init__(self, ws: Path) -> None:
        self.ws = ws
        self.previews: list = []
        self.trees: list[tuple[dict, dict]] = []

    def __call__(self, request: ApprovalRequest):
        if request.previewed is None:
            self.before = tree(self.ws)
            return {"preview": True}
        self.previews.append(request.previewed)
        self.trees.append((self.before, tree(self.ws)))
        return True


def _setup(ws: Path) -> None:
    (ws / "old.txt").write_text("keep me")
    (ws / "results.csv").write_text("a,b\n1,2\n")


def test_preview_then_run_each_kind_of_step(llm_server, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    _setup(ws)
    steps = [
        "import os\nos.remove('old.txt')",
        "open('results.csv', 'w').write('x\\n' * 1000)",
        "total = 41 + 1\nprint('total', total)",
        "import socket\ntry:\n    socket.create_connection(('127.0.0.1', 9), timeout=5)\n"
        "except OSError as e:\n    print('no network:', type(e).__name__)",
        "raise ValueError('bad input')",
    ]
    for code in steps:
        llm_server.enqueue(S.tool_call(code))
    llm_server.enqueue(S.text("Done."))
    approve = PreviewFirst(ws)
    with make(llm_server, tmp_path, approve=approve) as it:
        chunks = list(it.chat("do the five things"))
        log_path = it.log_path
    deleted, csv, var, net, err = approve.previews
    assert {p.copy for p in approve.previews} == {"overlay"}
    for before, during in approve.trees:  # the preview left the real files as they were
        assert before == during
    assert [f["change"] for f in deleted.changes["files"]] == ["deleted"]
    assert "old.txt (deleted)" in deleted.text()
    assert csv.changes["files"][0]["path"] == "results.csv"
    assert "results.csv (modified, 8 bytes → 2.0 kB)" in csv.text()
    assert [v["name"] for v in var.changes["variables"]] == ["total"]
    assert "total 42" in var.text()
    assert "network: 127.0.0.1:9 (blocked in preview)" in net.text()
    assert "no network: OSError" in net.text()
    assert err.status == "error" and "ValueError: bad input" in err.text()
    # then Run did each for real
    assert not (ws / "old.txt").exists()
    assert (ws / "results.csv").read_text() == "x\n" * 1000
    outputs = [c for c in chunks if isinstance(c, OutputChunk)]
    assert [o.status for o in outputs] == ["ok", "ok", "ok", "ok", "error"]
    assert outputs[2].text == "total 42"
    records = read_log(log_path)
    previews = [r for r in records if r["event"] == "preview"]
    assert [p["step"] for p in previews] == [1, 2, 3, 4, 5]
    decided = [r for r in records if r["event"] == "decision"]
    assert [p["sha256"] for p in previews] == [d["sha256"] for d in decided]
    compared = [r for r in records if r["event"] == "preview_compared"]
    assert [c["same_code"] for c in compared] == [True] * 5
    assert all(c["differed"] == [] for c in compared), compared


def test_a_step_that_runs_forever_is_stopped_in_preview(llm_server, tmp_path):
    llm_server.enqueue(S.tool_call("import time\nwhile True:\n    time.sleep(0.05)"),
                       S.text("Stopped."))
    seen = []

    def approve(request: ApprovalRequest):
        if request.previewed is None:
            return {"preview": True}
        seen.append(request.previewed)
        return False  # the user saw it hang: skip

    with make(llm_server, tmp_path, approve=approve) as it:
        it.engine.preview_timeout = 1.5
        list(it.chat("loop"))
        assert it.run_code("print('alive')").text == "alive"  # the kernel still answers
    [result] = seen
    assert result.status == "timeout"
    assert "Preview stopped after 1.5 s" in result.text()


def test_changes_that_differ_from_the_preview_are_recorded(llm_server, tmp_path):
    code = "import random, pathlib\npathlib.Path(f'out{random.random()}.txt').write_text('x')"
    llm_server.enqueue(S.tool_call(code), S.text("ok"))
    with make(llm_server, tmp_path,
              approve=lambda r: True if r.previewed else {"preview": True}) as it:
        list(it.chat("write a random file"))
        log_path = it.log_path
    [compared] = [r for r in read_log(log_path) if r["event"] == "preview_compared"]
    assert compared["same_code"] is True
    kinds = sorted(line.split(":")[0] for line in compared["differed"])
    assert kinds == ["only in the preview", "only in the real run"]


def test_an_edit_is_previewed_again_and_the_run_says_it_was(llm_server, tmp_path):
    llm_server.enqueue(S.tool_call("x = 1"), S.text("ok"))
    asked = []

    def approve(request: ApprovalRequest):
        asked.append((request.block.code, request.previewed and request.previewed.code))
        if request.previewed is None:
            return {"preview": True}
        if request.previewed.code == "x = 1":
            return {"preview": True, "code": "x = 2"}
        return True

    with make(llm_server, tmp_path, approve=approve) as it:
        list(it.chat("set x"))
        assert it.run_code("print(x)").text == "2"
        log_path = it.log_path
    assert asked == [("x = 1", None), ("x = 1", "x = 1"), ("x = 2", "x = 2")]
    records = read_log(log_path)
    assert [r["code"] for r in records if r["event"] == "preview"] == ["x = 1", "x = 2"]
    [decision] = [r for r in records if r["event"] == "decision"]
    assert (decision["action"], decision["code"]) == ("edited", "x = 2")


def test_flagged_steps_are_previewed_before_they_are_asked_about(llm_server, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "data.csv").write_text("a\n1\n")
    llm_server.enqueue(S.tool_call("import os\nos.remove('data.csv')"), S.tool_call("y = 2"),
                       S.text("ok"))
    first_seen = []

    def approve(request: ApprovalRequest):
        first_seen.append((request.block.code, request.previewed))
        return False

    with make(llm_server, tmp_path, approve=approve) as it:
        it.engine.preview = "flagged"
        list(it.chat("remove the data"))
    (risky, shown), (plain, nothing) = first_seen
    assert "os.remove" in risky and "data.csv (deleted)" in shown.text()
    assert plain == "y = 2" and nothing is None  # no risk flag: not previewed first
    assert (ws / "data.csv").read_text() == "a\n1\n"


def test_the_sandboxed_child_previews_too(llm_server, tmp_path, monkeypatch):
    monkeypatch.setenv("OI_SANDBOX", "1")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "keep.txt").write_text("keep")
    llm_server.enqueue(S.tool_call("open('keep.txt', 'w').write('gone')\nprint('sandboxed')"),
                       S.text("ok"))
    approve = PreviewFirst(ws)
    with make(llm_server, tmp_path, approve=approve) as it:
        list(it.chat("overwrite"))
        assert it.engine.executor.sandboxed
    [result] = approve.previews
    assert result.status == "ok", result.text()
    assert result.copy == "scratch copy"  # the sandbox forbids new user namespaces
    assert "keep.txt (modified, 4 bytes → 4 bytes)" in result.text()
    assert approve.trees[0][0] == approve.trees[0][1]
    assert (ws / "keep.txt").read_text() == "gone"  # then Run, in the sandbox


def test_a_shell_step_and_a_folder_removal_preview_in_the_same_overlay(llm_server, tmp_path):
    ws = tmp_path / "ws"
    (ws / "results" / "2024").mkdir(parents=True)
    (ws / "results" / "2024" / "q1.csv").write_text("q,1\n")
    (ws / "results" / "notes.txt").write_text("n")
    llm_server.enqueue(
        S.tool_call("rm -rf results && mkdir results && echo fresh > results/new.txt "
                    "&& echo done", language="shell"),
        S.tool_call("import shutil\nshutil.rmtree('results')"),
        S.text("ok"))
    approve = PreviewFirst(ws)
    with make(llm_server, tmp_path, approve=approve) as it:
        list(it.chat("start the results over"))
    shell, python = approve.previews
    for before, during in approve.trees:
        assert before == during
    assert shell.status == "ok" and "done" in shell.text(), shell.text()
    assert sorted((f["path"], f["change"]) for f in shell.changes["files"]) == [
        ("results/2024/q1.csv", "deleted"), ("results/new.txt", "created"),
        ("results/notes.txt", "deleted")]
    # then Run did the shell step for real, and the preview of the next one saw its result
    assert sorted((f["path"], f["change"]) for f in python.changes["files"]) == [
        ("results/new.txt", "deleted")]
    assert not (ws / "results").exists()
