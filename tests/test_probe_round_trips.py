"""Change tracking around a step costs one call to the child per instruction (issue 31,
speed): the checkpoint keeps the state before the first step, the step's own request brings
the summary back; anything run in between makes the step ask for ``begin`` again, and a
failed step still gets its summary. A real child kernel (``ChildRunner``), the engine's
``Rollback`` part on top (given an ``EngineSettings``, as the engine gives it its own)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from oi_kernel.core.conversation import Conversation
from oi_kernel.core.rollback import Rollback
from oi_kernel.core.settings import EngineSettings
from oi_kernel.execution.child import ChildKernel
from oi_kernel.execution.runner import ChildRunner

pytestmark = [pytest.mark.kernel, pytest.mark.timeout(180)]


class Tracked(EngineSettings):
    """The engine's settings and its rollback part over a ChildRunner, counting the silent
    executions the probe sends."""

    def __init__(self, runner: ChildRunner) -> None:
        super().__init__()
        self.executor = runner
        self.events: list[str] = []
        self.rollback = Rollback(lambda: self, runner, self.publish, log=self.log,
                                 conversation=Conversation(), undo=lambda n: [])
        self.calls: list[str] = []
        original = runner.child.execute

        async def execute(code, *args, user_expressions=None, **kwargs):
            for expression in (user_expressions or {}).values():
                self.calls.append(expression.split("call(")[1].split(",")[0].strip("')"))
            return await original(code, *args, user_expressions=user_expressions, **kwargs)

        runner.child.execute = execute

    def publish(self, event):
        self.events.append(type(event).__name__)


def turn(index: int) -> SimpleNamespace:
    return SimpleNamespace(index=index, instruction=f"instruction {index}",
                           conversation_index=index)


async def _scenario(tmp_path):
    child = ChildKernel(cwd=str(tmp_path))
    runner = ChildRunner(child)
    engine = Tracked(runner)
    try:
        assert (await runner.run_code("x = 1")).status == "ok"
        await runner.probe("configure")  # the probe is installed in the child
        # one instruction, one Python step: one call (the checkpoint), nothing else
        engine.calls.clear()
        assert await engine.rollback.ensure_checkpoint(turn(1)) == ""
        assert await engine.rollback.track_begin("python")
        result = await runner.run_code("y = 2\nopen('out.txt', 'w').write('new')")
        assert result.status == "ok"
        changes = await engine.rollback.track_end()
        assert engine.calls == ["checkpoint"]
        assert [v["name"] for v in changes["variables"]] == ["y"]
        assert [(f["path"], f["change"]) for f in changes["files"]] == [("out.txt", "created")]
        # a second step of the same instruction asks for begin (no new checkpoint)
        engine.calls.clear()
        assert await engine.rollback.ensure_checkpoint(turn(1)) == ""
        assert await engine.rollback.track_begin("python")
        await runner.run_code("z = 3")
        changes = await engine.rollback.track_end()
        assert engine.calls == ["begin"]
        assert [v["name"] for v in changes["variables"]] == ["z"]
        # code run between the checkpoint and the step (a direct cell): begin again, and
        # that code's change is not the step's
        engine.calls.clear()
        assert await engine.rollback.ensure_checkpoint(turn(2)) == ""
        run = runner.start("between = 1")
        await runner.finish(run)
        assert await engine.rollback.track_begin("python")
        await runner.run_code("w = 4")
        changes = await engine.rollback.track_end()
        assert engine.calls == ["checkpoint", "begin"]
        assert [v["name"] for v in changes["variables"]] == ["w"]
        # a failed step: its summary comes from the child by a call of its own
        engine.calls.clear()
        assert await engine.rollback.ensure_checkpoint(turn(3)) == ""
        assert await engine.rollback.track_begin("python")
        failed = await runner.run_code("v = 5\nraise ValueError('no')")
        assert failed.status == "error"
        changes = await engine.rollback.track_end()
        assert engine.calls == ["checkpoint", "end"]
        assert [v["name"] for v in changes["variables"]] == ["v"]
        # a shell step always asks for begin (it copies the files first)
        engine.calls.clear()
        assert await engine.rollback.ensure_checkpoint(turn(4)) == ""
        assert await engine.rollback.track_begin("shell")
        await runner.run_code("%%bash\necho hi > shell.txt")
        changes = await engine.rollback.track_end()
        assert engine.calls == ["checkpoint", "begin"]
        assert [f["path"] for f in changes["files"]] == ["shell.txt"]
        # undo of instruction 4 removes what its shell step made
        report = await engine.rollback.rollback_to(engine.rollback.checkpoint_named(4))
        assert "shell.txt" in report and not (tmp_path / "shell.txt").exists()
    finally:
        await child.shutdown()


def test_one_call_per_instruction_and_begin_when_needed(tmp_path):
    asyncio.run(_scenario(tmp_path))


async def _drops(tmp_path):
    child = ChildKernel(cwd=str(tmp_path))
    runner = ChildRunner(child)
    engine = Tracked(runner)
    engine.max_checkpoints = 2
    try:
        await runner.probe("configure")  # the probe is installed in the child
        for i in range(1, 6):
            engine.calls.clear()
            assert await engine.rollback.ensure_checkpoint(turn(i)) == ""
            assert engine.calls == ["checkpoint"]  # dropping the oldest is in the same call
        assert [c.number for c in engine.rollback.checkpoints] == [4, 5]
        kept = await runner.run_code(
            "import sys; print(sorted(sys.modules['_oi_probe']._State.checkpoints))")
        assert kept.outputs[0]["text"].strip() == "[4, 5]"
    finally:
        await child.shutdown()


def test_old_checkpoints_are_dropped_in_the_checkpoints_own_call(tmp_path):
    asyncio.run(_drops(tmp_path))


# ------------------------------------------------ the checkpoint taken while the model is asked
STATE = ("import sys; p = sys.modules['_oi_probe']; print(sorted(p._State.checkpoints), "
         "p._State.current and p._State.current.cid)")


async def _state(runner: ChildRunner) -> str:
    return (await runner.run_code(STATE)).outputs[0]["text"].strip()


async def _step(engine: Tracked, i: int, code: str) -> dict:
    """Instruction ``i`` as the engine runs it: the checkpoint asked for as it starts, one
    Python step, the end of the instruction."""
    rollback = engine.rollback
    assert await rollback.ensure_checkpoint(turn(i)) == ""
    assert await rollback.track_begin("python")
    assert (await engine.executor.run_code(code)).status == "ok"
    changes = await rollback.track_end()
    rollback.settle_checkpoint()
    return changes


async def _early(tmp_path):
    child = ChildKernel(cwd=str(tmp_path))
    runner = ChildRunner(child)
    engine = Tracked(runner)
    engine.max_checkpoints = 2
    rollback = engine.rollback
    try:
        assert (await runner.run_code("x = 1")).status == "ok"
        await runner.probe("configure")  # the probe is installed in the child
        # instruction 1: the checkpoint is asked for as it starts; a file written from
        # outside before the step is not the step's (the step's cell lists the files
        # again); one call in all
        engine.calls.clear()
        rollback.start_checkpoint(turn(1))
        await asyncio.sleep(0.5)  # (the model answers)
        (tmp_path / "outside.txt").write_text("the user's")
        changes = await _step(engine, 1, "y = 2\nopen('out.txt', 'w').write('new')")
        assert engine.calls == ["checkpoint"]
        assert [v["name"] for v in changes["variables"]] == ["y"]
        assert [(f["path"], f["change"]) for f in changes["files"]] == [("out.txt", "created")]
        assert [c.number for c in rollback.checkpoints] == [1]
        assert engine.events == ["CheckpointKept"]
        # instruction 2 runs no code: no call at its end; its checkpoint is dropped in the
        # child by the next call, and what it recorded meanwhile goes to 1
        engine.calls.clear()
        rollback.start_checkpoint(turn(2))
        await asyncio.sleep(0.3)
        rollback.settle_checkpoint()
        assert engine.calls == ["checkpoint"]
        assert [c.number for c in rollback.checkpoints] == [1]
        assert await _state(runner) == "[1, 2] 2"
        (tmp_path / "kept.txt").write_text("before")
        await runner.run_code("open('kept.txt', 'w').write('after')")  # a direct cell
        # instructions 3 and 4 run code: 1 is let go of when 4 is kept (limit 2) and
        # dropped in the child by the next call
        for i in (3, 4):
            engine.calls.clear()
            rollback.start_checkpoint(turn(i))
            await _step(engine, i, f"z{i} = {i}")
            assert engine.calls == ["checkpoint"]
        assert [c.number for c in rollback.checkpoints] == [3, 4]
        assert await _state(runner) == "[1, 3, 4] 4"
        # code run between the early checkpoint and the step: it is taken again, in one
        # call with dropping the stale one (and 3, beyond the limit)
        engine.calls.clear()
        rollback.start_checkpoint(turn(5))
        await asyncio.sleep(0.3)
        await runner.run_code("between = 1")
        assert await rollback.ensure_checkpoint(turn(5)) == ""
        assert engine.calls == ["checkpoint", "checkpoint"]
        assert await rollback.track_begin("python")
        await runner.run_code("between = 2")
        changes = await rollback.track_end()
        assert [v["name"] for v in changes["variables"]] == ["between"]
        assert [c.number for c in rollback.checkpoints] == [4, 5]
        assert await _state(runner) == "[4, 5] 5"
        assert "Rolled back" in await rollback.rollback_to(rollback.checkpoint_named(5))
        assert (await runner.run_code("print(between)")).outputs[0]["text"].strip() == "1"
        # an instruction interrupted at once: its call is not even sent when it is let go
        # of; the next call waits for it, then drops it first
        engine.calls.clear()
        rollback.start_checkpoint(turn(6))
        rollback.settle_checkpoint()
        rollback.start_checkpoint(turn(7))
        await _step(engine, 7, "w = 7")
        assert engine.calls == ["checkpoint", "checkpoint"]
        assert [c.number for c in rollback.checkpoints] == [4, 7]
        assert await _state(runner) == "[4, 7] 7"
    finally:
        await child.shutdown()


@pytest.mark.kernel
def test_checkpoint_taken_while_the_model_is_asked(tmp_path):
    """The checkpoint overlaps the LLM request; files are listed again when the step starts;
    an unused one is let go of (the one before records again); limits are kept."""
    asyncio.run(_early(tmp_path))


async def _hand_over(tmp_path):
    child = ChildKernel(cwd=str(tmp_path))
    runner = ChildRunner(child)
    engine = Tracked(runner)
    rollback = engine.rollback
    (tmp_path / "b.txt").write_text("original")
    try:
        await runner.run_code("x = 1")
        await runner.probe("configure")
        rollback.start_checkpoint(turn(1))
        await _step(engine, 1, "x = 2")
        # instruction 2 runs no code; a direct cell after it writes a file (2 is current
        # until the next call drops it)
        rollback.start_checkpoint(turn(2))
        await asyncio.sleep(0.3)
        rollback.settle_checkpoint()
        assert await _state(runner) == "[1, 2] 2"
        await runner.run_code("open('b.txt', 'w').write('after 2')")
        # instruction 3: a direct cell runs between its early checkpoint and its step
        rollback.start_checkpoint(turn(3))
        await asyncio.sleep(0.3)
        await runner.run_code("x = 3\nopen('b.txt', 'w').write('between')\n"
                              "open('c.txt', 'w').write('between')")
        await _step(engine, 3, "x = 4\nopen('b.txt', 'w').write('step')")
        # undo of 3: the state right before its step
        report = await rollback.rollback_to(rollback.checkpoint_named(3))
        assert "Rolled back" in report
        assert (await runner.run_code("print(x)")).outputs[0]["text"].strip() == "3"
        assert (tmp_path / "b.txt").read_text() == "between"
        # undo of 1: what the direct cells wrote while 2's and 3's first checkpoints were
        # current comes back too (they handed it to 1 when they were dropped)
        report = await rollback.rollback_to(rollback.checkpoint_named(1))
        assert (await runner.run_code("print(x)")).outputs[0]["text"].strip() == "1"
        assert (tmp_path / "b.txt").read_text() == "original"
        assert not (tmp_path / "c.txt").exists()
        assert await _state(runner) == "[] None"
    finally:
        await child.shutdown()


@pytest.mark.kernel
def test_an_unused_or_stale_early_checkpoint_hands_its_records_to_the_one_before(tmp_path):
    asyncio.run(_hand_over(tmp_path))


async def _outside(tmp_path):
    child = ChildKernel(cwd=str(tmp_path))
    runner = ChildRunner(child)
    engine = Tracked(runner)
    rollback = engine.rollback
    (tmp_path / "notes.txt").write_text("v1")
    try:
        await runner.probe("configure")
        rollback.start_checkpoint(turn(1))
        await asyncio.sleep(0.5)
        (tmp_path / "notes.txt").write_text("v2, the user's editor")  # before the step
        changes = await _step(engine, 1, "open('made.txt', 'w').write('x')")
        assert [f["path"] for f in changes["files"]] == ["made.txt"]
        report = await rollback.rollback_to(rollback.checkpoint_named(1))
        # the checkpoint is the state right before the step: notes.txt was not changed
        # since, so undo neither touches it nor says it could not restore it
        assert "notes.txt" not in report, report
        assert (tmp_path / "notes.txt").read_text() == "v2, the user's editor"
        assert not (tmp_path / "made.txt").exists()
    finally:
        await child.shutdown()


@pytest.mark.kernel
def test_files_changed_from_outside_while_the_model_is_asked_are_not_the_steps(tmp_path):
    asyncio.run(_outside(tmp_path))


DROP_SCRIPT = """
import json, os, shutil, subprocess, sys
sys.path.insert(0, {repo!r})
from oi_kernel.execution.probe import local_probe
p = local_probe()
p.call('checkpoint', 1, '.oi_checkpoints/s')
open('a.txt', 'w').write('x')  # (1 saves a copy: its folder has a file and an index)
p.call('checkpoint', 2, '.oi_checkpoints/s', drop_ids=[1])  # removes 1's folder
subprocess.run(['sh', '-c', 'echo mine > index.json; echo mine > f0; mkdir d; echo 1 > d/f'])
shutil.rmtree('d')  # the code's own rmtree (by folder descriptors) is still recorded
os.remove('a.txt')  # and its own removes and renames
os.rename('index.json', 'moved.json')
print(p.call('restore', 2))
"""


@pytest.mark.kernel
def test_dropping_a_checkpoint_records_nothing_of_the_users_files(tmp_path):
    """shutil.rmtree of a dropped checkpoint's folder removes its files by names relative to
    a folder descriptor: they were taken as the working directory's (``index.json``, ``f0``
    "did not exist"), so an undo deleted the user's files of those names made since."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    repo = str(Path(__file__).resolve().parent.parent)
    out = subprocess.run([sys.executable, "-c", DROP_SCRIPT.format(repo=repo)], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout.splitlines()[-1])
    assert report["removed"] == ["moved.json"], report
    assert sorted(report["restored"]) == ["a.txt", "d/f", "index.json"], report
    assert (tmp_path / "a.txt").read_text() == "x"
    assert (tmp_path / "index.json").read_text() == "mine\n"
    assert (tmp_path / "f0").read_text() == "mine\n"
    assert (tmp_path / "d" / "f").read_text() == "1\n"
