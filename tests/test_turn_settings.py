"""One frozen settings object per turn (issue 41 item 2): the engine resolves its settings
when a turn starts, and a change while the turn runs (here: made while the turn waits for an
approval) applies to the next turn, not the running one. End to end through the Python API:
a real child kernel, litellm over HTTP to the scripted server."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest

from oi_kernel import Interpreter
from oi_kernel.core.settings import EngineSettings, TurnSettings, freeze
from oi_kernel.core.types import ApprovalRequest
from tests import llm_server as S


def test_a_change_during_a_turn_applies_to_the_next_turn(llm_server, tmp_path: Path):
    asked: list[tuple[int, int]] = []
    seen: list[tuple[str, int]] = []  # what the running turn's settings said when asked

    def approve(request: ApprovalRequest) -> bool:
        asked.append((request.turn, request.step))
        seen.append((it.engine.steps.settings.approval, it.engine.settings().max_steps))
        if len(asked) == 1:  # the user changes settings while the turn waits for them
            it.engine.approval = "never"
            it.engine.max_steps = 1
        return True

    llm_server.enqueue(
        S.tool_call("print(1)"), S.tool_call("print(2)"), S.text("Done."),  # turn 1
        S.tool_call("print(3)"), S.text("not reached: one LLM call only"),  # turn 2
    )
    with Interpreter("openai/scripted", api_base=llm_server.url, api_key="sk-test-123456",
                     log_dir=tmp_path / "logs", cwd=tmp_path, approve=approve) as it:
        it.engine.approval, it.engine.max_steps = "always", 10
        list(it.chat("print two numbers"))
        assert (it.engine.approval, it.engine.max_steps) == ("never", 1)  # changed live
        list(it.chat("and a third"))
        first, second = it.turns

    # turn 1 kept "always" (step 2 was asked too) and its step limit (3 LLM calls)
    assert asked == [(1, 1), (1, 2)]
    assert seen == [("always", 10), ("always", 10)]
    assert [s.status for s in first.steps] == ["ok", "ok"] and first.end_reason == "done"
    # turn 2 got the new values: nobody asked, and it stopped after 1 LLM call
    assert [(s.status, s.decision.by) for s in second.steps] == [("ok", "auto")]
    assert second.end_reason == "max_steps"
    assert len(llm_server.requests) == 4


def test_a_model_setting_changed_during_a_turn_applies_to_the_next_turn(llm_server, tmp_path):
    """``c.LLM.*`` (the model, its temperature, its timeout...) is part of the turn's frozen
    settings: the requests of a running turn keep the values it started with."""
    def approve(request: ApprovalRequest) -> bool:
        if request.step == 1 and request.turn == 1:  # changed while the turn waits
            it.engine.llm.temperature = 0.7
            it.engine.llm.model = "openai/other"
            it.engine.llm.request_timeout = 33.0
        return True

    llm_server.enqueue(S.tool_call("print(1)"), S.text("Done."),  # turn 1: two requests
                       S.text("Again."))  # turn 2
    with Interpreter("openai/scripted", api_base=llm_server.url, api_key="sk-test-123456",
                     log_dir=tmp_path / "logs", cwd=tmp_path, approve=approve) as it:
        it.engine.approval = "always"
        list(it.chat("print one"))
        assert (it.engine.llm.model, it.engine.llm.temperature) == ("openai/other", 0.7)  # live
        assert it.engine.settings().llm.request_timeout == 33.0  # outside a turn: now
        list(it.chat("once more"))

    first, second, third = llm_server.requests
    # turn 1's second request (after the change) kept the model and temperature it started with
    assert [r["model"] for r in (first, second, third)] == ["scripted", "scripted", "other"]
    assert [r["temperature"] for r in (first, second, third)] == [0.0, 0.0, 0.7]


def test_turn_settings_are_frozen_and_complete():
    settings = EngineSettings()
    settings.known_safe = ["mylib.*"]
    frozen = freeze(settings)
    names = {f.name for f in dataclasses.fields(TurnSettings)}
    assert set(EngineSettings.class_traits(config=True)) <= names
    assert frozen.known_safe == ("mylib.*",)  # a tuple: nothing in it changes either
    with pytest.raises(dataclasses.FrozenInstanceError):
        frozen.max_steps = 3  # type: ignore[misc]
    settings.max_steps = 4
    assert frozen.max_steps == 10 and freeze(settings).max_steps == 4
    assert frozen.llm is None  # no model here; an engine's turn has its ModelSettings


def test_the_tools_settings_are_part_of_the_turns():
    """``c.Tools.*`` (the tool budget, the call timeout...) is frozen with the turn: a change
    while the turn runs applies to the next one."""
    from oi_kernel.core.tools import Tools, ToolSettings

    settings = EngineSettings()
    settings.tool_settings = Tools(call_timeout=7.0)  # as the engine holds them
    frozen = freeze(settings)
    assert isinstance(frozen.tools, ToolSettings)
    assert {f.name for f in dataclasses.fields(ToolSettings)} == set(
        Tools.class_traits(config=True))
    settings.tool_settings.call_timeout = 99.0
    assert frozen.tools.call_timeout == 7.0 and freeze(settings).tools.call_timeout == 99.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        frozen.tools.call_timeout = 1.0  # type: ignore[misc]


def test_a_tool_step_is_given_the_turns_call_timeout():
    """The step runner hands a tool call the call timeout of the turn's frozen settings, not
    the live ``c.Tools.call_timeout`` (changed here after the turn's settings were made)."""
    from oi_kernel.core.executor import ExecResult
    from oi_kernel.core.steps import StepRunner
    from oi_kernel.core.tools import Tools
    from oi_kernel.core.types import CodeBlock

    live = Tools(call_timeout=12.0)
    engine = EngineSettings(step_timeout=0)  # (else the step's timeout bounds the call)
    engine.tool_settings = live
    turn = freeze(engine)
    live.call_timeout = 500.0
    given: list[float] = []

    class Toolbox:
        async def run(self, block: CodeBlock, timeout: float) -> ExecResult:
            given.append(timeout)
            return ExecResult(status="ok")

    runner = StepRunner(lambda: turn, None, None, None, None,  # type: ignore[arg-type]
                        toolbox=Toolbox(), secrets=None, rollback=None,  # type: ignore[arg-type]
                        log=None)  # type: ignore[arg-type]
    result = asyncio.run(runner._run_with_timeout(CodeBlock("json", "{}", tool="t")))
    assert result is not None and result.status == "ok"
    assert given == [12.0]
