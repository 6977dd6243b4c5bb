"""Replay's reading of a session log, and its verdict on each re-run step.

``oi-kernel replay`` (``oi_kernel.api.replay.replay_log``) re-runs every instruction of
a session log through the engine with a ``RecordedLLM`` that answers with the logged
replies (no network) and a ``RecordedApprover`` (here) that repeats the logged
decisions: a step approved when recorded runs what the replayed reply proposes, an edit
runs the recorded edit, a skip stays a skip. This module groups the log's records into
turns (``parse_session``) and compares each re-run step's outputs with the recorded ones
using export's normalisation (``compare_step``), so the report says which steps still
reproduce.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from oi_kernel.core.executor import ExecResult
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
    """What the log holds about one instruction."""

    index: int
    instruction: str
    replies: list[dict[str, Any]] = field(default_factory=list)  # llm_response / llm_error
    samples: list[dict[str, Any]] = field(default_factory=list)  # llm_sample (small models)
    tools: bool = True
    small: bool | None = None  # small-model mode (None: not recorded, older logs)
    proposals: dict[int, dict[str, Any]] = field(default_factory=dict)
    decisions: dict[int, dict[str, Any]] = field(default_factory=dict)
    executions: dict[int, dict[str, Any]] = field(default_factory=dict)
    end_reason: str = ""


@dataclass
class RecordedSession:
    """The session's start record and its actions in order: turns, direct cells, resets."""

    start: dict[str, Any]
    actions: list[RecordedTurn | dict[str, Any]] = field(default_factory=list)

    @property
    def turns(self) -> list[RecordedTurn]:
        return [a for a in self.actions if isinstance(a, RecordedTurn)]


def parse_session(records: list[dict[str, Any]]) -> RecordedSession:
    """Group a log's records into turns, keeping direct cells and resets in their place."""
    session = RecordedSession(start={})
    turns: dict[Any, RecordedTurn] = {}
    for r in records:
        event = r.get("event")
        if event == "session_start" and not session.start:
            session.start = r
        elif event == "turn_start":
            turn = RecordedTurn(
                int(r.get("turn") or len(turns) + 1), str(r.get("instruction") or "")
            )
            turns[r.get("turn")] = turn
            session.actions.append(turn)
        elif event in ("direct", "conversation_reset"):
            session.actions.append(r)
        elif event == "child_restart" and "died" not in str(r.get("reason", "")):
            session.actions.append(r)  # a restart someone asked for (after a death it is automatic)
        elif r.get("turn") in turns:
            _add_to_turn(turns[r.get("turn")], r)
    return session


def _add_to_turn(turn: RecordedTurn, r: dict[str, Any]) -> None:
    event, step = r.get("event"), r.get("step")
    if event == "llm_request":
        turn.tools = bool(r.get("tools", True))
        if "small" in r:
            turn.small = bool(r["small"])
    elif event in ("llm_response", "llm_error"):
        turn.replies.append(r)
    elif event == "llm_sample":
        turn.samples.append(r)
    elif event == "code_proposed":
        turn.proposals[step] = r
    elif event == "decision":
        turn.decisions[step] = r
    elif event == "execution":
        turn.executions[step] = r
    elif event == "turn_end":
        turn.end_reason = str(r.get("reason") or "")


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
        proposed = turn.proposals.get(request.step, {}).get("code")
        if proposed is not None and proposed != request.block.code:
            self.changed[(turn.index, request.step)] = proposed
        record = turn.decisions.get(request.step)
        if record is None:
            if turn.end_reason == "approval_unavailable":
                raise ApprovalUnavailableError()
            raise ReplayDivergedError(
                f"The replay diverged at turn {turn.index} step {request.step}: code was "
                "proposed, but the log holds no decision for it."
            )
        return _decision(record, request.block.code)


def _decision(record: dict[str, Any], proposed: str) -> Decision:
    action, reason = record.get("action"), str(record.get("reason") or "")
    by = str(record.get("by") or "user")
    if action == "skipped":
        return Decision("skip", reason=reason, by=by)
    if action == "stopped":
        return Decision("stop", reason=reason, by=by)
    if action == "edited":
        return Decision("run", str(record.get("code") or ""), edited=True, by=by)
    return Decision("run", proposed, by=by)  # approved / auto: whatever is proposed now


class RecordedTools:
    """The session's tools for a replay: MCP calls answer with their recorded results (no
    server is started); notebook functions offered with ``%tool`` are offered again (their
    calls are code, re-run in the replay's kernel)."""

    def __init__(self, records: list[dict[str, Any]]) -> None:
        self._specs: dict[str, ToolSpec] = {}
        self._results: dict[str, list[dict[str, Any]]] = {}
        for r in records:
            if r.get("event") == "execution" and r.get("tool_kind") == "mcp":
                name = str(r.get("tool"))
                self._specs.setdefault(name, ToolSpec(
                    name, "(recorded)", {"type": "object", "properties": {}}, kind="mcp",
                    server=str(r.get("server")), tool=str(r.get("server_tool"))))
                self._results.setdefault(name, []).append(r)
            elif r.get("event") == "tools_offered":
                for name in r.get("functions") or []:
                    self._specs[name] = ToolSpec(name, "(recorded)", {}, kind="function",
                                                 tool=name)

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
        status = r.get("status") if r.get("status") in ("ok", "error") else "error"
        return ExecResult(status, list(r.get("outputs") or []))


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

    @property
    def ok(self) -> bool:
        return all(c.status in ("same", "skipped") for c in self.checks)

    def format(self) -> str:
        """A table of the steps and a one-line verdict, for a terminal."""
        lines = [f"{'turn':>4}  {'step':>6}  {'status':<9}  detail"]
        for c in self.checks:
            turn = "-" if c.turn is None else str(c.turn)
            step = "-" if c.step is None else str(c.step)
            lines.append(f"{turn:>4}  {step:>6}  {c.status:<9}  {c.detail}".rstrip())
        ran = [c for c in self.checks if c.status != "skipped"]
        same = sum(c.status == "same" for c in ran)
        verdict = "OK" if self.ok else "FAILED"
        lines.append(
            f"{verdict}: {same} of {len(ran)} checks reproduce the recording"
            + (f" ({self.log})" if self.log else "")
        )
        return "\n".join(lines)


def compare_step(
    recorded: dict[str, Any] | None,
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
        return "different", f"ran when recorded ({recorded.get('status')}), now {now}"
    status, detail = _compare_results(recorded, new, roots)
    if (new.code_ran or "") == (recorded.get("code") or ""):
        return status, detail
    note = " (the log's code was redacted)" if _redacted(recorded) else ""
    return "different", f"code differs from the recording{note}; " + (detail or "outputs the same")


def _compare_results(
    recorded: dict[str, Any], new: StepRecord, roots: list[str]
) -> tuple[CheckStatus, str]:
    old_status = recorded.get("status")
    if old_status in ("interrupted", "died") or new.status in ("interrupted", "died"):
        if old_status == new.status:
            return "same", f"{new.status} as recorded (outputs not compared)"
        return "different", f"status {new.status}, recorded {old_status}"
    return compare_outputs(recorded.get("outputs") or [], new.outputs, roots)


def _redacted(record: dict[str, Any]) -> bool:
    return bool(record.get("sha256")) and code_hash(record.get("code") or "") != record["sha256"]


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
