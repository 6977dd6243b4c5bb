"""An event loop in a daemon thread, and coroutines on it that any thread can cancel: where
an Interpreter does its work, so ``chat()`` works from plain scripts and from inside
Jupyter (where a loop already runs)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any

SHUTDOWN_TIMEOUT_S = 20.0


class LoopThread:
    """An event loop running in a daemon thread: where an Interpreter does its work."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="oi-interpreter", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive() and not self.loop.is_closed()

    def call(self, coro: Coroutine[Any, Any, Any], timeout: float | None = None) -> Any:
        """Run ``coro`` on the loop and wait for its result (from another thread)."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self) -> None:
        if not self.alive:
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(SHUTDOWN_TIMEOUT_S)
        if not self._thread.is_alive():
            self.loop.close()


class Job:
    """A coroutine running as a task on the loop thread; cancellable from any thread.

    ``future`` resolves when the task has really finished (after its cleanup), with
    its result or exception, or is cancelled when the task was.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, Any]) -> None:
        self._loop = loop
        self._task: asyncio.Task[Any] | None = None
        self.future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self.finished = threading.Event()  # (concurrent.futures.wait ignores a cancel())
        self.cancelling = False
        loop.call_soon_threadsafe(self._start, coro)

    def _start(self, coro: Coroutine[Any, Any, Any]) -> None:
        self._task = self._loop.create_task(coro)
        self._task.add_done_callback(self._finish)

    def _finish(self, task: asyncio.Task[Any]) -> None:
        if task.cancelled():
            self.future.cancel()
        elif task.exception() is not None:
            self.future.set_exception(task.exception())  # type: ignore[arg-type]
        else:
            self.future.set_result(task.result())
        self.finished.set()

    def cancel(self) -> None:
        """Interrupt the task (callbacks run in order, so this comes after ``_start``)."""
        if not self.future.done() and not self._loop.is_closed():
            self.cancelling = True
            self._loop.call_soon_threadsafe(lambda: self._task and self._task.cancel())

    def wait(self, timeout: float = SHUTDOWN_TIMEOUT_S) -> None:
        """Block until the task has finished its cleanup (or ``timeout``)."""
        self.finished.wait(timeout)

    def cancel_and_wait(self) -> None:
        self.cancel()
        self.wait()
