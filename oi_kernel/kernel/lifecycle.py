"""The kernel process's life: start-up (the child started and litellm imported in the
background, a ``kernel_info`` reply that costs no debugger check), interrupts (SIGINT and
``interrupt_request`` cancel the running cell or interrupt the child) and shutdown (the log
closed first, then the child and the MCP servers)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from typing import Any


def _skip_empty_flushes(*streams: Any) -> None:
    """ipykernel flushes stdout and stderr around every request, each a round trip to its
    IOPub thread (~0.3 ms). The wrapper seldom prints: flush only when something was
    written since the last flush (the IOPub thread sends in order, so nothing overtakes)."""
    for stream in streams:
        if not hasattr(stream, "_flush_pending"):
            continue  # not ipykernel's OutStream (e.g. under a test runner)
        flush = stream.flush

        def flush_if_pending(stream: Any = stream, flush: Any = flush) -> None:
            if stream._flush_pending or getattr(stream, "_subprocess_flush_pending", False):
                flush()

        stream.flush = flush_if_pending


class Lifecycle:
    """Mixed into ``OIKernel`` (before ipykernel's ``Kernel``): start, info, interrupt,
    shutdown."""

    oi: Any
    child: Any
    _llm_warming: bool
    _task: asyncio.Task[Any] | None

    def start(self) -> None:
        super().start()
        _skip_empty_flushes(sys.stdout, sys.stderr)
        signal.signal(signal.SIGINT, self._on_sigint)
        self.io_loop.add_callback(self._start_background)

    def _start_background(self) -> None:
        self._loop = asyncio.get_running_loop()
        task = self.child.start_soon()
        task.add_done_callback(lambda t: t.cancelled() or t.exception())  # reported on use
        self.io_loop.call_later(1.0, self._warm_up_llm)  # if no kernel_info_request came

    def _warm_up_llm(self) -> None:
        """Start importing litellm in the background, once: ``warm_up()`` waits for the
        import to finish if called again while it runs."""
        if not self._llm_warming:
            self._llm_warming = True
            self.oi.warm_up()

    async def kernel_info_request(self, stream: Any, ident: Any, parent: dict[str, Any]) -> None:
        """Reply first, then import litellm in the background: the import holds the GIL for
        seconds, and the first cell would wait on it (benchmarks/startup.py). The first reply
        waits until IOPub has a subscriber, or a fast client's first cell could finish
        before it listens, and the client would wait for its ``idle`` forever."""
        subscribers = getattr(self.parent, "iopub_subscribers", None)
        if subscribers is not None:
            await subscribers.first_listener()
        await super().kernel_info_request(stream, ident, parent)
        self._warm_up_llm()

    @property
    def kernel_info(self) -> dict[str, Any]:
        """The base class's reply without the "debugger" feature: the wrapper has no
        debugger (its kernelspec says so), and checking for debugpy imports it, ~0.16 s
        of every start-up (benchmarks/startup.py)."""
        from ipykernel import kernel_protocol_version

        return {
            "protocol_version": kernel_protocol_version,
            "implementation": self.implementation,
            "implementation_version": self.implementation_version,
            "language_info": self.language_info,
            "banner": self.banner,
            "help_links": self.help_links,
            "supported_features": ["kernel subshells"] if self._supports_kernel_subshells else [],
        }

    def pre_handler_hook(self) -> None:
        """Keep our own SIGINT handler (the base one would raise inside the event loop)."""

    def post_handler_hook(self) -> None:
        pass

    def _on_sigint(self, signum: int, frame: Any) -> None:
        loop = getattr(self, "_loop", None)
        if loop is not None:
            loop.call_soon_threadsafe(self._interrupt)

    def _interrupt(self) -> None:
        task = self._task
        if task is not None and not task.done():
            task.cancel()
        else:  # nothing of ours running: maybe a direct request still in the child
            asyncio.ensure_future(self.oi.child.interrupt())

    async def interrupt_request(self, stream: Any, ident: Any, parent: dict[str, Any]) -> None:
        self._loop.call_soon_threadsafe(self._interrupt)
        self.session.send(stream, "interrupt_reply", {"status": "ok"}, parent, ident=ident)

    async def do_shutdown(self, restart: bool) -> dict[str, Any]:
        """The log is closed first (a manager kills us 5 s after asking), then the child and
        the MCP servers are stopped side by side."""
        self._flush_log()
        with contextlib.suppress(Exception):
            self.oi.close()
        await asyncio.gather(asyncio.wait_for(self.child.shutdown(), 10), self.oi.close_tools(),
                             return_exceptions=True)
        return {"status": "ok", "restart": restart}
