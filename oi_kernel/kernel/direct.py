"""Direct cells of the Open Interpreter kernel: ``%%python`` bodies and ``!`` shell lines run
in the child as they are, without the model.

They are the kernel's fast path (benchmarks/overhead.py): a ``%%python`` cell is sent to the
child as soon as its request is read (``_request_read``), and its session-log record is
written once the kernel is idle (``_log_later``), so neither waits on the other.
``DirectCells`` is a part of ``OIKernel``: it uses the kernel's session (``oi``), child
proxy and current request.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any

from oi_kernel.core.events import DirectRun, Event
from oi_kernel.core.executor import ExecResult
from oi_kernel.core.turn_context import TurnContext
from oi_kernel.errors import ChildDiedError
from oi_kernel.execution.runner import Execution

LOG_DELAY_S = 0.01  # queued records are written after this long without a request...
LOG_MAX_DELAY_S = 0.5  # ...or once the oldest has waited this long (cells keep coming)
DIRECT_KINDS = ("python", "magic", "shell")  # cells.classify kinds that run_direct runs


class DirectCells:
    """Running direct cells, and the session-log records written after the reply."""

    oi: Any
    proxy: Any
    execution_count: int
    _parent_msg: dict[str, Any]
    _early: Execution | None
    _early_seen: str | None
    _last_payload: list[dict[str, Any]]
    _log_queue: list[Callable[[], Event]]
    _log_failure: str
    _log_oldest = 0.0  # when the oldest queued record was queued (monotonic)
    _last_reply = 0.0  # when the latest cell replied (monotonic)
    _log_timer: asyncio.TimerHandle | None = None
    _task: Any

    def _request_read(self, parent: dict[str, Any]) -> None:
        """An execute request was read: start it in the child now if it is a direct cell."""
        header = parent.get("header") or {}
        msg_id = header.get("msg_id")
        if header.get("msg_type") == "execute_request" and msg_id != self._early_seen:
            self._early_seen = msg_id  # set_parent also restores a running cell's parent
            if self._early is not None:  # started, but its request was never handled
                self.oi.runner.discard(self._early)
            self._early = None
            with contextlib.suppress(Exception):  # anything odd: run_direct starts it
                self._early = self._start_early(parent)

    def _start_early(self, parent: dict[str, Any]) -> Execution | None:
        """Send a ``%%python`` cell to the child as soon as its request is read, before
        ipykernel publishes busy and execute_input and calls ``do_execute``: the child
        starts while we do that bookkeeping (0.3–0.4 ms of a round trip,
        benchmarks/overhead.py). Its output cannot overtake busy and execute_input: it
        is only forwarded once the request's handler awaits, inside ``do_execute``.

        None when the request is not such a cell, will not run (silent, aborted after an
        error, a subshell's) or a restart is due: ``run_direct`` then starts it."""
        content = parent.get("content") or {}
        header = parent.get("header") or {}
        if content.get("silent") or header.get("subshell_id") or getattr(self, "_aborting", 0):
            return None
        code = str(content.get("code", "")).lstrip()
        if not code.startswith("%%python") or not header.get("msg_id") or not self.oi.runner.ready:
            return None
        context = self._cell_context(parent)
        body = code.split("\n", 1)[1] if "\n" in code else ""
        return self.oi.runner.start(body, msg_id=context.parent_id,
                                    allow_stdin=context.allow_stdin)

    def _cell_context(self, parent: dict[str, Any]) -> TurnContext:
        """The context of the cell of ``parent`` (an execute request): its msg_id, to which
        the child's output is routed back, and whether it may ask for input."""
        context = TurnContext((parent.get("header") or {}).get("msg_id") or None,
                              bool((parent.get("content") or {}).get("allow_stdin")))
        if context.parent_id:
            self.proxy.route(context.parent_id, parent)
        return context

    async def run_direct(self, kind: str, code: str) -> dict[str, Any] | None:
        """A cell that bypasses the LLM: run it in the child as is. Its record, outputs
        included, is logged after the reply: decoding a large output first delayed it."""
        started = time.monotonic()
        run: Execution | None = None
        self._last_payload = []
        try:
            run = await self._start_in_child(code)
        except ChildDiedError as exc:
            result = ExecResult("died", [], str(exc))
        else:
            result = await self.oi.runner.finish(run, collect=False)
            self._last_payload = self.oi.runner.last_payload
        self.oi.open_log()  # opened now: a log that cannot be opened fails this cell
        duration = round(time.monotonic() - started, 4)
        self._log_later(lambda: DirectRun(
            kind, code, result.status, run.collector.outputs if run is not None else [],
            duration))
        if result.status == "died":
            raise ChildDiedError(result.message)
        if result.status == "ok" and self._last_payload:  # e.g. the pager for `print?`
            return {"status": "ok", "execution_count": self.execution_count,
                    "payload": self._last_payload, "user_expressions": {}}
        if result.status == "error":
            err = run.content if run is not None else {}  # the child's execute_reply
            return {
                "status": "error",
                "execution_count": self.execution_count,
                "ename": err.get("ename", "Error"),
                "evalue": err.get("evalue", ""),
                "traceback": err.get("traceback", []),
            }
        return None

    async def _start_in_child(self, code: str) -> Execution:
        """The cell's execution in the child: the one ``set_parent`` started, or a new
        one. Its request reuses the cell's msg_id, so widgets' Output capture and
        echo_update work for widgets that user code creates in the child."""
        context = self._cell_context(self._parent_msg)
        early, self._early = self._early, None
        if early is not None and early.msg_id == context.parent_id:
            return early
        if early is not None:
            self.oi.runner.discard(early)
        await self.oi.runner.prepare()
        return self.oi.runner.start(code, msg_id=context.parent_id,
                                    allow_stdin=context.allow_stdin)

    # ------------------------------------------------------------------ the log, when idle
    def _log_later(self, event: Callable[[], Event]) -> None:
        """Queue a session-log event; ``event`` makes it when it is written, once the
        kernel is idle (``_log_when_idle``): decoding, redacting and encoding a large
        output took tens of ms before the reply, and written at the next request (Run All
        sends them back to back) it delayed that request. Records keep their order: a
        cell that writes the log itself (an instruction, a command) first writes what is
        queued, a direct cell queues behind it; the shutdown writes the rest."""
        if not self._log_queue:
            self._log_oldest = time.monotonic()
        self._log_queue.append(event)

    def _log_when_idle(self) -> None:
        """A cell replied: write the queued records after ``LOG_DELAY_S`` without a
        request, or when the oldest has waited ``LOG_MAX_DELAY_S`` (so a killed kernel
        loses no record of a cell that replied more than that long ago)."""
        self._last_reply = time.monotonic()
        if self._log_queue and self._log_timer is None:
            self._log_timer = asyncio.get_running_loop().call_later(
                LOG_DELAY_S, self._log_timer_fired)

    def _log_timer_fired(self) -> None:
        self._log_timer = None
        if not self._log_queue:
            return
        now = time.monotonic()
        quiet = now - self._last_reply
        if (self._task is not None or quiet < LOG_DELAY_S) and (
                now - self._log_oldest < LOG_MAX_DELAY_S):
            wait = LOG_DELAY_S - quiet if self._task is None else LOG_DELAY_S
            self._log_timer = asyncio.get_running_loop().call_later(
                max(wait, 0.001), self._log_timer_fired)
            return
        self._flush_log()

    def _flush_log(self) -> None:
        queue, self._log_queue = self._log_queue, []
        for event in queue:
            try:
                self.oi.publish(event())
            except Exception as exc:  # the cell has replied: say so in the next one
                self.log.error("session log write failed: %s", exc)
                self._log_failure = str(exc)

    def _report_log_failure(self) -> None:
        if self._log_failure:
            text, self._log_failure = self._log_failure, ""
            self.send_iopub("stream", {"name": "stderr", "text": f"Session log: {text}\n"})
