"""Several sessions in one ``oi-kernel acp`` process, driven over stdio by the ACP SDK's own
client side through the scripted model: a command's relative path is its session's (and the
process's directory never changes while another session works), and the session lifecycle
(list, resume, fork, close) and the model as a config option."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import psutil
import pytest

pytest.importorskip("acp")

from acp.schema import (  # noqa: E402
    AllowedOutcome,
    RequestPermissionResponse,
)

from tests import llm_server as S  # noqa: E402
from tests.test_acp import Client, agent, prompt, run  # noqa: E402

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
