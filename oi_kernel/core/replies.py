"""What the turn loop makes of a reply and says back: the assistant message of a reply with
tool calls, each step's answer (a tool result, or text for the next user message), the
images a step displayed (for vision models), and the notices about a reply cut off or
empty (``core.engine``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from oi_kernel.core.conversation import Conversation
from oi_kernel.core.types import Reply, StepRecord

CUT_BLOCK_NOTICE = (
    "The reply reached the model's output token limit inside a code block: that block was "
    "cut off and was not run. The model was asked to send it again."
)
EMPTY_REPLY_NOTICE = (
    "The model sent an empty reply (no text and no code). Ask again or rephrase; if it keeps "
    "happening, check the model (`%model`) and its server."
)
ONLY_REASONING_NOTICE = (
    "The model only reasoned (shown as thinking above) and gave no answer and no code. Ask "
    "again or rephrase; if it keeps happening, the model may need a larger reply limit."
)


def empty_notice(reply: Reply) -> str:
    """A reply with no answer and no code, before any step ran (after steps, the model has
    nothing to add, as many local models answer a tool result, and the turn just ends)."""
    return ONLY_REASONING_NOTICE if reply.reasoning.strip() else EMPTY_REPLY_NOTICE


def answerer(conversation: Conversation,
             feedback: list[str]) -> Callable[[str | None, str], None]:
    """Answers a step: a tool result message (tool mode), or text for the next user
    message (markdown mode, gathered in ``feedback``)."""

    def answer(call_id: str | None, text: str) -> None:
        if call_id:
            conversation.answer_tool_call(call_id, text)
        else:
            feedback.append(text)

    return answer


def images_of(records: list[StepRecord]) -> list[str]:
    """The images the steps displayed, as data URLs."""
    return [
        f"data:{mime};base64,{data.strip()}"
        for r in records for o in r.outputs
        for mime, data in (o.get("data") or {}).items()
        if mime in ("image/png", "image/jpeg") and isinstance(data, str)
    ]


def images_message(images: list[str]) -> dict[str, Any]:
    """Vision models see the images as a user message after the results (tool results are
    text)."""
    parts: list[dict[str, Any]] = [
        {"type": "text", "text": "The images displayed by the code above:"}]
    parts += [{"type": "image_url", "image_url": {"url": url}} for url in images]
    return {"role": "user", "content": parts}


def assistant_tool_message(reply: Reply) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": reply.text or None,
        "tool_calls": [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in reply.tool_calls
        ],
    }
