"""What the engine reports: one event type per thing that happened, its only output.

Front doors turn events into what their user sees (``session.view.TurnView`` for
notebooks and terminals, ``api.chunks`` for the Python API, ``acp.updates`` for ACP
clients); the engine never renders. The session log is one more subscriber
(``record.log_writer.LogWriter`` turns each event into its record). Events a front door
does not show (``TurnStarted``, ``LLMRequested``, ``CheckpointKept``, ...) it ignores.

The names follow ACP's ``session/update`` kinds where one exists: ``TextDelta`` is a
message chunk, ``ReasoningDelta`` a thought chunk, ``CodeProposed`` a tool call's start,
``Decided`` / ``StepDone`` its progress and end, ``ReplyDone`` / ``TurnDone`` carry usage.

Events are values (frozen). The record of a turn (a ``Turn`` with a ``StepRecord`` per
step) is derived from them: ``core.turn_fold.TurnBuilder`` folds a turn's events into it, for the
engine and for anyone else who holds the events.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from oi_kernel.core.types import ApprovalRequest, CodeBlock, Reply, StepRecord, Turn

if TYPE_CHECKING:
    from oi_kernel.core.claims import Check
    from oi_kernel.core.guard import GuardStop
    from oi_kernel.core.tools import ToolSpec
    from oi_kernel.safety.risk import Flag


@dataclass(frozen=True)
class TextDelta:
    """A piece of the model's reply as it streams."""

    text: str


@dataclass(frozen=True)
class ReasoningDelta:
    """A piece of the model's reasoning ("thinking") as it streams: shown, never run."""

    text: str


@dataclass(frozen=True)
class ReplyDone:
    """The model's reply of one LLM call is complete, with the blocks found in it."""

    step: int
    reply: Reply
    blocks: list[CodeBlock]
    turn: int = 0


@dataclass(frozen=True)
class CodeProposed:
    """A block is about to be decided (``needs_approval`` False: it runs without asking)."""

    request: ApprovalRequest
    needs_approval: bool = True


@dataclass(frozen=True)
class Decided:
    """The decision about a step is known (``request``: what was asked, four-eyes included;
    ``tool``: the tool of a tool step). ``record`` is the step as decided: its ``decision``,
    and for a step that ends here (skipped, stopped) its status and feedback. A ``record``
    without a decision is a step nobody was asked about: refused (its language is not
    available) or not reached (the user stopped the instruction at an earlier step)."""

    record: StepRecord
    turn: int = 0
    request: ApprovalRequest | None = None
    tool: ToolSpec | None = None


@dataclass(frozen=True)
class StepDone:
    """A step ran (or was interrupted); its record holds the status and outputs. ``block``
    is the code that ran (the edit, not the proposal); ``outside``: the text from outside the
    user that its output carries to the model (``{"source", "kind", "phrase", "verb"}``)."""

    record: StepRecord
    turn: int = 0
    block: CodeBlock | None = None
    tool: ToolSpec | None = None
    outside: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class GuardStopped:
    """The runtime guard, or a default limit of steps that run without asking, stopped
    step ``step`` (``stop`` says what); the step is asked about next (``core.guard``)."""

    turn: int
    step: int
    stop: GuardStop


@dataclass(frozen=True)
class Notice:
    """Something the user should know (a retry, a refused language, a cap, a restart)."""

    text: str
    level: Literal["info", "warning", "error"] = "info"


@dataclass(frozen=True)
class TurnDone:
    """The instruction finished (in any way): ``reason`` done / stopped / cap / max_steps /
    interrupted / llm_error / approval_unavailable / error ("" when unknown), ``final_text``
    the model's answer. ``turn`` is the instruction's record as its events built it
    (``core.turn_fold``), complete when a subscriber sees this event."""

    turn: Turn
    reason: str = ""
    final_text: str = ""


@dataclass(frozen=True)
class AnswerChecked:
    """The numbers of an instruction's answer, each traced to the step output that printed
    it or found in none (``core.claims``); ``answer``: the text checked; ``asked``: it is the
    model's second answer, after the first was sent back once (``check_answers``)."""

    turn: int
    check: Check
    answer: str
    asked: bool = False


@dataclass(frozen=True)
class ToolNotice(Notice):
    """A notice from the tools (an MCP server that did not start): shown like any notice."""


@dataclass(frozen=True)
class UntrustedNotice(Notice):
    """The one notice of an instruction that a step following text from outside runs
    without asking (auto-run or Run all): shown like any notice."""


# ----------------------------------------------------------------------------- turns
@dataclass(frozen=True)
class TurnStarted:
    """An instruction (or recorded code: ``run_code_steps``) starts; ``fields`` say more
    (a replay names its source); ``conversation_index``: its place among the conversation's
    instructions."""

    turn: int
    instruction: str
    fields: dict[str, Any] = field(default_factory=dict)
    conversation_index: int = 0
    started: float = field(default_factory=time.time)


# ----------------------------------------------------------------------------- the model
@dataclass(frozen=True)
class LLMRequested:
    """A request goes to the model (its full messages; the log stores only the new ones)."""

    turn: int
    step: int
    model: str
    tools: bool
    small: bool
    messages: list[dict[str, Any]]


@dataclass(frozen=True)
class LLMFailed:
    """A request to the model failed (``partial_text``: what arrived before)."""

    turn: int
    step: int
    error: str
    partial_text: str = ""


@dataclass(frozen=True)
class ToolsUnsupported:
    """The model's server refused tools; the request is sent again without them."""

    turn: int
    step: int
    error: str


@dataclass(frozen=True)
class SampleDrawn:
    """Another reply to the same request was drawn (small models' consensus; not shown)."""

    turn: int
    step: int
    reply: Reply
    sampling: dict[str, Any]


@dataclass(frozen=True)
class DraftSetAside:
    """A small model's draft had visible mistakes; another is asked for."""

    turn: int
    step: int
    code: str
    problems: list[str]


@dataclass(frozen=True)
class DraftsSampled:
    """How the consensus among sampled drafts went (``skipped``: not sampled, and why;
    ``error``: sampling stopped at an LLM error)."""

    turn: int
    step: int
    fields: dict[str, Any]
    outcome: Literal["samples", "skipped", "error"] = "samples"


# ----------------------------------------------------------------------------- steps
@dataclass(frozen=True)
class StepReviewed:
    """A proposed block was reviewed (risk flags, outside text it follows), before it is
    refused, asked about or run."""

    turn: int
    step: int
    block: CodeBlock
    flags: list[Flag]
    untrusted: list[dict[str, Any]] = field(default_factory=list)
    tool: ToolSpec | None = None


@dataclass(frozen=True)
class CheckpointKept:
    """A checkpoint was kept before an instruction's first code (``info``: the probe's)."""

    turn: int
    info: dict[str, Any]


@dataclass(frozen=True)
class RolledBack:
    """The state went back to before instruction ``turn`` (``report``: what was restored)."""

    turn: int
    report: dict[str, Any]


# ----------------------------------------------------------------------------- the session
@dataclass(frozen=True)
class ConversationReset:
    """The conversation was forgotten."""


@dataclass(frozen=True)
class ConversationUndone:
    """The last ``turns`` instructions were forgotten; ``messages`` remain."""

    turns: int
    messages: int


@dataclass(frozen=True)
class ConversationSaved:
    path: str
    turns: int


@dataclass(frozen=True)
class ConversationLoaded:
    path: str
    turns: int
    messages: int


@dataclass(frozen=True)
class ProfileApplied:
    """A profile (or none) was applied with these settings."""

    name: str | None
    path: str | None
    selected_by: str
    settings: dict[str, Any]


@dataclass(frozen=True)
class ToolsOffered:
    """The notebook functions offered to the model changed."""

    functions: list[str]


@dataclass(frozen=True)
class ChildRestarted:
    """A new child kernel replaced the previous one (its variables are gone)."""

    reason: str
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class DirectRun:
    """A cell ran as is, without the model (``%%python``, a shell line, the API's
    ``run_code``)."""

    kind: str
    code: str
    status: str
    outputs: list[dict[str, Any]]
    duration_s: float | None = None


@dataclass(frozen=True)
class Rebuilt:
    """``%rebuild`` re-ran the recorded code of a lost child kernel in a new one: why the
    old one was lost, how many steps were planned and ran, the one that failed (its place
    and why; "" when none), what was skipped and why, the files restored, and how far
    through the plan it got."""

    lost: str
    planned: int
    ran: int
    failed: str = ""
    skipped: list[str] = field(default_factory=list)
    files: dict[str, Any] = field(default_factory=dict)
    done: int = 0  # the plan's steps handled (ran or skipped) so far: a next rebuild goes on


@dataclass(frozen=True)
class StateChanged:
    """A named state (``%state``) was saved, restored or dropped: its name, what the probe
    said (sizes, how the namespace is kept, what came back), where in the log it stands
    (``mark``: the sequence number of the last record it includes) and the recorded steps
    that rebuild its variables in a new kernel (``session.states``)."""

    action: str  # "save", "restore", "drop"
    name: str
    info: dict[str, Any] = field(default_factory=dict)
    mark: int = 0
    steps: list[dict[str, Any]] = field(default_factory=list)


Event = (
    TextDelta | ReasoningDelta | ReplyDone | CodeProposed | Decided | StepDone | Notice | TurnDone
    | UntrustedNotice | TurnStarted | LLMRequested | LLMFailed | ToolsUnsupported | SampleDrawn
    | DraftSetAside | DraftsSampled | StepReviewed | CheckpointKept | RolledBack | ConversationReset
    | ConversationUndone | ConversationSaved | ConversationLoaded | ProfileApplied
    | ToolsOffered | ChildRestarted | DirectRun | AnswerChecked | Rebuilt | StateChanged
)
EventSink = Callable[[Event], None]
