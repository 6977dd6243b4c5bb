"""Preview from an ACP client (issue 44): the client chooses the Preview option, is asked
again with what the step would do, and Run then does it for real."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("acp")

from tests import llm_server as S  # noqa: E402
from tests.test_acp import Client, agent, prompt, run, text_of  # noqa: E402

pytestmark = pytest.mark.kernel


def test_an_acp_client_chooses_preview_then_run(llm_server, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("precious")
    code = "import os\nos.remove('notes.txt')\nprint('removed')"
    llm_server.enqueue(S.Response(calls=[S.Call(json.dumps({"language": "python",
                                                            "code": code}))]),
                       S.text("Removed."))
    seen = {}

    class Watching(Client):
        async def request_permission(self, options, session_id, tool_call, **kw):
            if len(self.permissions) == 1:  # asked again, after the preview
                seen["exists"] = (work / "notes.txt").exists()
            return await super().request_permission(options, session_id, tool_call, **kw)

    client = Watching(["preview", "allow_once"])

    async def go() -> None:
        async with agent(llm_server, tmp_path, client) as (conn, _proc, sid):
            await prompt(conn, sid, "remove my notes")

    run(go())
    first, second = client.permissions
    assert "preview" in [o.option_id for o in first[1]]
    shown = text_of(second[0])
    assert "nothing real changed" in shown
    assert "notes.txt (deleted)" in shown and "removed" in shown
    assert seen["exists"] is True  # the preview left the real file
    assert not (work / "notes.txt").exists()  # Run removed it
    [log] = list((tmp_path / "logs").glob("*.jsonl"))
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["event"] for r in records if r["event"].startswith("preview")] == [
        "preview", "preview_compared"]
