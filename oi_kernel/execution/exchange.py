"""Requests to a running kernel and what comes back: each request's future (``Pending``)
completed by its reply (and, for an execution, the idle status after all its output), output
handed to ``on_iopub``, the kernel's questions to ``on_input``, and every waiting request
failed at once when the kernel dies.

``Exchange`` is the child kernel's side of it (``ChildKernel``, ``GatewayChildKernel``); the
transport (zmq channels here, a websocket for the gateway) reads the messages and calls
``_iopub``, ``_reply`` and ``_input_value``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from oi_kernel.errors import ChildDiedError
from oi_kernel.execution.wire import Pending, _loads

IopubHandler = Callable[[dict[str, Any]], None]
InputHandler = Callable[[str, bool, str], Awaitable[str]]


class Exchange:
    """Sends requests to a running kernel and routes what comes back to them."""

    kc: Any
    log: logging.Logger
    on_iopub: IopubHandler
    on_input: InputHandler | None
    _pending: dict[str, Pending]
    _dead_reason: str

    @property
    def is_running(self) -> bool:
        return self.kc is not None and not self._dead_reason

    def send(
        self,
        msg_type: str,
        content: dict[str, Any],
        msg_id: str | None = None,
        *,
        metadata: dict[str, Any] | None = None,
        buffers: list[Any] | None = None,
        channel: str = "shell",
    ) -> str:
        """Send a message to the child without waiting; returns its msg_id."""
        if self.kc is None:
            raise ChildDiedError("The child kernel is not running.")
        session = self.kc.session
        msg = session.msg(msg_type, content, metadata=metadata)
        if msg_id:
            msg["header"]["msg_id"] = msg_id
            msg["msg_id"] = msg_id
        sock = self.kc.control_channel if channel == "control" else self.kc.shell_channel
        session.send(sock.socket, msg, buffers=buffers)
        return msg["header"]["msg_id"]

    def submit(
        self,
        msg_type: str,
        content: dict[str, Any],
        msg_id: str | None = None,
        *,
        wait_idle: bool = False,
    ) -> asyncio.Future[dict[str, Any]]:
        """Send a shell request now; the future resolves with the reply's content (for
        executions once all output has arrived) or fails with ``ChildDiedError``."""
        if not self.is_running:
            raise ChildDiedError(self._dead_reason or "The child kernel is not running.")
        pending = Pending(asyncio.get_running_loop(), wait_idle)
        mid = msg_id or self.kc.session.msg_id
        self._pending[mid] = pending

        def forget(_: Any) -> None:
            if self._pending.get(mid) is pending:
                del self._pending[mid]

        pending.done.add_done_callback(forget)
        try:
            self.send(msg_type, content, mid)
        except BaseException as exc:
            pending.fail(exc)
            raise
        return pending.done

    async def request(
        self,
        msg_type: str,
        content: dict[str, Any],
        msg_id: str | None = None,
        *,
        wait_idle: bool = False,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """Send a shell request and wait for its reply (and idle, for executions)."""
        done = self.submit(msg_type, content, msg_id, wait_idle=wait_idle)
        return await asyncio.wait_for(done, timeout)

    def submit_execute(
        self,
        code: str,
        msg_id: str | None = None,
        *,
        allow_stdin: bool = False,
        silent: bool = False,
        store_history: bool = True,
        user_expressions: dict[str, str] | None = None,
    ) -> asyncio.Future[dict[str, Any]]:
        """Send ``code`` for execution now; see ``submit``."""
        content = {
            "code": code,
            "silent": silent,
            "store_history": store_history,
            "user_expressions": user_expressions or {},
            "allow_stdin": allow_stdin,
            "stop_on_error": False,
        }
        return self.submit("execute_request", content, msg_id, wait_idle=not silent)

    async def execute(
        self,
        code: str,
        msg_id: str | None = None,
        *,
        allow_stdin: bool = False,
        silent: bool = False,
        store_history: bool = True,
        user_expressions: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """Run ``code``; returns the execute_reply content once all output has arrived."""
        return await self.submit_execute(
            code,
            msg_id,
            allow_stdin=allow_stdin,
            silent=silent,
            store_history=store_history,
            user_expressions=user_expressions,
        )

    @staticmethod
    def unpack(content: Any) -> dict[str, Any]:
        """The content of a message the pump left packed (``PACKED_TYPES``): JSON as
        bytes or in a ``zmq.Frame``."""
        return content if isinstance(content, dict) else _loads(content)

    def _iopub(self, msg: dict[str, Any]) -> None:
        """An iopub message: idle completes its request; output goes to ``on_iopub``."""
        msg_type = msg["header"]["msg_type"]
        if msg_type == "status":
            if msg["content"]["execution_state"] == "idle":
                pending = self._pending.get(msg["parent_header"].get("msg_id"))
                if pending is not None:
                    pending.got_idle()
            return
        if msg_type == "execute_input":
            return
        try:
            self.on_iopub(msg)
        except Exception:
            self.log.exception("error forwarding a child iopub message")

    def _reply(self, msg: dict[str, Any]) -> None:
        pending = self._pending.get(msg["parent_header"].get("msg_id"))
        if pending is not None:
            pending.got_reply(msg["content"])

    async def _input_value(self, msg: dict[str, Any]) -> str:
        """The answer to the child's ``input_request`` (asked through ``on_input``)."""
        content = msg["content"]
        try:
            if self.on_input is not None:
                return await self.on_input(
                    content.get("prompt", ""),
                    bool(content.get("password")),
                    msg["parent_header"].get("msg_id", ""),
                )
        except Exception:
            self.log.exception("input request failed")
        return ""

    def _died(self, reason: str) -> None:
        """The child is gone: every waiting request fails with ``reason``."""
        self._dead_reason = reason
        self._fail_pending(ChildDiedError(reason))

    def _fail_pending(self, error: BaseException) -> None:
        for pending in list(self._pending.values()):
            pending.fail(error)
