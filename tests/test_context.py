"""The context budget: condensing a conversation to fit, keeping what must stay whole."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oi_kernel.core.context import SUMMARY_HEAD, fit_messages, total_tokens


def count(text: str) -> int:
    return len(text) // 4 + 1


def turn(i: int, output_chars: int) -> list[dict]:
    call_id = f"call_{i}"
    return [
        {"role": "user", "content": f"instruction {i}"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {
                        "name": "execute",
                        "arguments": json.dumps(
                            {"language": "python", "code": f"print({i})\n" * 40}
                        ),
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": f"out{i} " * (output_chars // 6)},
        {"role": "assistant", "content": f"answer {i}"},
    ]


def conversation(turns: int, output_chars: int) -> list[dict]:
    msgs = [{"role": "system", "content": "system prompt"}]
    for i in range(turns):
        msgs += turn(i, output_chars)
    return msgs


def tool_pairs_valid(messages: list[dict]) -> bool:
    open_ids: set[str] = set()
    for m in messages:
        if m["role"] == "assistant":
            if open_ids:
                return False
            open_ids = {c["id"] for c in m.get("tool_calls") or []}
        elif m["role"] == "tool":
            if m["tool_call_id"] not in open_ids:
                return False
            open_ids.discard(m["tool_call_id"])
        elif m["role"] == "user" and open_ids:
            return False
    return not open_ids


def test_small_conversation_is_untouched():
    msgs = conversation(3, 100)
    assert fit_messages(msgs, 10_000, count) == msgs


def test_input_is_not_modified():
    msgs = conversation(20, 5000)
    before = json.dumps(msgs)
    fit_messages(msgs, 2000, count)
    assert json.dumps(msgs) == before


class _Part:
    """Not JSON: copied with copy.deepcopy, as before."""

    def __init__(self, text: str) -> None:
        self.text = text


@pytest.mark.unit
def test_the_copy_shares_nothing_that_can_change():
    """The request is a deep copy: changing any dict, list or object in it leaves the
    conversation as it was (strings and numbers, which cannot change, are shared)."""
    msgs = conversation(2, 100)
    msgs[1]["content"] = [{"type": "text", "text": "look"}, {"type": "image_url",
                          "image_url": {"url": "data:image/png;base64,AAAA"}}]
    msgs.append({"role": "user", "content": "x", "extra": _Part("kept")})
    before = json.dumps(msgs, default=lambda o: o.text)
    fitted = fit_messages(msgs, 10_000, count)
    assert json.dumps(fitted, default=lambda o: o.text) == before
    fitted[1]["content"][1]["image_url"]["url"] = "changed"
    fitted[2]["tool_calls"][0]["function"]["arguments"] = "changed"
    fitted[2]["tool_calls"].append({"id": "new"})
    fitted[-1]["extra"].text = "changed"
    fitted[0]["role"] = "changed"
    assert json.dumps(msgs, default=lambda o: o.text) == before
    assert fitted[-1]["extra"] is not msgs[-1]["extra"]


def test_outputs_are_condensed_before_turns_are_dropped():
    msgs = conversation(6, 4000)
    budget = total_tokens(msgs, count) - 1500
    fitted = fit_messages(msgs, budget, count)
    assert total_tokens(fitted, count) <= budget
    assert not any(SUMMARY_HEAD in str(m.get("content")) for m in fitted)  # no turn dropped
    assert "condensed" in fitted[3]["content"]  # the oldest output was cut
    assert fitted[-2] == msgs[-2]  # the last output is whole


def test_old_turns_become_summary_lines_and_protected_tail_stays():
    msgs = conversation(30, 5_000)  # the engine cuts each output to ~6,000 characters
    fitted = fit_messages(msgs, 6_000, count)
    assert total_tokens(fitted, count) <= 6_000
    assert fitted[0] == msgs[0]
    assert fitted[1]["content"].startswith(SUMMARY_HEAD)
    assert "- instruction 0" in fitted[1]["content"]
    assert fitted[-4:] == msgs[-4:]  # the last turn is never cut
    assert tool_pairs_valid(fitted)


def test_protect_from_keeps_the_named_tail():
    msgs = conversation(10, 3000)
    protect = len(msgs) - 8  # the last two turns
    fitted = fit_messages(msgs, 2500, count, protect_from=protect)
    assert fitted[-8:] == msgs[-8:]


@settings(max_examples=60, deadline=None)
@given(turns=st.integers(1, 25), output=st.integers(0, 20_000), budget=st.integers(500, 40_000))
def test_never_over_budget_when_the_tail_fits(turns, output, budget):
    msgs = conversation(turns, output)
    tail = [msgs[0], *msgs[-8:]]
    fitted = fit_messages(msgs, budget, count)
    assert tool_pairs_valid(fitted)
    assert fitted[0] == msgs[0]
    if total_tokens(tail, count) + 100 <= budget:
        assert total_tokens(fitted, count) <= budget
