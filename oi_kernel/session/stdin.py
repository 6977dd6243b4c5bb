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
EOT = "\x04"  # what jupyter console sends for Ctrl-D


async def ask(kernel: Any, prompt: str, *, parent: dict[str, Any], ident: Any,
              password: bool = False) -> str:
    """An ``input_request`` to the frontend of ``parent``'s cell; its answer. Ctrl-D in a
    terminal frontend raises ``EOFError``."""
    flush_std_streams()
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
            return value
        await asyncio.sleep(POLL_S)
