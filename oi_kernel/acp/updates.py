"""The engine's events as ACP ``session/update``s, and approval as ``session/request_permission``.

The one place that knows both sides: when the engine's events change, only this module
changes. Pure (no I/O): ``TurnUpdates.updates(event)`` returns the updates one event
becomes; ``permission_request(request)`` the tool call and options to ask about;
``decision_from(response)`` the decision the client's answer means.

    text        TextDelta       -> agent_message_chunk
    reasoning   ReasoningDelta  -> agent_thought_chunk
    a step      CodeProposed    -> tool_call (kind execute, status pending; code and flags)
                Decided         -> tool_call_update (in_progress; failed when skipped/stopped)
                StepDone        -> tool_call_update (completed / failed: output, changes, flags)
    notices     Notice          -> agent_message_chunk (a quoted line)
    numbers     AnswerChecked   -> agent_message_chunk (quoted: "23% — not in any output")
    the end     TurnDone        -> the prompt's stop reason and usage (``stop_reason``)
    approval    Run = allow_once, Run all = allow_always, Skip = reject_once, Stop = reject_always;
                Edit (id edit, kind allow_once) where the client shows forms: elicitation/create
    the model   the session config option "model" (category model) <-> ``/model NAME``
    the title   the first instruction -> session_info_update (as session/list shows it)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from acp import helpers as H
from acp.schema import (
    ConfigOptionUpdate,
    ContentToolCallContent,
    ElicitationFormSessionMode,
    ElicitationSchema,
    ElicitationStringPropertySchema,
    PermissionOption,
    RequestPermissionResponse,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionInfoUpdate,
    ToolCallUpdate,
    Usage,
)

from oi_kernel.approval.approvers import HIDDEN_NOTE, flag_lines
from oi_kernel.core import events as E
from oi_kernel.core import identity
from oi_kernel.core.answer_check import marks_plain
from oi_kernel.core.changes import change_lines
from oi_kernel.core.output_text import outputs_to_text
from oi_kernel.core.types import ApprovalRequest, CodeBlock, Decision, StepRecord, Turn
from oi_kernel.safety.visible import needs_marking, visible

OUTPUT_CHARS = 20_000  # of a step's output text, the client gets at most this much
META = "oi_kernel"  # the key of our fields in an ACP ``_meta`` object

# option id (= its ACP kind) -> (our action, label). The ids are the kinds because some
# clients answer with the kind whatever ids were offered (Jupyter AI's ACP client shows its
# own Allow Once / Allow Always / Reject Once buttons and sends those words back).
OPTIONS: dict[str, tuple[str, str]] = {
    "allow_once": ("run", "Run"),
    "allow_always": ("run_all", "Run all"),
    "reject_once": ("skip", "Skip"),
    "reject_always": ("stop", "Stop"),
}

EDIT = "edit"  # the option id of Edit (its kind: allow_once)
PREVIEW = "preview"  # the option id of Preview (its kind: allow_once; core.preview)

STOP_REASONS = {"interrupted": "cancelled", "max_steps": "max_turn_requests",
                "cap": "max_turn_requests"}


def tool_call_id(turn: int, step: int) -> str:
    return f"oi-{turn}-{step}"


def flag_fields(flags: list[Any]) -> list[dict[str, Any]]:
    return [dataclasses.asdict(f) if dataclasses.is_dataclass(f) else dict(f) for f in flags]


def _text(text: str) -> ContentToolCallContent:
    return H.tool_content(H.text_block(text))


def _code_text(block: CodeBlock, tool: str) -> str:
    """The code as markdown, as a person should read it (hidden characters marked)."""
    code = block.code
    note = ""
    if needs_marking(code):
        code, note = visible(code), HIDDEN_NOTE + "\n\n"
    if tool:
        return f"{note}Call the tool **{tool}** with these arguments:\n```json\n{code}\n```"
    return f"{note}```{block.language}\n{code}\n```"


def _title(request: ApprovalRequest) -> str:
    """One line a client shows even when it shows nothing else: the step, where it runs,
    and how many risk flags it has."""
    if request.tool:
        title = f"Step {request.step}: call {request.tool}"
    else:
        where = "sandboxed" if request.sandboxed else "on this machine"
        title = f"Step {request.step}: run {request.block.language} ({where})"
    if flags := request.flags:
        high = sum(1 for f in flags if f.severity == "high")
        title += (f" · ⚠ {len(flags)} risk flag{'s' if len(flags) != 1 else ''}"
                  + (f" ({high} high)" if high else ""))
    return title


def _request_content(request: ApprovalRequest) -> list[ContentToolCallContent]:
    content = [_text(_code_text(request.block, request.tool))]
    if request.block.bare:
        content.append(_text("The reply had no code fence; it was recognised as code."))
    if lines := flag_lines(request.flags):
        content.append(_text("\n".join(lines)))
    if request.previewed is not None:
        content.append(_text(request.previewed.text()))
    elif request.preview is not None and not request.preview.available:
        content.append(_text(f"Preview is not available: {request.preview.why_not}"))
    return content


def _raw_input(request: ApprovalRequest) -> dict[str, Any]:
    raw = {"language": request.block.language, "code": request.block.code,
           "flags": flag_fields(request.flags), "sandboxed": request.sandboxed}
    if request.tool:
        raw["tool"] = request.tool
    return raw


# ----------------------------------------------------------------------------- permission
def permission_options(request: ApprovalRequest, edit: bool = False) -> list[PermissionOption]:
    """Run, Edit (where the client can show a form), Run all (unless the administrator's
    policy asks about every block), Skip, Stop."""
    options = [PermissionOption(option_id=kind, name=name, kind=kind)  # type: ignore[arg-type]
               for kind, (action, name) in OPTIONS.items()
               if action != "run_all" or request.run_all_allowed]
    if edit:
        options.insert(1, PermissionOption(option_id=EDIT, name="Edit", kind="allow_once"))
    if request.preview is not None and request.preview.available:
        options.insert(1, PermissionOption(option_id=PREVIEW, name="Preview (in a disposable "
                                           "copy first)", kind="allow_once"))
    return options


def permission_request(request: ApprovalRequest, edit: bool = False
                       ) -> tuple[ToolCallUpdate, list[PermissionOption]]:
    """What ``session/request_permission`` asks about one step: the tool call with its code,
    the risk flags and untrusted-content notes (as text and in ``_meta``), and the options."""
    meta = {META: {"turn": request.turn, "step": request.step,
                   "flags": flag_fields(request.flags), "sandboxed": request.sandboxed,
                   **({"tool": request.tool} if request.tool else {}),
                   **({"four_eyes": request.four_eyes} if request.four_eyes else {})}}
    call = ToolCallUpdate(tool_call_id=tool_call_id(request.turn, request.step),
                          title=_title(request), kind="execute", status="pending",
                          content=_request_content(request), raw_input=_raw_input(request),
                          field_meta=meta)
    return call, permission_options(request, edit)


def decision_from(response: RequestPermissionResponse, request: ApprovalRequest) -> Decision:
    """The decision an answer means; a cancelled request (the client's side of
    ``session/cancel``) or an option we did not offer stops the instruction."""
    outcome = response.outcome
    by = identity.person()
    option = getattr(outcome, "option_id", None) if outcome.outcome == "selected" else None
    action = OPTIONS[option][0] if option in OPTIONS else None
    if action == "run":
        return Decision("run", request.block.code, by=by)
    if action == "run_all" and request.run_all_allowed:
        return Decision("run", request.block.code, run_all=True, by=by)
    if action == "skip":
        return Decision("skip", by=by)
    if action == "stop":
        return Decision("stop", by=by)
    reason = ("the client cancelled the permission request" if option is None
              else f"the client answered with an option that was not offered: {option!r}")
    return Decision("stop", reason=reason, by=by)


def chose_edit(response: RequestPermissionResponse, option: str = EDIT) -> bool:
    outcome = response.outcome
    return outcome.outcome == "selected" and getattr(outcome, "option_id", None) == option


def edit_form(request: ApprovalRequest, session_id: str, call_id: str) -> tuple[str, Any]:
    """The message and form (``elicitation/create``, form mode) that let the user change a
    step's code: one text field, ``code``, holding the code proposed."""
    what = "arguments (JSON)" if request.block.tool else f"{request.block.language} code"
    field = ElicitationStringPropertySchema(
        type="string", title=f"Step {request.step}: {what}", default=request.block.code,
        description="Change it, then accept to run it as it is now.")
    return (f"Edit step {request.step} before it runs.", ElicitationFormSessionMode(
        session_id=session_id, tool_call_id=call_id, requested_schema=ElicitationSchema(
            type="object", properties={"code": field}, required=["code"])))


def edit_decision(answer: Any, request: ApprovalRequest) -> Decision | None:
    """The edit form's answer: accepted code runs (as edited when it changed); an empty or
    declined form is None (ask again); a cancelled one stops the instruction."""
    by = identity.person()
    action = getattr(answer, "action", "")
    code = (getattr(answer, "content", None) or {}).get("code") if action == "accept" else None
    if isinstance(code, str) and code.strip():
        return Decision("run", code, edited=code != request.block.code, by=by)
    if action in ("accept", "decline"):
        return None
    return Decision("stop", reason="the client cancelled the edit", by=by)


# ----------------------------------------------------------------------------- events
class TurnUpdates:
    """The ACP updates of one prompt's events; remembers the steps still open so that an
    interrupted prompt can close them (``close_open``)."""

    def __init__(self) -> None:
        self.turn = 0
        self.open: dict[int, str] = {}  # step -> tool call id, proposed and not finished
        self.flags: dict[int, list[Any]] = {}  # step -> its risk flags and untrusted notes

    def updates(self, event: E.Event) -> list[Any]:
        if isinstance(event, E.TextDelta):
            return [H.update_agent_message_text(event.text)] if event.text else []
        if isinstance(event, E.ReasoningDelta):
            return [H.update_agent_thought_text(event.text)] if event.text else []
        if isinstance(event, E.CodeProposed):
            return [self._proposed(event.request)]
        if isinstance(event, E.Decided):
            return self._decided(event.record)
        if isinstance(event, E.StepDone):
            return [self._done(event.record)]
        if isinstance(event, E.Notice):
            mark = {"warning": "⚠ ", "error": "✖ "}.get(event.level, "")
            return [H.update_agent_message_text(f"\n\n> {mark}{event.text}\n\n")]
        if isinstance(event, E.AnswerChecked) and (marks := marks_plain(event.check)):
            lines = "\n".join(f"> {line}  " for line in marks.splitlines())
            return [H.update_agent_message_text(f"\n\n{lines}\n")]
        return []  # ReplyDone: its text was streamed; TurnDone: the prompt's response

    def _proposed(self, request: ApprovalRequest) -> Any:
        self.turn = request.turn
        call_id = tool_call_id(request.turn, request.step)
        self.open[request.step] = call_id
        self.flags[request.step] = list(request.flags)
        return H.start_tool_call(call_id, _title(request), kind="execute", status="pending",
                                 content=_request_content(request),
                                 raw_input=_raw_input(request))

    def _decided(self, record: StepRecord) -> list[Any]:
        decision = record.decision
        call_id = self.open.get(record.index)
        if decision is None or call_id is None:
            return []
        if decision.action == "run":
            content = None
            if decision.edited:
                content = [_text("Edited before it ran:\n\n" + _code_text(
                    CodeBlock(record.block.language, decision.code), record.block.tool))]
            return [H.update_tool_call(call_id, status="in_progress", content=content)]
        del self.open[record.index]
        what = "Stopped: the instruction ends here" if decision.action == "stop" else "Skipped"
        why = f" ({decision.reason})" if decision.reason else ""
        return [H.update_tool_call(call_id, status="failed",
                                   content=[_text(f"{what}; the code was not run{why}.")],
                                   raw_output={"status": record.status or decision.label,
                                               "decision": decision.label})]

    def _done(self, record: StepRecord) -> Any:
        call_id = self.open.pop(record.index, tool_call_id(self.turn, record.index))
        flags = self.flags.get(record.index, [])
        return H.update_tool_call(call_id, status="completed" if record.status == "ok"
                                  else "failed", content=finished_content(record, flags),
                                  raw_output=raw_output(record, flags))

    def close_open(self, why: str = "interrupted") -> list[Any]:
        """Updates that end every step still open: ``why`` "interrupted" (the prompt was
        cancelled) or "failed" (an error ended the instruction; the chat says which)."""
        out = [H.update_tool_call(call_id, status="failed",
                                  content=[_text(f"{why.capitalize()}: the step did not finish.")],
                                  raw_output={"status": why})
               for call_id in self.open.values()]
        self.open.clear()
        return out


def finished_content(record: StepRecord, flags: Sequence[Any] = ()) -> list[Any]:
    """A finished step as the client shows it: output (text and images), what it changed,
    its flags, and its status when it did not succeed."""
    content: list[Any] = []
    text = outputs_to_text(record.outputs, max_chars=OUTPUT_CHARS, max_error_chars=OUTPUT_CHARS)
    if text:
        content.append(_text(f"```\n{text}\n```"))
    for out in record.outputs:
        data = out.get("data") or {}
        for mime in ("image/png", "image/jpeg"):
            if isinstance(data.get(mime), str):
                content.append(H.tool_content(H.image_block(data[mime].strip(), mime)))
    if lines := change_lines(record.changes):
        content.append(_text("Changed:\n" + "\n".join(f"- {ln}" for ln in lines)))
    if lines := flag_lines(list(flags)):
        content.append(_text("\n".join(lines)))
    if record.status != "ok":
        content.append(_text(f"Status: {record.status}."))
    return content or [_text("(no output)")]


def raw_output(record: StepRecord, flags: Sequence[Any] = ()) -> dict[str, Any]:
    """The finished step as data (a client that shows only ``rawOutput``, as Jupyter AI's
    chat does, shows this): status, the output as text, what changed, the flags."""
    decision = record.decision
    text = outputs_to_text(record.outputs, max_chars=OUTPUT_CHARS, max_error_chars=OUTPUT_CHARS)
    return {"status": record.status, "output": text,
            "changes": change_lines(record.changes), "flags": flag_fields(list(flags)),
            "decision": decision.label if decision else "",
            "duration_s": round(record.duration_s, 3)}


def stop_reason(turn: Turn | None, cancelled: bool = False) -> str:
    """Why a prompt ended (``turn`` None: it was a command, or it failed before a turn)."""
    if cancelled:
        return "cancelled"
    return STOP_REASONS.get(turn.end_reason, "end_turn") if turn else "end_turn"


def usage(turn: Turn | None) -> Usage | None:
    if turn is None or not turn.llm_calls:
        return None
    u = turn.usage
    return Usage(total_tokens=u.prompt_tokens + u.completion_tokens,
                 input_tokens=u.prompt_tokens, output_tokens=u.completion_tokens)


def history_updates(messages: list[dict[str, Any]]) -> list[Any]:
    """A loaded conversation as the client shows it again (``session/load``): each
    instruction as a user message, each reply's text as an agent message, each step's code
    as a finished tool call (its output is the model's, not the kernel's, record of it)."""
    out: list[Any] = []
    for n, message in enumerate(messages):
        role, content = message.get("role"), message.get("content")
        text = content if isinstance(content, str) else ""
        if role == "user" and text:
            out.append(H.update_user_message_text(text))
        elif role == "assistant":
            if text:
                out.append(H.update_agent_message_text(text))
            for call in message.get("tool_calls") or []:
                arguments = (call.get("function") or {}).get("arguments", "")
                out.append(H.start_tool_call(f"oi-loaded-{n}-{call.get('id', '')}",
                                             (call.get("function") or {}).get("name", "step"),
                                             kind="execute", status="completed",
                                             content=[_text(f"```\n{arguments}\n```")]))
    return out


# ----------------------------------------------------------------------------- the model
MODEL_OPTION = "model"  # the id of the one session config option


def model_options(current: str, used: Sequence[str]) -> list[Any]:
    """The session's config options: the model, a select of the models this session has
    used (any litellm name can be set, as ``/model NAME`` does), the current one selected."""
    names = list(dict.fromkeys([*(m for m in used if m), current]))
    choices = [SessionConfigSelectOption(value=name, name=name) if name else
               SessionConfigSelectOption(value="", name="(none configured)",
                                         description="set OI_MODEL, or /model NAME")
               for name in names]
    return [SessionConfigOptionSelect(
        id=MODEL_OPTION, name="Model", category="model", type="select", current_value=current,
        options=choices, description="The language model that writes the code (a litellm "
        "model name; /model NAME sets one that is not listed).")]


def title_update(title: str) -> SessionInfoUpdate:
    """Tell the client the session's title (its first instruction, as session/list shows)."""
    return SessionInfoUpdate(session_update="session_info_update", title=title)


def config_update(options: list[Any]) -> ConfigOptionUpdate:
    """Tell the client the config options changed (after ``/model NAME``)."""
    return ConfigOptionUpdate(session_update="config_option_update", config_options=options)
