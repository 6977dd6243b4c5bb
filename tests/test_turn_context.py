"""The context of the request a turn answers travels with the front door's event sink to the
executor, with every block the engine runs (``core.turn_context``): nothing below the front
door asks it which cell is running."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from oi_kernel.core.engine import Engine
from oi_kernel.core.executor import ExecResult
from oi_kernel.core.turn_context import (
    NO_CONTEXT,
    ContextSink,
    TurnContext,
    context_of,
    with_context,
)
from oi_kernel.core.types import CodeBlock, Reply, ToolCall
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
    asyncio.run(engine.steps.run_code_steps("replay", blocks, with_context(lambda e: None, CELL)))
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
