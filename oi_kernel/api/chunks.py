"""What ``Interpreter.chat()`` yields: one typed chunk per thing the user may want to see,
made from the engine's events (``to_chunks``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from oi_kernel.core import events as E
from oi_kernel.core.answer_check import marks_plain
from oi_kernel.core.changes import change_lines
from oi_kernel.core.output_text import outputs_to_text
from oi_kernel.core.types import Turn, Usage
from oi_kernel.core.values import thaw

_FULL = 10**9  # outputs_to_text limits for chunks: the caller gets everything


@dataclass
class TextChunk:
    """A piece of the assistant's reply as it streams."""

    text: str


@dataclass
class ThinkingChunk:
    """A piece of the model's reasoning as it streams (never run, not part of the answer)."""

    text: str


@dataclass
class CodeChunk:
    """Code the model proposed; ``flags`` are the risk review's findings; ``recognised``:
    the reply was nothing but this code (no fence, no tool call), recognised as code."""

    step: int
    language: str
    code: str
    flags: list[Any] = field(default_factory=list)
    needs_approval: bool = True
    recognised: bool = False


@dataclass
class ApprovalChunk:
    """The decision about a step: approved, edited, skipped, stopped or auto."""

    step: int
    decision: str
    code: str = ""  # what runs (the edited text when edited); "" when nothing runs


@dataclass
class OutputChunk:
    """What a step produced: nbformat v4 ``outputs`` and their plain ``text``."""

    step: int
    status: str  # ok, error, interrupted, died
    outputs: list[dict[str, Any]] = field(default_factory=list)
    text: str = ""
    changes: dict[str, Any] | None = None  # variables and files the step changed
    changes_text: str = ""  # the same as lines ("x: int 1 → 2", "out.csv (created, 3 bytes)")


@dataclass
class MessageChunk:
    """The assistant's final answer of an instruction (the reply without code)."""

    text: str


@dataclass
class ClaimsChunk:
    """The final answer's numbers, each traced to the step output that printed it or found
    in none (``claims``: ``core.claims.Claim`` dicts; ``untraced``: the numbers found in no
    output; ``text``: the compact list a terminal shows, e.g. ``23% — not in any output``)."""

    claims: list[dict[str, Any]]
    untraced: list[str]
    text: str
    note: str = ""
    asked: bool = False  # the first answer was sent back once (check_answers "ask-model")


@dataclass(frozen=True)
class UsageChunk(Usage):
    """Tokens and cost of the whole instruction (cost None when unknown)."""


@dataclass
class NoticeChunk:
    """Something the user should know: a retry, a refused language, the step cap."""

    text: str
    level: Literal["info", "warning", "error"] = "info"


Chunk = (
    TextChunk | ThinkingChunk | CodeChunk | ApprovalChunk | OutputChunk | MessageChunk
    | UsageChunk | NoticeChunk | ClaimsChunk
)


def to_chunks(event: E.Event) -> list[Chunk]:
    """The chunks an engine event becomes (none for bookkeeping events)."""
    if isinstance(event, E.TextDelta):
        return [TextChunk(event.text)]
    if isinstance(event, E.ReasoningDelta):
        return [ThinkingChunk(event.text)]
    if isinstance(event, E.CodeProposed):
        req = event.request
        return [
            CodeChunk(req.step, req.block.language, req.block.code, list(req.flags),
                      event.needs_approval, req.block.bare)
        ]
    if isinstance(event, E.Decided):
        decision = event.record.decision
        if decision is None:
            return []
        code = decision.code if decision.action == "run" else ""
        return [ApprovalChunk(event.record.index, decision.label, code)]
    if isinstance(event, E.StepDone):
        record = event.record
        chunk = _output_chunk(record.index, record.status, record.outputs)
        chunk.changes = thaw(record.changes)  # the caller's own copy (events are frozen)
        chunk.changes_text = "\n".join(change_lines(record.changes))
        return [chunk]
    if isinstance(event, E.Notice):
        return [NoticeChunk(event.text, event.level)]
    if isinstance(event, E.TurnDone):
        return _turn_chunks(event.turn)
    if isinstance(event, E.AnswerChecked) and (event.check.claims or event.check.note):
        check = event.check
        return [ClaimsChunk([c.to_dict() for c in check.claims],
                            [c.text for c in check.untraced], marks_plain(check), check.note,
                            event.asked)]
    return []


def _output_chunk(
    step: int, status: str, outputs: list[dict[str, Any]], note: str = ""
) -> OutputChunk:
    text = outputs_to_text(outputs, max_chars=_FULL, max_error_chars=_FULL)
    return OutputChunk(step, status, thaw(outputs), "\n".join(t for t in (text, note) if t))


def _turn_chunks(turn: Turn) -> list[Chunk]:
    chunks: list[Chunk] = []
    if turn.final_text:
        chunks.append(MessageChunk(turn.final_text))
    if turn.llm_calls:
        u = turn.usage
        chunks.append(UsageChunk(u.prompt_tokens, u.completion_tokens, u.cost))
    return chunks
