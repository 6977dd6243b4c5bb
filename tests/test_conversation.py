"""The engine's Conversation: messages and turn boundaries change together (undo, replace,
fork, inference of boundaries for a hand-built list)."""

from __future__ import annotations

import copy

import pytest

from oi_kernel.core.conversation import Conversation, MessageList, infer_turn_starts
from oi_kernel.errors import OIError
from tests.test_conversation_io import CONVERSATION, STARTS


def conversation() -> Conversation:
    conv = Conversation()
    conv.replace(CONVERSATION, STARTS)
    return conv


@pytest.mark.parametrize(
    ("n", "kept_starts", "kept_messages"),
    [(1, [0, 4], 8), (2, [0], 4), (3, [], 0), (9, [], 0)],
)
def test_undo_cuts_at_the_instruction_of_the_nth_last_turn(n, kept_starts, kept_messages):
    conv = conversation()
    removed = conv.undo(n)
    assert conv.turn_starts == kept_starts
    assert conv.messages == CONVERSATION[:kept_messages]
    assert removed == ["make a", "make b", "show c"][len(kept_starts):]
    assert len(CONVERSATION) == 12  # the input was copied, not changed


def test_undo_of_nothing_and_bad_counts():
    assert Conversation().undo(1) == []
    with pytest.raises(OIError, match="at least 1"):
        conversation().undo(0)


def test_turn_boundaries_are_inferred_for_a_hand_built_list():
    # tool mode, markdown feedback ("3" answers the fenced code), a final answer
    assert infer_turn_starts(CONVERSATION) == STARTS
    stopped = [
        {"role": "user", "content": "do it"},
        {"role": "assistant", "content": "```python\nrm()\n```"},
        {"role": "user", "content": "The user declined to run this code."},
        {"role": "user", "content": "then list the files"},  # a new instruction after a skip
        {"role": "user", "content": [{"type": "text", "text": "The images displayed"}]},
    ]
    assert infer_turn_starts(stopped) == [0, 3]


def test_a_message_list_carries_its_turns_through_deepcopy():
    source = conversation()
    shown = source.as_list()
    assert isinstance(shown, MessageList) and shown.turn_starts == STARTS
    forked = Conversation()
    forked.replace(copy.deepcopy(shown))
    assert forked.turn_starts == STARTS and forked.messages == CONVERSATION
    forked.undo(1)
    assert len(source.messages) == 12  # independent


def test_start_turn_and_drop_last_keep_boundaries_valid():
    conv = Conversation()
    conv.start_turn("first")
    with pytest.raises(OIError, match="use undo"):
        conv.drop_last()
    conv.append({"role": "assistant", "content": "draft"})
    assert conv.drop_last()["content"] == "draft"
    assert conv.turn_starts == [0] and conv.instruction() == "first"
    assert conv.protect_from() == 1


def test_open_tool_calls_are_closed():
    conv = Conversation()
    conv.start_turn("go")
    conv.append({"role": "assistant", "content": None, "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "execute", "arguments": "{}"}},
        {"id": "b", "type": "function", "function": {"name": "execute", "arguments": "{}"}},
    ]})
    conv.answer_tool_call("a", "ok")
    conv.close_open_tool_calls("interrupted")
    assert [m.get("tool_call_id") for m in conv.messages[2:]] == ["a", "b"]
    assert conv.messages[-1]["content"] == "interrupted"


def test_replace_rejects_what_a_model_would_reject():
    with pytest.raises(OIError, match="tool call without a result"):
        Conversation().replace(CONVERSATION[:2])
    with pytest.raises(OIError, match="'turn_starts' must list"):
        Conversation().replace(CONVERSATION, [1])
