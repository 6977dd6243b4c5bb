"""The Open Interpreter kernel on a real JupyterHub (issue 34, item 4): two users, alice and bob,
log in through the Hub's login form (DummyAuthenticator with a password), each gets their own
single-user server (SimpleLocalProcessSpawner: a local process with the user's own home and
``JUPYTERHUB_USER``; configurable-http-proxy in front), and runs instructions on the Open
Interpreter kernel there, over the server's REST API and kernel websocket as JupyterLab does
(an empty ``username`` in the message headers). alice's frontend renders widgets, so she
decides on the approval card (comm clicks); bob's does not, so he answers the stdin question.

The administrator's settings reach every server from ``c.Spawner.environment`` in the Hub's
config: the model (the scripted server) and ``JUPYTER_CONFIG_PATH`` naming a directory with ``oi_kernel_policy.json`` requiring four-eyes
approval. What must hold: each user's session log is in that user's own home, and its
decisions name the Hub user (not the OS user running every process); the policy applies to
both servers. JupyterHub and the proxy are installed on first use (tests/hub_support.py)."""

from __future__ import annotations

import getpass
import html
import json
from pathlib import Path
from typing import Any

import pytest

from tests import hub_support as H
from tests import llm_server as S
from tests.env import TEST_KEY
from tests.test_card import Frontend
from tests.test_identity import RISKY
from tests.test_policy import write_policy

pytestmark = [pytest.mark.kernel, pytest.mark.slow, pytest.mark.timeout(900)]

PASSWORD = "team-secret-7"
USERS = ("alice", "bob")


@pytest.fixture(scope="module")
def hub(_server, tmp_path_factory):
    base = tmp_path_factory.mktemp("hub")
    admin = base / "admin-policy"
    write_policy(admin, {"approval": "four-eyes"})
    environment = {
        "OI_MODEL": "openai/scripted", "OI_API_BASE": _server.url, "OI_API_KEY": TEST_KEY,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "JUPYTER_CONFIG_PATH": str(admin),
    }
    try:
        hub = H.start_hub(base, environment, list(USERS), PASSWORD)
    except H.Missing as exc:
        pytest.skip(str(exc))
    hub.policy = admin / "oi_kernel_policy.json"
    try:
        yield hub
    finally:
        H.stop_hub(hub)


@pytest.fixture(scope="module")
def people(hub):
    """alice and bob, logged in, each with a running server and an Open Interpreter kernel."""
    found: dict[str, Any] = {}
    try:
        for name in USERS:
            user = H.HubUser(hub, name)
            assert user.login(PASSWORD) == 302, hub.log()
            user.request_token()
            user.start_server()
            user.kernel = user.start_kernel()
            if name == "alice":
                user.kernel.open_widgets()
            found[name] = user
        yield found
    finally:
        for user in found.values():
            user.kernel.close()
            user.stop_server()


class Card(Frontend):
    """alice's JupyterLab: on each approval card, clicks ``buttons`` back to back over the
    websocket (comm messages with an empty username), and keeps the card's four-eyes lines."""

    def __init__(self, kernel: H.KernelSocket, buttons: list[str]) -> None:
        super().__init__(kernel, [])
        self.buttons = buttons
        self.notes: list[str] = []

    def watch(self, msg: dict[str, Any]) -> None:
        if msg["msg_type"] in ("comm_msg", "comm_open"):
            value = html.unescape(str((msg["content"]["data"].get("state") or {}).get("value", "")))
            if "four-eyes" in value.lower():
                self.notes.append(value)

    def __call__(self, msg: dict[str, Any]) -> None:
        super().__call__(msg)
        self.watch(msg)
        if msg["msg_type"] == "display_data" and (
                "application/vnd.jupyter.widget-view+json" in msg["content"]["data"]):
            for button in self.buttons:
                self.click(button)

    def click(self, cls: str) -> None:
        self.ks.send("comm_msg", {"comm_id": self.comm_with_class(cls), "data": {
            "method": "custom", "content": {"event": "click"}}})


def run(user: H.HubUser, instruction: str, buttons: list[str], answers: list[str]
        ) -> tuple[H.Reply, Card | None]:
    """alice clicks ``buttons`` on the card; bob types ``answers`` at the question."""
    if user.name == "alice":
        card = Card(user.kernel, buttons)
        return user.kernel.execute(instruction, on_message=card, on_other=card.watch), card
    return user.kernel.execute(instruction, answer=answers), None


def logged(home: Path) -> list[dict[str, Any]]:
    """Every event of every session log under ``home``."""
    events = []
    for path in sorted(home.rglob("oi_kernel/logs/*.jsonl")):
        events += [json.loads(line) for line in path.read_text().splitlines()]
    return events


def decisions(home: Path) -> list[dict[str, Any]]:
    return [e for e in logged(home) if e.get("event") == "decision"]


def test_the_password_is_checked_and_each_user_reaches_only_their_own_server(hub, people):
    assert H.HubUser(hub, "alice").login("wrong-password") == 403
    assert H.HubUser(hub, "mallory").login(PASSWORD) == 403  # not an allowed user
    for name, other in (("alice", "bob"), ("bob", "alice")):
        assert people[name].call(f"/user/{name}/api/kernels")[0] == 200
        assert people[name].call(f"/user/{other}/api/kernels")[0] == 403  # not theirs


def test_each_users_decisions_name_the_hub_user_in_that_users_own_log(hub, people, _server):
    os_user = getpass.getuser()
    for name in USERS:
        _server.reset()
        _server.enqueue(S.tool_call(f"print('hello from {name}')"), S.text("done"))
        result, card = run(people[name], "say hello", ["oi-run"], ["y"])
        assert result.status == "ok", result.text
        assert f"hello from {name}" in result.stdout
        if card:
            assert card.cards_seen == 1 and not result.prompts
            assert len(result.records) == 1 and f"approved by {name}" in result.records[0]
        else:
            assert len(result.prompts) == 1 and not result.records
        assert f"approved by {name}" in people[name].kernel.execute("%history").text
    for name, other in (("alice", "bob"), ("bob", "alice")):
        home = hub.home(name)
        mine = decisions(home)
        assert [(d["action"], d["by"], d["code"]) for d in mine] == [
            ("approved", name, f"print('hello from {name}')")]
        assert mine[0]["sha256"]
        assert name != os_user and all(d["by"] != os_user for d in mine)
        starts = [e for e in logged(home) if e.get("event") == "session_start"]
        assert len(starts) == 1  # one kernel: one session, in its owner's home only
        assert not any(other in json.dumps(e) for e in logged(home))


def test_the_administrators_policy_applies_to_both_users(hub, people, _server):
    for name in USERS:
        kernel = people[name].kernel
        lowered = kernel.execute("%approval risky")
        assert lowered.status == "error", lowered.text
        assert "four-eyes" in lowered.text and str(hub.policy) in lowered.text
        _server.reset()
        _server.enqueue(S.tool_call(RISKY), S.text("done"))
        before = len(decisions(hub.home(name)))
        # the author's own Run is not a second person's: refused on the card (which stays
        # pending: alice then skips), turned into a skip at the question
        result, card = run(people[name], "clean up", ["oi-run", "oi-skip"], ["y"])
        assert "deleted" not in result.stdout
        if card:
            assert any("oi-four-eyes-refused" in n and name in n for n in card.notes)
            assert any("administrator's policy requires four-eyes" in n for n in card.notes)
            assert f"skipped by {name}" in result.records[0]
        else:
            assert "administrator's policy requires four-eyes" in result.prompts[0]
        [decision] = decisions(hub.home(name))[before:]
        assert (decision["action"], decision["by"], decision["author"],
                decision["four_eyes"]) == ("skipped", name, name, "four-eyes")
