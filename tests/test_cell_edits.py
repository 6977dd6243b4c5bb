"""Edits to existing cells (``edit_cell``, issue 46 item 2) without a browser: the pure parts
(arguments, what the model is told, the tool offered), the review with a stand-in for the
extension's comm, and real python3 kernels through jupyter_client: the console's fallback (no
extension: the edit is proposed as code to run), and the extension's protocol spoken by the
test (decisions, a notebook closed mid-proposal). The browser tests are in
test_browser_cell_edits.py."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from oi_kernel.core import events as E
from oi_kernel.core.codeblocks import ToolArgumentsError
from oi_kernel.core.tools import Toolbox
from oi_kernel.core.types import CodeBlock
from oi_kernel.record.log_writer import record_of
from oi_kernel.session.cell_edits import (
    CELL_EDIT_MIME,
    EDIT_CELL,
    CellEdits,
    cell_ref,
    feedback,
    parse_edits,
)
from tests import llm_server as S
from tests import test_magics
from tests.test_magics import start_kernel


def call(cell: Any, source: Any, call_id: str = "c1") -> CodeBlock:
    return CodeBlock("json", json.dumps({"cell": cell, "new_source": source}), call_id,
                     tool=EDIT_CELL)


# ---------------------------------------------------------------------- pure parts
@pytest.mark.parametrize(("given", "ref"), [
    (3, "3"), ("3", "3"), ("In[3]", "3"), (" In [12] ", "12"), ("a1b2-c3", "a1b2-c3")])
def test_cell_ref_accepts_prompt_numbers_and_ids(given, ref):
    assert cell_ref(given) == ref


@pytest.mark.parametrize("given", [None, True, "  "])
def test_cell_ref_refuses_what_names_no_cell(given):
    with pytest.raises(ToolArgumentsError, match="In \\[n\\]"):
        cell_ref(given)


def test_parse_edits_keeps_good_calls_and_explains_bad_ones():
    bad = CodeBlock("json", json.dumps({"cell": 2}), "c2", tool=EDIT_CELL)
    edits, problems = parse_edits([call(2, "x = 1"), bad, CodeBlock("json", "{", "c3",
                                                                    tool=EDIT_CELL)])
    assert [(e.key, e.cell, e.new_source, e.call_id) for e in edits] == [("0", "2", "x = 1", "c1")]
    assert [p[0] for p in problems] == ["c2", "c3"]
    assert "new_source" in problems[0][1] and "not valid JSON" in problems[1][1]


def test_feedback_says_what_happened_to_each_edit():
    edit = parse_edits([call("In[4]", "y")])[0][0]
    assert "has not run" in feedback(edit, {"action": "accepted"})
    assert "chose to run it" in feedback(edit, {"action": "accepted", "ran": True})
    assert feedback(edit, {"action": "rejected", "reason": "no"}).endswith("Their reason: no")
    assert feedback(edit, {"action": "missing", "reason": "this notebook has In[1]"}) == (
        "There is no cell In[4] in this notebook (this notebook has In[1]). Name a cell by the "
        "number of its In [n] prompt or by its id.")
    assert "was not applied: the notebook was closed" in feedback(
        edit, {"action": "not_applied", "reason": "the notebook was closed"})


def test_edit_cell_is_offered_and_becomes_an_edit_block():
    box = Toolbox()
    assert not box
    engine = type("Engine", (), {"toolbox": box})()
    CellEdits(engine, None, lambda *a: None).attach()
    assert box and engine.cell_edits is not None
    offer = box.offer(budget_tokens=10)  # over budget: still offered (like notebook functions)
    assert EDIT_CELL in [d["function"]["name"] for d in offer.definitions]
    block = box.block_for(EDIT_CELL, json.dumps({"cell": 1, "new_source": "a"}))
    assert block is not None and block.tool == EDIT_CELL and json.loads(block.code)["cell"] == 1


def test_the_log_records_proposals_and_decisions():
    assert record_of(E.CellEditProposed(1, "p", [{"key": "0", "cell": "2", "new_source": "x"}])
                     ) == ("cell_edit_proposed", {"turn": 1, "proposal": "p", "edits": (
                         {"key": "0", "cell": "2", "new_source": "x"},)})
    name, fields = record_of(E.CellEditDecided(1, "p", "0", "2", "rejected", "ann", "why"))
    assert name == "cell_edit_decided" and fields["action"] == "rejected"
    assert fields["by"] == "ann" and fields["reason"] == "why" and fields["ran"] is False


# ---------------------------------------------------------------------- the review
class FakeComms:
    """What CellEdits uses of FrontendComms' CommExtras; ``feature``: an extension announced cell edits."""

    def __init__(self, feature: bool = True) -> None:
        self.feature = feature
        self.handlers: dict[str, Any] = {}
        self.closed: list[Any] = []
        self.sent: list[dict[str, Any]] = []

    def supports(self, name: str) -> bool:
        return self.feature and name == "cell_edits"

    def send(self, comm: Any, data: dict[str, Any]) -> None:
        self.sent.append(data)

    def broadcast(self, data: dict[str, Any]) -> None:
        self.sent.append(data)


def reviewer(comms: FakeComms) -> tuple[CellEdits, list[Any], list[dict[str, Any]]]:
    shown: list[dict[str, Any]] = []
    engine = type("Engine", (), {"toolbox": Toolbox()})()
    edits = CellEdits(engine, comms, lambda kind, content: shown.append(content)).attach()
    return edits, [], shown


def decide(comms: FakeComms, proposal: str, key: str, action: str, **more: Any) -> None:
    comms.handlers["cell_edit_decision"](None, {"header": {"username": "ann"}}, {
        "proposal": proposal, "key": key, "action": action, **more})


async def review_while(edits: CellEdits, events: list[Any], blocks: list[CodeBlock],
                       then: Any) -> tuple[list[CodeBlock], dict[str | None, str]]:
    """Review ``blocks``; ``then(proposal_id)`` plays the user once the card is shown."""
    answers: dict[str | None, str] = {}
    turn = type("Turn", (), {"index": 1})()
    task = asyncio.ensure_future(edits.review(turn, blocks, events.append,
                                              lambda cid, text: answers.__setitem__(cid, text)))
    while not edits.pending:  # noqa: ASYNC110  (the card is shown by the task)
        await asyncio.sleep(0.01)
    then(next(iter(edits.pending)))
    return await asyncio.wait_for(task, 5), answers


def test_a_proposal_waits_for_each_decision_and_answers_each_call():
    comms = FakeComms()
    edits, events, shown = reviewer(comms)
    run = CodeBlock("python", "print(1)", "c0")

    def play(pid: str) -> None:
        decide(comms, pid, "0", "refused", reason="the cell changed since the proposal")
        decide(comms, pid, "0", "accepted", ran=True)
        decide(comms, pid, "0", "rejected")  # too late: the first final decision counts
        decide(comms, pid, "1", "rejected", reason="keep it")

    rest, answers = asyncio.run(review_while(
        edits, events, [call(2, "a", "c1"), run, call("In[3]", "b", "c2")], play))
    assert rest == [run]  # code steps are left to the engine
    assert CELL_EDIT_MIME in shown[0]["data"] and "In[2], In[3]" in shown[0]["data"]["text/plain"]
    assert answers["c1"].startswith("The user accepted") and "chose to run it" in answers["c1"]
    assert answers["c2"].endswith("Their reason: keep it")
    decided = [(e.cell, e.action, e.by) for e in events if isinstance(e, E.CellEditDecided)]
    assert decided == [("2", "refused", "ann"), ("2", "accepted", "ann"), ("3", "rejected", "ann")]
    assert isinstance(events[0], E.CellEditProposed)
    # a reloaded view asks: the decisions of the ended proposal
    state = edits.state(events[0].proposal)
    assert state["open"] is False and state["decided"]["0"]["action"] == "accepted"


def test_a_closed_notebook_leaves_the_proposal_recorded_not_applied():
    comms = FakeComms()
    edits, events, _ = reviewer(comms)

    def close(pid: str) -> None:
        decide(comms, pid, "0", "accepted")
        comms.feature = False  # the last view went away
        for callback in comms.closed:
            callback()

    _, answers = asyncio.run(review_while(edits, events, [call(2, "a", "c1"),
                                                          call(3, "b", "c2")], close))
    assert answers["c1"].startswith("The user accepted")
    assert answers["c2"] == ("The edit to cell In[3] was not applied: the notebook was closed "
                             "before the edit was decided.")
    assert [e.action for e in events if isinstance(e, E.CellEditDecided)] == [
        "accepted", "not_applied"]


def test_without_the_extension_the_edit_is_proposed_as_code():
    edits, events, shown = reviewer(FakeComms(feature=False))
    turn = type("Turn", (), {"index": 1})()
    rest = asyncio.run(edits.review(turn, [call(2, "x = 2", "c1")], events.append,
                                    lambda *a: None))
    assert [(b.language, b.code, b.tool_call_id, b.tool) for b in rest] == [
        ("python", "x = 2", "c1", "")]
    assert shown == [] and "cannot show edits to notebook cells" in events[0].text


def test_frontend_comms_learn_the_feature_from_hello_and_route_decisions(monkeypatch):
    from types import SimpleNamespace

    from oi_kernel.core.engine import Engine
    from oi_kernel.llm.client import LLM
    from oi_kernel.session.frontend_comm import TARGET, FrontendComms
    from tests.test_frontend_comm import FakeComm, FakeManager

    monkeypatch.setenv("OI_MODEL", "openai/scripted")
    engine = Engine(executor=SimpleNamespace(sandboxed=False, cwd="/tmp"), approver=object(),
                    llm=LLM())
    shown: list[Any] = []
    fc = FrontendComms(engine, lambda: None, kind="ipython-magic",
                       send_iopub=lambda kind, content: shown.append(content))
    assert EDIT_CELL in engine.toolbox.builtin and engine.cell_edits is not None
    manager = FakeManager()
    fc.register_target(manager)
    old, new = FakeComm("old"), FakeComm("new")
    manager.targets[TARGET](old, {"content": {"data": {"type": "hello", "version": 1}}})
    assert not fc.extras.supports("cell_edits")  # an extension from before cell edits
    manager.targets[TARGET](new, {"content": {"data": {"type": "hello", "version": 1,
                                                       "features": ["cell_edits", 7]}}})
    assert fc.extras.supports("cell_edits") and fc.extras.features["new"] == {"cell_edits"}
    new.on_msg_cb({"content": {"data": {"type": "cell_edit_state", "proposal": "nope"}}})
    assert new.sent[-1] == {"type": "cell_edit_state", "proposal": "nope", "open": False,
                            "decided": {}}
    new.on_close_cb({})
    assert not fc.extras.supports("cell_edits")
    fc.close()


# ---------------------------------------------------------------------- real kernels
def log_events(tmp: Path, event: str) -> list[dict[str, Any]]:
    return [r for p in sorted((tmp / "logs").rglob("*.jsonl"))
            for r in map(json.loads, p.read_text().splitlines()) if r["event"] == event]


def test_stdin_fallback_proposes_the_new_code_to_run(_server, tmp_path):
    """%%oi from a client with stdin and no extension: told the edit cannot be shown; the new
    source is asked about as code, runs when approved, and its output reaches the model."""
    ks = start_kernel(_server, tmp_path, widgets=False, OI_APPROVAL_UI="stdin")
    try:
        assert ks.execute("x = 1").status == "ok"
        _server.enqueue(S.tool_calls([S.Call(json.dumps({"cell": 2, "new_source": "print(x + 41)"}),
                                             EDIT_CELL)]), S.text("Done."))
        result = ks.execute("%%oi\nmake cell 2 print 42", stdin=["y"])
        assert result.status == "ok", result.text
        assert "cannot show edits to notebook cells" in result.text
        assert "print(x + 41)" in result.prompts[0]
        assert "42" in result.stdout
        told = test_magics.tool_results(_server.requests[-1])
        assert "42" in told[0]
        assert log_events(tmp_path, "cell_edit_proposed") == []
    finally:
        ks.close()


def open_extension_comm(ks: Any) -> str:
    """Open the ``oi_kernel`` comm as the extension does, announcing cell edits."""
    msg = ks.kc.session.msg("comm_open", {"comm_id": "edits-comm", "target_name": "oi_kernel",
                                          "data": {"type": "hello", "version": 1,
                                                   "features": ["cell_edits"]}})
    ks.kc.shell_channel.send(msg)
    return "edits-comm"


def send_comm(ks: Any, comm_id: str, data: dict[str, Any], kind: str = "comm_msg") -> None:
    ks.kc.shell_channel.send(ks.kc.session.msg(kind, {"comm_id": comm_id, "data": data}))


def test_extension_protocol_decisions_and_closed_notebook(_server, tmp_path):
    """The kernel shows the proposal as its mime type, waits for the extension's decisions,
    and a comm closed mid-proposal (the notebook closed) ends it recorded, not applied."""
    import threading
    import time

    ks = start_kernel(_server, tmp_path)
    try:
        comm = open_extension_comm(ks)
        _server.enqueue(S.tool_calls([
            S.Call(json.dumps({"cell": 1, "new_source": "a = 2"}), EDIT_CELL),
            S.Call(json.dumps({"cell": "In[2]", "new_source": "b = 3"}), EDIT_CELL)]),
            S.text("Noted."))
        found: dict[str, Any] = {}

        def play() -> None:
            deadline = time.monotonic() + 60
            while "proposal" not in found and time.monotonic() < deadline:
                time.sleep(0.05)
            send_comm(ks, comm, {"type": "cell_edit_decision", "proposal": found["proposal"],
                                 "key": "0", "action": "accepted", "user": "ann"})
            time.sleep(0.5)
            send_comm(ks, comm, {}, kind="comm_close")

        def watch(msg: dict[str, Any]) -> None:
            data = (msg["content"].get("data") or {}).get(CELL_EDIT_MIME)
            if msg["header"]["msg_type"] == "display_data" and data:
                found.update(data)

        player = threading.Thread(target=play, daemon=True)
        player.start()
        result = ks.execute("%%oi\nchange two cells", on_message=watch)
        player.join(5)
        assert result.status == "ok", result.text
        assert [e["new_source"] for e in found["edits"]] == ["a = 2", "b = 3"]
        told = test_magics.tool_results(_server.requests[-1])
        assert told[0].startswith("The user accepted your edit: cell In[1]")
        assert "was not applied: the notebook was closed" in told[1]
        decided = log_events(tmp_path, "cell_edit_decided")
        assert [(r["cell"], r["action"]) for r in decided] == [("1", "accepted"),
                                                                ("2", "not_applied")]
        assert len(log_events(tmp_path, "cell_edit_proposed")) == 1
    finally:
        ks.close()


def test_jupyter_console_fallback_on_the_open_interpreter_kernel(tmp_path):
    """The real jupyter console (tmux) on the Open Interpreter kernel: the notice says the
    edit cannot be shown, the new code is on screen with the question, and y runs it."""
    import os
    import shutil
    import sys

    from tests.browser_support import ARTIFACTS
    from tests.env import oi_env
    from tests.test_console import Terminal

    if shutil.which("tmux") is None:
        pytest.fail("tmux is not installed: `apt-get install tmux`.", pytrace=False)
    with S.ScriptedLLMServer() as server:
        server.enqueue(S.tool_calls([S.Call(json.dumps(
            {"cell": 1, "new_source": "print('edited', 6 * 7)"}), EDIT_CELL)]),
            S.text("The new code ran instead."))
        env = oi_env(server, tmp_path, OI_AUTO_RUN="0", OI_APPROVAL="always", OI_PROFILE="",
                     LITELLM_LOCAL_MODEL_COST_MAP="True", PATH=os.environ.get("PATH", ""),
                     JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"), TERM="xterm-256color",
                     PYTHONPATH=os.environ.get("PYTHONPATH", ""))
        term = Terminal([sys.executable, "-m", "jupyter_console", "--kernel",
                         "open-interpreter"], env, tmp_path)
        try:
            term.wait_for(r"In \[1\]:", timeout=120)
            term.type("make cell 1 print the answer")
            shown = term.wait_for(r"Run this code\? \[y/N")
            assert "cannot show edits to notebook cells" in shown
            assert "print('edited', 6 * 7)" in shown
            term.type("y")
            out = term.wait_for(r"In \[2\]:")
            assert "edited 42" in out and "The new code ran instead." in out
        finally:
            ARTIFACTS.mkdir(exist_ok=True)
            (ARTIFACTS / "console-cell-edit-fallback.txt").write_text(term.screen())
            term.close()
