"""Several sessions in one ``oi-kernel acp`` process, driven over stdio by the ACP SDK's own
client side through the scripted model: a command's relative path is its session's (and the
process's directory never changes while another session works), and the session lifecycle
(list, resume, fork, close) and the model as a config option."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest

pytest.importorskip("acp")

from acp import RequestError, text_block  # noqa: E402
from acp.schema import (  # noqa: E402
    AllowedOutcome,
    ClientCapabilities,
    ElicitationCapabilities,
    ElicitationFormCapabilities,
    EnvVariable,
    McpServerStdio,
    RequestPermissionResponse,
)

from tests import llm_server as S  # noqa: E402
from tests.test_acp import NEVER, ROOT, Client, agent, prompt, run, text_of  # noqa: E402

pytestmark = pytest.mark.kernel
GATE = "gate"  # a permission request answered (allow_once) when the test opens the gate


class GatedClient(Client):
    """A client whose ``GATE`` answers wait until ``gate`` is set, then allow once."""

    def __init__(self, answers: list[str] | None = None) -> None:
        super().__init__(answers)
        self.gate = asyncio.Event()

    async def request_permission(self, options: list[Any], session_id: str, tool_call: Any,
                                 **kwargs: Any) -> RequestPermissionResponse:
        if self.answers and self.answers[0] == GATE:
            self.answers.pop(0)
            self.permissions.append((tool_call, options))
            self.asked.set()
            await self.gate.wait()
            return RequestPermissionResponse(
                outcome=AllowedOutcome(outcome="selected", option_id="allow_once"))
        return await super().request_permission(options, session_id, tool_call, **kwargs)


def dirs(tmp: Path, *names: str) -> list[Path]:
    made = [tmp / name for name in names]
    for path in made:
        path.mkdir()
    return made


async def new(conn: Any, cwd: Path, **kwargs: Any) -> str:
    return (await asyncio.wait_for(conn.new_session(cwd=str(cwd), mcp_servers=[], **kwargs),
                                   60)).session_id


# ----------------------------------------------------------------------------- cwd
def test_commands_use_their_sessions_directory_without_changing_the_process(
        llm_server, tmp_path):
    work_a, work_b = dirs(tmp_path, "a", "b")
    llm_server.enqueue(S.tool_call("x = 40 + 2"), S.text("Set x."))
    client = GatedClient(["allow_once", GATE])

    async def go() -> dict[str, Any]:
        async with agent(llm_server, tmp_path, client, new=False) as (conn, proc, _):
            agent_proc = psutil.Process(proc.pid)
            a, b = await new(conn, work_a), await new(conn, work_b)
            await prompt(conn, a, "set x to 42")
            await prompt(conn, a, "/save conv.json")  # into a/, the session's directory
            await prompt(conn, b, f"/load {work_a / 'conv.json'} --force")  # a usage error
            await prompt(conn, a, f"/save {work_b / 'conv.json'}")
            client.asked.clear()
            # B's command waits for the approval of its replayed step while A works
            held = asyncio.ensure_future(prompt(conn, b, "/load conv.json --replay"))
            await asyncio.wait_for(client.asked.wait(), 60)
            during = agent_proc.cwd()
            exported = await prompt(conn, a, "/export a.ipynb")
            client.gate.set()
            replayed = await asyncio.wait_for(held, 90)
            return {"during": during, "after": agent_proc.cwd(), "exported": exported,
                    "replayed": replayed}

    seen = run(go())
    assert seen["during"] == seen["after"] == str(tmp_path)  # the agent's own, untouched
    assert (work_a / "conv.json").is_file() and (work_b / "conv.json").is_file()
    assert (work_a / "a.ipynb").is_file() and not (work_b / "a.ipynb").exists()
    assert seen["exported"].stop_reason == seen["replayed"].stop_reason == "end_turn"
    assert f"Exported to `{work_a / 'a.ipynb'}`" in client.message()
    assert f"from `{work_b / 'conv.json'}`" in client.message()
    assert "Replay finished: 1 ok" in client.message()


# ----------------------------------------------------------------------------- lifecycle
def in_dir(proc: Any, where: Path) -> list[psutil.Process]:
    """The agent's descendants running in ``where``: a session's kernel and MCP servers."""
    found = []
    for child in psutil.Process(proc.pid).children(recursive=True):
        try:
            if child.cwd() == str(where):
                found.append(child)
        except psutil.Error:
            pass
    return found


async def error_of(call: Any) -> str:
    with pytest.raises(RequestError) as info:
        await asyncio.wait_for(call, 60)
    return json.dumps(info.value.data)


def test_list_fork_close_then_resume_in_a_new_agent_process(llm_server, tmp_path):
    work_a, work_b = dirs(tmp_path, "a", "b")
    llm_server.enqueue(S.tool_call("answer = 41 + 1"), S.text("I set answer."),
                       S.text("Hi."), S.text("It was 42."), S.tool_call("print('never run')"),
                       S.text("Still 42."))
    prices = McpServerStdio(name="prices", command=sys.executable,
                            args=["-m", "tests.mcp_server"],
                            env=[EnvVariable(name="PYTHONPATH", value=str(ROOT))])
    first, second = Client(["allow_once", NEVER]), Client()
    seen: dict[str, Any] = {}

    async def one() -> None:
        async with agent(llm_server, tmp_path, first, new=False) as (conn, proc, _):
            seen["caps"] = (await conn.initialize(protocol_version=1)).agent_capabilities
            a = seen["a"] = (await asyncio.wait_for(conn.new_session(
                cwd=str(work_a), mcp_servers=[prices]), 60)).session_id
            await prompt(conn, a, "set answer to 41 + 1\nand keep it", timeout=120)
            b = await new(conn, work_b)
            await prompt(conn, b, "say hi")
            seen["all"] = await conn.list_sessions()
            seen["of_a"] = await conn.list_sessions(cwd=str(work_a))
            seen["bad_cwd"] = await error_of(conn.list_sessions(cwd="a"))
            seen["bad_cursor"] = await error_of(conn.list_sessions(cursor="page-2"))
            fork = seen["fork"] = (await asyncio.wait_for(conn.fork_session(
                session_id=a, cwd=str(work_b), mcp_servers=[]), 60)).session_id
            await prompt(conn, fork, "what was it?")
            seen["fork_request"] = llm_server.requests[-1]["messages"]
            seen["bad_fork"] = await error_of(conn.fork_session(
                session_id="acp-0123456789abcdef", cwd=str(work_b), mcp_servers=[]))
            # close A: its kernel and MCP server stop; the other sessions go on
            of_a = in_dir(proc, work_a)
            seen["of_a_names"] = [" ".join(p.cmdline()) for p in of_a]
            await asyncio.wait_for(conn.close_session(session_id=a), 60)
            seen["left"] = psutil.wait_procs(of_a, timeout=20)[1]
            seen["closed_prompt"] = await error_of(conn.prompt(session_id=a,
                                                               prompt=[text_block("hi")]))
            seen["bad_close"] = await error_of(conn.close_session(session_id=a))
            # close the fork while its step waits for an answer: the prompt ends cancelled
            first.asked.clear()
            pending = asyncio.ensure_future(prompt(conn, fork, "print something"))
            await asyncio.wait_for(first.asked.wait(), 60)
            await asyncio.wait_for(conn.close_session(session_id=fork), 60)
            seen["pending"] = await asyncio.wait_for(pending, 30)
            seen["b_after"] = (await prompt(conn, b, "/status")).stop_reason

    async def two() -> None:
        broken = tmp_path / "logs" / "acp-sessions" / "acp-00000000000000ff.json"
        broken.write_text("{not json")
        async with agent(llm_server, tmp_path, second, new=False) as (conn, _proc, _):
            seen["listed_later"] = await conn.list_sessions()
            await asyncio.wait_for(conn.resume_session(
                session_id=seen["a"], cwd=str(work_a), mcp_servers=[]), 60)
            await prompt(conn, seen["a"], "is it still there?")
            seen["resumed_request"] = llm_server.requests[-1]["messages"]
            seen["bad_resume"] = await error_of(conn.resume_session(
                session_id="acp-0123456789abcdef", cwd=str(work_a), mcp_servers=[]))
            seen["broken"] = await error_of(conn.load_session(
                session_id=broken.stem, cwd=str(work_a), mcp_servers=[]))
            seen["again"] = await error_of(conn.resume_session(
                session_id=seen["a"], cwd=str(work_a), mcp_servers=[]))

    run(one())
    caps = seen["caps"].session_capabilities
    assert caps.list is not None and caps.resume is not None and caps.close is not None \
        and caps.fork is not None and seen["caps"].load_session
    titles = {s.session_id: (s.title, s.cwd) for s in seen["all"].sessions}
    assert titles[seen["a"]] == ("set answer to 41 + 1", str(work_a))
    told = [u.title for u in first.of("session_info_update")]
    assert told == ["set answer to 41 + 1", "say hi"]  # once each, after the first prompt
    assert ("say hi", str(work_b)) in titles.values()
    assert [s.session_id for s in seen["of_a"].sessions] == [seen["a"]]
    assert "not an absolute path" in seen["bad_cwd"]
    assert "not a cursor of this agent" in seen["bad_cursor"]
    # the fork has A's conversation (the model sees it) but the history was not sent again
    assert any(m.get("content") == "I set answer." for m in seen["fork_request"])
    assert not first.of("user_message_chunk")
    assert "no session 'acp-0123456789abcdef' to fork" in seen["bad_fork"]
    assert any("ipykernel" in n for n in seen["of_a_names"]), seen["of_a_names"]
    assert any("tests.mcp_server" in n for n in seen["of_a_names"]), seen["of_a_names"]
    assert not seen["left"], f"left running: {seen['left']}"
    assert "start one with session/new" in seen["closed_prompt"]
    assert "start one with session/new" in seen["bad_close"]
    assert seen["pending"].stop_reason == "cancelled"
    assert seen["b_after"] == "end_turn"
    [log_a] = [p for p in (tmp_path / "logs").glob("*.jsonl")
               if seen["a"] in p.read_text().split("\n", 1)[0]]
    assert json.loads(log_a.read_text().splitlines()[-1])["event"] == "session_end"

    run(two())
    listed = {s.session_id for s in seen["listed_later"].sessions}
    assert {seen["a"], seen["fork"]} <= listed and "acp-00000000000000ff" not in listed
    said = [u.content.text for u in second.of("user_message_chunk")]
    assert said == []  # resume does not send the history again
    assert any(m.get("content") == "I set answer." for m in seen["resumed_request"])
    assert "Still 42." in second.message()
    assert "no saved session" in seen["bad_resume"]
    assert "cannot be read" in seen["broken"] or "not valid JSON" in seen["broken"]
    assert "is open already" in seen["again"]


# ----------------------------------------------------------------------------- the model
def test_the_model_is_a_session_config_option_mapped_onto_slash_model(llm_server, tmp_path):
    work, = dirs(tmp_path, "m")
    llm_server.enqueue(S.text("From the other model."), S.text("Back again."))
    client = Client()
    seen: dict[str, Any] = {}

    async def go() -> None:
        async with agent(llm_server, tmp_path, client, new=False) as (conn, _proc, _):
            made = await asyncio.wait_for(conn.new_session(cwd=str(work), mcp_servers=[]), 60)
            sid = made.session_id
            seen["new"] = made.config_options
            seen["early_fork"] = await error_of(conn.fork_session(session_id=sid, cwd=str(work),
                                                                  mcp_servers=[]))
            seen["set"] = await conn.set_config_option(config_id="model", session_id=sid,
                                                       value="openai/other-model")
            await prompt(conn, sid, "hello")
            seen["used"] = llm_server.requests[-1]["model"]
            await prompt(conn, sid, "/model openai/scripted")
            await prompt(conn, sid, "hello again")
            seen["used_after"] = llm_server.requests[-1]["model"]
            seen["bad_id"] = await error_of(conn.set_config_option(
                config_id="temperature", session_id=sid, value="1"))
            seen["bad_value"] = await error_of(conn.set_config_option(
                config_id="model", session_id=sid, value=" "))
            seen["bad_session"] = await error_of(conn.set_config_option(
                config_id="model", session_id="nope", value="x"))

    run(go())
    [option] = seen["new"]
    assert (option.id, option.category, option.current_value) == (
        "model", "model", "openai/scripted")
    [chosen] = seen["set"].config_options
    assert chosen.current_value == "openai/other-model"
    assert [o.value for o in chosen.options] == ["openai/scripted", "openai/other-model"]
    assert seen["used"] == "other-model" and seen["used_after"] == "scripted"
    [update] = client.of("config_option_update")  # after /model NAME, not after the option
    assert update.config_options[0].current_value == "openai/scripted"
    assert "'model' is the only one" in seen["bad_id"]
    assert "send a model's name" in seen["bad_value"]
    assert "start one with session/new" in seen["bad_session"]
    assert "no finished instruction to fork yet" in seen["early_fork"]


# ----------------------------------------------------------------------------- edit
class EditingClient(Client):
    """A client that shows forms: its Edit answers ``edits`` in turn (a code string is
    accepted, "decline" / "cancel" as they say)."""

    def __init__(self, answers: list[str], edits: list[str]) -> None:
        super().__init__(answers)
        self.edits = list(edits)
        self.forms: list[Any] = []

    async def create_elicitation(self, message: str, mode: Any, **kwargs: Any) -> Any:
        from acp.schema import (
            AcceptElicitationResponse,
            CancelElicitationResponse,
            DeclineElicitationResponse,
        )

        self.forms.append((message, mode))
        edit = self.edits.pop(0)
        if edit == "decline":
            return DeclineElicitationResponse(action="decline")
        if edit == "cancel":
            return CancelElicitationResponse(action="cancel")
        return AcceptElicitationResponse(action="accept", content={"code": edit})


FORMS = ClientCapabilities(elicitation=ElicitationCapabilities(form=ElicitationFormCapabilities()))


def test_edit_before_running_through_a_form_where_the_client_shows_forms(llm_server, tmp_path):
    llm_server.enqueue(S.tool_call("print('as proposed')"), S.text("Ran it."),
                       S.tool_call("print('second')"))
    # first step: Edit, decline the form (asked again), Edit, accept a change;
    # second step: Edit, cancel the form (the instruction stops)
    client = EditingClient(["edit", "edit", "edit"],
                           ["decline", "print('as edited')", "cancel"])

    async def go() -> tuple[Any, Any]:
        async with agent(llm_server, tmp_path, client, capabilities=FORMS) as (conn, _p, sid):
            return (await prompt(conn, sid, "print something"),
                    await prompt(conn, sid, "print more"))

    first, second = run(go())
    assert first.stop_reason == second.stop_reason == "end_turn"
    (_call, options), *_ = client.permissions
    assert [o.option_id for o in options] == [
        "allow_once", "preview", "edit", "allow_always", "reject_once", "reject_always"]
    assert len(client.permissions) == 3  # asked again after the declined form
    message, mode = client.forms[0]
    assert "Edit step 1" in message
    assert mode.requested_schema.properties["code"].default == "print('as proposed')"
    done = client.finished()
    assert done[0].raw_output["output"].strip() == "as edited"  # the edit ran
    [running] = [u for u in client.of("tool_call_update") if u.status == "in_progress"]
    assert "Edited before it ran" in text_of(running) and "as edited" in text_of(running)
    assert done[1].status == "failed"  # the cancelled form stopped it
    [log] = list((tmp_path / "logs").glob("*.jsonl"))
    decisions = [json.loads(line) for line in log.read_text().splitlines()
                 if json.loads(line)["event"] == "decision"]
    assert [d["action"] for d in decisions] == ["edited", "stopped"]
