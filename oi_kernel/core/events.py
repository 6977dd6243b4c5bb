"""What the engine reports: one event type per thing that happened, its only output, and
the session log's format: an event that is recorded names its record ``kind`` and writes
its own fields (``record``).

Front doors turn events into what their user sees (``session.view.TurnView`` for
notebooks and terminals, ``api.chunks`` for the Python API, ``acp.updates`` for ACP
clients); the engine never renders. The session log is one more subscriber
(``record.log_writer.LogWriter`` writes ``event.to_record()`` under ``event.record_kind()``
for every event with a kind). Events a front door does not show (``TurnStarted``,
``LLMRequested``, ``CheckpointKept``, ...) it ignores; one that has a line to show says so
(``shown``).

The names follow ACP's ``session/update`` kinds where one exists: ``TextDelta`` is a
message chunk, ``ReasoningDelta`` a thought chunk, ``CodeProposed`` a tool call's start,
``Decided`` / ``StepDone`` its progress and end, ``ReplyDone`` / ``TurnDone`` carry usage.

Events are values (frozen). The record of a turn (a ``Turn`` with a ``StepRecord`` per
step) is derived from them: each event adds its part (``fold``) and
``core.turn_fold.TurnBuilder`` folds a turn's events in order, for the engine and for
anyone else who holds the events. The events of the session around the turns (its start
and end, resets, profiles, direct cells) are in ``core.session_events``, re-exported here.

Adding a recorded event is its class here (with ``kind``, ``doc``, ``reads``: its fields as
the log's readers read them, typed (``record.records`` makes its record type from them), and,
when its fields are not simply its own, ``to_record``), the line that emits it and its test; the table in
docs/session-log.md is generated from the classes (``docs/_ext/event_table.py``).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from oi_kernel.core.recorded import (  # noqa: F401
    CODE_STEP,
    STEP,
    TURN,
    Reads,
    Recorded,
    block_of,
    decision_of,
    reply_of,
    rest,
    set_step,
    step_of,
    tool_fields,
    tool_of,
    usage_fields,
)
from oi_kernel.core.types import (
    ApprovalRequest,
    CodeBlock,
    Reply,
    StepRecord,
    Turn,
    Usage,
    code_hash,
)
from oi_kernel.core.values import FrozenDict

if TYPE_CHECKING:
    from oi_kernel.core.claims import Check
    from oi_kernel.core.guard import GuardStop
    from oi_kernel.core.tools import ToolSpec
    from oi_kernel.safety.risk import Flag


@dataclass(frozen=True)
class TextDelta(Recorded):
    """A piece of the model's reply as it streams."""

    text: str


@dataclass(frozen=True)
class ReasoningDelta(Recorded):
    """A piece of the model's reasoning ("thinking") as it streams: shown, never run."""

    text: str


@dataclass(frozen=True)
class ReplyDone(Recorded):
    """The model's reply of one LLM call is complete, with the blocks found in it."""

    record_kind: ClassVar[str] = "llm_response"
    reads: ClassVar[Reads] = {**STEP, "text": "str", "tool_calls": "tuple[Any, ...]",
                                 "usage": "dict | None", "latency_s": "float | None",
                                 "finish_reason": "str | None", "reasoning": "str"}
    doc: ClassVar[str] = ("`turn`, `step`, `text`, `tool_calls` `[{id, name, "
                          "arguments}]` (`arguments` is the raw JSON text), `usage`"
                          " `{prompt_tokens, completion_tokens, cost}` (`cost` null"
                          " when unknown), `latency_s`, `finish_reason`, "
                          "`reasoning` (only when the model reasoned: its thinking,"
                          " never the answer)")
    step: int
    reply: Reply
    blocks: tuple[CodeBlock, ...]
    turn: int = 0

    def to_record(self) -> dict[str, Any]:
        reply = self.reply
        return {"turn": self.turn, "step": self.step, "text": reply.text,
                "tool_calls": [dataclasses.asdict(c) for c in reply.tool_calls],
                "usage": usage_fields(reply.usage), "latency_s": round(reply.latency_s, 4),
                "finish_reason": reply.finish_reason,
                **({"reasoning": reply.reasoning} if reply.reasoning else {})}

    @classmethod
    def from_record(cls, fields: Mapping[str, Any], kind: str = "") -> ReplyDone:
        """(``blocks`` are not recorded: they are found again in the reply's text.)"""
        return cls(fields["step"], reply_of(fields), (), fields.get("turn", 0))

    def fold(self, turn: Turn) -> None:
        turn.llm_calls += 1
        turn.usage = turn.usage + self.reply.usage


@dataclass(frozen=True)
class CodeProposed(Recorded):
    """A block is about to be decided (``needs_approval`` False: it runs without asking)."""

    request: ApprovalRequest
    needs_approval: bool = True


@dataclass(frozen=True)
class Decided(Recorded):
    """The decision about a step is known (``request``: what was asked, four-eyes included;
    ``tool``: the tool of a tool step). ``record`` is the step as decided: its ``decision``,
    and for a step that ends here (skipped, stopped) its status and feedback. A ``record``
    without a decision is a step nobody was asked about: refused (its language is not
    available) or not reached (the user stopped the instruction at an earlier step)."""

    record_kind: ClassVar[str] = "decision"
    reads: ClassVar[Reads] = {**CODE_STEP, "action": "str", "reason": "str", "by": "str",
                                 "four_eyes": "str", "author": "str"}  # action: approved, edited, skipped, stopped, auto
    doc: ClassVar[str] = ("`turn`, `step`, `action` (`\"approved\"`, `\"edited\"`, "
                          "`\"skipped\"`, `\"stopped\"`, `\"auto\"`), `code` (what will "
                          "run; `\"\"` when skipped or stopped), `sha256` (of that "
                          "code; `\"\"` when nothing runs), `reason`, `by` (who "
                          "decided: a person's name, from the click's or the stdin "
                          "answer's header `username`, else `JUPYTERHUB_USER`, else"
                          " the OS user; `\"auto\"` when nobody was asked; logs from "
                          "before names were recorded say `\"user\"`), and under "
                          "four-eyes approval `four_eyes` (`\"four-eyes\"` or "
                          "`\"four-eyes-all\"`) and `author` (who sent the "
                          "instruction, whom `by` must differ from to run)")
    record: StepRecord
    turn: int = 0
    request: ApprovalRequest | None = None
    tool: ToolSpec | None = None

    def written_kind(self) -> str:
        return self.record_kind if self.record.decision is not None else ""

    def fold(self, turn: Turn) -> None:
        told = self.record
        ends = told.decision is None or told.decision.action != "run"  # the step ends here
        set_step(turn, told.index, told.block, decision=told.decision,
                 **({"status": told.status, "feedback": told.feedback} if ends else {}))

    def to_record(self) -> dict[str, Any] | None:
        decision, request = self.record.decision, self.request
        if decision is None:
            return None
        ran = decision.action == "run"
        return {"turn": self.turn, "step": self.record.index, "action": decision.label,
                "code": decision.code if ran else "",
                "sha256": code_hash(decision.code) if ran else "",
                "reason": decision.reason, "by": decision.by, **tool_fields(self.tool),
                **({"four_eyes": request.four_eyes, "author": request.author}
                   if request is not None and request.four_eyes else {})}

    @classmethod
    def from_record(cls, fields: Mapping[str, Any], kind: str = "") -> Decided:
        block, turn, step = block_of(fields), fields.get("turn", 0), fields["step"]
        request = (ApprovalRequest(turn, step, block, author=fields.get("author", ""),
                                   four_eyes=fields["four_eyes"])
                   if fields.get("four_eyes") else None)
        return cls(StepRecord(step, block, decision_of(fields)), turn, request, tool_of(fields))


@dataclass(frozen=True)
class StepDone(Recorded):
    """A step ran (or was interrupted); its record holds the status and outputs. ``block``
    is the code that ran (the edit, not the proposal); ``outside``: the text from outside the
    user that its output carries to the model (``{"source", "kind", "phrase", "verb"}``)."""

    record_kind: ClassVar[str] = "execution"
    reads: ClassVar[Reads] = {**CODE_STEP, "status": "str", "outputs": "tuple[Any, ...]",
                                 "duration_s": "float | None", "feedback": "str", "changes": "dict | None"}
    doc: ClassVar[str] = ("`turn`, `step`, `language` (normalised: `python`, "
                          "`shell`, ...), `code` (exactly what ran, without the "
                          "language magic), `sha256`, `status` (`\"ok\"`, `\"error\"`, "
                          "`\"interrupted\"`, `\"died\"`, `\"refused\"`), `outputs` "
                          "(nbformat v4 output dicts), `duration_s`, `feedback` "
                          "(the text the LLM was given), `changes` (what the step "
                          "changed: `{variables: [{name, change: "
                          "new/changed/deleted, before, after}], files: [{path, "
                          "change: created/modified/deleted, size, before_size}], "
                          "scan_complete, cost_s}`, and `reads: [{path, size, "
                          "sha256}]` when the step read files of the working "
                          "directory the session had not written: the export's "
                          "`inputs`; null when not tracked; see "
                          "[rollback.md](rollback.md))")
    record: StepRecord
    turn: int = 0
    block: CodeBlock | None = None
    tool: ToolSpec | None = None
    outside: tuple[Mapping[str, Any], ...] = ()

    def to_record(self) -> dict[str, Any] | None:
        record, block = self.record, self.block
        if block is None:  # a front door's own StepDone (tests, ACP): nothing ran here
            return None
        return {"turn": self.turn, "step": record.index, "language": block.language,
                "code": block.code, "sha256": code_hash(block.code), "status": record.status,
                "outputs": record.outputs, "duration_s": round(record.duration_s, 4),
                "feedback": record.feedback, "changes": record.changes,
                **tool_fields(self.tool)}

    @classmethod
    def from_record(cls, fields: Mapping[str, Any], kind: str = "") -> StepDone:
        block = block_of(fields)
        record = StepRecord(fields["step"], block, None, fields.get("status", "ok"),
                            fields.get("outputs") or (), fields.get("feedback", ""),
                            fields.get("duration_s") or 0.0, fields.get("changes"))
        return cls(record, fields.get("turn", 0), block, tool_of(fields))

    def fold(self, turn: Turn) -> None:
        told = self.record
        set_step(turn, told.index, told.block, status=told.status, outputs=told.outputs,
                 feedback=told.feedback, duration_s=told.duration_s, changes=told.changes)
        turn.untrusted += [{"step": told.index, **source, "read": False}
                           for source in self.outside]


@dataclass(frozen=True)
class GuardStopped(Recorded):
    """The runtime guard, or a default limit of steps that run without asking, stopped
    step ``step`` (``stop`` says what); the step is asked about next (``core.guard``)."""

    record_kind: ClassVar[str] = "guard_stop"
    reads: ClassVar[Reads] = {**STEP, "stops": "tuple[Any, ...]", "limit": "str", "limit_text": "str"}
    doc: ClassVar[str] = ("`turn`, `step`, `stops` `[{event, what}]` (the audit "
                          "event and a sentence, e.g. `{\"event\": \"socket.connect\", "
                          "\"what\": \"network connection to 10.0.0.5:443\"}`), or "
                          "`limit` (`\"time\"` or `\"memory\"`) and `limit_text`: the "
                          "runtime guard or a default limit stopped a step that ran"
                          " without asking (its `execution` comes first, with the "
                          "`PermissionError` or the interruption); a second "
                          "`decision` for the same step follows (the user asked), "
                          "and when approved a second `execution` of it, unguarded."
                          " See [security.md](security.md#the-runtime-guard)")
    turn: int
    step: int
    stop: GuardStop

    def to_record(self) -> dict[str, Any]:
        return {"turn": self.turn, "step": self.step, **self.stop.record()}

    @classmethod
    def from_record(cls, fields: Mapping[str, Any], kind: str = "") -> GuardStopped:
        from oi_kernel.core.guard import GuardStop

        return cls(fields["turn"], fields["step"], GuardStop(
            fields.get("stops") or (), fields.get("limit", ""), fields.get("limit_text", "")))


@dataclass(frozen=True)
class Notice(Recorded):
    """Something the user should know (a retry, a refused language, a cap, a restart)."""

    text: str
    level: Literal["info", "warning", "error"] = "info"


@dataclass(frozen=True)
class TurnDone(Recorded):
    """The instruction finished (in any way): ``reason`` done / stopped / cap / max_steps /
    interrupted / llm_error / approval_unavailable / error ("" when unknown), ``final_text``
    the model's answer. ``turn`` is the instruction's record as its events built it
    (``core.turn_fold``), complete when a subscriber sees this event."""

    record_kind: ClassVar[str] = "turn_end"
    reads: ClassVar[Reads] = {**TURN, "reason": "str", "steps": "int | None", "usage": "dict | None"}
    doc: ClassVar[str] = ("`turn`, `reason` (`\"done\"`, `\"stopped\"`, `\"max_steps\"`, "
                          "`\"interrupted\"`, `\"llm_error\"`, ...), `steps`, `usage`")
    turn: Turn
    reason: str = ""
    final_text: str = ""

    def to_record(self) -> dict[str, Any]:
        turn = self.turn
        return {"turn": turn.index, "reason": turn.end_reason or "error",
                "steps": len(turn.steps), "usage": usage_fields(turn.usage)}

    @classmethod
    def from_record(cls, fields: Mapping[str, Any], kind: str = "") -> TurnDone:
        """(The turn's steps are told by their own records: a fold of the log gives them.)"""
        turn = Turn(fields["turn"], "", usage=Usage(**(fields.get("usage") or {})),
                    end_reason=fields.get("reason", ""))
        return cls(turn, turn.end_reason)

    def fold(self, turn: Turn) -> None:
        turn.end_reason, turn.final_text = self.reason, self.final_text


@dataclass(frozen=True)
class AnswerChecked(Recorded):
    """The numbers of an instruction's answer, each traced to the step output that printed
    it or found in none (``core.claims``); ``answer``: the text checked; ``asked``: it is the
    model's second answer, after the first was sent back once (``check_answers``)."""

    record_kind: ClassVar[str] = "answer_check"
    reads: ClassVar[Reads] = {**TURN, "answer": "str", "asked": "bool", "claims": "tuple[Any, ...]",
                                 "note": "str", "quoted": "int"}
    doc: ClassVar[str] = ("`turn`, `answer` (the text checked), `asked` (the model "
                          "was sent it back once first), `claims` (each number: "
                          "`text`, `kind`, `start`, `end`, `found` `{turn, step, "
                          "printed, how, where}` or `null`), `note` (tracing "
                          "stopped early; an output was cut), `quoted` (numbers "
                          "left out as the user's own). See "
                          "[answer-check](answer-check.md).")
    turn: int
    check: Check
    answer: str
    asked: bool = False

    def to_record(self) -> dict[str, Any]:
        return {"answer": self.answer, "asked": self.asked, **self.check.to_dict()}

    @classmethod
    def from_record(cls, fields: Mapping[str, Any], kind: str = "") -> AnswerChecked:
        from oi_kernel.core.claims import Check

        return cls(fields["turn"], Check.from_dict(dict(fields)), fields.get("answer", ""),
                   fields.get("asked", False))

    def fold(self, turn: Turn) -> None:
        turn.answer_check = self.check.to_dict()


@dataclass(frozen=True)
class ToolNotice(Notice):
    """A notice from the tools (an MCP server that did not start): shown like any notice."""

    record_kind: ClassVar[str] = "tool_notice"
    reads: ClassVar[Reads] = {"text": "str"}
    doc: ClassVar[str] = "`text`: an MCP server that could not start (shown as a notice)"

    def to_record(self) -> dict[str, Any]:
        return {"text": self.text}


@dataclass(frozen=True)
class UntrustedNotice(Notice):
    """The one notice of an instruction that a step following text from outside runs
    without asking (auto-run or Run all): shown like any notice."""

    def fold(self, turn: Turn) -> None:
        turn.untrusted_noticed = True


# ----------------------------------------------------------------------------- turns
@dataclass(frozen=True)
class TurnStarted(Recorded):
    """An instruction (or recorded code: ``run_code_steps``) starts; ``fields`` say more
    (a replay names its source); ``conversation_index``: its place among the conversation's
    instructions."""

    record_kind: ClassVar[str] = "turn_start"
    reads: ClassVar[Reads] = {**TURN, "instruction": "str", "replayed_from": "str"}
    doc: ClassVar[str] = ("`turn`, `instruction` (the user's text), `replayed_from` (only "
                          "for `%load --replay`: the saved conversation's path)")
    turn: int
    instruction: str
    fields: Mapping[str, Any] = field(default_factory=FrozenDict)
    conversation_index: int = 0
    started: float = field(default_factory=time.time)

    def to_record(self) -> dict[str, Any]:
        return {"turn": self.turn, "instruction": self.instruction, **self.fields}

    @classmethod
    def from_record(cls, fields: Mapping[str, Any], kind: str = "") -> TurnStarted:
        return cls(fields["turn"], fields["instruction"], rest(fields, "turn", "instruction"))


# ----------------------------------------------------------------------------- the model
@dataclass(frozen=True)
class LLMRequested(Recorded):
    """A request goes to the model (its full messages; the log stores only the new ones:
    ``record.log_writer.LogWriter`` keeps the messages logged before)."""

    record_kind: ClassVar[str] = "llm_request"
    reads: ClassVar[Reads] = {**STEP, "model": "str", "messages_before": "int",
                                 "messages": "tuple[Any, ...]", "tools": ("bool", True),
                                 "small": "bool | None"}  # small None: not recorded (older logs)
    doc: ClassVar[str] = ("`turn`, `step`, `model`, `messages_before`, `messages`, "
                          "`tools` (bool: tool calling used), `small` (bool: "
                          "small-model mode). The request sent is the first "
                          "`messages_before` messages of the previous `llm_request`"
                          " followed by `messages` (0: `messages` is the whole "
                          "request, system prompt included), so the log grows "
                          "linearly with the session")
    turn: int
    step: int
    model: str
    tools: bool
    small: bool
    messages: tuple[Mapping[str, Any], ...]

    def to_record(self, before: Iterable[Mapping[str, Any]] | None = None) -> dict[str, Any]:
        """The fields, with only the messages new since ``before`` (the request logged
        before, when this one starts with it)."""
        messages, before = self.messages, tuple(before or ())
        if before and len(before) <= len(messages) and messages[: len(before)] == before:
            sent = {"messages_before": len(before), "messages": messages[len(before):]}
        else:
            sent = {"messages_before": 0, "messages": messages}
        return {"turn": self.turn, "step": self.step, "model": self.model,
                "tools": self.tools, "small": self.small, **sent}

    @classmethod
    def from_record(cls, fields: Mapping[str, Any], kind: str = "") -> LLMRequested:
        """(Only the messages the record holds: ``record.log_writer.EventReader`` joins
        them with the ``messages_before`` of the request before.)"""
        return cls(fields["turn"], fields["step"], fields.get("model", ""),
                   fields.get("tools", True), bool(fields.get("small")),
                   fields.get("messages") or ())

    def fold(self, turn: Turn) -> None:
        for entry in turn.untrusted:
            entry["read"] = True


@dataclass(frozen=True)
class LLMFailed(Recorded):
    """A request to the model failed (``partial_text``: what arrived before)."""

    record_kind: ClassVar[str] = "llm_error"
    reads: ClassVar[Reads] = {**STEP, "error": "str", "partial_text": "str"}
    doc: ClassVar[str] = ("`turn`, `step`, `error` (message), `partial_text` (what "
                          "streamed before the failure)")
    turn: int
    step: int
    error: str
    partial_text: str = ""


@dataclass(frozen=True)
class ToolsUnsupported(Recorded):
    """The model's server refused tools; the request is sent again without them."""

    record_kind: ClassVar[str] = "tools_unsupported"
    reads: ClassVar[Reads] = {**STEP, "error": "str"}
    doc: ClassVar[str] = ("`turn`, `step`, `error`: the server rejected the "
                          "request's `tools`; the next `llm_request` (same `step`) "
                          "asks again without them")
    turn: int
    step: int
    error: str


@dataclass(frozen=True)
class SampleDrawn(Recorded):
    """Another reply to the same request was drawn (small models' consensus; not shown)."""

    record_kind: ClassVar[str] = "llm_sample"
    reads: ClassVar[Reads] = {**STEP, "text": "str", "sampling": "dict | None", "usage": "dict | None",
                                 "latency_s": "float | None"}
    doc: ClassVar[str] = ("`turn`, `step`, `text`, `sampling` `{temperature, "
                          "seed}`, `usage`, `latency_s`: one more draft of the "
                          "request just answered, drawn in small-model mode to "
                          "compare with (not shown; replay gives them back in "
                          "order)")
    turn: int
    step: int
    reply: Reply
    sampling: Mapping[str, Any]

    def to_record(self) -> dict[str, Any]:
        return {"turn": self.turn, "step": self.step, "text": self.reply.text,
                "sampling": self.sampling, "usage": usage_fields(self.reply.usage),
                "latency_s": round(self.reply.latency_s, 4)}

    @classmethod
    def from_record(cls, fields: Mapping[str, Any], kind: str = "") -> SampleDrawn:
        return cls(fields["turn"], fields["step"], reply_of(fields), fields.get("sampling") or {})

    def fold(self, turn: Turn) -> None:
        turn.samples += 1
        turn.usage = turn.usage + self.reply.usage


@dataclass(frozen=True)
class DraftSetAside(Recorded):
    """A small model's draft had visible mistakes; another is asked for."""

    record_kind: ClassVar[str] = "draft_set_aside"
    reads: ClassVar[Reads] = {**STEP, "code": "str", "problems": "tuple[Any, ...]"}
    doc: ClassVar[str] = ("`turn`, `step`, `code`, `problems`: a small model's "
                          "draft whose code showed mistakes, set aside and asked "
                          "again (when small-model sampling is off)")
    turn: int
    step: int
    code: str
    problems: tuple[str, ...]


@dataclass(frozen=True)
class DraftsSampled(Recorded):
    """How the consensus among sampled drafts went (``skipped``: not sampled, and why;
    ``error``: sampling stopped at an LLM error)."""

    record_kind: ClassVar[str] = "draft_samples"
    reads: ClassVar[Reads] = {**STEP, "drawn": "int | None", "seconds": "float | None",
                                 "chosen": "int | None", "drafts": "tuple[Any, ...]"}
    also_reads: ClassVar[Mapping[str, Reads]] = {
        "draft_samples_skipped": {**STEP, "reply_s": "float | None", "budget_s": "float | None"},
        "draft_samples_error": {**STEP, "error": "str"}}
    also_kinds: ClassVar[tuple[str, ...]] = ("draft_samples_skipped", "draft_samples_error")
    doc: ClassVar[str] = ("`turn`, `step`, `drawn` (drafts compared, the first "
                          "included), `seconds`, `chosen` (index in `drafts` of the"
                          " one proposed; 0 = the first), `drafts` `[{code, votes, "
                          "problems}]` (each different code once): see "
                          "`c.Engine.small_model_samples`")
    turn: int
    step: int
    fields: Mapping[str, Any]
    outcome: Literal["samples", "skipped", "error"] = "samples"

    def written_kind(self) -> str:
        return self.record_kind if self.outcome == "samples" else f"{self.record_kind}_{self.outcome}"

    def to_record(self) -> dict[str, Any]:
        return {"turn": self.turn, "step": self.step, **self.fields}

    @classmethod
    def from_record(cls, fields: Mapping[str, Any], kind: str = "") -> DraftsSampled:
        outcome = kind.removeprefix(cls.record_kind + "_") if kind != cls.record_kind else ""
        return cls(fields["turn"], fields["step"], rest(fields, "turn", "step"),
                   outcome or "samples")  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- steps
@dataclass(frozen=True)
class StepReviewed(Recorded):
    """A proposed block was reviewed (risk flags, outside text it follows), before it is
    refused, asked about or run."""

    record_kind: ClassVar[str] = "code_proposed"
    reads: ClassVar[Reads] = {**CODE_STEP, "flags": "tuple[Any, ...]", "recognised_as_code": "bool",
                                 "untrusted": "tuple[Any, ...]"}
    doc: ClassVar[str] = ("`turn`, `step`, `language`, `code` (as the LLM proposed "
                          "it), `sha256`, `flags` `[{line, category, severity, "
                          "reason}]`, `recognised_as_code` (true when the reply was"
                          " nothing but this code, without a fence or tool call), "
                          "`untrusted` (only when the step follows content from "
                          "outside the user, read earlier in this instruction: "
                          "`[{step, source, kind}]`, e.g. `[{\"step\": 1, \"source\": "
                          "\"notes.txt\", \"kind\": \"file\"}]`; `kind` is `file`, "
                          "`notebook`, `url`, `program`, `tool`, `clipboard`, "
                          "`database` or `code`; its `flags` then hold an "
                          "`untrusted-content` flag; see "
                          "[security.md](security.md#content-from-outside))")
    turn: int
    step: int
    block: CodeBlock
    flags: tuple[Flag, ...]
    untrusted: tuple[Mapping[str, Any], ...] = ()
    tool: ToolSpec | None = None

    def to_record(self) -> dict[str, Any]:
        block = self.block
        return {"turn": self.turn, "step": self.step, "language": block.language,
                "code": block.code, "sha256": code_hash(block.code),
                "flags": [dataclasses.asdict(f) for f in self.flags],
                **({"recognised_as_code": True} if block.bare else {}),
                **({"untrusted": [{"step": u["step"], "source": u["source"], "kind": u["kind"]}
                                  for u in self.untrusted]} if self.untrusted else {}),
                **tool_fields(self.tool)}

    @classmethod
    def from_record(cls, fields: Mapping[str, Any], kind: str = "") -> StepReviewed:
        from oi_kernel.safety.risk import Flag

        return cls(fields["turn"], fields["step"], block_of(fields),
                   tuple(Flag(**f) for f in fields.get("flags") or ()),
                   fields.get("untrusted") or (), tool_of(fields))

    def fold(self, turn: Turn) -> None:
        step_of(turn, self.step, self.block)


@dataclass(frozen=True)
class CellEditProposed(Recorded):
    """The model proposed new sources for existing notebook cells (``edit_cell``), shown as
    per-cell diffs (``session.cell_edits``): each edit is ``{"key", "cell", "new_source"}``."""

    record_kind: ClassVar[str] = "cell_edit_proposed"
    doc: ClassVar[str] = ("`turn`, `proposal` (its id), `edits` `[{key, cell, new_source}]` "
                          "(`cell`: the number of the cell's `In [n]` prompt, or its id): the "
                          "model proposed new sources for existing notebook cells "
                          "(`edit_cell`, shown as diffs; see "
                          "[notebook context](notebook-context.md#edits-to-existing-cells))")
    turn: int
    proposal: str
    edits: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True)
class CellEditDecided(Recorded):
    """What became of one proposed cell edit: "accepted", "rejected", "refused" (the cell
    changed since; a fresh diff is shown), "missing" (no such cell) or "not_applied" (nobody
    could answer: the notebook was closed, the turn was interrupted)."""

    record_kind: ClassVar[str] = "cell_edit_decided"
    doc: ClassVar[str] = ("`turn`, `proposal`, `key`, `cell`, `action` (`\"accepted\"`, "
                          "`\"rejected\"`, `\"refused\"`: the cell had changed, a fresh diff "
                          "was shown and the edit still waits; `\"missing\"`: no such cell; "
                          "`\"not_applied\"`: the notebook was closed or the instruction "
                          "interrupted first), `by`, `reason`, `ran` (accepted with \"Accept "
                          "and run\")")
    turn: int
    proposal: str
    key: str
    cell: str
    action: str
    by: str = ""
    reason: str = ""
    ran: bool = False


Event = Recorded  # every event is one (see ``Recorded``)
EventSink = Callable[[Event], None]

# the events of the session around its turns (defined there, on ``Recorded``)
from oi_kernel.core.preview_events import PreviewCompared, Previewed  # noqa: E402, F401
from oi_kernel.core.session_events import (  # noqa: E402, F401
    CheckpointKept,
    ChildRestarted,
    ConversationLoaded,
    ConversationReset,
    ConversationSaved,
    ConversationUndone,
    DirectRun,
    ProfileApplied,
    Rebuilt,
    RolledBack,
    SessionEnded,
    SessionStarted,
    StateChanged,
    ToolsOffered,
)
