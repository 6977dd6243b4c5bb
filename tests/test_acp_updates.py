"""The pure mapping of the engine's events to ACP updates and of approval to
``session/request_permission`` (``oi_kernel.acp.updates``)."""

from __future__ import annotations

import dataclasses

import pytest

pytest.importorskip("acp")

from acp.schema import (  # noqa: E402
    AllowedOutcome,
    DeniedOutcome,
    RequestPermissionResponse,
)

from oi_kernel.acp import updates as U  # noqa: E402
from oi_kernel.core import events as E  # noqa: E402
from oi_kernel.core.types import (  # noqa: E402
    ApprovalRequest,
    CodeBlock,
    Decision,
    StepRecord,
    Turn,
    Usage,
)
from oi_kernel.safety.risk import Flag  # noqa: E402

pytestmark = pytest.mark.unit

FLAG = Flag(1, "delete-files", "high", "removes a directory tree")


def request(code: str = "print(1)", flags: list | None = None, **kw) -> ApprovalRequest:
    return ApprovalRequest(2, 1, CodeBlock("python", code), flags or [], **kw)


def texts(update) -> str:
    return "\n".join(c.content.text for c in update.content or [] if hasattr(c.content, "text"))


def answer(option: str | None) -> RequestPermissionResponse:
    outcome = (DeniedOutcome(outcome="cancelled") if option is None
               else AllowedOutcome(outcome="selected", option_id=option))
    return RequestPermissionResponse(outcome=outcome)


def test_text_and_reasoning_are_message_and_thought_chunks():
    m = U.TurnUpdates()
    [text] = m.updates(E.TextDelta("Hello"))
    [thought] = m.updates(E.ReasoningDelta("hmm"))
    assert text.session_update == "agent_message_chunk" and text.content.text == "Hello"
    assert thought.session_update == "agent_thought_chunk" and thought.content.text == "hmm"
    assert m.updates(E.TextDelta("")) == []


def test_a_step_is_one_execute_tool_call_from_proposal_to_output():
    m = U.TurnUpdates()
    req = request("x = 1\nprint(x)", [FLAG])
    [start] = m.updates(E.CodeProposed(req))
    assert (start.session_update, start.kind, start.status) == ("tool_call", "execute", "pending")
    assert start.tool_call_id == "oi-2-1" and "```python\nx = 1\nprint(x)\n```" in texts(start)
    assert "delete-files" in texts(start) and start.raw_input["flags"][0]["severity"] == "high"
    record = StepRecord(1, req.block, Decision("run", req.block.code))
    [running] = m.updates(E.Decided(record))
    assert running.status == "in_progress" and running.tool_call_id == start.tool_call_id
    record = dataclasses.replace(
        record, status="ok",
        outputs=[{"output_type": "stream", "name": "stdout", "text": "1\n"},
                 {"output_type": "display_data", "data": {"image/png": "iVBO\n"}}],
        changes={"variables": [{"name": "x", "change": "created", "type": "int",
                                "after": "1"}], "files": []})
    [done] = m.updates(E.StepDone(record))
    assert done.status == "completed" and done.tool_call_id == start.tool_call_id
    assert "1" in texts(done) and "Changed:" in texts(done) and "delete-files" in texts(done)
    assert any(getattr(c.content, "type", "") == "image" for c in done.content)
    assert done.raw_output["flags"][0]["category"] == "delete-files"
    assert done.raw_output["output"] == "1\n[image/png displayed]"
    assert done.raw_output["changes"] == ["x:  → 1"]
    assert m.close_open() == []


@pytest.mark.parametrize("action,word", [("skip", "Skipped"), ("stop", "Stopped")])
def test_a_step_not_run_fails_with_the_reason(action, word):
    m = U.TurnUpdates()
    req = request()
    m.updates(E.CodeProposed(req))
    record = StepRecord(1, req.block, Decision(action, reason="not now"))
    [update] = m.updates(E.Decided(record))
    assert update.status == "failed" and word in texts(update) and "not now" in texts(update)
    assert m.close_open() == []


def test_an_edited_step_shows_what_runs():
    m = U.TurnUpdates()
    req = request("rm()")
    m.updates(E.CodeProposed(req))
    [update] = m.updates(E.Decided(StepRecord(1, req.block, Decision("run", "ls()",
                                                                      edited=True))))
    assert "Edited" in texts(update) and "ls()" in texts(update)


def test_cancel_closes_the_open_steps():
    m = U.TurnUpdates()
    m.updates(E.CodeProposed(request()))
    [closed] = m.close_open()
    assert closed.status == "failed" and "Interrupted" in texts(closed)
    assert m.close_open() == []


def test_notices_are_quoted_message_chunks_and_bookkeeping_is_silent():
    m = U.TurnUpdates()
    [notice] = m.updates(E.Notice("The step cap was hit", "warning"))
    assert notice.session_update == "agent_message_chunk"
    assert notice.content.text.strip() == "> ⚠ The step cap was hit"
    assert m.updates(E.TurnDone(Turn(1, "x"))) == []


def test_permission_request_carries_code_flags_and_the_four_options():
    call, options = U.permission_request(request("import shutil", [FLAG], sandboxed=True))
    assert call.tool_call_id == "oi-2-1" and call.kind == "execute"
    assert call.title == "Step 1: run python (sandboxed) · ⚠ 1 risk flag (1 high)"
    assert "import shutil" in texts(call)
    assert "1 risk flag (1 high)" in texts(call)
    assert call.field_meta["oi_kernel"]["flags"] == [
        {"line": 1, "category": "delete-files", "severity": "high",
         "reason": "removes a directory tree"}]
    assert [(o.option_id, o.kind, o.name) for o in options] == [
        ("allow_once", "allow_once", "Run"), ("allow_always", "allow_always", "Run all"),
        ("reject_once", "reject_once", "Skip"), ("reject_always", "reject_always", "Stop")]


def test_without_run_all_under_the_policy_there_is_no_allow_always():
    _call, options = U.permission_request(request(run_all_allowed=False))
    assert "allow_always" not in {o.kind for o in options}
    decision = U.decision_from(answer("allow_always"), request(run_all_allowed=False))
    assert decision.action == "stop"  # an option that was not offered runs nothing


def test_hidden_characters_are_marked_in_what_the_client_shows():
    call, _ = U.permission_request(request("x = 1 \u202e# hidden"))
    assert "\u202e" not in texts(call) and "⟦" in texts(call)
    assert "\u202e" in call.raw_input["code"]  # what runs is unchanged


@pytest.mark.parametrize("option,action,run_all", [
    ("allow_once", "run", False), ("allow_always", "run", True), ("reject_once", "skip", False),
    ("reject_always", "stop", False), (None, "stop", False), ("bogus", "stop", False),
    ("run", "stop", False)])
def test_answers_map_to_decisions(option, action, run_all):
    decision = U.decision_from(answer(option), request())
    assert (decision.action, decision.run_all) == (action, run_all)
    if action == "run":
        assert decision.code == "print(1)"


def test_stop_reasons_and_usage():
    turn = Turn(1, "x", end_reason="done", usage=Usage(10, 5), llm_calls=1)
    assert U.stop_reason(turn) == "end_turn"
    assert U.stop_reason(Turn(1, "x", end_reason="max_steps")) == "max_turn_requests"
    assert U.stop_reason(turn, cancelled=True) == "cancelled"
    assert U.stop_reason(None) == "end_turn"
    assert U.usage(turn).total_tokens == 15 and U.usage(None) is None


def test_history_of_a_loaded_conversation():
    messages = [{"role": "user", "content": "do it"},
                {"role": "assistant", "content": "Sure.", "tool_calls": [
                    {"id": "c1", "function": {"name": "execute", "arguments": '{"code": "1"}'}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "1"},
                {"role": "assistant", "content": "Done."}]
    kinds = [u.session_update for u in U.history_updates(messages)]
    assert kinds == ["user_message_chunk", "agent_message_chunk", "tool_call",
                     "agent_message_chunk"]


def test_the_model_option_lists_the_models_used_and_the_current_one():
    [option] = U.model_options("openai/b", ["openai/a", "openai/b", ""])
    assert (option.id, option.type, option.category) == ("model", "select", "model")
    assert option.current_value == "openai/b"
    assert [o.value for o in option.options] == ["openai/a", "openai/b"]
    [none] = U.model_options("", [])
    assert none.current_value == "" and none.options[0].name == "(none configured)"
    update = U.config_update([option])
    assert update.session_update == "config_option_update"


def test_edit_is_offered_only_where_the_client_shows_forms_and_its_answers_mean():
    from acp.schema import (
        AcceptElicitationResponse,
        CancelElicitationResponse,
        DeclineElicitationResponse,
    )

    req = request("print(1)")
    assert "edit" not in [o.option_id for o in U.permission_options(req)]
    with_edit = U.permission_options(req, edit=True)
    assert [(o.option_id, o.kind) for o in with_edit][:2] == [
        ("allow_once", "allow_once"), ("edit", "allow_once")]
    assert U.chose_edit(answer("edit")) and not U.chose_edit(answer("allow_once"))
    assert not U.chose_edit(answer(None))
    message, mode = U.edit_form(req, "acp-1", "call-1")
    assert mode.session_id == "acp-1" and mode.tool_call_id == "call-1"
    assert mode.requested_schema.properties["code"].default == "print(1)"
    assert mode.requested_schema.required == ["code"] and "step 1" in message.lower()
    edited = U.edit_decision(AcceptElicitationResponse(action="accept",
                                                       content={"code": "print(2)"}), req)
    assert (edited.action, edited.code, edited.edited) == ("run", "print(2)", True)
    same = U.edit_decision(AcceptElicitationResponse(action="accept",
                                                     content={"code": "print(1)"}), req)
    assert same.action == "run" and not same.edited
    assert U.edit_decision(AcceptElicitationResponse(action="accept", content={"code": " "}),
                           req) is None  # an empty edit: ask again
    assert U.edit_decision(DeclineElicitationResponse(action="decline"), req) is None
    assert U.edit_decision(CancelElicitationResponse(action="cancel"), req).action == "stop"
    # an "edit" answer without the form behind it is not an option that was offered
    assert U.decision_from(answer("edit"), req).action == "stop"
