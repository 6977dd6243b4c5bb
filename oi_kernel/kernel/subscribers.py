"""Who listens on IOPub: the first ``kernel_info`` reply waits for a subscriber.

A frontend connects its IOPub (SUB) socket and its shell socket side by side, and a ZeroMQ
subscription takes effect some milliseconds after the connection. A client that sends its
first cell as soon as the ``kernel_info`` reply arrives (``jupyter console`` with piped
input) can thus have the cell's ``busy``/``idle`` published before it subscribes: they are
dropped, and the client waits for an ``idle`` that never comes. This kernel answers
``kernel_info`` in milliseconds, so the race was seen in about one start in four.

ipykernel 7 binds IOPub as an XPUB socket, which hears every (un)subscription. We count
them, and the first ``kernel_info`` reply waits (up to ``WAIT``) until someone listens.
Later replies never wait: a client that never subscribes pays the wait once.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

WAIT = 2.0  # seconds; a subscription takes ~0.1 s (ZeroMQ's reconnect interval)


class IOPubSubscribers:
    """Counts IOPub subscriptions as ipykernel's IOPub thread receives them."""

    def __init__(self) -> None:
        self.count = 0
        self._joined = threading.Event()
        self._waited = False

    def watch(self, iopub_thread: Any) -> None:
        """Listen alongside ipykernel's own handler (which sends ``iopub_welcome``). Without
        an XPUB socket (ipykernel < 7) nothing can be heard: never wait."""
        stream = getattr(iopub_thread, "_xpub_stream", None)
        handle = getattr(iopub_thread, "_handle_subscription", None)
        if stream is None or handle is None:
            self._joined.set()
            return

        def on_frames(frames: list[bytes]) -> None:
            handle(frames)
            self.heard(frames)

        # on the IOPub thread's own loop: ZMQStream is not thread-safe
        iopub_thread.io_loop.add_callback(stream.on_recv, on_frames)

    def heard(self, frames: list[bytes]) -> None:
        for frame in frames:
            if frame[:1] == b"\x01":
                self.count += 1
            elif frame[:1] == b"\x00":
                self.count = max(0, self.count - 1)
        if self.count:
            self._joined.set()

    async def first_listener(self, timeout: float = WAIT) -> bool:
        """The first call waits until IOPub has a subscriber (True) or ``timeout`` passes
        (False); later calls return at once."""
        if self._waited:
            return self._joined.is_set()
        self._waited = True
        if not self._joined.is_set():  # set from the IOPub thread
            await asyncio.to_thread(self._joined.wait, timeout)
        return self._joined.is_set()
