"""Asking the frontend a question on the stdin channel, from a coroutine.

ipykernel's own ``raw_input`` blocks the thread; a cell of ours awaits instead, so an
interrupt (or a widget click meanwhile) is still handled. Shared by the Open Interpreter
kernel (approval prompts, ``input()`` in the child) and ``%%oi`` in an ipykernel.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import zmq

from oi_kernel.execution.shell import flush_std_streams

POLL_S = 0.02
IOPUB_WAIT_S = 1.0
EOT = "\x04"  # what jupyter console sends for Ctrl-D


class Answer(str):
    """A typed answer that knows who sent it: ``by`` is the input_reply's header username
    as the client sent it (unchecked; ``core.identity`` decides whether it names someone)."""

    by: str = ""

    @classmethod
    def of(cls, value: str, reply: dict[str, Any]) -> Answer:
        answer = cls(value)
        answer.by = str((reply.get("header") or {}).get("username") or "")
        return answer


async def ask(kernel: Any, prompt: str, *, parent: dict[str, Any], ident: Any,
              password: bool = False) -> Answer:
    """An ``input_request`` to the frontend of ``parent``'s cell; its answer (an ``Answer``,
    which names who sent it). Ctrl-D in a terminal frontend raises ``EOFError``."""
    flush_std_streams()
    await iopub_sent(kernel)
    sock = kernel.stdin_socket
    with contextlib.suppress(zmq.ZMQError):
        while sock.recv_multipart(zmq.NOBLOCK):  # stale answers of an interrupted prompt
            pass
    kernel.session.send(sock, "input_request", {"prompt": prompt, "password": password},
                        parent=parent, ident=ident)
    while True:
        try:
            _ident, reply = kernel.session.recv(sock, zmq.NOBLOCK)
        except zmq.ZMQError:
            reply = None
        if reply is not None:
            value = str(reply["content"].get("value", ""))
            if value == EOT:
                raise EOFError
            return Answer.of(value, reply)
        await asyncio.sleep(POLL_S)


async def iopub_sent(kernel: Any, timeout: float = IOPUB_WAIT_S) -> None:
    """Wait until what this kernel published so far has left its IOPub thread. ipykernel
    sends iopub messages from that thread but stdin requests at once: without this, a
    question overtakes the output just before it (jupyter console then shows it first;
    the question carries what it asks about in any case)."""
    thread = getattr(kernel, "iopub_thread", None)
    if thread is None or not hasattr(thread, "schedule"):
        return
    loop = asyncio.get_running_loop()
    sent = loop.create_future()

    def done() -> None:
        if not sent.done():
            sent.set_result(None)

    thread.schedule(lambda: loop.call_soon_threadsafe(done))
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(sent, timeout)
