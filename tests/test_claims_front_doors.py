"""Answer checking at the other front doors: the Python API's chunks, the ACP agent's final
message, and ``%%oi`` in an ordinary python3 kernel (the same engine and the same marks)."""

from __future__ import annotations

import asyncio
import json

import pytest

from oi_kernel import Interpreter
from oi_kernel.api.chunks import ClaimsChunk, MessageChunk
from tests import llm_server as S
from tests.test_magics import start_kernel

KEY = "sk-test-not-a-real-key-123456"


def test_the_api_yields_the_claims_after_the_answer(llm_server, tmp_path):
    llm_server.enqueue(S.tool_call("print(0.2304, 1200)"),
                       S.text("Revenue grew 23% across 1,200 orders, a 41% margin."))
    with Interpreter("openai/scripted", api_base=llm_server.url, api_key=KEY,
                     log_dir=tmp_path / "logs", cwd=tmp_path, auto_run=True) as it:
        chunks = list(it.chat("how did revenue grow?"))
        [turn] = it.turns
    [claims] = [c for c in chunks if isinstance(c, ClaimsChunk)]
    assert claims.untraced == ["41%"]
    assert "41% — not in any output" in claims.text
    assert "23% ← step 1" in claims.text and "1,200 ← step 1" in claims.text
    found = {c["text"]: c["found"] and (c["found"]["step"], c["found"]["how"])
             for c in claims.claims}
    assert found == {"23%": (1, "share"), "1,200": (1, "exact"), "41%": None}
    kinds = [type(c).__name__ for c in chunks]
    assert kinds.index("ClaimsChunk") < kinds.index("MessageChunk")
    assert [c for c in chunks if isinstance(c, MessageChunk)][0].text.startswith("Revenue")
    assert turn.answer_check is not None and turn.answer_check["claims"][2]["found"] is None


def test_check_answers_off_yields_no_claims(llm_server, tmp_path, monkeypatch):
    monkeypatch.setenv("OI_CHECK_ANSWERS", "off")
    llm_server.enqueue(S.text("It is 99."))
    with Interpreter("openai/scripted", api_base=llm_server.url, api_key=KEY,
                     log_dir=tmp_path / "logs", cwd=tmp_path, auto_run=True) as it:
        chunks = list(it.chat("guess"))
        log = it.log_path
    assert not [c for c in chunks if isinstance(c, ClaimsChunk)]
    assert '"answer_check"' not in log.read_text()


def test_the_acp_agents_final_message_marks_untraced_numbers(llm_server, tmp_path):
    pytest.importorskip("acp")
    from tests.test_acp import Client, agent, prompt

    llm_server.enqueue(S.tool_call("print(round(17.8333, 2))"),
                       S.text("Sessions last 17.83 minutes; 12% are shorter than 5 minutes."))
    client = Client(["allow_once"])

    async def go() -> None:
        async with agent(llm_server, tmp_path, client) as (conn, _proc, sid):
            await prompt(conn, sid, "how long are sessions?")

    asyncio.run(go())
    message = client.message()
    tail = message[message.index("Sessions last 17.83"):]
    assert tail.splitlines()[2:] == ["> 12% — not in any output  ",
                                     "> 5 minutes — not in any output  ",
                                     "> traced: 17.83 minutes ← step 1  "]
    [log] = list((tmp_path / "logs").glob("*.jsonl"))
    [check] = [json.loads(x) for x in log.read_text().splitlines() if '"answer_check"' in x]
    assert [c["text"] for c in check["claims"] if c["found"] is None] == ["12%", "5 minutes"]


def test_the_magic_shows_the_same_marks(llm_server, tmp_path):
    llm_server.enqueue(S.tool_call("print(3 * 14)"), S.text("The result is 42, or 24 doubled."))
    with start_kernel(llm_server, tmp_path) as ip:
        ip.execute("%load_ext oi_kernel")
        result = ip.execute("%%oi -y\nmultiply 3 by 14")
    marks = [m["content"]["data"]["text/plain"] for m in result.of_type("display_data")
             if "answer_check" in (m["content"].get("metadata", {}).get("oi") or {})]
    assert marks == ["24 — not in any output\ntraced: 42 ← step 1"]
