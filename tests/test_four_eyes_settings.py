"""Four-eyes approval wherever approval is set (issue 34): a profile may ask for it, and
``%%oi -y`` (run without asking) does not lower a session's four-eyes setting: the cell says
so, every step still asks, and a flagged step still waits for someone other than the author.
Real kernels through jupyter_client, clicks from different header usernames
(tests/test_identity.py's patterns)."""

from __future__ import annotations

import pytest

from oi_kernel.core import four_eyes
from oi_kernel.session import profile_state as PS
from oi_kernel.session import profiles as P
from tests import llm_server as S
from tests.kernel_client import KernelSession
from tests.test_card import records
from tests.test_identity import RISKY, Clicks, decisions
from tests.test_kernel import kernel_env
from tests.test_profiles import isolated, new_engine, write_profile  # noqa: F401 (a fixture)


@pytest.mark.unit
@pytest.mark.parametrize("mode", four_eyes.MODES)
def test_a_profile_may_ask_for_four_eyes(isolated, mode):  # noqa: F811
    write_profile(isolated / "project" / ".oi" / "profiles", "team", f"approval: {mode}\n")
    engine = new_engine()
    PS.apply(engine, P.load_profile("team"))
    assert engine.approval == mode
    assert ("approval", mode, "profile team") in PS.provenance(engine)


@pytest.mark.unit
def test_a_bad_approval_in_a_profile_lists_the_four_eyes_modes(isolated):  # noqa: F811
    write_profile(isolated / "project" / ".oi" / "profiles", "bad", "approval: two-eyes\n")
    with pytest.raises(P.ProfileError) as info:
        P.load_profile("bad")
    assert "must be one of always, risky, never, four-eyes, four-eyes-all" in str(info.value)


@pytest.mark.kernel
def test_a_kernel_started_with_a_four_eyes_profile_refuses_the_authors_run(_server, tmp_path):
    write_profile(tmp_path / ".oi" / "profiles", "team", "approval: four-eyes\n")
    _server.reset()
    env = kernel_env(_server, tmp_path, OI_PROFILE="team", OI_APPROVAL_UI="stdin")
    with KernelSession(env=env, cwd=str(tmp_path)) as ks:
        ks.tmp = tmp_path
        ks.kc.session.username = "alice"
        assert "| `approval` | `four-eyes` | profile team |" in ks.execute("%profile").text
        _server.enqueue(S.tool_call(RISKY), S.text("done"))
        result = ks.execute("clean up", stdin=["y"])
        assert "deleted" not in result.stdout
        assert "Four-eyes" in result.prompts[0] and "%approval risky" in result.prompts[0]
        [decision] = decisions(ks)
        assert (decision["action"], decision["by"], decision["four_eyes"]) == (
            "skipped", "alice", "four-eyes")


@pytest.fixture(scope="module")
def magic(_server, tmp_path_factory):
    """An ordinary ipykernel with ``%load_ext oi_kernel`` and the widget card."""
    from tests.test_card import send_shell
    from tests.test_magics import start_kernel

    tmp = tmp_path_factory.mktemp("magic")
    ks = start_kernel(_server, tmp)
    ks.tmp = tmp
    import uuid

    send_shell(ks, "comm_open", {"comm_id": uuid.uuid4().hex,
                                 "target_name": "jupyter.widget.control", "data": {}},
               metadata={"version": "1.0.0"})
    try:
        yield ks
    finally:
        ks.close()


@pytest.mark.kernel
def test_yes_does_not_lower_four_eyes_in_the_magic(magic, _server):
    magic.kc.session.username = "alice"
    assert magic.execute("%oi approval four-eyes").status == "ok"
    _server.reset()
    _server.enqueue(S.tool_call("print('plain step')"), S.tool_call(RISKY), S.text("done"))
    before = len(decisions(magic))
    fe = Clicks(magic, [("alice", "oi-run"), ("bob", "oi-run")])
    result = magic.execute("%%oi -y\nprint, then clean up", on_message=fe, on_other=fe.watch)
    assert result.status == "ok", result.text
    assert "`-y` does not turn off four-eyes approval (`four-eyes`" in result.text
    assert "plain step" in result.stdout and "deleted" in result.stdout
    # both steps asked (nothing ran "auto"); alice's own Run of the flagged one did not count
    assert [(d["action"], d["by"]) for d in decisions(magic)[before:]] == [
        ("approved", "alice"), ("approved", "bob")]
    assert any("oi-four-eyes-refused" in n and "alice" in n for n in fe.notes)
    first, second = records(result)
    assert "approved by alice" in first and "approved by bob" in second
    # the setting is the session's, unchanged after the cell
    assert "four-eyes" in magic.execute("%oi approval").text


@pytest.mark.kernel
def test_yes_still_runs_without_asking_when_four_eyes_is_off(magic, _server):
    magic.kc.session.username = "alice"
    assert magic.execute("%oi approval always").status == "ok"
    _server.reset()
    _server.enqueue(S.tool_call("print('no card')"), S.text("done"))
    before = len(decisions(magic))
    fe = Clicks(magic, [])
    result = magic.execute("%%oi -y\nprint", on_message=fe, on_other=fe.watch)
    assert "no card" in result.stdout
    assert "four-eyes" not in result.text
    assert [(d["action"], d["by"]) for d in decisions(magic)[before:]] == [("auto", "auto")]


@pytest.mark.kernel
def test_yes_is_refused_where_the_administrators_policy_requires_four_eyes(_server, tmp_path):
    from tests.test_magics import start_kernel
    from tests.test_policy import write_policy

    admin = tmp_path / "admin"
    policy = write_policy(admin, {"approval": "four-eyes"})
    _server.reset()
    _server.enqueue(S.tool_call("print('ran')"), S.text("done"))
    ks = start_kernel(_server, tmp_path, JUPYTER_CONFIG_PATH=str(admin),
                      JUPYTER_CONFIG_DIR=str(tmp_path / "user"))
    try:
        refused = ks.execute("%%oi -y\nprint")
        assert refused.status == "error" and "ran" not in refused.stdout
        assert "four-eyes" in refused.text and str(policy) in refused.text
    finally:
        ks.close()
