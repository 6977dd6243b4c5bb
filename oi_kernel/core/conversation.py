"""The conversation: the messages sent after the system prompt in every LLM request, and
where each instruction (turn) starts among them.

The engine owns one ``Conversation``; undo, save/load, fork and the API's ``messages``
setter change it only through these methods, so the turn boundaries always match the
messages. ``MessageList`` is a plain list of message dicts that also carries its turn
boundaries, so ``copy.deepcopy(it.messages)`` moved into another Interpreter forks the
conversation with its turns intact; for a list built by hand they are inferred.
Pure: no I/O.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from oi_kernel.core.codeblocks import extract_code_blocks
from oi_kernel.errors import OIError

Message = dict[str, Any]
ROLES = frozenset({"user", "assistant", "tool"})


class MessageList(list):  # type: ignore[type-arg]
    """A list of messages with the index of each instruction (``turn_starts``)."""

    def __init__(self, messages: Iterable[Message] = (), turn_starts: Iterable[int] = ()) -> None:
        super().__init__(messages)
        self.turn_starts = list(turn_starts)


class Conversation:
    """Messages and turn boundaries, changed together."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.turn_starts: list[int] = []  # index in ``messages`` of each instruction
        # step key -> {"code", "status"} of the steps that came from a loaded file (they are
        # in no turn of this session; ``record.saved`` saves them again with their outcome)
        self.loaded_outcomes: dict[str, dict[str, Any]] = {}

    def __len__(self) -> int:
        return len(self.messages)

    # ------------------------------------------------------------ growing
    def start_turn(self, content: str) -> None:
        """Append an instruction: a user message that begins a turn."""
        self.turn_starts.append(len(self.messages))
        self.messages.append({"role": "user", "content": content})

    def append(self, message: Message) -> None:
        self.messages.append(message)

    def drop_last(self) -> Message:
        """Remove the last message (a draft set aside); never a turn's instruction."""
        if self.turn_starts and self.turn_starts[-1] == len(self.messages) - 1:
            raise OIError("The last message is an instruction; use undo() to remove a turn.")
        return self.messages.pop()

    def answer_tool_call(self, call_id: str, text: str) -> None:
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": text})

    def close_open_tool_calls(self, text: str) -> None:
        """Give every unanswered tool call a result: a request with one would be invalid."""
        while (call_id := first_unanswered(self.messages)) is not None:
            self.answer_tool_call(call_id, text)

    # ------------------------------------------------------------ reading
    def instruction(self, index: int = -1) -> str:
        """The text of a turn's instruction (the last one by default)."""
        content = self.messages[self.turn_starts[index]].get("content")
        return content if isinstance(content, str) else ""

    def instructions(self) -> list[str]:
        return [self.instruction(i) for i in range(len(self.turn_starts))]

    def protect_from(self) -> int | None:
        """Index in a request (after the system prompt) from which messages are kept whole:
        the previous turn's instruction, or the first message."""
        starts = [i for i in self.turn_starts if i < len(self.messages)]
        if len(starts) >= 2:
            return starts[-2] + 1
        return 1 if starts else None

    def as_list(self) -> MessageList:
        """The messages (the same dicts) as a ``MessageList`` with the turn boundaries."""
        return MessageList(self.messages, self.turn_starts)

    # ------------------------------------------------------------ changing
    def clear(self) -> None:
        self.messages.clear()
        self.turn_starts.clear()

    def undo(self, n: int = 1) -> list[str]:
        """Drop the last ``n`` turns (fewer if there are fewer); their instructions."""
        if n < 1:
            raise OIError("Usage: undo N, where N (the instructions to remove) is at least 1.")
        if not self.turn_starts:
            return []
        keep = self.turn_starts[: max(0, len(self.turn_starts) - n)]
        cut = self.turn_starts[len(keep)]
        removed = self.instructions()[len(keep) :]
        del self.messages[cut:]
        self.turn_starts[:] = keep
        return removed

    def replace(self, messages: list[Message], turn_starts: list[int] | None = None) -> None:
        """Take another conversation's messages (copied). Without ``turn_starts`` they come
        from a ``MessageList``, else they are inferred (``infer_turn_starts``)."""
        check_messages(messages)
        if turn_starts is None:
            turn_starts = getattr(messages, "turn_starts", None)
        starts = list(turn_starts) if turn_starts is not None else infer_turn_starts(messages)
        check_turn_starts(starts, messages)
        self.messages = copy.deepcopy(list(messages))
        self.turn_starts = starts


# ----------------------------------------------------------------------------- checks
def check_messages(messages: Any) -> None:
    """Raise OIError unless ``messages`` is a list of role dicts a model would accept."""
    if not isinstance(messages, list):
        raise OIError("'messages' must be a list of dicts with a 'role' (as it.messages gives).")
    answered = {m.get("tool_call_id") for m in messages if isinstance(m, dict)
                and m.get("role") == "tool"}
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or msg.get("role") not in ROLES:
            raise OIError(f"message {i} must be a dict whose role is user, assistant or tool.")
        if msg["role"] == "tool" and not msg.get("tool_call_id"):
            raise OIError(f"message {i} (a tool result) has no tool_call_id.")
        for call in msg.get("tool_calls") or []:
            if not isinstance(call, dict) or call.get("id") not in answered:
                raise OIError(f"message {i} has a tool call without a result; the model "
                              "would reject the conversation.")


def check_turn_starts(starts: Any, messages: list[Message]) -> None:
    ok = isinstance(starts, list) and all(isinstance(s, int) for s in starts)
    ok = ok and starts == sorted(set(starts))
    ok = ok and all(0 <= s < len(messages) and messages[s]["role"] == "user" for s in starts)
    if not ok:
        raise OIError("'turn_starts' must list, in order, the index of each instruction (a "
                      "user message) in 'messages'.")


def infer_turn_starts(messages: list[Message]) -> list[int]:
    """Where instructions start in a list without recorded boundaries.

    A user message with text is an instruction unless it answers the code of the
    assistant message just before it (markdown mode feeds step results back as a user
    message); messages with image parts show a step's images and are never one."""
    starts = []
    for i, msg in enumerate(messages):
        if msg.get("role") != "user" or not isinstance(msg.get("content"), str):
            continue
        before = messages[i - 1] if i else None
        answers_code = (
            before is not None
            and before.get("role") == "assistant"
            and (before.get("tool_calls") or extract_code_blocks(str(before.get("content") or "")))
        )
        if not answers_code:
            starts.append(i)
    return starts


def first_unanswered(messages: list[Message]) -> str | None:
    """The id of the first tool call of the last assistant message that has no result."""
    for i in range(len(messages) - 1, -1, -1):
        msg = messages[i]
        if msg.get("role") == "assistant":
            answered = {m.get("tool_call_id") for m in messages[i + 1 :] if m.get("role") == "tool"}
            for call in msg.get("tool_calls") or []:
                if call["id"] not in answered:
                    return call["id"]
            return None
    return None
