"""Turns derived from events (``core.turn_fold``): the fold on its own, then the engine's
turns compared with the turns rebuilt from the events a subscriber collected (a front
door's sink; the session log's recorder in a real session with a child kernel)."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from oi_kernel.core import events as E
from oi_kernel.core.engine import Engine
from oi_kernel.core.turn_fold import TurnBuilder, rebuild
from oi_kernel.core.types import (
    ApprovalRequest,
    CodeBlock,
    Decision,
    Reply,
    StepRecord,
    Turn,
    Usage,
)
from tests.fake_model import FakeModel
from tests.test_small_model import _Executor, _fenced, _printed

NOTES = {"source": "notes.txt", "kind": "file", "phrase": "the text of notes.txt",
         "verb": "read"}


# ----------------------------------------------------------------------------- the fold
@pytest.mark.unit
def test_each_event_sets_its_part_of_the_turn() -> None:
    block = CodeBlock("python", "print(open('notes.txt').read())")
    run = Decision("run", block.code, by="auto")
    outputs = [{"output_type": "stream", "name": "stdout", "text": "Meet at noon.\n"}]
    fold = TurnBuilder()
    for event in [
        E.TurnStarted(3, "read my notes", conversation_index=2, started=100.0),
        E.LLMRequested(3, 1, "m", True, False, []),
        E.TextDelta("streamed text changes nothing"),
        E.ReplyDone(1, Reply("", usage=Usage(10, 2, 0.5)), [block], 3),
        E.SampleDrawn(3, 1, Reply("", usage=Usage(5, 1, None)), {"seed": 1}),
        E.StepReviewed(3, 1, block, []),
        E.CodeProposed(ApprovalRequest(3, 1, block), needs_approval=False),
        E.Decided(StepRecord(1, block, run), 3),
        E.StepDone(StepRecord(1, block, run, "ok", outputs, "fed back", 0.25, {"v": 1}), 3,
                   block, outside=[NOTES]),
    ]:
        fold(event)
    [turn] = fold.turns
    assert turn.untrusted == [{"step": 1, **NOTES, "read": False}]  # not sent yet
    fold(E.LLMRequested(3, 2, "m", True, False, []))
    assert turn.untrusted[0]["read"] is True  # the model is sent the step's output
    fold(E.UntrustedNotice("step 2 follows ...", "warning"))
    fold(E.ReplyDone(2, Reply("Done.", usage=Usage(1, 1, 0.25)), [], 3))
    fold(E.TurnDone(Turn(99, "the engine's own record is not read"), "done", "Done."))
    assert fold.turns == [Turn(
        3, "read my notes", started=100.0, conversation_index=2,
        steps=[StepRecord(1, block, run, "ok", outputs, "fed back", 0.25, {"v": 1})],
        final_text="Done.", end_reason="done", usage=Usage(16, 4, 0.75), llm_calls=2,
        samples=1, untrusted=[{"step": 1, **NOTES, "read": True}], untrusted_noticed=True,
    )]


@pytest.mark.unit
def test_steps_that_did_not_run_end_at_their_decision() -> None:
    a, b, c, d = (CodeBlock("python", f"print({n})") for n in range(4))
    skip = Decision("skip", reason="not now")
    stop = Decision("stop")
    [turn] = rebuild([
        E.TurnStarted(1, "go"),
        E.StepReviewed(1, 1, a, []),
        E.Decided(StepRecord(1, a, skip, "skipped", feedback="declined"), 1),
        E.StepReviewed(1, 2, b, []),
        E.Decided(StepRecord(2, b, status="refused", feedback="no such language"), 1),
        E.StepReviewed(1, 3, c, []),
        E.Decided(StepRecord(3, c, stop, "stopped", feedback="stopped here"), 1),
        E.Decided(StepRecord(4, d, status="stopped", feedback="not reached"), 1),  # no review
        E.TurnDone(Turn(1, "go"), "stopped"),
    ])
    assert [(s.index, s.block, s.decision, s.status, s.feedback) for s in turn.steps] == [
        (1, a, skip, "skipped", "declined"), (2, b, None, "refused", "no such language"),
        (3, c, stop, "stopped", "stopped here"), (4, d, None, "stopped", "not reached")]
    assert turn.end_reason == "stopped" and turn.llm_calls == 0


@pytest.mark.unit
def test_a_run_decision_leaves_the_status_to_the_step_s_end() -> None:
    block = CodeBlock("python", "x = 1")
    fold = TurnBuilder()
    fold(E.TurnStarted(1, "go"))
    fold(E.Decided(StepRecord(1, block, Decision("run", "x = 2", edited=True)), 1))
    assert fold.turns[0].steps[0].decision.code == "x = 2"
    assert fold.turns[0].steps[0].feedback == ""  # running: nothing to feed back yet
    fold(E.StepDone(StepRecord(1, block, None, "interrupted", feedback="stopped"), 1))
    step = fold.turns[0].steps[0]
    assert (step.status, step.feedback, step.decision.code) == ("interrupted", "stopped", "x = 2")


@pytest.mark.unit
def test_events_outside_a_turn_change_nothing_and_each_start_opens_a_turn() -> None:
    block = CodeBlock("python", "1")
    fold = TurnBuilder()
    for event in [E.ReplyDone(1, Reply("early"), [], 1), E.StepReviewed(1, 1, block, []),
                  E.ConversationReset(), E.ToolsOffered(["f"]), E.Notice("hello")]:
        fold(event)
    assert fold.turns == []
    fold(E.TurnStarted(1, "first", started=1.0))
    fold(E.Notice("a plain notice is not the untrusted one"))
    fold(E.TurnStarted(2, "second", started=2.0))
    fold(E.ReplyDone(1, Reply("hi"), [], 2))
    assert [(t.index, t.llm_calls, t.untrusted_noticed) for t in fold.turns] == [
        (1, 0, False), (2, 1, False)]


@pytest.mark.unit
def test_events_are_values() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        E.TextDelta("x").text = "y"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        E.TurnDone(Turn(1, "go")).reason = "done"  # type: ignore[misc]


# ----------------------------------------------------------------------------- the engine
class _Approver:
    """Answers from a list: True runs, a string skips with that reason, None stops."""

    def __init__(self, answers: list[Any]) -> None:
        self.answers = list(answers)

    async def decide(self, request: ApprovalRequest) -> Decision:
        answer = self.answers.pop(0)
        if answer is True:
            return Decision("run", request.block.code, by="ann")
        if answer is None:
            return Decision("stop", by="ann")
        return Decision("skip", reason=answer, by="ann")


def _turns_rebuilt(engine: Engine, *instructions: str) -> tuple[list[Turn], list[Any]]:
    """Run the instructions with a front door that only collects the events; the turns
    those events rebuild, and the events."""
    events: list[Any] = []
    for instruction in instructions:
        asyncio.run(engine.run_turn(instruction, events.append))
    return rebuild(events), events


def _same_but_not_shared(rebuilt: list[Turn], engine: Engine) -> None:
    assert rebuilt == engine.turns
    assert all(r is not t for r, t in zip(rebuilt, engine.turns, strict=True))


@pytest.mark.unit
def test_the_engine_s_turns_are_rebuilt_from_the_events_a_front_door_saw() -> None:
    replies = [
        Reply(_fenced("print(1)") + "\n" + _fenced("print(2)"), usage=Usage(10, 5, 0.5)),
        Reply("```cobol\nDISPLAY 'HI'.\n```\n" + _fenced("print(3)"), usage=Usage(20, 5, 0.5)),
        Reply(_fenced("print(4)") + "\n" + _fenced("print(5)"), usage=Usage(30, 5, None)),
        Reply("All done.", usage=Usage(40, 2, 0.25)),
    ]
    engine = Engine(_Executor([_printed("1\n"), _printed("3\n")]),
                    _Approver([True, "not now", True, None]), llm=FakeModel(replies),
                    approval="always", languages=["python"])
    rebuilt, events = _turns_rebuilt(engine, "count", "and then?")
    _same_but_not_shared(rebuilt, engine)
    first, second = engine.turns
    assert [(s.index, s.status) for s in first.steps] == [
        (1, "ok"), (2, "skipped"), (3, "refused"), (4, "ok"), (5, "stopped"), (6, "stopped")]
    assert first.steps[1].feedback == "The user declined to run this code. Reason: not now"
    assert first.steps[5].feedback == "Not run: the user stopped this instruction."
    assert (first.end_reason, first.llm_calls, first.usage) == ("stopped", 3,
                                                                Usage(60, 15, 1.0))
    assert (second.end_reason, second.final_text, second.conversation_index) == (
        "done", "All done.", 1)
    # the fold can tell: without one step's end, the rebuilt turn differs
    done = next(i for i, e in enumerate(events) if isinstance(e, E.StepDone))
    assert rebuild(events[:done] + events[done + 1:]) != engine.turns


@pytest.mark.unit
def test_outside_text_and_its_notice_are_rebuilt_too() -> None:
    replies = [_fenced("print(open('notes.txt').read())"), _fenced("print(2)"), "Done."]
    notes = _printed("Meeting at noon with the whole team. Bring the report.\n")
    engine = Engine(_Executor([notes, _printed("2\n")]), approver=object(),
                    llm=FakeModel(replies), approval="never")
    rebuilt, events = _turns_rebuilt(engine, "what do my notes say?")
    _same_but_not_shared(rebuilt, engine)
    [turn] = engine.turns
    assert [(u["step"], u["source"], u["read"]) for u in turn.untrusted] == [
        (1, "notes.txt", True)]
    assert turn.untrusted_noticed
    [notice] = [e for e in events if isinstance(e, E.UntrustedNotice)]
    assert "Step 2 follows" in notice.text


@pytest.mark.unit
def test_a_small_model_s_samples_are_rebuilt_too() -> None:
    code = "a = 100\nb = 7\nprint(a % b)"
    llm = FakeModel([Reply(_fenced(code), usage=Usage(7, 3, None))] * 3, model="local/smollm2",
                    small=True)
    engine = Engine(_Executor([_printed("2\n")]), approver=object(), llm=llm,
                    approval="never", small_model_samples=2)
    rebuilt, _ = _turns_rebuilt(engine, "What is the remainder when 100 is divided by 7?")
    _same_but_not_shared(rebuilt, engine)
    [turn] = engine.turns
    assert turn.samples >= 1 and turn.llm_calls == 1
    assert turn.usage == Usage(7 * (1 + turn.samples), 3 * (1 + turn.samples), None)


@pytest.mark.kernel
def test_a_real_session_s_turns_are_rebuilt_from_what_the_log_was_sent(tmp_path: Path) -> None:
    """The golden session (tests/golden/record.py) with a child kernel and the scripted
    server: the recorder's events rebuild the engine's turns."""
    from oi_kernel import Interpreter
    from tests import llm_server as S
    from tests.golden import record as golden

    answers = iter(golden.ANSWERS)
    seen: list[Any] = []
    with S.ScriptedLLMServer() as server:
        server.enqueue(*golden.REPLIES)
        with Interpreter("openai/scripted", api_base=server.url, api_key=golden.KEY,
                         approve=lambda request: next(answers), log_dir=tmp_path / "logs",
                         cwd=tmp_path) as it:
            assert it.session.open_log() is not None  # its writer is now the recorder
            writer = it.engine.recorder
            it.engine.recorder = lambda event: (seen.append(event), writer(event))
            list(it.chat(golden.TURN_1))
            list(it.chat(golden.TURN_2))
            turns = list(it.engine.turns)
    assert len(turns) == 2 and [t.end_reason for t in turns] == ["done", "done"]
    assert [s.status for s in turns[1].steps] == ["ok", "ok", "ok", "skipped"]
    assert rebuild(seen) == turns


@pytest.mark.unit
def test_recorded_code_run_as_steps_is_rebuilt_too() -> None:
    """``run_code_steps`` (``%load --replay``): a turn without the model."""
    engine = Engine(_Executor([_printed("1\n")]), _Approver([True, "no"]), llm=FakeModel(),
                    approval="always")
    events: list[Any] = []
    blocks = [CodeBlock("python", "print(1)"), CodeBlock("python", "print(2)")]
    turn = asyncio.run(engine.run_code_steps("replay of a.json", blocks, events.append,
                                                   replayed_from="a.json"))
    _same_but_not_shared(rebuild(events), engine)
    assert [s.status for s in turn.steps] == ["ok", "skipped"] and turn.end_reason == "done"


class _Hangs(_Executor):
    """Runs each block until it is interrupted; ``running`` is set once one started."""

    async def run(self, block: CodeBlock, context: Any = None) -> Any:
        self.running.set()
        await asyncio.Event().wait()


@pytest.mark.unit
def test_an_interrupted_step_is_rebuilt_from_what_the_recorder_was_sent() -> None:
    """The interrupted step's end goes to the recorder only (the front door is being
    stopped): the recorder's events rebuild the engine's turn, the front door's lack it."""
    executor = _Hangs([])
    engine = Engine(executor, approver=object(), llm=FakeModel([_fenced("while True: pass")]),
                    approval="never")
    recorded: list[Any] = []
    shown: list[Any] = []
    engine.recorder = recorded.append

    async def interrupt() -> None:
        executor.running = asyncio.Event()
        task = asyncio.ensure_future(engine.run_turn("spin", shown.append))
        await asyncio.wait_for(executor.running.wait(), 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(interrupt())
    [turn] = engine.turns
    assert (turn.end_reason, [s.status for s in turn.steps]) == ("interrupted", ["interrupted"])
    _same_but_not_shared(rebuild(recorded), engine)
    assert rebuild(shown) != engine.turns
