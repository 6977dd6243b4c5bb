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

import zmq.asyncio

from oi_kernel.errors import ChildDiedError
from oi_kernel.execution.wire import Pending, _loads

IopubHandler = Callable[[dict[str, Any]], None]
InputHandler = Callable[[str, bool, str], Awaitable[str]]


class _Sender:
    """Lets ``Session.send`` send through an asyncio socket itself.

    ``Session.send`` writes to a ``zmq.asyncio`` socket through a plain shadow of it, which
    pyzmq's asyncio layer never sees. A send processes the socket's pending commands and so
    consumes its edge-triggered ``ZMQ_FD`` wake-up: a reply that arrived during the send
    woke no reader, and every later reply queued behind it unread (the child idle, the
    request waiting forever: once in ~25 runs of tests/test_early_checkpoint.py's
    many-turns test on a loaded machine, where a checkpoint's reply came back while the next
    cell's request was being sent). The asyncio socket's own ``send_multipart`` looks for
    waiting messages after sending and wakes the reader."""

    def __init__(self, socket: zmq.asyncio.Socket, log: logging.Logger) -> None:
        self.socket = socket
        self.log = log

    def send_multipart(self, frames: list[Any], **kwargs: Any) -> None:
        self.socket.send_multipart(frames, **kwargs).add_done_callback(self._check)

    def _check(self, sent: asyncio.Future[Any]) -> None:
        if not sent.cancelled() and sent.exception() is not None:
            self.log.error("sending to the child kernel failed: %r", sent.exception())


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
        """Send a message to the child without waiting (on its ``shell``, ``control`` or
        ``stdin`` channel); returns its msg_id."""
        if self.kc is None:
            raise ChildDiedError("The child kernel is not running.")
        session = self.kc.session
        msg = session.msg(msg_type, content, metadata=metadata)
        if msg_id:
            msg["header"]["msg_id"] = msg_id
            msg["msg_id"] = msg_id
        sock = getattr(self.kc, f"{channel}_channel").socket
        session.send(_Sender(sock, self.log), msg, buffers=buffers)
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
