"""Run code in a ``ChildKernel`` and collect what it printed as nbformat outputs.

``ChildRunner`` is the piece every front door that owns a child kernel needs:
start the child when needed (and notice a restart), send one execute request
whose ``msg_id`` the caller may choose, route the child's iopub messages to that
request's ``OutputCollector`` by parent ``msg_id``, and on cancellation interrupt
the child (restarting it if it will not stop). It is an ``engine.Executor``.
``prepare`` + ``start`` + ``finish`` split ``run_code`` for a caller that sends
the request before it can await (the kernel's direct cells) or reads the outputs
later (after the reply).

A front door that also shows the output live (the kernel re-parents it to the
frontend's cell) passes ``forward``: every iopub message goes there before it
is collected, with output content still packed (JSON bytes).
"""

from __future__ import annotations

import ast
import asyncio
import json
import uuid
from collections.abc import Callable
from typing import Any

from oi_kernel.core.executor import ExecResult
from oi_kernel.core.outputs import OUTPUT_TYPES, OutputCollector
from oi_kernel.core.turn_context import NO_CONTEXT, TurnContext
from oi_kernel.core.types import CodeBlock
from oi_kernel.errors import ChildDiedError, ChildKernelError
from oi_kernel.execution.child import ChildKernel
from oi_kernel.execution.limits import parse_size
from oi_kernel.execution.probe import BOOT
from oi_kernel.languages import as_ipython_cell

STOP_GRACE_S = 3.0
END_KEY = "_oi_probe_end"  # the user expression of a step's own ``end`` (``carry_end``)
GUARD_KEY = "_oi_guard_report"  # the one of the guard's report (``arm_guard``)


class Execution:
    """One execute request sent to the child: the collector of its output and the
    future of its reply."""

    def __init__(self, msg_id: str, collector: OutputCollector) -> None:
        self.msg_id = msg_id
        self.collector = collector
        self.reply: asyncio.Future[dict[str, Any]] | None = None
        self.content: dict[str, Any] = {}  # the execute_reply's content, once finished


class ChildRunner:
    """Runs approved code in a child kernel and collects its outputs."""

    def __init__(
        self,
        child: ChildKernel,
        *,
        on_restart: Callable[[], None] | None = None,
        forward: Callable[[dict[str, Any]], None] | None = None,
        timeout: float | None = None,
    ) -> None:
        self.child = child
        self.timeout = timeout  # seconds one block may run (``run``); None: no limit
        self.on_restart = on_restart
        self.forward = forward
        self.last_payload: list[dict[str, Any]] = []  # of the latest execute_reply
        self._collectors: dict[str, OutputCollector] = {}
        # the front door shows a step's error itself (compactly): ``run`` holds the child's
        # error message back from ``forward`` (it is still collected)
        self.hold_errors = False
        self._holding: set[str] = set()
        self._lost = False  # a stuck run made us shut the child down: say so on the next run
        # code sent to the child (or a restart) since: a probe snapshot older is stale
        self.generation = 0
        self._restarts_seen = 0  # the child's restarts announced so far
        # the next ``run_code`` asks for the probe's ``end(**these)`` itself (``carry_end``)
        self._carry_end: dict[str, Any] | None = None
        self._ended: dict[str, Any] | None = None  # what that ``end`` returned
        self._guarding = False  # the next ``run_code`` runs under the guard (``arm_guard``)
        self._guard_report: dict[str, Any] | None = None  # its report, carried back
        child.on_iopub = self._on_iopub

    @property
    def sandboxed(self) -> bool:
        return self.child.sandboxed

    @property
    def cwd(self) -> str:
        """The working directory the code runs in (for the system prompt)."""
        return self.child.workdir

    async def namespace_summary(self) -> str:
        """The child's namespace is its own: the model sees what earlier steps printed."""
        return ""

    async def probe(self, name: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """Call the change/checkpoint probe inside the child (installed on first use, as
        ``sys.modules['_oi_probe']``: nothing enters the user's namespace). A silent
        execution: no output, no history, no execution count.

        ``end`` answers at once with what the step's own request brought back when
        ``carry_end`` armed it (see there)."""
        if name == "end":
            ended, self._ended, self._carry_end = self._ended, None, None
            if ended is not None:
                return ended
        if name in ("end", "drop") and not self.ready:  # the child it ran in is gone
            raise ChildDiedError("The child kernel is not running.")
        await self.prepare()
        call = _probe_call(name, args, kwargs)
        for code in ("", BOOT):  # the probe is sent only to a child that lacks it
            reply = await self.child.execute(code, silent=True, store_history=False,
                                             user_expressions={"r": call})
            result = (reply.get("user_expressions") or {}).get("r") or {}
            if (result.get("ename"), result.get("evalue")) != ("KeyError", "'_oi_probe'"):
                break
        return _probe_result(result, reply)

    def carry_end(self, **kwargs: Any) -> None:
        """Have the next ``run_code`` (the step) ask for the probe's ``end(**kwargs)`` in its
        own request's ``user_expressions``: evaluated in the child right after the code when
        it succeeded, so the summary comes with the reply instead of another round trip (the
        code run and what the user sees are unchanged). ``probe("end")`` then returns it, or
        asks the child itself when the step failed or was stopped."""
        self._carry_end, self._ended = dict(kwargs), None

    async def arm_guard(self, settings: dict[str, Any]) -> None:
        """Run the next block under the runtime guard (``probe/guard.py``): one probe call,
        which arms IPython's ``pre_run_cell``; the report comes back with that block's
        reply when it succeeded (``guard_report``). ``settings["memory"]``: a size ("2G")."""
        try:
            memory = parse_size(settings.get("memory") or 0)
        except ValueError as exc:
            self.child.log.warning("guard_memory_limit: %s; 2G is used", exc)
            memory = parse_size("2G")
        answer = await self.probe("guard", {**settings, "memory": memory})
        if not answer.get("ok"):
            raise ChildKernelError(f"the runtime guard could not be armed: {answer}")
        self._guarding, self._guard_report = True, None

    async def guard_report(self) -> dict[str, Any]:
        """What the guard stopped in the block run after ``arm_guard`` (from its reply, or
        asked for: the reply of a block that failed carries no user expressions)."""
        report, self._guard_report = self._guard_report, None
        if report is not None:
            return report
        return await self.probe("guard_report")

    async def run(self, block: CodeBlock, context: TurnContext = NO_CONTEXT) -> ExecResult:
        """The ``Executor`` seam: run one approved block (other languages via cell magics).
        The request reuses the msg_id of the request the turn answers (``context``), so its
        output goes to that cell, and may ask for input when that request may."""
        source = as_ipython_cell(block.language, block.code)
        msg_id, allow_stdin = context.parent_id, context.allow_stdin
        if not self.hold_errors:
            return await self.run_code(
                source, msg_id=msg_id, allow_stdin=allow_stdin, timeout=self.timeout
            )
        msg_id = msg_id or f"oi-run-{uuid.uuid4().hex}"
        self._holding.add(msg_id)
        try:
            return await self.run_code(
                source, msg_id=msg_id, allow_stdin=allow_stdin, timeout=self.timeout
            )
        finally:
            self._holding.discard(msg_id)

    @property
    def ready(self) -> bool:
        """Whether ``start`` may be called without ``prepare``: the child runs and no
        restart is to be announced."""
        return self.child.is_running and not self._lost

    def start(
        self,
        code: str,
        *,
        msg_id: str | None = None,
        allow_stdin: bool = False,
        store_history: bool = True,
        user_expressions: dict[str, str] | None = None,
    ) -> Execution:
        """Send IPython source to the running child (see ``prepare``) now; ``finish``
        waits for it. Raises ``ChildDiedError`` when the child is not running."""
        msg_id = msg_id or f"oi-run-{uuid.uuid4().hex}"
        run = Execution(msg_id, OutputCollector())
        self._collectors[msg_id] = run.collector
        self.generation += 1
        try:
            run.reply = self.child.submit_execute(
                code, msg_id, allow_stdin=allow_stdin, store_history=store_history,
                user_expressions=user_expressions,
            )
        except BaseException:
            self.discard(run)
            raise
        return run

    async def run_code(
        self,
        code: str,
        *,
        msg_id: str | None = None,
        allow_stdin: bool = False,
        store_history: bool = True,
        timeout: float | None = None,
    ) -> ExecResult:
        """Run IPython source; never leaves it running (cancel = interrupt the child).

        After ``timeout`` seconds the child is interrupted and the result's status
        is "interrupted".
        """
        await self.prepare()
        carry, self._carry_end, self._ended = self._carry_end, None, None
        end = {END_KEY: _probe_call("end", (), carry)} if carry is not None else None
        guarding, self._guarding = self._guarding, False
        if guarding:
            end = {**(end or {}), GUARD_KEY: _probe_call("guard_report", (), {})}
        try:
            run = self.start(
                code, msg_id=msg_id, allow_stdin=allow_stdin, store_history=store_history,
                user_expressions=end,
            )
        except ChildDiedError as exc:
            self.last_payload = []
            return ExecResult("died", [], str(exc))
        result = await self.finish(run, timeout)
        carried = (run.content.get("user_expressions") or {}).get(END_KEY) if end else None
        reported = (run.content.get("user_expressions") or {}).get(GUARD_KEY) if guarding else None
        if reported:
            try:
                self._guard_report = _probe_result(reported, run.content)
            except ChildKernelError:
                self._guard_report = None
        if carried:
            try:
                self._ended = _probe_result(carried, run.content)
            except ChildKernelError:  # e.g. a child restarted without the probe: ask it
                self._ended = None
        return result

    async def prepare(self) -> None:
        """Make ``start`` possible: a running child, its restart announced."""
        restarted = await self.child.ensure_running()
        # (a completion request may have restarted it first: still a restart to announce)
        seen, self._restarts_seen = self._restarts_seen, getattr(self.child, "restarts", 0)
        restarted = restarted or self._restarts_seen != seen
        if restarted or self._lost:
            self.generation += 1
        if (restarted or self._lost) and self.on_restart is not None:
            self.on_restart()
        self._lost = False

    async def finish(
        self, run: Execution, timeout: float | None = None, *, collect: bool = True
    ) -> ExecResult:
        """Wait for a started execution and return what it printed (see ``run_code``).
        ``collect=False`` leaves the outputs empty: read ``run.collector`` later (it
        decodes large output only when read)."""
        self.last_payload = []
        assert run.reply is not None

        def result(status: str, message: str = "") -> ExecResult:
            return ExecResult(status, run.collector.outputs if collect else [], message)

        try:
            run.content = await asyncio.wait_for(asyncio.shield(run.reply), timeout)
        except ChildDiedError as exc:
            return result("died", str(exc))
        except asyncio.TimeoutError:
            await self.stop(run.reply)
            return result("interrupted", _timeout_message(timeout))
        except asyncio.CancelledError:
            await self.stop(run.reply)
            raise
        finally:
            self.discard(run)
        self.last_payload = run.content.get("payload") or []
        return result(_status(run.content))

    def discard(self, run: Execution) -> None:
        """Stop collecting the execution's output (it still reaches ``forward``)."""
        if self._collectors.get(run.msg_id) is run.collector:
            del self._collectors[run.msg_id]

    async def stop(self, task: asyncio.Future[Any]) -> None:
        """Interrupt the child's execution; restart the child if it will not stop."""
        if task.done():
            return
        await self.child.interrupt()
        try:
            await asyncio.wait_for(asyncio.shield(task), STOP_GRACE_S)
        except BaseException:  # noqa: B036 (any outcome: we only care whether it stopped)
            if not task.done():
                self.child.log.warning("child did not stop after an interrupt; restarting it")
                task.cancel()
                await self.child.shutdown()
                self._lost = True

    def _on_iopub(self, msg: dict[str, Any]) -> None:
        """Forward first, then collect: output content arrives packed (see
        ``wire.PACKED_TYPES``) and is relayed as it came; the collector decodes it
        when it is read."""
        msg_type = msg["header"]["msg_type"]
        parent_id = msg["parent_header"].get("msg_id") or ""
        try:
            if self.forward is not None and not (
                    msg_type == "error" and parent_id in self._holding):
                self.forward(msg)
        finally:
            collector = self._collectors.get(parent_id)
            if collector is not None and msg_type in OUTPUT_TYPES:
                content = msg["content"]
                if isinstance(content, dict):
                    collector.add(msg_type, content)
                else:
                    collector.add_packed(msg_type, content, self.child.unpack)


def _probe_call(name: str, args: Any, kwargs: dict[str, Any]) -> str:
    return (f"__import__('sys').modules['_oi_probe'].call({name!r}, *{tuple(args)!r}, "
            f"**{kwargs!r})")


def _probe_result(result: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
    """The value of a probe call's user expression (JSON text in a repr)."""
    if result.get("status") != "ok":
        raise ChildKernelError(f"the change probe failed in the child: "
                               f"{result.get('ename', '')}: {result.get('evalue', reply)}")
    return json.loads(ast.literal_eval(result["data"]["text/plain"]))


def _status(reply: dict[str, Any]) -> str:
    if reply.get("status") == "ok":
        return "ok"
    if reply.get("ename") == "KeyboardInterrupt":
        return "interrupted"
    return "error"


def _timeout_message(timeout: float | None) -> str:
    return f"Interrupted after {timeout:g} s (the time limit for one step)."
