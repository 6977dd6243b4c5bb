"""The context of the request a turn answers travels with the front door's event sink to the
executor, with every block the engine runs (``core.turn_context``): nothing below the front
door asks it which cell is running."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from oi_kernel.approval.approvers import StdinApprover
from oi_kernel.core import identity
from oi_kernel.core.engine import Engine
from oi_kernel.core.events import Decided
from oi_kernel.core.executor import ExecResult
from oi_kernel.core.turn_context import (
    NO_CONTEXT,
    ContextSink,
    TurnContext,
    context_of,
    with_context,
)
from oi_kernel.core.types import ApprovalRequest, CodeBlock, Decision, Reply, ToolCall
from oi_kernel.errors import ApprovalUnavailableError, OIError
from oi_kernel.execution.runner import ChildRunner
from tests.fake_model import FakeModel

pytestmark = pytest.mark.unit

CELL = TurnContext("cell-msg-1", allow_stdin=True)


class _Executor:
    """Runs nothing; records each block with the context it came with."""

    sandboxed = False
    cwd = "/tmp"
    probe = None

    def __init__(self) -> None:
        self.ran: list[tuple[str, TurnContext]] = []

    async def namespace_summary(self) -> str:
        return ""

    async def run(self, block: CodeBlock, context: TurnContext = NO_CONTEXT) -> ExecResult:
        self.ran.append((block.code, context))
        return ExecResult("ok", [{"output_type": "stream", "name": "stdout", "text": "ok\n"}])


def _call(n: int, code: str) -> Reply:
    args = json.dumps({"language": "python", "code": code})
    return Reply("", tool_calls=[ToolCall(f"call-{n}", "execute", args)])


def _engine(*replies: Any) -> tuple[Engine, _Executor]:
    executor = _Executor()
    engine = Engine(executor, object(), llm=FakeModel(list(replies)), approval="never",
                    languages=["python"])
    return engine, executor


def test_every_block_of_a_turn_gets_the_context_its_sink_carries():
    engine, executor = _engine(_call(1, "a = 1"), _call(2, "b = 2"), "done")
    events: list[Any] = []
    turn = asyncio.run(engine.run_turn("two steps", with_context(events.append, CELL)))
    assert turn.end_reason == "done"
    assert executor.ran == [("a = 1", CELL), ("b = 2", CELL)]
    assert events  # the front door's own sink still gets every event


def test_each_turn_brings_its_own_context():
    engine, executor = _engine(_call(1, "x = 1"), "done", _call(2, "y = 2"), "done")
    other = TurnContext("cell-msg-2")
    asyncio.run(engine.run_turn("first", with_context(lambda e: None, CELL)))
    asyncio.run(engine.run_turn("second", with_context(lambda e: None, other)))
    assert executor.ran == [("x = 1", CELL), ("y = 2", other)]


def test_a_plain_sink_gives_no_context():
    """The API and ACP hand a plain callable: a fresh request, no stdin."""
    engine, executor = _engine(_call(1, "z = 3"), "done")
    asyncio.run(engine.run_turn("one step", lambda event: None))
    assert executor.ran == [("z = 3", NO_CONTEXT)]
    assert NO_CONTEXT.parent_id is None and not NO_CONTEXT.allow_stdin


def test_replayed_steps_get_the_context_too():
    """``%load --replay`` runs recorded code through the command's (the cell's) sink."""
    engine, executor = _engine()
    blocks = [CodeBlock("python", "p = 1"), CodeBlock("python", "q = 2")]
    asyncio.run(engine.run_code_steps("replay", blocks, with_context(lambda e: None, CELL)))
    assert executor.ran == [("p = 1", CELL), ("q = 2", CELL)]


def test_the_recording_tee_keeps_the_context():
    engine, _ = _engine()
    recorded: list[Any] = []
    engine.recorder = recorded.append
    shown: list[Any] = []
    sink = engine.tee(with_context(shown.append, CELL))
    assert isinstance(sink, ContextSink) and context_of(sink) == CELL
    sink("event")
    assert shown == ["event"]
    assert context_of(engine.tee(shown.append)) == NO_CONTEXT


class _Child:
    """The part of ``ChildKernel`` that ``ChildRunner.run`` uses: it records each request."""

    sandboxed = False
    workdir = "/tmp"
    is_running = True
    on_iopub = None

    def __init__(self) -> None:
        self.sent: list[tuple[str, bool]] = []

    async def ensure_running(self) -> bool:
        return False

    def submit_execute(self, code: str, msg_id: str, *, allow_stdin: bool,
                       **_: Any) -> asyncio.Future[dict[str, Any]]:
        self.sent.append((msg_id, allow_stdin))
        reply: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        reply.set_result({"status": "ok"})
        return reply


@pytest.mark.parametrize("hold_errors", [False, True])
def test_the_child_runner_sends_each_block_under_the_cells_request(hold_errors):
    child = _Child()
    runner = ChildRunner(child)  # type: ignore[arg-type]
    runner.hold_errors = hold_errors  # the kernel's setting
    block = CodeBlock("python", "print(1)")

    async def go() -> None:
        assert (await runner.run(block, context=CELL)).status == "ok"
        assert (await runner.run(block)).status == "ok"

    asyncio.run(go())
    assert child.sent[0] == ("cell-msg-1", True)
    fresh, stdin = child.sent[1]
    assert fresh.startswith("oi-run-") and stdin is False


# ----------------------------------------------------------------------------- who sent it
class _Asks:
    """An approver that notes what each request says of its turn and runs the block; with
    ``hold`` it answers only once ``hold`` requests are waiting (two turns at once)."""

    def __init__(self, hold: int = 1) -> None:
        self.seen: list[tuple[str, str, bool]] = []
        self.hold = hold
        self._all_in: asyncio.Event | None = None

    async def decide(self, request: ApprovalRequest) -> Decision:
        self.seen.append((request.block.code, request.author, request.allow_stdin))
        if self._all_in is None:
            self._all_in = asyncio.Event()
        if len(self.seen) >= self.hold:
            self._all_in.set()
        await asyncio.wait_for(self._all_in.wait(), 5)
        return Decision("run", request.block.code, by="carol")


def _asking_engine(approver: Any, *replies: Any) -> tuple[Engine, list[Any]]:
    engine, _ = _engine(*replies)
    engine.steps.approver = approver
    engine.approval = "always"
    recorded: list[Any] = []
    engine.recorder = recorded.append
    return engine, recorded


def _authors(recorded: list[Any]) -> list[tuple[str, str]]:
    return [(e.record.block.code, e.request.author) for e in recorded
            if isinstance(e, Decided) and e.request is not None]


def test_the_author_comes_with_the_turns_context_and_never_stays_behind():
    """A kernel cell's turn (alice), then a turn from a door that names nobody (the API):
    the second is the process's user's, not the previous front door's."""
    approver = _Asks()
    engine, recorded = _asking_engine(approver, _call(1, "a = 1"), "done", _call(2, "b = 2"),
                                      "done")
    alice = TurnContext("cell-a", allow_stdin=True, author="alice")
    asyncio.run(engine.run_turn("first", with_context(lambda e: None, alice)))
    asyncio.run(engine.run_turn("second", lambda e: None))
    assert approver.seen == [("a = 1", "alice", True), ("b = 2", identity.person(), False)]
    assert _authors(recorded) == [("a = 1", "alice"), ("b = 2", identity.person())]
    assert not hasattr(engine, "author")  # no identity kept on the shared engine


def test_two_turns_at_once_each_keep_their_own_author():
    """Two collaborators' turns waiting for a decision at the same time on one engine."""
    approver = _Asks(hold=2)
    engine, recorded = _asking_engine(approver, _call(1, "a = 1"), _call(2, "b = 2"),
                                      "done", "done")
    alice = with_context(lambda e: None, TurnContext("cell-a", author="alice"))
    bob = with_context(lambda e: None, TurnContext("cell-b", allow_stdin=True, author="bob"))

    async def both() -> None:
        await asyncio.gather(engine.run_turn("alice's", alice), engine.run_turn("bob's", bob))

    asyncio.run(both())
    assert sorted(approver.seen) == [("a = 1", "alice", False), ("b = 2", "bob", True)]
    assert sorted(_authors(recorded)) == [("a = 1", "alice"), ("b = 2", "bob")]


def test_the_stdin_question_is_asked_only_when_the_turns_context_allows_it():
    """The stdin approver reads the permission from the turn's context (through its
    request), not from the front door."""
    asked: list[str] = []

    async def ask(prompt: str) -> str:
        asked.append(prompt)
        return "y"

    engine, _ = _asking_engine(StdinApprover(ask), _call(1, "a = 1"), "done", _call(2, "b = 2"))
    console = TurnContext("cell-a", allow_stdin=True, author="alice")
    turn = asyncio.run(engine.run_turn("asked", with_context(lambda e: None, console)))
    assert turn.end_reason == "done" and len(asked) == 1 and "a = 1" in asked[0]
    with pytest.raises(ApprovalUnavailableError):
        asyncio.run(engine.run_turn("no stdin", with_context(lambda e: None, TurnContext("c"))))
    assert len(asked) == 1


# ----------------------------------------------------------------------------- commands
class _Session:
    """The part of a ``Session`` that ``%tool NAME`` uses."""

    def __init__(self, executor: _Executor) -> None:
        self.executor = executor
        self.engine = Engine(executor, object(), llm=FakeModel())
        self.published: list[Any] = []

    def publish(self, event: Any) -> None:
        self.published.append(event)


def test_a_command_hands_its_cells_context_to_the_code_it_runs():
    """``%tool NAME`` runs a signature check outside any turn: it runs for the command's
    cell (the context of the command's sink), so the executor needs no other source."""
    from oi_kernel.session import tools

    class _Signatures(_Executor):
        async def run(self, block: CodeBlock, context: TurnContext = NO_CONTEXT) -> ExecResult:
            await super().run(block, context)
            spec = {"name": "double", "description": "Double x.", "parameters": {
                "type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}}
            return ExecResult("ok", [{"output_type": "display_data",
                                      "data": {tools.TOOL_MIME: spec}}])

    executor = _Signatures()
    session = _Session(executor)
    sink = with_context(lambda e: None, CELL)
    text = asyncio.run(tools.tool_command(session, ["double"], lambda: sink, OIError("usage")))
    assert "`double(x)`: offered" in text
    assert [context for _, context in executor.ran] == [CELL]
