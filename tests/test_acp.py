"""``oi-kernel acp`` driven over stdio by the ACP SDK's own client side, through the scripted
model: prompt, permission, run, result; Skip and Stop; cancel mid-step and while a permission
request is unanswered; a flagged step; a client's MCP server; the log and ``/export``; and a
client that goes away leaves no child kernel behind."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import psutil
import pytest

pytest.importorskip("acp")

from acp import spawn_agent_process, text_block  # noqa: E402
from acp.schema import (  # noqa: E402
    AllowedOutcome,
    EnvVariable,
    McpServerStdio,
    RequestPermissionResponse,
)

from tests import llm_server as S  # noqa: E402
from tests.env import oi_env  # noqa: E402

pytestmark = pytest.mark.kernel
ROOT = Path(__file__).resolve().parents[1]
NEVER = "never"  # a permission request the client does not answer
# The venv's python by its real path: the sandbox cannot bind a venv that is a symlink
# (a worktree's .venv) at the symlink's path.
PYTHON = str(Path(sys.prefix).resolve() / "bin" / "python")


class Client:
    """An ACP client that records every update and answers permission requests from a list
    of option ids (``NEVER``: it does not answer)."""

    def __init__(self, answers: list[str] | None = None) -> None:
        self.answers = list(answers or [])
        self.updates: list[Any] = []
        self.permissions: list[Any] = []  # (tool_call, options)
        self.asked = asyncio.Event()

    async def request_permission(self, options: list[Any], session_id: str, tool_call: Any,
                                 **kwargs: Any) -> RequestPermissionResponse:
        self.permissions.append((tool_call, options))
        self.asked.set()
        answer = self.answers.pop(0) if self.answers else "allow_once"
        if answer == NEVER:
            await asyncio.Event().wait()
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=answer))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)

    # ------------------------------------------------------------ reading what came
    def of(self, kind: str) -> list[Any]:
        return [u for u in self.updates if u.session_update == kind]

    def message(self) -> str:
        return "".join(u.content.text for u in self.of("agent_message_chunk"))

    def finished(self) -> list[Any]:
        return [u for u in self.of("tool_call_update") if u.status in ("completed", "failed")]


def text_of(update: Any) -> str:
    return "\n".join(getattr(c.content, "text", "") for c in update.content or [])


@contextlib.asynccontextmanager
async def agent(server: S.ScriptedLLMServer, tmp: Path, client: Client,
                servers: list[Any] | None = None, new: bool = True,
                capabilities: Any = None, **env: str) -> AsyncIterator[tuple[Any, Any, str]]:
    """``oi-kernel acp`` started as a client starts it; yields (connection, process,
    session id) for a session in ``tmp/work`` (no session when not ``new``). The client
    takes ACP's unstable methods (elicitation) and says it has ``capabilities``."""
    work = tmp / "work"
    work.mkdir(exist_ok=True)
    environ = {**os.environ, **oi_env(server, tmp, **env), "PYTHONPATH": str(ROOT)}
    stderr = open(tmp / "agent-stderr.txt", "ab")  # noqa: SIM115, ASYNC230 (closed below)
    try:
        async with spawn_agent_process(
                client, PYTHON, "-m", "oi_kernel.cli", "acp", env=environ,
                cwd=str(tmp), transport_kwargs={"stderr": stderr.fileno(),
                                                "shutdown_timeout": 20},
                use_unstable_protocol=True) as (conn, proc):
            await asyncio.wait_for(conn.initialize(protocol_version=1,
                                                   client_capabilities=capabilities), 60)
            if not new:
                yield conn, proc, ""
                return
            session = await asyncio.wait_for(
                conn.new_session(cwd=str(work), mcp_servers=servers or []), 60)
            yield conn, proc, session.session_id
    finally:
        stderr.close()


async def prompt(conn: Any, session_id: str, text: str, timeout: float = 90) -> Any:
    return await asyncio.wait_for(
        conn.prompt(session_id=session_id, prompt=[text_block(text)]), timeout)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


# ----------------------------------------------------------------------------- the path
def test_prompt_permission_run_result(llm_server, tmp_path):
    llm_server.enqueue(S.Response(content="Computing.", reasoning="Multiply six by seven.",
                                  calls=[S.Call(json.dumps({"language": "python",
                                                            "code": "x = 6 * 7\nprint(x)"}))]),
                       S.text("The answer is 42."))
    client = Client(["allow_once"])

    async def go() -> Any:
        async with agent(llm_server, tmp_path, client) as (conn, _proc, sid):
            return await prompt(conn, sid, "what is 6 times 7?")

    response = run(go())
    assert response.stop_reason == "end_turn"
    assert "Computing." in client.message() and "The answer is 42." in client.message()
    thought = "".join(u.content.text for u in client.of("agent_thought_chunk"))
    assert "Multiply six by seven." in thought
    [start] = client.of("tool_call")
    assert start.kind == "execute" and "x = 6 * 7" in text_of(start)
    [(asked, options)] = client.permissions
    assert asked.tool_call_id == start.tool_call_id
    assert [(o.option_id, o.kind, o.name) for o in options] == [
        ("allow_once", "allow_once", "Run"),
        ("preview", "allow_once", "Preview (in a disposable copy first)"),
        ("allow_always", "allow_always", "Run all"), ("reject_once", "reject_once", "Skip"),
        ("reject_always", "reject_always", "Stop")]
    [done] = client.finished()
    assert done.tool_call_id == start.tool_call_id and done.status == "completed"
    assert "42" in text_of(done)
    assert "x: int" in text_of(done)  # the change summary
    assert response.usage is not None and response.usage.total_tokens > 0
    commands = client.of("available_commands_update")
    assert commands and {"undo", "export", "model", "status"} <= {
        c.name for c in commands[0].available_commands}
    # the session log and /export afterwards: the notebook passes `oi-kernel verify`
    [log] = list((tmp_path / "logs").glob("*.jsonl"))
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert records[0]["event"] == "session_start" and records[0]["kernel"] == "acp"
    assert records[0]["cwd"] == str(tmp_path / "work")
    assert [r["action"] for r in records if r["event"] == "decision"] == ["approved"]


def test_export_afterwards_verifies(llm_server, tmp_path):
    llm_server.enqueue(S.tool_call("total = sum(range(10))\nprint(total)"), S.text("45."))
    client = Client(["allow_once", "allow_once"])

    async def go() -> tuple[Any, Any, Any]:
        async with agent(llm_server, tmp_path, client) as (conn, _proc, sid):
            first = await prompt(conn, sid, "sum 0..9")
            exported = await prompt(conn, sid, "/export out.ipynb")
            bad = await prompt(conn, sid, "/export a b")
            await prompt(conn, sid, "/undo")
            llm_server.enqueue(S.tool_call("print('total' in globals())"), S.text("Gone."))
            await prompt(conn, sid, "is total still there?")
            return first, exported, bad

    first, exported, bad = run(go())
    assert "Removed the last instruction (“sum 0..9”)" in client.message()
    assert "False" in text_of(client.finished()[-1])  # /undo rolled the variable back
    assert first.stop_reason == exported.stop_reason == bad.stop_reason == "end_turn"
    assert f"Exported to `{tmp_path / 'work' / 'out.ipynb'}`" in client.message()
    assert "Usage: /export [PATH]" in client.message()  # a command's usage says how to fix it
    assert "Files left in place" in client.message() and "`out.ipynb`" in client.message()
    notebook = tmp_path / "work" / "out.ipynb"  # undo keeps what the kernel did not write
    verify = subprocess.run(
        [sys.executable, "-m", "oi_kernel.cli", "verify", str(notebook)], capture_output=True,
        text=True, timeout=240, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert verify.returncode == 0, verify.stdout + verify.stderr


# ----------------------------------------------------------------------------- decisions
def test_skip_then_stop(llm_server, tmp_path):
    llm_server.enqueue(S.tool_call("print('first')"), S.text("Fine, I will not run it."),
                       S.tool_call("print('second')"))
    client = Client(["reject_once", "reject_always"])

    async def go() -> tuple[Any, Any]:
        async with agent(llm_server, tmp_path, client) as (conn, _proc, sid):
            return (await prompt(conn, sid, "print first"),
                    await prompt(conn, sid, "print second"))

    skipped, stopped = run(go())
    assert skipped.stop_reason == "end_turn" and stopped.stop_reason == "end_turn"
    first, second = client.finished()
    assert first.status == "failed" and "Skipped; the code was not run" in text_of(first)
    assert second.status == "failed" and "Stopped" in text_of(second)
    assert "Fine, I will not run it." in client.message()
    assert len(llm_server.requests) == 3  # Stop ends the instruction: no call after it
    [log] = list((tmp_path / "logs").glob("*.jsonl"))
    actions = [json.loads(line).get("action") for line in log.read_text().splitlines()
               if json.loads(line)["event"] == "decision"]
    assert actions == ["skipped", "stopped"]


def test_flagged_step_carries_its_flags_in_the_request(llm_server, tmp_path):
    llm_server.enqueue(S.tool_call("import shutil\nshutil.rmtree('data')"), S.text("Not run."))
    client = Client(["reject_once"])

    async def go() -> Any:
        async with agent(llm_server, tmp_path, client) as (conn, _proc, sid):
            return await prompt(conn, sid, "delete the data folder")

    run(go())
    [(asked, _options)] = client.permissions
    flags = asked.field_meta["oi_kernel"]["flags"]
    assert any(f["category"] == "delete-files" and f["severity"] == "high" for f in flags)
    assert "risk flag" in text_of(asked) and "delete-files" in text_of(asked)
    assert asked.raw_input["flags"] == flags


# ----------------------------------------------------------------------------- cancel
def test_cancel_mid_step_interrupts_and_the_agent_goes_on(llm_server, tmp_path):
    llm_server.enqueue(S.tool_call("import time\nfor i in range(600):\n    time.sleep(0.1)"),
                       S.tool_call("print('still here', i > 0)"), S.text("Done."))
    client = Client(["allow_once", "allow_once"])

    async def go() -> tuple[Any, Any, float]:
        async with agent(llm_server, tmp_path, client) as (conn, _proc, sid):
            task = asyncio.ensure_future(prompt(conn, sid, "sleep a minute"))
            for _ in range(600):
                if any(u.status == "in_progress" for u in client.of("tool_call_update")):
                    break
                await asyncio.sleep(0.1)
            # the step is reported in progress before its code starts: on a loaded machine the
            # loop had not finished one pass 1 s later (CI: "still here False"); 3 s lets it
            await asyncio.sleep(3.0)
            started = asyncio.get_running_loop().time()
            await conn.cancel(session_id=sid)
            cancelled = await asyncio.wait_for(task, 30)
            took = asyncio.get_running_loop().time() - started
            return cancelled, await prompt(conn, sid, "are you there?"), took

    cancelled, after, took = run(go())
    assert cancelled.stop_reason == "cancelled" and took < 15
    first = client.finished()[0]
    assert first.status == "failed" and "nterrupted" in text_of(first)
    assert after.stop_reason == "end_turn"
    assert "still here True" in text_of(client.finished()[1])  # same kernel, variables kept


def test_cancel_while_the_permission_request_is_unanswered(llm_server, tmp_path):
    llm_server.enqueue(S.tool_call("print('never asked back')"), S.text("Hello again."))
    client = Client([NEVER])

    async def go() -> tuple[Any, Any]:
        async with agent(llm_server, tmp_path, client) as (conn, _proc, sid):
            task = asyncio.ensure_future(prompt(conn, sid, "print something"))
            await asyncio.wait_for(client.asked.wait(), 60)
            await conn.cancel(session_id=sid)
            cancelled = await asyncio.wait_for(task, 10)
            return cancelled, await prompt(conn, sid, "hello")

    cancelled, after = run(go())
    assert cancelled.stop_reason == "cancelled" and after.stop_reason == "end_turn"
    assert "Hello again." in client.message()
    assert client.finished()[0].status == "failed"


# ----------------------------------------------------------------------------- MCP, exit
def test_client_mcp_server_joins_under_approval_and_nothing_outlives_a_disconnect(
        llm_server, tmp_path):
    llm_server.enqueue(S.tool_calls([S.Call(json.dumps({"item": "apple"}),
                                            "prices__lookup_price")]),
                       S.tool_call("print(1.25 * 2)\nopen('total.txt', 'w').write('2.5')"),
                       S.text("2.5 EUR."),
                       S.tool_call("print('never answered')"))
    server = McpServerStdio(name="prices", command=sys.executable,
                            args=["-m", "tests.mcp_server"],
                            env=[EnvVariable(name="PYTHONPATH", value=str(ROOT))])
    client = Client(["allow_once", "allow_once", NEVER])

    async def go() -> tuple[Any, list[psutil.Process], list[str]]:
        async with agent(llm_server, tmp_path, client, servers=[server]) as (conn, proc, sid):
            first = await prompt(conn, sid, "price of two apples?", timeout=120)
            tree = psutil.Process(proc.pid).children(recursive=True)
            names = [" ".join(p.cmdline()) for p in tree]
            client.asked.clear()
            pending = asyncio.ensure_future(prompt(conn, sid, "print more"))
            await asyncio.wait_for(client.asked.wait(), 60)  # the third question, unanswered
            await asyncio.sleep(0.5)
            leaving = asyncio.get_running_loop().time()
        # leaving the block closed the agent's stdin: the client went away mid-question
        took = asyncio.get_running_loop().time() - leaving
        with contextlib.suppress(Exception):
            await asyncio.wait_for(pending, 5)
        return first, tree, names, (took, proc.returncode)

    first, tree, names, (took, code) = run(go())
    assert code == 0 and took < 15, (code, took)  # it ended by itself (the client waits 20 s)
    assert first.stop_reason == "end_turn"
    offered = [t["function"]["name"] for t in llm_server.requests[0].get("tools", [])]
    assert "prices__lookup_price" in offered
    (tool_asked, _), (code_asked, _), _ = client.permissions
    assert "prices" in tool_asked.title and "lookup_price" in tool_asked.title
    done = client.finished()
    assert "apple: 1.25 EUR" in text_of(done[0])
    # the step after the tool's result writes a file: its request carries the untrusted-content
    # note (a step that only computes and prints would not: issue 39's data-flow rule)
    flags = code_asked.field_meta["oi_kernel"]["flags"]
    assert any(f["category"] == "untrusted-content" for f in flags), flags
    assert "2.5" in text_of(done[1])
    assert any("ipykernel" in n for n in names) and any("tests.mcp_server" in n for n in names)
    gone, alive = psutil.wait_procs(tree, timeout=20)
    assert not alive, f"left running: {[' '.join(p.cmdline()) for p in alive]}"


# ----------------------------------------------------------------------------- load, bad input
def test_a_session_loads_in_a_new_agent_process(llm_server, tmp_path):
    llm_server.enqueue(S.tool_call("answer = 41 + 1"), S.text("I set answer."),
                       S.text("It was 42."))
    first, second = Client(["allow_once"]), Client()

    async def go() -> Any:
        async with agent(llm_server, tmp_path, first) as (conn, _proc, sid):
            await prompt(conn, sid, "set answer to 41 + 1")
        async with agent(llm_server, tmp_path, second, new=False) as (conn, _proc, _):
            loaded = await asyncio.wait_for(conn.load_session(
                cwd=str(tmp_path / "work"), session_id=sid, mcp_servers=[]), 60)
            await prompt(conn, sid, "what was it?")
            return loaded

    assert run(go()) is not None
    said = [u.content.text for u in second.of("user_message_chunk")]
    assert said == ["set answer to 41 + 1"]
    assert "I set answer." in second.message() and "Variables are not restored" in \
        second.message()
    assert "answer = 41 + 1" in text_of(second.of("tool_call")[0])
    last = llm_server.requests[-1]["messages"]
    assert any(m.get("content") == "I set answer." for m in last)  # the model has the history
    assert "It was 42." in second.message()


def test_a_failing_instruction_is_told_in_the_chat_and_the_agent_goes_on(llm_server, tmp_path):
    client = Client()

    async def go() -> tuple[Any, Any]:
        async with agent(llm_server, tmp_path, client, OI_MODEL="") as (conn, _proc, sid):
            failed = await prompt(conn, sid, "hello")
            return failed, await prompt(conn, sid, "/model openai/scripted")

    failed, fixed = run(go())
    assert failed.stop_reason == "end_turn" and fixed.stop_reason == "end_turn"
    assert "✖ No language model is configured" in client.message()
    assert "Model set to `openai/scripted`" in client.message()


def test_bad_input_gets_an_error_that_says_how_to_fix_it(llm_server, tmp_path):
    from acp import RequestError, image_block

    client = Client()

    async def error_of(call: Any) -> str:
        with pytest.raises(RequestError) as info:
            await asyncio.wait_for(call, 60)
        return json.dumps(info.value.data)

    async def go() -> dict[str, str]:
        async with agent(llm_server, tmp_path, client) as (conn, _proc, sid):
            errors = {
                "cwd": await error_of(conn.new_session(cwd="relative/dir", mcp_servers=[])),
                "session": await error_of(conn.prompt(session_id="nope",
                                                      prompt=[text_block("hi")])),
                "image": await error_of(conn.prompt(session_id=sid, prompt=[
                    image_block("iVBORw0KGgo=", "image/png")])),
                "load": await error_of(conn.load_session(cwd=str(tmp_path), session_id="x",
                                                         mcp_servers=[])),
            }
            errors["still"] = (await prompt(conn, sid, "/status")).stop_reason
            return errors

    errors = run(go())
    assert "absolute path of an existing directory" in errors["cwd"]
    assert "start one with session/new" in errors["session"]
    assert "send text" in errors["image"]
    assert "no saved session" in errors["load"]
    assert errors["still"] == "end_turn" and "| model |" in client.message()  # it lives on


def test_without_the_sdk_the_command_says_what_to_install():
    code = ("import sys; sys.modules['acp'] = None; from oi_kernel.cli.app import main; "
            "sys.exit(main(['acp']))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2
    assert "pip install 'oi-kernel[acp]'" in done.stderr and done.stdout == ""


def test_the_administrators_policy_applies_to_acp_sessions(llm_server, tmp_path):
    admin = tmp_path / "admin"
    admin.mkdir()
    (admin / "oi_kernel_policy.json").write_text(json.dumps({
        "approval": "always", "sandbox": "required", "mcp": {"denied": ["prices"]}}))
    llm_server.enqueue(S.tool_call("import os\nprint(os.getcwd())"), S.text("There."))
    server = McpServerStdio(name="prices", command=sys.executable,
                            args=["-m", "tests.mcp_server"], env=[])
    client = Client(["allow_once"])

    async def go() -> Any:
        async with agent(llm_server, tmp_path, client, servers=[server],
                         JUPYTER_CONFIG_PATH=str(admin),
                         JUPYTER_CONFIG_DIR=str(tmp_path / "user")) as (conn, proc, sid):
            response = await prompt(conn, sid, "where am I?", timeout=150)
            names = [" ".join(p.cmdline()) for p in psutil.Process(proc.pid).children(True)]
            return response, names

    response, names = run(go())
    assert response.stop_reason == "end_turn"
    [(asked, options)] = client.permissions
    assert "allow_always" not in {o.kind for o in options}  # the floor asks about every block
    assert "sandboxed" in asked.title and asked.field_meta["oi_kernel"]["sandboxed"] is True
    assert str(tmp_path / "work") in text_of(client.finished()[0]), client.message()
    assert "'prices' from the client not started" in client.message()
    assert not any("tests.mcp_server" in n for n in names)


def test_a_client_that_cannot_ask_runs_nothing_and_is_told_why(llm_server, tmp_path):
    from acp import RequestError

    class NoPermissions(Client):
        async def request_permission(self, options: list[Any], session_id: str,
                                     tool_call: Any, **kwargs: Any) -> Any:
            raise RequestError.method_not_found("session/request_permission")

    llm_server.enqueue(S.tool_call("open('ran.txt', 'w').write('x')"))
    client = NoPermissions()

    async def go() -> Any:
        async with agent(llm_server, tmp_path, client) as (conn, _proc, sid):
            return await prompt(conn, sid, "write a file")

    assert run(go()).stop_reason == "end_turn"
    assert "✖ The step was not run: the ACP client could not ask for approval" in \
        client.message()
    assert client.finished()[0].status == "failed"
    assert not (tmp_path / "work" / "ran.txt").exists()


def test_a_killed_agent_leaves_no_child_kernel_or_mcp_server(llm_server, tmp_path):
    llm_server.enqueue(S.tool_call("print('up')"), S.text("Up."))
    server = McpServerStdio(name="prices", command=sys.executable,
                            args=["-m", "tests.mcp_server"],
                            env=[EnvVariable(name="PYTHONPATH", value=str(ROOT))])
    client = Client(["allow_once"])

    async def go() -> tuple[list[psutil.Process], list[str]]:
        async with agent(llm_server, tmp_path, client, servers=[server]) as (conn, proc, sid):
            await prompt(conn, sid, "say up", timeout=120)
            tree = psutil.Process(proc.pid).children(recursive=True)
            names = [" ".join(p.cmdline()) for p in tree]
            proc.kill()  # no cleanup of its own: what it started must still go
            return tree, names

    tree, names = run(go())
    assert any("ipykernel" in n for n in names) and any("tests.mcp_server" in n for n in names)
    _gone, alive = psutil.wait_procs(tree, timeout=20)
    assert not alive, f"left running: {alive}"
