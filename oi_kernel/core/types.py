"""Plain data shared by the engine and its front doors: code blocks, LLM replies,
approval decisions, and the record of each turn.

Nothing here does I/O; every type is a dataclass that serialises to JSON with
``dataclasses.asdict`` for the session log.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from oi_kernel.core.values import freeze

# How a front door sends a Jupyter message to its cell's output (IOPub): ``send(msg_type,
# content)``. The kernel's own IOPub, or the user's kernel's under ``%%oi``.
SendIOPub = Callable[[str, dict[str, Any]], None]


def code_hash(code: str) -> str:
    """The sha256 of ``code`` as UTF-8, the identity of what ran in the audit log."""
    return hashlib.sha256(code.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CodeBlock:
    """One piece of code the LLM proposed. ``bare``: the reply was nothing but this code,
    without a fence or a tool call, and was recognised as code (small-model mode)."""

    language: str
    code: str
    tool_call_id: str | None = None
    bare: bool = False
    tool: str = ""  # a tool step: the offered tool name; ``code`` is its JSON arguments


@dataclass(frozen=True)
class ToolCall:
    """A function call as the LLM streamed it; ``arguments`` is the raw JSON text."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Usage:
    """Tokens and cost of one or more LLM requests (cost is None when unknown)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None

    def __add__(self, other: Usage) -> Usage:
        if self.cost is None and other.cost is None:
            cost = None
        else:
            cost = (self.cost or 0.0) + (other.cost or 0.0)
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            cost,
        )


@dataclass(frozen=True)
class Reply:
    """One complete LLM answer: ``text`` is the answer, ``reasoning`` what the model
    thought before it (a ``reasoning_content`` field or ``<think>`` tags; never run, never
    sent back as the answer)."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    latency_s: float = 0.0
    finish_reason: str | None = None
    reasoning: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "tool_calls", tuple(self.tool_calls))


Action = Literal["run", "skip", "stop"]


@dataclass
class ApprovalRequest:
    """What the approver is asked about: one proposed block of one turn."""

    turn: int
    step: int
    block: CodeBlock
    flags: list[Any] = field(default_factory=list)
    sandboxed: bool = False
    run_all_allowed: bool = True  # False: an administrator's policy asks about every block
    tool: str = ""  # a tool step: "server › tool" (the block's code is the JSON arguments)
    author: str = ""  # who sent the instruction (``core.identity``)
    allow_stdin: bool = False  # the user may be asked on stdin (the turn's ``TurnContext``)
    # four-eyes: the mode ("four-eyes" / "four-eyes-all") that makes this step need a
    # decision by someone other than ``author`` ("" when it does not), and who set it
    # ("policy": the administrator's policy, "setting": %approval or the config)
    four_eyes: str = ""
    four_eyes_source: str = ""
    # the step's previews (``core.preview.StepPreview``): ``run(code)`` for the approver,
    # ``why_not`` when none can be made here; None for a front door that offers none
    preview: Any = field(default=None, compare=False, repr=False)

    @property
    def previewed(self) -> Any:
        """The latest preview of this step (``core.preview.PreviewResult``), or None."""
        return self.preview.latest() if self.preview is not None else None


@dataclass(frozen=True)
class Decision:
    """The answer to an ``ApprovalRequest``.

    ``action`` "run" runs ``code`` (the shown text, or the user's edit when
    ``edited``); "skip" runs nothing and tells the LLM ``reason``; "stop" ends the
    instruction. ``run_all`` approves the rest of the instruction's steps too. ``by`` names
    who decided: a person's name (``core.identity``), or "auto" (nobody was asked); logs
    written before names were recorded say "user".
    """

    action: Action
    code: str = ""
    edited: bool = False
    run_all: bool = False
    reason: str = ""
    by: str = "user"
    at: float = field(default_factory=time.time)
    # where a front door shows this decision ({"display_id", "html", "plain"}), so that what
    # the step changed can be added to that record later
    shown: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "shown", freeze(self.shown))

    @property
    def label(self) -> str:
        """approved / edited / skipped / stopped / auto, as shown and logged."""
        if self.action == "skip":
            return "skipped"
        if self.action == "stop":
            return "stopped"
        if self.by == "auto":
            return "auto"
        return "edited" if self.edited else "approved"


StepStatus = Literal["ok", "error", "skipped", "stopped", "interrupted", "died", "refused"]


@dataclass(frozen=True)
class StepRecord:
    """One proposed block and what became of it."""

    index: int
    block: CodeBlock
    decision: Decision | None = None
    status: StepStatus = "skipped"
    outputs: tuple[Mapping[str, Any], ...] = ()
    feedback: str = ""
    duration_s: float = 0.0
    changes: Mapping[str, Any] | None = None  # what the step changed (``core.changes``)

    def __post_init__(self) -> None:
        object.__setattr__(self, "outputs", freeze(self.outputs))
        object.__setattr__(self, "changes", freeze(self.changes))

    @property
    def code_ran(self) -> str | None:
        if self.decision is None or self.decision.action != "run":
            return None
        return self.decision.code


@dataclass
class Turn:
    """One instruction and everything the loop did for it."""

    index: int
    instruction: str
    started: float = field(default_factory=time.time)
    conversation_index: int = 0  # its place among the conversation's instructions
    steps: list[StepRecord] = field(default_factory=list)
    final_text: str = ""
    end_reason: str = ""
    usage: Usage = field(default_factory=Usage)
    llm_calls: int = 0
    samples: int = 0  # more drafts drawn to compare with (small models; not LLM calls)
    # text from outside the user that entered this instruction: [{"step", "source", "kind",
    # "phrase", "read"}]; "read": the model has read it (it answered the reply after it)
    untrusted: list[dict[str, Any]] = field(default_factory=list)
    untrusted_noticed: bool = False  # auto-run: the one notice said so
    # the answer's numbers traced to the outputs that printed them (``core.claims.Check``
    # as a dict), when the answer was checked (``c.Engine.check_answers``)
    answer_check: dict[str, Any] | None = None
