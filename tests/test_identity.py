"""Who decided: identity resolution and four-eyes approval (issue 34, items 1 and 3).

Unit tests of the pure rules, then a real Open Interpreter kernel driven through
jupyter_client as a widget frontend whose comm messages carry different header usernames
(``client.session.username``), as two collaborators' clicks would."""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from oi_kernel.approval.approvers import StdinApprover, approval_prompt
from oi_kernel.core import four_eyes, identity
from oi_kernel.core.types import ApprovalRequest, CodeBlock, Decision
from oi_kernel.safety.risk import Flag
from oi_kernel.session.stdin import Answer
from tests import llm_server as S
from tests.fake_model import FakeModel
from tests.kernel_client import KernelSession
from tests.test_card import Frontend, records, send_shell
from tests.test_kernel import kernel_env

RISKY = "import shutil\nshutil.rmtree('no-such-dir-oi', ignore_errors=True)\nprint('deleted')"


# ----------------------------------------------------------------------------- identity
@pytest.mark.unit
@pytest.mark.parametrize("claimed, env, expected", [
    ("alice", {"JUPYTERHUB_USER": "hubby"}, "alice"),
    ("  bob ", {}, "bob"),
    ("", {"JUPYTERHUB_USER": "hubby"}, "hubby"),
    ("username", {"JUPYTERHUB_USER": "hubby"}, "hubby"),  # jupyter_client's placeholder
    ("anonymous", {"JUPYTERHUB_USER": "hubby"}, "hubby"),
    (None, {"JUPYTERHUB_USER": "hubby"}, "hubby"),
    ("auto", {"JUPYTERHUB_USER": "hubby"}, "hubby"),  # a claimed "auto" is not an auto-run
    ("Replay", {"JUPYTERHUB_USER": "hubby"}, "hubby"),
    ("al\u202eice", {}, "alice"),  # a bidi control cannot disguise a name
    ("x" * 100, {}, "x" * identity.MAX_NAME),
    (42, {"JUPYTERHUB_USER": "hubby"}, "hubby"),
])
def test_person_prefers_a_real_claimed_name_then_the_hub_user(claimed, env, expected):
    assert identity.person(claimed, env) == expected


@pytest.mark.unit
def test_person_falls_back_to_the_os_user():
    assert identity.person("", {}) == (identity.clean(getpass.getuser()) or identity.FALLBACK)
    msg = {"header": {"username": "username", "msg_type": "comm_msg"}}
    assert identity.from_message(msg) == identity.person(None)
    assert identity.from_message({"header": {"username": "carol"}}) == "carol"
    assert identity.from_message(None) == identity.person(None)


@pytest.mark.unit
def test_the_os_user_follows_the_environment_and_reads_the_password_database_once(
        monkeypatch):
    """Asked on every request: getpass.getuser()'s answer, /etc/passwd read once."""
    pwd = pytest.importorskip("pwd")
    for name in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        monkeypatch.delenv(name, raising=False)
    lookups = []
    real = pwd.getpwuid
    monkeypatch.setattr(pwd, "getpwuid", lambda uid: lookups.append(uid) or real(uid))
    identity._account_name.cache_clear()
    try:
        expected = getpass.getuser()
        lookups.clear()
        assert identity._os_user() == identity._os_user() == expected
        assert len(lookups) == 1
        monkeypatch.setenv("USER", "dora")
        assert identity._os_user() == "dora" == getpass.getuser()
    finally:
        identity._account_name.cache_clear()


@pytest.mark.unit
def test_same_person_ignores_case_and_nobody_is_nobody():
    assert identity.same_person("Alice", "alice ")
    assert not identity.same_person("alice", "bob")
    assert not identity.same_person("", "")


# ----------------------------------------------------------------------------- four-eyes
HIGH = Flag(1, "delete-files", "high", "deletes files")
MED = Flag(1, "network", "medium", "talks to the network")


@pytest.mark.unit
@pytest.mark.parametrize("modes, flags, expected", [
    (("four-eyes",), [HIGH], True),
    (("four-eyes",), [MED], False),
    (("four-eyes",), [], False),
    (("four-eyes-all",), [], True),
    (("always",), [HIGH], False),
    (("risky", "never"), [HIGH], False),
])
def test_which_steps_need_a_second_person(modes, flags, expected):
    assert four_eyes.required(modes, flags) is expected


def _engine(approval: str, floor: str = "never") -> Any:
    from oi_kernel.core.engine import Engine

    engine = Engine(executor=None, approver=None, llm=FakeModel())
    engine.approval_floor = floor
    engine.approval = approval
    return engine


def _request(flags: list[Flag], author: str = "alice") -> ApprovalRequest:
    return ApprovalRequest(1, 1, CodeBlock("python", "x = 1"), flags, author=author,
                           allow_stdin=True)


@pytest.mark.unit
def test_four_eyes_marks_high_steps_and_they_ask_even_after_run_all():
    engine = _engine("four-eyes")
    flagged, plain = _request([HIGH]), _request([])
    engine.steps.four_eyes_for(flagged)
    engine.steps.four_eyes_for(plain)
    assert (flagged.four_eyes, flagged.four_eyes_source) == ("four-eyes", "setting")
    assert plain.four_eyes == ""
    assert engine.steps.needs_approval(flagged, run_all=True)
    assert engine.steps.needs_approval(plain) and not engine.steps.needs_approval(plain, run_all=True)


@pytest.mark.unit
def test_the_policy_floor_names_itself_and_hides_run_all():
    engine = _engine("four-eyes", floor="four-eyes")
    request = _request([HIGH])
    engine.steps.four_eyes_for(request)
    assert request.four_eyes_source == "policy"
    assert "cannot be turned off here" in four_eyes.refusal_text("alice", "four-eyes", "policy")
    assert "%approval risky" in four_eyes.refusal_text("alice", "four-eyes", "setting")


class _Says:
    """An approver that answers with one decision."""

    def __init__(self, decision: Decision) -> None:
        self.decision = decision

    async def decide(self, request: ApprovalRequest) -> Decision:
        return self.decision


@pytest.mark.unit
def test_engine_backstop_turns_the_authors_own_run_into_a_skip():
    engine = _engine("four-eyes")
    request = _request([HIGH])
    engine.steps.four_eyes_for(request)
    engine.steps.approver = _Says(Decision("run", "x = 1", by="Alice"))
    decision = asyncio.run(engine.steps._decide(request, False))
    assert decision.action == "skip" and decision.by == "Alice"
    assert "someone else" in decision.reason
    engine.steps.approver = _Says(Decision("run", "x = 1", by="bob"))
    assert asyncio.run(engine.steps._decide(request, False)).action == "run"


def _stdin_approver(answers: list[tuple[str, str]]) -> tuple[StdinApprover, list[str]]:
    prompts: list[str] = []
    queue = list(answers)

    async def ask(prompt: str) -> str:
        prompts.append(prompt)
        value, by = queue.pop(0)
        answer = Answer(value)
        answer.by = by
        return answer

    return StdinApprover(ask), prompts


@pytest.mark.unit
def test_stdin_names_the_answerer_and_refuses_the_authors_run_under_four_eyes():
    approver, _ = _stdin_approver([("y", "dave")])
    assert asyncio.run(approver.decide(_request([]))).by == "dave"
    approver, prompts = _stdin_approver([("y", "alice")])
    request = _request([HIGH])
    request.four_eyes, request.four_eyes_source = "four-eyes", "setting"
    decision = asyncio.run(approver.decide(request))
    assert decision.action == "skip" and decision.by == "alice"
    assert "Four-eyes" in prompts[0] and "Ask a collaborator" in prompts[0]
    assert "Four-eyes" in approval_prompt(request)
    approver, _ = _stdin_approver([("s", "alice")])
    assert asyncio.run(approver.decide(request)).action == "stop"  # the author may stop


# ----------------------------------------------------------------------------- the kernel
class Clicks(Frontend):
    """On each card, sends (username, button class) clicks back to back."""

    def __init__(self, ks: KernelSession, clicks: list[tuple[str, str]]) -> None:
        super().__init__(ks, [])
        self.clicks = clicks
        self.notes: list[str] = []

    def watch(self, msg: dict[str, Any]) -> None:
        """Collect the four-eyes line of the card as its widget state changes."""
        kind, content = msg["header"]["msg_type"], msg["content"]
        if kind in ("comm_msg", "comm_open"):
            state = content["data"].get("state") or {}
            if "value" in state and "four-eyes" in str(state["value"]):
                self.notes.append(state["value"])

    def __call__(self, msg: dict[str, Any]) -> None:
        super().__call__(msg)
        self.watch(msg)
        kind, content = msg["header"]["msg_type"], msg["content"]
        if kind == "display_data" and ("application/vnd.jupyter.widget-view+json"
                                       in content["data"]):
            for name, button in self.clicks:
                self.ks.kc.session.username = name
                self.click(button)
            self.ks.kc.session.username = "alice"


@contextlib.contextmanager
def team_kernel(server: S.ScriptedLLMServer, tmp: Path, *, oi_comm: bool = False
                ) -> Iterator[KernelSession]:
    """A kernel on a Hub (``hub-owner``) with a widget frontend attached, as JupyterLab opens
    it; with ``oi_comm`` also the lab extension's comm (its id in ``ks.oi_comm``)."""
    env = kernel_env(server, tmp, JUPYTERHUB_USER="hub-owner")
    with KernelSession(env=env, cwd=str(tmp)) as ks:
        ks.tmp = tmp
        send_shell(ks, "comm_open", {"comm_id": uuid.uuid4().hex,
                                     "target_name": "jupyter.widget.control", "data": {}},
                   metadata={"version": "1.0.0"})
        if oi_comm:
            ks.oi_comm = uuid.uuid4().hex
            send_shell(ks, "comm_open", {"comm_id": ks.oi_comm, "target_name": "oi_kernel",
                                         "data": {"type": "hello", "version": 1}})
        yield ks


@pytest.fixture(scope="module")
def team(_server, tmp_path_factory):
    with team_kernel(_server, tmp_path_factory.mktemp("team")) as ks:
        yield ks


@pytest.fixture
def lab(team, _server):
    _server.reset()
    team.kc.session.username = "alice"  # who sends the instructions
    assert team.execute("%reset").status == "ok"
    assert team.execute("%approval always").status == "ok"
    return team


def decisions(ks: KernelSession) -> list[dict[str, Any]]:
    found = []
    for path in sorted((Path(ks.tmp) / "logs").rglob("*.jsonl")):
        for line in path.read_text().splitlines():
            event = json.loads(line)
            if event.get("event") == "decision":
                found.append(event)
    return found


@pytest.mark.kernel
def test_a_click_names_the_clicker_in_the_record_the_log_and_history(lab, _server):
    _server.enqueue(S.tool_call("print('hello from alice')"), S.text("done"))
    before = len(decisions(lab))
    fe = Clicks(lab, [("alice", "oi-run")])
    result = lab.execute("say hello", on_message=fe)
    assert result.status == "ok" and "hello from alice" in result.stdout
    assert "approved by alice" in records(result)[0]
    new = decisions(lab)[before:]
    assert [(d["action"], d["by"]) for d in new] == [("approved", "alice")]
    assert new[0]["sha256"] and new[0]["code"] == "print('hello from alice')"
    history = lab.execute("%history")
    assert "approved by alice" in history.text


@pytest.mark.kernel
def test_a_generic_username_falls_back_to_the_hub_user(lab, _server):
    _server.enqueue(S.tool_call("print(1)"), S.text("done"))
    fe = Clicks(lab, [("username", "oi-skip")])
    result = lab.execute("print one", on_message=fe)
    assert "skipped by hub-owner" in records(result)[0]
    assert decisions(lab)[-1]["by"] == "hub-owner"


@pytest.mark.kernel
def test_two_clicks_at_once_make_exactly_one_decision(lab, _server):
    _server.enqueue(S.tool_call("print('once')"), S.text("done"))
    before = len(decisions(lab))
    fe = Clicks(lab, [("alice", "oi-run"), ("bob", "oi-skip"), ("bob", "oi-run")])
    result = lab.execute("print once", on_message=fe)
    assert result.stdout == "once\n"
    new = decisions(lab)[before:]
    assert [(d["step"], d["action"], d["by"]) for d in new] == [(1, "approved", "alice")]
    assert len(records(result)) == 1


@pytest.mark.kernel
def test_four_eyes_refuses_the_authors_run_and_accepts_bobs(lab, _server):
    assert "high risk flag" in lab.execute("%approval four-eyes").text
    _server.enqueue(S.tool_call(RISKY), S.text("done"))
    before = len(decisions(lab))
    fe = Clicks(lab, [("alice", "oi-run"), ("bob", "oi-run")])
    # the refusal updates the card in the click's own request: a frontend applies widget
    # updates whatever their parent, so watch those too
    result = lab.execute("clean up", on_message=fe, on_other=fe.watch)
    assert result.status == "ok" and "deleted" in result.stdout
    assert any("oi-four-eyes-refused" in n and "alice" in n for n in fe.notes)
    assert any("Waiting for a collaborator" in n for n in fe.notes)
    assert "approved by bob" in records(result)[0]
    new = decisions(lab)[before:]
    assert [(d["action"], d["by"], d["author"], d["four_eyes"]) for d in new] == [
        ("approved", "bob", "alice", "four-eyes")]


@pytest.mark.kernel
def test_four_eyes_lets_the_author_skip_but_never_run(lab, _server):
    assert lab.execute("%approval four-eyes").status == "ok"
    _server.enqueue(S.tool_call(RISKY), S.text("done"))
    before = len(decisions(lab))
    fe = Clicks(lab, [("alice", "oi-run-all"), ("alice", "oi-run"), ("alice", "oi-skip")])
    result = lab.execute("clean up again", on_message=fe, on_other=fe.watch)
    assert "deleted" not in result.stdout
    assert [(d["action"], d["by"]) for d in decisions(lab)[before:]] == [("skipped", "alice")]
    assert sum("oi-four-eyes-refused" in n for n in fe.notes) >= 1


@pytest.mark.kernel
def test_each_collaborators_instruction_carries_its_own_author(lab, _server):
    """Who sent a cell travels with that cell's turn (its ``TurnContext``), not on the
    kernel's engine: alice's instruction, then bob's, each run by the other under four-eyes."""
    assert lab.execute("%approval four-eyes").status == "ok"
    _server.enqueue(S.tool_call(RISKY), S.text("done"), S.tool_call(RISKY), S.text("done"))
    before = len(decisions(lab))
    first = lab.execute("clean up", on_message=Clicks(lab, [("bob", "oi-run")]))
    lab.kc.session.username = "bob"  # bob sends the next cell
    second = lab.execute("clean up once more", on_message=Clicks(lab, [("alice", "oi-run")]))
    assert "deleted" in first.stdout and "deleted" in second.stdout
    assert [(d["action"], d["by"], d["author"]) for d in decisions(lab)[before:]] == [
        ("approved", "bob", "alice"), ("approved", "alice", "bob")]


@pytest.mark.kernel
def test_the_stdin_question_names_the_answerer(_server, tmp_path):
    env = kernel_env(_server, tmp_path, OI_APPROVAL="always", OI_APPROVAL_UI="stdin")
    _server.reset()
    with KernelSession(env=env, cwd=str(tmp_path)) as ks:
        ks.tmp = tmp_path
        _server.enqueue(S.tool_call("print('typed')"), S.text("done"))

        def answer(prompt: str) -> str:
            ks.kc.session.username = "carol"
            return "y"

        result = ks.execute("print typed", stdin=answer)
        assert "typed" in result.stdout
        assert [(d["action"], d["by"]) for d in decisions(ks)] == [("approved", "carol")]
        assert "approved by carol" in ks.execute("%history").text
        out = tmp_path / "export.ipynb"
        assert ks.execute(f"%export {out}").status == "ok"
        cells = json.loads(out.read_text())["cells"]
        meta = [c["metadata"]["oi_kernel"] for c in cells if c["cell_type"] == "code"]
        assert [m["by"] for m in meta] == ["carol"]


@pytest.mark.kernel
def test_four_eyes_in_the_magic_names_the_collaborator(_server, tmp_path):
    """``%%oi`` in an ordinary ipykernel: the same card, the same identities."""
    from tests.test_magics import start_kernel

    _server.reset()
    ks = start_kernel(_server, tmp_path)
    try:
        ks.tmp = tmp_path
        ks.kc.session.username = "alice"
        assert ks.execute("%oi approval four-eyes").status == "ok"
        _server.enqueue(S.tool_call(RISKY), S.text("done"))
        fe = Clicks(ks, [("alice", "oi-run"), ("bob", "oi-run")])
        result = ks.execute("%%oi\nclean up", on_message=fe, on_other=fe.watch)
        assert result.status == "ok" and "deleted" in result.stdout
        assert any("oi-four-eyes-refused" in n for n in fe.notes)
        assert "approved by bob" in records(result)[0]
        assert [(d["by"], d["author"]) for d in decisions(ks)] == [("bob", "alice")]
    finally:
        ks.close()


@pytest.mark.kernel
def test_the_policy_requires_four_eyes_and_a_lone_terminal_user_is_told_how(_server, tmp_path):
    from tests.test_policy import write_policy

    _server.reset()
    admin = tmp_path / "admin"
    write_policy(admin, {"approval": "four-eyes"})
    env = kernel_env(_server, tmp_path, OI_APPROVAL_UI="stdin", JUPYTER_CONFIG_PATH=str(admin),
                     JUPYTER_CONFIG_DIR=str(tmp_path / "user"))
    with KernelSession(env=env, cwd=str(tmp_path)) as ks:
        ks.tmp = tmp_path
        ks.kc.session.username = "alice"
        lowered = ks.execute("%approval risky")
        assert lowered.status == "error" and "four-eyes" in lowered.text
        _server.enqueue(S.tool_call(RISKY), S.text("done"))
        result = ks.execute("clean up", stdin=["y"])
        assert "deleted" not in result.stdout
        assert "administrator's policy requires four-eyes" in result.prompts[0]
        assert "Ask a collaborator" in result.prompts[0]
        [decision] = decisions(ks)
        assert (decision["action"], decision["by"], decision["four_eyes"]) == (
            "skipped", "alice", "four-eyes")
        assert "someone else" in decision["reason"]
