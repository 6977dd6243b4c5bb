"""The session log as a subscriber of the engine's events.

The engine and the session report what happened as typed events (``core.events``) and
nothing else; ``LogWriter`` turns each event into its session-log record (the record
names and fields of format version 1, which readers and the golden log rely on) and
writes it. Events that have no record (streamed text, a card being shown, a notice) are
passed over. ``record_of`` is the whole mapping, one function per event type.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from oi_kernel.core import events as E
from oi_kernel.core.types import code_hash

Record = tuple[str, dict[str, Any]]


def tool_fields(spec: Any) -> dict[str, Any]:
    """The fields of a tool step's records (none for code)."""
    if spec is None:
        return {}
    return {"tool": spec.name, "tool_kind": spec.kind, "server": spec.server,
            "server_tool": spec.tool}


def _turn_start(e: E.TurnStarted) -> Record:
    return "turn_start", {"turn": e.turn, "instruction": e.instruction, **e.fields}


def _turn_end(e: E.TurnDone) -> Record:
    turn = e.turn
    return "turn_end", {"turn": turn.index, "reason": turn.end_reason or "error",
                        "steps": len(turn.steps), "usage": dataclasses.asdict(turn.usage)}


def _llm_response(e: E.ReplyDone) -> Record:
    reply = e.reply
    return "llm_response", {
        "turn": e.turn,
        "step": e.step,
        "text": reply.text,
        "tool_calls": [dataclasses.asdict(c) for c in reply.tool_calls],
        "usage": dataclasses.asdict(reply.usage),
        "latency_s": round(reply.latency_s, 4),
        "finish_reason": reply.finish_reason,
        **({"reasoning": reply.reasoning} if reply.reasoning else {}),
    }


def _llm_error(e: E.LLMFailed) -> Record:
    return "llm_error", {"turn": e.turn, "step": e.step, "error": e.error,
                         "partial_text": e.partial_text}


def _tools_unsupported(e: E.ToolsUnsupported) -> Record:
    return "tools_unsupported", {"turn": e.turn, "step": e.step, "error": e.error}


def _llm_sample(e: E.SampleDrawn) -> Record:
    return "llm_sample", {"turn": e.turn, "step": e.step, "text": e.reply.text,
                          "sampling": e.sampling, "usage": dataclasses.asdict(e.reply.usage),
                          "latency_s": round(e.reply.latency_s, 4)}


def _draft_set_aside(e: E.DraftSetAside) -> Record:
    return "draft_set_aside", {"turn": e.turn, "step": e.step, "code": e.code,
                               "problems": e.problems}


def _drafts_sampled(e: E.DraftsSampled) -> Record:
    name = {"samples": "draft_samples", "skipped": "draft_samples_skipped",
            "error": "draft_samples_error"}[e.outcome]
    return name, {"turn": e.turn, "step": e.step, **e.fields}


def _code_proposed(e: E.StepReviewed) -> Record:
    block = e.block
    return "code_proposed", {
        "turn": e.turn,
        "step": e.step,
        "language": block.language,
        "code": block.code,
        "sha256": code_hash(block.code),
        "flags": [dataclasses.asdict(f) for f in e.flags],
        **({"recognised_as_code": True} if block.bare else {}),
        **({"untrusted": [{"step": u["step"], "source": u["source"], "kind": u["kind"]}
                          for u in e.untrusted]} if e.untrusted else {}),
        **tool_fields(e.tool),
    }


def _decision(e: E.Decided) -> Record | None:
    decision, request = e.record.decision, e.request
    if decision is None:
        return None
    ran = decision.action == "run"
    return "decision", {
        "turn": e.turn,
        "step": e.record.index,
        "action": decision.label,
        "code": decision.code if ran else "",
        "sha256": code_hash(decision.code) if ran else "",
        "reason": decision.reason,
        "by": decision.by,
        **tool_fields(e.tool),
        **({"four_eyes": request.four_eyes, "author": request.author}
           if request is not None and request.four_eyes else {}),
    }


def _execution(e: E.StepDone) -> Record | None:
    record, block = e.record, e.block
    if block is None:  # a front door's own StepDone (tests, ACP): nothing ran here
        return None
    return "execution", {
        "turn": e.turn,
        "step": record.index,
        "language": block.language,
        "code": block.code,
        "sha256": code_hash(block.code),
        "status": record.status,
        "outputs": record.outputs,
        "duration_s": round(record.duration_s, 4),
        "feedback": record.feedback,
        "changes": record.changes,
        **tool_fields(e.tool),
    }


def _answer_check(e: E.AnswerChecked) -> Record:
    return "answer_check", {"answer": e.answer, "asked": e.asked, **e.check.to_dict()}


def _guard_stop(e: E.GuardStopped) -> Record:
    return "guard_stop", {"turn": e.turn, "step": e.step, **e.stop.record()}


def _tool_notice(e: E.ToolNotice) -> Record:
    return "tool_notice", {"text": e.text}


CHECKPOINT_FIELDS = ("id", "fork", "copy", "variables", "files", "cost_s")  # of the probe's


def _checkpoint(e: E.CheckpointKept) -> Record:
    return "checkpoint", {"turn": e.turn,
                          **{k: e.info[k] for k in CHECKPOINT_FIELDS if k in e.info}}


def _rollback(e: E.RolledBack) -> Record:
    return "rollback", {"turn": e.turn, **e.report}


def _reset(e: E.ConversationReset) -> Record:
    return "conversation_reset", {}


def _undo(e: E.ConversationUndone) -> Record:
    return "conversation_undo", {"turns": e.turns, "messages": e.messages}


def _saved(e: E.ConversationSaved) -> Record:
    return "conversation_saved", {"path": e.path, "turns": e.turns}


def _loaded(e: E.ConversationLoaded) -> Record:
    return "conversation_loaded", {"path": e.path, "turns": e.turns, "messages": e.messages}


def _profile(e: E.ProfileApplied) -> Record:
    return "profile", {"name": e.name, "path": e.path, "selected_by": e.selected_by,
                       "settings": e.settings}


def _tools_offered(e: E.ToolsOffered) -> Record:
    return "tools_offered", {"functions": e.functions}


def _child_restart(e: E.ChildRestarted) -> Record:
    return "child_restart", {"reason": e.reason, **e.fields}


def _direct(e: E.DirectRun) -> Record:
    return "direct", {"kind": e.kind, "code": e.code, "status": e.status,
                      "outputs": e.outputs,
                      **({"duration_s": e.duration_s} if e.duration_s is not None else {})}


def _rebuild(e: E.Rebuilt) -> Record:
    return "rebuild", {"lost": e.lost, "planned": e.planned, "ran": e.ran,
                       "failed": e.failed, "skipped": e.skipped, "files": e.files,
                       "done": e.done}


def _state(e: E.StateChanged) -> Record:
    return "state", {"action": e.action, "name": e.name, "info": e.info, "mark": e.mark,
                     "steps": e.steps}


# By exact type: a ToolNotice is logged, a plain Notice is not.
RECORDS: dict[type, Callable[[Any], Record | None]] = {
    E.TurnStarted: _turn_start,
    E.TurnDone: _turn_end,
    E.ReplyDone: _llm_response,
    E.LLMFailed: _llm_error,
    E.ToolsUnsupported: _tools_unsupported,
    E.SampleDrawn: _llm_sample,
    E.DraftSetAside: _draft_set_aside,
    E.DraftsSampled: _drafts_sampled,
    E.StepReviewed: _code_proposed,
    E.Decided: _decision,
    E.StepDone: _execution,
    E.ToolNotice: _tool_notice,
    E.GuardStopped: _guard_stop,
    E.CheckpointKept: _checkpoint,
    E.RolledBack: _rollback,
    E.ConversationReset: _reset,
    E.ConversationUndone: _undo,
    E.ConversationSaved: _saved,
    E.ConversationLoaded: _loaded,
    E.ProfileApplied: _profile,
    E.ToolsOffered: _tools_offered,
    E.ChildRestarted: _child_restart,
    E.DirectRun: _direct,
    E.AnswerChecked: _answer_check,
    E.Rebuilt: _rebuild,
    E.StateChanged: _state,
}


def record_of(event: Any) -> Record | None:
    """The session-log record of ``event`` (name, fields), or None when it has none."""
    make = RECORDS.get(type(event))
    return make(event) if make is not None else None


class LogWriter:
    """Writes the records of events to one session log (a ``SessionLog``).

    ``llm_request`` records carry only the messages that are new since the request logged
    before (``messages_before`` of them are as logged then), so a long session's log grows
    linearly, not quadratically; the full list after any condensing.
    """

    def __init__(self, log: Any) -> None:
        self.log = log
        self._last_request: list[dict[str, Any]] = []

    @property
    def path(self) -> Any:
        return getattr(self.log, "path", None)

    def __call__(self, event: Any) -> None:
        if isinstance(event, E.LLMRequested):
            record: Record | None = self._llm_request(event)
        else:
            record = record_of(event)
        if record is not None:
            name, fields = record
            self.log.write(name, **fields)

    def _llm_request(self, e: E.LLMRequested) -> Record:
        before, messages = self._last_request, e.messages
        self._last_request = list(messages)
        if before and len(before) <= len(messages) and messages[: len(before)] == before:
            sent = {"messages_before": len(before), "messages": messages[len(before):]}
        else:
            sent = {"messages_before": 0, "messages": messages}
        return "llm_request", {"turn": e.turn, "step": e.step, "model": e.model,
                               "tools": e.tools, "small": e.small, **sent}
