"""Run code in a ``ChildKernel`` and collect what it printed as nbformat outputs.

``ChildRunner`` is the piece every front door that owns a child kernel needs:
start the child when needed (and notice a restart), send one execute request
whose ``msg_id`` the caller may choose, route the child's iopub messages to that
request's ``OutputCollector`` by parent ``msg_id``, and on cancellation interrupt
the child (restarting it if it will not stop). It is an ``engine.Executor``.

A front door that also shows the output live (the kernel re-parents it to the
frontend's cell) passes ``forward``: every iopub message goes there after it
was collected.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Callable
from typing import Any

from .child import ChildKernel
from .conversation import CodeBlock
from .engine import ExecResult
from .errors import ChildDiedError
from .languages import as_ipython_cell
from .outputs import OutputCollector

OUTPUT_TYPES = frozenset(
    {"stream", "display_data", "update_display_data", "execute_result", "error", "clear_output"}
)
STOP_GRACE_S = 3.0


class ChildRunner:
    """Runs approved code in a child kernel and collects its outputs."""

    def __init__(
        self,
        child: ChildKernel,
        *,
        on_restart: Callable[[], None] | None = None,
        forward: Callable[[dict[str, Any]], None] | None = None,
        timeout: float | None = None,
        request: Callable[[], tuple[str | None, bool]] | None = None,
    ) -> None:
        self.child = child
        self.timeout = timeout  # seconds one block may run (``run``); None: no limit
        self.on_restart = on_restart
        self.forward = forward
        # for ``run``: the msg_id to reuse and whether stdin may be asked (the kernel's cell)
        self.request = request or (lambda: (None, False))
        self.last_payload: list[dict[str, Any]] = []  # of the latest execute_reply
        self._collectors: dict[str, OutputCollector] = {}
        self._lost = False  # a stuck run made us shut the child down: say so on the next run
        child.on_iopub = self._on_iopub

    @property
    def sandboxed(self) -> bool:
        return self.child.sandboxed

    @property
    def cwd(self) -> str:
        """The working directory the code runs in (for the system prompt)."""
        return self.child.cwd or os.getcwd()

    async def run(self, block: CodeBlock) -> ExecResult:
        """The ``Executor`` seam: run one approved block (other languages via cell magics)."""
        source = as_ipython_cell(block.language, block.code)
        msg_id, allow_stdin = self.request()
        return await self.run_code(
            source, msg_id=msg_id, allow_stdin=allow_stdin, timeout=self.timeout
        )

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
        restarted = await self.child.ensure_running()
        if (restarted or self._lost) and self.on_restart is not None:
            self.on_restart()
        self._lost = False
        self.last_payload = []
        msg_id = msg_id or f"oi-run-{uuid.uuid4().hex}"
        collector = OutputCollector()
        self._collectors[msg_id] = collector
        task = asyncio.ensure_future(
            self.child.execute(code, msg_id, allow_stdin=allow_stdin, store_history=store_history)
        )
        try:
            reply = await asyncio.wait_for(asyncio.shield(task), timeout)
        except ChildDiedError as exc:
            return ExecResult("died", collector.outputs, str(exc))
        except asyncio.TimeoutError:
            await self.stop(task)
            return ExecResult("interrupted", collector.outputs, _timeout_message(timeout))
        except asyncio.CancelledError:
            await self.stop(task)
            raise
        finally:
            self._collectors.pop(msg_id, None)
        self.last_payload = reply.get("payload") or []
        return ExecResult(_status(reply), collector.outputs)

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
        msg_type = msg["header"]["msg_type"]
        collector = self._collectors.get(msg["parent_header"].get("msg_id") or "")
        if collector is not None and msg_type in OUTPUT_TYPES:
            collector.add(msg_type, msg["content"])
        if self.forward is not None:
            self.forward(msg)


def _status(reply: dict[str, Any]) -> str:
    if reply.get("status") == "ok":
        return "ok"
    if reply.get("ename") == "KeyboardInterrupt":
        return "interrupted"
    return "error"


def _timeout_message(timeout: float | None) -> str:
    return f"Interrupted after {timeout:g} s (the time limit for one step)."
