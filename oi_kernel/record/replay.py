"""Replay's reading of a session log, and its verdict on each re-run step.

``oi-kernel replay`` (``oi_kernel.api.replay.replay_log``) re-runs every instruction of
a session log through the engine with a ``RecordedLLM`` that answers with the logged
replies (no network) and a ``RecordedApprover`` (here) that repeats the logged
decisions: a step approved when recorded runs what the replayed reply proposes, an edit
runs the recorded edit, a skip stays a skip. This module reads the log as the events that
wrote it, folded into turns by the engine's own fold (``parse_session``), and compares each re-run step's outputs with the recorded ones
using export's normalisation (``compare_step``), so the report says which steps still
reproduce.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from oi_kernel.core import events as E
from oi_kernel.core.executor import ExecResult
from oi_kernel.core.recorded import record_kinds
from oi_kernel.core.tools import ToolSpec
from oi_kernel.core.types import (
    ApprovalRequest,
    Decision,
    StepRecord,
    Turn,
    code_hash,
)
from oi_kernel.errors import ApprovalUnavailableError
from oi_kernel.llm.recorded import RecordedLLM, ReplayDivergedError
from oi_kernel.record.log_writer import EventReader
from oi_kernel.record.records import (
    ChildRestartRecord,
    CodeProposedRecord,
    ConversationResetRecord,
    DecisionRecord,
    DirectRecord,
    ExecutionRecord,
    InTurnRecord,
    LLMRequestRecord,
    Record,
    SessionStartRecord,
    ToolsOfferedRecord,
    TurnEndRecord,
    TurnStartRecord,
    as_records,
)
from oi_kernel.record.verify import compare_outputs

_NORMAL_ENDS = frozenset({"done", "stopped", "max_steps", "cap"})
_CUT_SHORT = frozenset({"max_steps", "cap"})  # replayed as a step cap at the recorded length
_CAPS = (
    "max_tokens_per_turn",
    "max_cost_per_turn",
    "max_tokens_per_session",
    "max_cost_per_session",
)
_RAN = frozenset({"ok", "error", "interrupted", "died"})


# ----------------------------------------------------------------------------- the log


@dataclass
class RecordedTurn:
    """What the log holds about one instruction. ``replies`` and ``samples`` are the lines
    as ``RecordedLLM`` reads them (the llm layer is below the record types); the rest are
    typed records, by step."""

    index: int
    instruction: str
    replies: list[dict[str, Any]] = field(default_factory=list)  # llm_response / llm_error
    samples: list[dict[str, Any]] = field(default_factory=list)  # llm_sample (small models)
    tools: bool = True
    small: bool | None = None  # small-model mode (None: not recorded, older logs)
    proposals: dict[int, CodeProposedRecord] = field(default_factory=dict)
    decisions: dict[int, DecisionRecord] = field(default_factory=dict)
    executions: dict[int, ExecutionRecord] = field(default_factory=dict)
    end_reason: str = ""
    turn: Turn | None = field(default=None, compare=False)  # as the engine's fold built it

    def add(self, r: Record) -> None:
        """Keep ``r``, a record of this instruction, where the event class that wrote it
        belongs (``_PARTS``)."""
        cls = record_kinds().get(r.event)
        part = _PARTS.get(cls) if cls is not None else None
        if isinstance(r, LLMRequestRecord):
            self.tools = r.tools
            self.small = self.small if r.small is None else r.small
        elif part in ("replies", "samples"):
            getattr(self, part).append(r.to_dict())
        elif part is not None and getattr(r, "step", None) is not None:
            getattr(self, part)[r.step] = r
        elif isinstance(r, TurnEndRecord):
            self.end_reason = r.reason


_PARTS: dict[type, str] = {  # the event class -> where ``RecordedTurn`` keeps its records
    E.ReplyDone: "replies", E.LLMFailed: "replies", E.SampleDrawn: "samples",
    E.StepReviewed: "proposals", E.Decided: "decisions", E.StepDone: "executions",
}


Action = RecordedTurn | DirectRecord | ConversationResetRecord | ChildRestartRecord


@dataclass
class RecordedSession:
    """The session's start record and what happened in order: turns, direct cells, resets
    and restarts someone asked for."""

    header: SessionStartRecord | None = None
    timeline: list[Action] = field(default_factory=list)

    @property
    def turns(self) -> list[RecordedTurn]:
        return [a for a in self.timeline if isinstance(a, RecordedTurn)]

    @property
    def start(self) -> dict[str, Any]:
        """The start record as a log line (``{}`` if none), for callers that read lines."""
        return self.header.to_dict() if self.header is not None else {}

    @property
    def actions(self) -> list[RecordedTurn | dict[str, Any]]:
        """``timeline`` with the records other than turns as log lines."""
        return [a if isinstance(a, RecordedTurn) else a.to_dict() for a in self.timeline]


def parse_session(records: Iterable[Record | Mapping[str, Any]]) -> RecordedSession:
    """Read a log's records (typed, or lines as ``read_log`` gives them) as the events that
    wrote them and fold those with the engine's fold (``record.log_writer.EventReader``):
    each instruction is a ``RecordedTurn`` around the ``Turn`` its events build, with its
    records by step; direct cells, resets and restarts keep their place."""
    session, reader = RecordedSession(), EventReader()
    turns: dict[int | None, RecordedTurn] = {}
    for r in as_records(records):
        event = reader(r.to_dict())
        if isinstance(r, SessionStartRecord):
            session.header = session.header or r
        elif isinstance(r, TurnStartRecord):  # (a field missing: still a turn, not folded)
            turn = RecordedTurn(r.turn or len(turns) + 1, r.instruction, turn=reader.turns[-1]
                                if isinstance(event, E.TurnStarted) else None)
            turns[r.turn] = turn
            session.timeline.append(turn)
        elif isinstance(r, _TIMELINE) and "died" not in getattr(r, "reason", ""):
            session.timeline.append(r)  # (a restart after a death is automatic: not replayed)
        elif isinstance(r, InTurnRecord) and r.turn in turns:
            turns[r.turn].add(r)
    return session


_TIMELINE = (DirectRecord, ConversationResetRecord, ChildRestartRecord)


# ----------------------------------------------------------------------------- the seams


class RecordedApprover:
    """Answers each approval request with the decision logged for that step."""

    def __init__(self) -> None:
        self.turn: RecordedTurn | None = None
        self.changed: dict[tuple[int, int], str] = {}  # (turn, step) -> recorded proposal

    async def decide(self, request: ApprovalRequest) -> Decision:
        turn = self.turn
        if turn is None:
            raise ReplayDivergedError("The replay asked for a decision outside any instruction.")
        proposal = turn.proposals.get(request.step)
        if proposal is not None and proposal.code != request.block.code:
            self.changed[(turn.index, request.step)] = proposal.code
        record = turn.decisions.get(request.step)
        if record is None:
            if turn.end_reason == "approval_unavailable":
                raise ApprovalUnavailableError()
            raise ReplayDivergedError(
                f"The replay diverged at turn {turn.index} step {request.step}: code was "
                "proposed, but the log holds no decision for it."
            )
        return _decision(record, request.block.code)


def _decision(record: DecisionRecord, proposed: str) -> Decision:
    by = record.by or "user"  # logs from before names were recorded
    if record.action == "skipped":
        return Decision("skip", reason=record.reason, by=by)
    if record.action == "stopped":
        return Decision("stop", reason=record.reason, by=by)
    if record.action == "edited":
        return Decision("run", record.code, edited=True, by=by)
    return Decision("run", proposed, by=by)  # approved / auto: whatever is proposed now


class RecordedTools:
    """The session's tools for a replay: MCP calls answer with their recorded results (no
    server is started); notebook functions offered with ``%tool`` are offered again (their
    calls are code, re-run in the replay's kernel)."""

    def __init__(self, records: Iterable[Record | Mapping[str, Any]]) -> None:
        self._specs: dict[str, ToolSpec] = {}
        self._results: dict[str, list[ExecutionRecord]] = {}
        for r in as_records(records):
            if isinstance(r, ExecutionRecord) and r.tool_kind == "mcp":
                self._specs.setdefault(r.tool, ToolSpec(
                    r.tool, "(recorded)", {"type": "object", "properties": {}}, kind="mcp",
                    server=r.server, tool=r.server_tool))
                self._results.setdefault(r.tool, []).append(r)
            elif isinstance(r, ToolsOfferedRecord):
                for name in r.functions:
                    self._specs[str(name)] = ToolSpec(str(name), "(recorded)", {},
                                                      kind="function", tool=str(name))

    @property
    def functions(self) -> dict[str, ToolSpec]:
        return {n: s for n, s in self._specs.items() if s.kind == "function"}

    async def prepare(self) -> list[str]:
        return []

    def specs(self) -> list[ToolSpec]:
        return [s for s in self._specs.values() if s.kind == "mcp"]

    async def call(self, spec: ToolSpec, arguments: dict[str, Any], timeout: float) -> ExecResult:
        queue = self._results.get(spec.name) or []
        if not queue:
            raise ReplayDivergedError(f"The replay called {spec.label} more often than the "
                                      "recording did.")
        r = queue.pop(0)
        return ExecResult("ok" if r.status == "ok" else "error", list(r.outputs))


# ----------------------------------------------------------------------------- the report

CheckStatus = Literal["same", "different", "error", "diverged", "skipped"]


@dataclass
class StepCheck:
    """One row of the report; ``step`` is "direct" for a cell the user ran directly."""

    turn: int | None
    step: int | str | None
    status: CheckStatus
    detail: str = ""


@dataclass
class ReplayReport:
    """The outcome of ``replay_log``; ``ok`` when every row is "same" or "skipped"."""

    checks: list[StepCheck] = field(default_factory=list)
    log: str = ""
    workdir: str = ""
    # each recorded answer's traced numbers, traced again to the replayed outputs
    answers: list[StepCheck] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.status in ("same", "skipped") for c in [*self.checks, *self.answers])

    def format(self) -> str:
        """A table of the steps and a one-line verdict, for a terminal."""
        lines = [f"{'turn':>4}  {'step':>6}  {'status':<9}  detail"]
        for c in self.checks:
            turn = "-" if c.turn is None else str(c.turn)
            step = "-" if c.step is None else str(c.step)
            lines.append(f"{turn:>4}  {step:>6}  {c.status:<9}  {c.detail}".rstrip())
        lines += [f"answer of instruction {c.turn}: {c.status}: {c.detail}".rstrip(": ")
                  for c in self.answers if c.status != "same"]
        ran = [c for c in self.checks if c.status != "skipped"]
        same = sum(c.status == "same" for c in ran)
        verdict = "OK" if self.ok else "FAILED"
        lines.append(
            f"{verdict}: {same} of {len(ran)} checks reproduce the recording"
            + (f" ({self.log})" if self.log else "")
        )
        return "\n".join(lines)


def compare_step(
    recorded: ExecutionRecord | DirectRecord | None,
    new: StepRecord | None,
    roots: list[str],
) -> tuple[CheckStatus, str]:
    """Compare one recorded execution with the replayed step (either may be missing)."""
    if recorded is None and new is None:
        return "skipped", "not run, as recorded"
    if recorded is None:
        return "different", f"ran now ({new.status}), not when recorded"  # type: ignore[union-attr]
    if new is None or new.status not in _RAN:
        now = "not proposed" if new is None else new.status
        return "different", f"ran when recorded ({recorded.status}), now {now}"
    status, detail = _compare_results(recorded, new, roots)
    if (new.code_ran or "") == recorded.code:
        return status, detail
    note = " (the log's code was redacted)" if _redacted(recorded) else ""
    return "different", f"code differs from the recording{note}; " + (detail or "outputs the same")


def _compare_results(
    recorded: ExecutionRecord | DirectRecord, new: StepRecord, roots: list[str]
) -> tuple[CheckStatus, str]:
    old_status = recorded.status
    if old_status in ("interrupted", "died") or new.status in ("interrupted", "died"):
        if old_status == new.status:
            return "same", f"{new.status} as recorded (outputs not compared)"
        return "different", f"status {new.status}, recorded {old_status}"
    return compare_outputs(list(recorded.outputs), new.outputs, roots)


def _redacted(record: ExecutionRecord | DirectRecord) -> bool:
    """The log's code no longer matches its hash: a secret was redacted out of it."""
    return (isinstance(record, ExecutionRecord) and bool(record.sha256)
            and code_hash(record.code) != record.sha256)


def _turn_checks(
    recorded: RecordedTurn,
    turn: Turn | None,
    error: BaseException | None,
    llm: RecordedLLM,
    approver: RecordedApprover,
    roots: list[str],
) -> list[StepCheck]:
    steps = {s.index: s for s in turn.steps} if turn is not None else {}
    checks = []
    for index in sorted(set(recorded.executions) | set(recorded.decisions) | set(steps)):
        new = steps.get(index)
        status, detail = compare_step(
            recorded.executions.get(index), new if new and new.status in _RAN else None, roots
        )
        if status != "skipped" and (recorded.index, index) in approver.changed:
            detail = "the replayed reply proposed other code; " + detail
        checks.append(StepCheck(recorded.index, index, status, detail))
    problem = _turn_problem(recorded, turn, error, llm)
    if problem:
        checks.append(StepCheck(recorded.index, None, "diverged", problem))
    return checks


def _turn_problem(
    recorded: RecordedTurn, turn: Turn | None, error: BaseException | None, llm: RecordedLLM
) -> str:
    """Why the replayed instruction did not end the way the recorded one did ("" if it did)."""
    end = turn.end_reason if turn is not None else ""
    all_used = llm.used == len(recorded.replies)
    if end and _same_end(end, recorded.end_reason) and all_used:
        return ""
    if recorded.end_reason not in _NORMAL_ENDS and all_used and error is not None:
        return ""  # the recording broke off here too (interrupted, an error)
    if error is not None:
        return str(error).splitlines()[0]
    if not all_used:
        return f"used {llm.used} of {len(recorded.replies)} recorded LLM replies"
    return f"ended '{end or 'with an error'}', recorded '{recorded.end_reason or 'unknown'}'"


def _same_end(end: str, recorded: str) -> bool:
    return end == recorded or (end in _CUT_SHORT and recorded in _CUT_SHORT)
