"""The shared approval card over the ``oi_kernel`` comm (issue 34, item 2), on a real Open
Interpreter kernel driven through jupyter_client as several JupyterLab views would: each
view asks ``card_state`` for the card id its display carries and decides with ``decide``;
the comm message's header username names who clicked. First decision wins; every view hears
the ``card`` event; a view asking after the decision gets the record."""

from __future__ import annotations

from typing import Any

import pytest

from oi_kernel.approval.card import CARD_MIME
from tests import llm_server as S
from tests.kernel_client import KernelSession
from tests.test_card import records, send_shell
from tests.test_identity import RISKY, decisions, team_kernel

pytestmark = pytest.mark.kernel


class Views:
    """One ``oi_kernel`` comm and the views on it: on each card display, ``plan`` sends
    (username, message) pairs back to back, as collaborators clicking at once would."""

    def __init__(self, ks: KernelSession, plan: list[tuple[str, dict[str, Any]]]) -> None:
        self.ks = ks
        self.plan = plan
        self.cards: list[str] = []
        self.replies: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self.statuses: list[dict[str, Any]] = []

    def send(self, username: str, data: dict[str, Any]) -> None:
        self.ks.kc.session.username = username
        send_shell(self.ks, "comm_msg", {"comm_id": self.ks.oi_comm, "data": data})
        self.ks.kc.session.username = "alice"

    def __call__(self, msg: dict[str, Any]) -> None:
        kind, content = msg["header"]["msg_type"], msg["content"]
        if kind == "display_data" and CARD_MIME in content["data"]:
            card = content["data"][CARD_MIME]["card"]
            self.cards.append(card)
            self.send("bob", {"type": "card_state", "request_id": "s1", "card": card})
            for name, data in self.plan:
                self.send(name, {"request_id": name, "card": card, **data})
        self.other(msg)

    def other(self, msg: dict[str, Any]) -> None:
        if msg["header"]["msg_type"] != "comm_msg":
            return
        data = msg["content"]["data"]
        if data.get("type") in ("card_state", "decide_result"):
            self.replies.append(data)
        elif data.get("type") == "card":
            self.events.append(data)
        elif data.get("type") == "status":
            self.statuses.append(data)


@pytest.fixture(scope="module")
def team(_server, tmp_path_factory):
    with team_kernel(_server, tmp_path_factory.mktemp("collab"), oi_comm=True) as ks:
        yield ks


@pytest.fixture
def lab(team, _server):
    _server.reset()
    team.kc.session.username = "alice"
    assert team.execute("%approval always").status == "ok"
    return team


def run(lab: KernelSession, text: str, plan: list[tuple[str, dict[str, Any]]]) -> Any:
    views = Views(lab, plan)
    result = lab.execute(text, on_message=views, on_other=views.other)
    # late messages (replies to clicks after the decision) arrive once the cell is idle
    lab.execute("%approval")  # a round trip: everything sent before it has been answered
    return result, views


def test_a_collaborators_view_gets_the_card_from_the_kernel_and_decides(lab, _server):
    _server.enqueue(S.tool_call("print('shared hello')"), S.text("done"))
    before = len(decisions(lab))
    result, views = run(lab, "say hello", [("bob", {"type": "decide", "action": "run"})])
    assert result.status == "ok" and result.stdout == "shared hello\n"
    pending = [r for r in views.replies if r["type"] == "card_state"]
    assert pending[0]["state"] == "pending" and pending[0]["code"] == "print('shared hello')"
    assert "Step 1" in pending[0]["header_html"] and pending[0]["run_all"] is True
    decided = [r for r in views.replies if r["type"] == "decide_result"]
    assert [(r["ok"], r["sender"]) for r in decided] == [(True, "bob")]
    assert [(e["card"], e["state"], e["by"]) for e in views.events] == [
        (views.cards[0], "decided", "bob")]
    assert "approved by bob" in views.events[0]["html"]
    assert "approved by bob" in records(result)[0]
    assert [(d["action"], d["by"]) for d in decisions(lab)[before:]] == [("approved", "bob")]
    assert any(s["last_decision"] == "step 1 · approved by bob" for s in views.statuses)


def test_clicks_at_once_count_once_and_the_late_ones_are_told_who_decided(lab, _server):
    _server.enqueue(S.tool_call("print('once')"), S.text("done"))
    before = len(decisions(lab))
    plan = [("carol", {"type": "decide", "action": "skip", "reason": "not now"}),
            ("bob", {"type": "decide", "action": "run"}),
            ("dave", {"type": "decide", "action": "stop"})]
    result, views = run(lab, "print once", plan)
    assert "once" not in result.stdout
    assert [(d["action"], d["by"]) for d in decisions(lab)[before:]] == [("skipped", "carol")]
    decided = {r["sender"]: r for r in views.replies if r["type"] == "decide_result"}
    assert decided["carol"]["ok"] is True
    for late in ("bob", "dave"):
        assert decided[late]["ok"] is False
        assert "skipped by carol" in decided[late]["error"]
    assert len(views.events) == 1 and len(records(result)) == 1
    # a view opened afterwards (a reload) asks for the card and gets the record
    views.send("erin", {"type": "card_state", "request_id": "late", "card": views.cards[0]})
    late = Views(lab, [])
    lab.execute("%approval", on_other=late.other)
    assert [(r["state"], r["by"]) for r in late.replies] == [("decided", "carol")]
    assert "skipped by carol" in late.replies[0]["html"]


def test_an_edited_run_runs_the_edit_and_a_made_up_card_is_refused(lab, _server):
    _server.enqueue(S.tool_call("print('proposed')"), S.text("done"))
    plan = [("bob", {"type": "decide", "card": "no-such-card", "action": "run"}),
            ("bob", {"type": "decide", "action": "run", "code": "print('edited by bob')"})]
    result, views = run(lab, "print proposed", plan)  # (the first names its own card)
    assert result.stdout == "edited by bob\n"
    oks = [(r["ok"], r.get("state")) for r in views.replies if r["type"] == "decide_result"]
    assert (False, "unknown") in oks and (True, None) in oks
    assert "edited by bob" in records(result)[0]


def test_four_eyes_refuses_the_authors_shared_click_and_takes_bobs(lab, _server):
    assert lab.execute("%approval four-eyes").status == "ok"
    _server.enqueue(S.tool_call(RISKY), S.text("done"))
    before = len(decisions(lab))
    plan = [("alice", {"type": "decide", "action": "run"}),
            ("alice", {"type": "decide", "action": "run_all"}),
            ("bob", {"type": "decide", "action": "run"})]
    result, views = run(lab, "clean up", plan)
    assert "deleted" in result.stdout
    decided = [(r["sender"], r["ok"], r.get("refused", False))
               for r in views.replies if r["type"] == "decide_result"]
    assert decided == [("alice", False, True), ("alice", False, True), ("bob", True, False)]
    refusal = next(r for r in views.replies if r.get("refused"))["error"]
    assert "alice sent this instruction" in refusal
    pending = next(r for r in views.replies if r["type"] == "card_state")
    assert "Waiting for a collaborator" in pending["four_eyes_html"]
    assert [(d["action"], d["by"], d["author"]) for d in decisions(lab)[before:]] == [
        ("approved", "bob", "alice")]
