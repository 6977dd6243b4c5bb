"""``%undo``, ``%save``, ``%load [--replay]``: the pure functions on message lists (table
tests), then real kernels talking to the scripted server, asserting on the messages the
next request carries and on the Python state a replay rebuilds."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from oi_kernel.core.types import CodeBlock, Decision
from oi_kernel.record import saved as cio
from tests import llm_server as S
from tests.env import oi_env
from tests.kernel_client import KernelSession

SECRET = "sk-test-not-a-real-key-123456"


def call(call_id: str, code: str, language: str = "python") -> dict:
    args = json.dumps({"language": language, "code": code})
    return {"id": call_id, "type": "function", "function": {"name": "execute", "arguments": args}}


def tool_turn(instruction: str, call_id: str, code: str, result: str) -> list[dict]:
    return [
        {"role": "user", "content": instruction},
        {"role": "assistant", "content": None, "tool_calls": [call(call_id, code)]},
        {"role": "tool", "tool_call_id": call_id, "content": result},
        {"role": "assistant", "content": "Done."},
    ]


CONVERSATION = [
    *tool_turn("make a", "c1", "a = 1", "ok"),
    *tool_turn("make b", "c2", "b = 2", "ok"),
    {"role": "user", "content": "show c"},
    {"role": "assistant", "content": "Here:\n```python\nc = 3\nprint(c)\n```"},
    {"role": "user", "content": "3"},
    {"role": "assistant", "content": "c is 3."},
]
STARTS = [0, 4, 8]


# ----------------------------------------------------------------------------- pure
def test_steps_come_from_tool_calls_and_fences_with_what_really_ran():
    outcomes = {
        "id:c2": {"code": "b = 20  # edited", "status": "ok"},  # the user edited it
        cio.step_key(CodeBlock("python", "c = 3\nprint(c)")): {
            "code": "c = 3\nprint(c)",
            "status": "skipped",
        },
    }
    steps = cio.conversation_steps(CONVERSATION, STARTS, outcomes)
    assert [(s["turn"], s["code"], s["status"]) for s in steps] == [
        (1, "a = 1", "unknown"),
        (2, "b = 20  # edited", "ok"),
        (3, "c = 3\nprint(c)", "skipped"),
    ]
    saved = cio.SavedConversation(CONVERSATION, STARTS, steps=steps)
    assert [b.code for b in cio.rebuild_blocks(saved)] == ["a = 1", "b = 20  # edited"]


@pytest.mark.unit
def test_a_loaded_conversation_keeps_its_outcomes_on_the_conversation_not_in_a_module(tmp_path):
    from oi_kernel.core.conversation import Conversation

    def engine() -> SimpleNamespace:
        return SimpleNamespace(conversation=Conversation(), turns=[], publish=lambda e: None,
                               llm=SimpleNamespace(model="openai/m"),
                               secrets=SimpleNamespace(values=lambda: []))

    outcomes = {"id:c2": {"code": "b = 20", "status": "error"}}
    steps = cio.conversation_steps(CONVERSATION, STARTS, outcomes)
    path = tmp_path / "c.json"
    path.write_text(json.dumps(cio.to_document(cio.SavedConversation(
        CONVERSATION, STARTS, "openai/m", steps), [])))
    first, second = engine(), engine()
    cio.load(first, path)
    assert first.conversation.loaded_outcomes["id:c2"]["status"] == "error"
    again = cio.snapshot(first)  # saved again: the loaded step keeps its outcome
    assert [(s["code"], s["status"]) for s in again.steps][1] == ("b = 20", "error")
    assert second.conversation.loaded_outcomes == {}  # nothing shared between engines
    assert not any(type(v).__name__ == "WeakKeyDictionary" for v in vars(cio).values())


def test_outcomes_from_turns_use_the_decided_code():
    def record(block, action, code, status):
        return SimpleNamespace(block=block, decision=Decision(action, code), status=status)

    turns = [
        SimpleNamespace(
            steps=[
                record(CodeBlock("python", "x = 1", "c9"), "run", "x = 2", "ok"),
                record(CodeBlock("python", "rm()", None), "skip", "", "skipped"),
            ]
        )
    ]
    outcomes = cio.outcomes_from_turns(turns)
    assert outcomes["id:c9"] == {"code": "x = 2", "status": "ok"}
    assert outcomes[cio.step_key(CodeBlock("python", "rm()"))] == {
        "code": "rm()",
        "status": "skipped",
    }


def test_document_round_trip_redacts_secrets():
    messages = [*tool_turn(f"use {SECRET}", "c1", "k = 1", "ok")]
    saved = cio.SavedConversation(messages, [0], "openai/m", [], "2024-01-01T00:00:00+00:00")
    doc = cio.to_document(saved, [SECRET])
    assert (doc["format"], doc["version"], doc["model"]) == ("oi-conversation", 1, "openai/m")
    assert SECRET not in json.dumps(doc) and "[REDACTED]" in doc["messages"][0]["content"]
    back = cio.from_document(json.loads(json.dumps(doc)))
    assert back.messages[1:] == messages[1:] and back.turn_starts == [0]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"format": "other"}, "is not a saved conversation"),
        ({"version": 2}, "format version 2; this oi_kernel reads up to 1"),
        ({"messages": "nope"}, "'messages' must be a list"),
        (
            {"messages": [{"role": "system", "content": "x"}], "turn_starts": []},
            "role is user, assistant or tool",
        ),
        ({"messages": CONVERSATION[:2], "turn_starts": [0]}, "tool call without a result"),
        ({"turn_starts": [1]}, "'turn_starts' must list"),
        ({"turn_starts": [4, 0]}, "'turn_starts' must list"),
    ],
)
def test_bad_documents_say_what_is_wrong(change, message):
    doc = cio.to_document(cio.SavedConversation(CONVERSATION, STARTS), [])
    doc.update(change)
    with pytest.raises(cio.ConversationFileError, match=message):
        cio.from_document(doc, "x.json")


def test_reading_invalid_json_names_the_line(tmp_path):
    path = tmp_path / "c.json"
    path.write_text('{\n  "format": "oi-conversation",\n  oops\n}')
    with pytest.raises(cio.ConversationFileError, match="not valid JSON \\(line 3"):
        cio.read(path)
    with pytest.raises(cio.ConversationFileError, match="No file"):
        cio.read(tmp_path / "missing.json")


# ----------------------------------------------------------------------------- kernels
def io_env(server: S.ScriptedLLMServer, tmp: Path) -> dict[str, str]:
    return oi_env(server, tmp, OI_API_KEY=SECRET, OI_AUTO_RUN="0", OI_APPROVAL_UI="stdin",
                  OI_PROFILE="")


@pytest.fixture(scope="module")
def kernel(_llm_server_session, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("conv")
    with KernelSession(env=io_env(_llm_server_session, tmp), cwd=str(tmp)) as ks:
        ks.tmp = tmp
        yield ks


@pytest.fixture
def oi(kernel, llm_server):
    assert kernel.execute("%reset").status == "ok"
    return kernel


def users(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "user"]


def shape(messages: list[dict]) -> list[tuple]:
    """What must survive a save and load: roles, texts, tool calls and their results."""
    return [
        (
            m["role"],
            m.get("content") or None,
            m.get("tool_call_id"),
            [(c["id"], c["function"]["arguments"]) for c in m.get("tool_calls") or []],
        )
        for m in messages
    ]


def test_undo_removes_the_turn_and_rolls_back_its_side_effects(oi, llm_server):
    llm_server.enqueue(S.tool_call("x = 41"), S.text("Set."))
    assert oi.execute("set x", stdin=["y"]).status == "ok"
    llm_server.enqueue(S.tool_call("x = x + 1"), S.text("Incremented."))
    assert oi.execute("increment x", stdin=["y"]).status == "ok"

    undone = oi.execute("%undo").text
    assert "the last instruction (“increment x”)" in undone
    assert "Rolled back to before instruction" in undone

    llm_server.enqueue(S.text("Fine."))
    oi.execute("what now")
    body = llm_server.requests[-1]
    assert users(body) == ["set x", "what now"]
    assert "x = x + 1" not in json.dumps(body["messages"])
    assert oi.execute("%%python\nprint(x)").stdout == "41\n"  # the code's effect is undone

    assert "the last 2 instructions" in oi.execute("%undo 5").text  # all that is left
    assert "Nothing to undo" in oi.execute("%undo").text


def test_save_load_round_trip_then_replay_in_a_fresh_kernel(oi, llm_server, tmp_path):
    llm_server.enqueue(
        S.tool_call("total = 10 + 5\nprint(total)"),
        S.tool_call("total = total * 2"),  # edited to * 3 below
        S.tool_call("import shutil; shutil.rmtree('data')"),  # declined below
        S.text("Total computed."),
    )
    run = oi.execute(
        f"compute the total with key {SECRET}", stdin=["y", "e", "total = total * 3", "n"]
    )
    assert run.status == "ok" and "15" in run.stdout
    path = tmp_path / "conv.json"
    saved = oi.execute(f"%save {path}")
    assert "Saved 1 instruction" in saved.text and "3 code steps" in saved.text

    doc = json.loads(path.read_text())
    assert (doc["format"], doc["version"], doc["model"]) == (
        "oi-conversation",
        1,
        "openai/scripted",
    )
    assert SECRET not in path.read_text()
    assert [(s["code"], s["status"]) for s in doc["steps"]] == [
        ("total = 10 + 5\nprint(total)", "ok"),
        ("total = total * 3", "ok"),
        ("import shutil; shutil.rmtree('data')", "skipped"),
    ]
    again = oi.execute(f"%save {path}")
    assert again.status == "error" and "--force" in again.text

    assert oi.execute("%reset").status == "ok"
    loaded = oi.execute(f"%load {path}").text
    assert "Loaded 1 instruction" in loaded
    assert "Variables are not restored" in loaded and f"%load {path} --replay" in loaded
    llm_server.enqueue(S.text("Still 45."))
    oi.execute("what is the total")
    sent = llm_server.requests[-1]["messages"]
    assert shape(sent[1:-1]) == shape(doc["messages"])  # the next request carries it all
    assert sent[-1]["content"] == "what is the total"

    env = io_env(llm_server, tmp_path)
    with KernelSession(env=env, cwd=str(tmp_path)) as fresh:
        assert fresh.execute("%%python\nprint('total' in dir())").stdout == "False\n"
        replay = fresh.execute(f"%load {path} --replay", stdin=["y", "y"], timeout=90)
        assert replay.status == "ok", replay.text
        assert len(replay.prompts) == 2  # each step asked; the declined one not proposed
        assert "rmtree" not in replay.text
        assert "Replay finished: 2 ok (of 2 steps)." in replay.text
        assert fresh.execute("%%python\nprint(total)").stdout == "45\n"
        llm_server.enqueue(S.text("Done."))
        fresh.execute("and now")
        assert users(llm_server.requests[-1])[-1] == "and now"
        assert len(users(llm_server.requests[-1])) == 2  # loaded instruction + this one


def test_load_errors_are_shown_and_keep_the_conversation(oi, llm_server, tmp_path):
    llm_server.enqueue(S.text("Hi."))
    oi.execute("hello")
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "oi-conversation", "version": 1, "messages": 3}')
    result = oi.execute(f"%load {bad}")
    assert result.status == "error" and "'messages' must be a list" in result.text
    llm_server.enqueue(S.text("Hi again."))
    oi.execute("still there?")
    assert users(llm_server.requests[-1]) == ["hello", "still there?"]
