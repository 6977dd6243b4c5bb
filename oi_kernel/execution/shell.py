"""Running approved code in the user's own IPython shell, for the ``%%oi`` magic.

``ShellExecutor`` is the engine's ``Executor`` there: each block runs as a
nested cell of the user's shell (``run_cell_async``), so variables land in the
user's namespace and outputs show in the ``%%oi`` cell as usual. What the cell
showed is also collected for the LLM: in a kernel by watching the messages the
kernel's ``Session`` sends for the current request (streams, displays, results,
errors alike), in terminal IPython by teeing ``sys.stdout``/``sys.stderr``.
Errors are read from the ``ExecutionResult``; IPython's single custom exception
handler is left alone.

``InterruptGuard`` makes Ctrl-C / interrupt reliable while a turn runs: it
cancels the turn by waking the event loop thread-safely (an idle loop would not
notice a plain callback), or raises ``KeyboardInterrupt`` when the user's code
is running synchronously and must be stopped where it is.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

from oi_kernel.core.executor import ExecResult
from oi_kernel.core.outputs import OUTPUT_TYPES, OutputCollector
from oi_kernel.core.turn_context import NO_CONTEXT, TurnContext
from oi_kernel.core.types import CodeBlock
from oi_kernel.languages import as_ipython_cell

MAX_STACK = 400  # frames searched for the user's code on an interrupt


class InterruptGuard:
    """While a turn runs: SIGINT cancels it, or interrupts the user's running code."""

    def __init__(self, run_code_codes: set[Any]) -> None:
        self.run_code_codes = run_code_codes  # code objects of InteractiveShell.run_code
        self.code_running = False  # the executor is inside run_cell_async
        self.blocking_input = False  # a blocking input() is waiting (terminal approval)
        self.interrupted = False
        self._task: asyncio.Future[Any] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._previous: Any = None  # the handler ours replaced
        self._installed = False

    @contextlib.contextmanager
    def watching(self, task: asyncio.Future[Any]) -> Iterator[None]:
        """Install the handler for the life of ``task`` (main thread only; elsewhere a no-op)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        self._task, self._loop, self.interrupted = task, asyncio.get_running_loop(), False
        self._previous = signal.signal(signal.SIGINT, self._handle)
        self._installed = True
        try:
            yield
        finally:
            self._task = None
            self.uninstall()

    def uninstall(self) -> None:
        """Put back the handler that was there before, if ours is still installed."""
        if self._installed and signal.getsignal(signal.SIGINT) == self._handle:
            # None: set outside Python; the default handler is the closest we can restore
            previous = signal.default_int_handler if self._previous is None else self._previous
            signal.signal(signal.SIGINT, previous)
        self._installed, self._previous = False, None

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.interrupted = True
        task, loop = self._task, self._loop
        if task is not None and loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(_cancel, task)
        if self.blocking_input or (self.code_running and self._in_user_code(frame)):
            raise KeyboardInterrupt

    def _in_user_code(self, frame: FrameType | None) -> bool:
        """Is the user's cell executing right now (not suspended at an ``await``)?"""
        for _ in range(MAX_STACK):
            if frame is None:
                return False
            if frame.f_code in self.run_code_codes:
                return True
            frame = frame.f_back
        return False


def _cancel(task: asyncio.Future[Any]) -> None:
    if not task.done():
        task.cancel()


class SessionTap:
    """Copies the output messages a kernel's Sessions send for one request into a collector.

    Wraps ``send`` on each distinct Session (the kernel, display publisher,
    display hook and output streams normally share one); every message is still
    sent unchanged. Streams are sent from ipykernel's IOPub thread, hence the lock.
    """

    def __init__(self, sessions: list[Any], parent_id: str, collector: OutputCollector) -> None:
        self.sessions = _distinct(sessions)
        self.parent_id = parent_id
        self.collector = collector
        self._lock = threading.Lock()
        self._saved: list[tuple[Any, Any, Callable[..., Any]]] = []
        self.active = False

    def __enter__(self) -> SessionTap:
        for session in self.sessions:
            before = session.__dict__.get("send")  # an instance wrapper of someone else, or None
            wrapper = self._wrap(session.send)
            session.send = wrapper
            self._saved.append((session, before, wrapper))
        self.active = True
        return self

    def __exit__(self, *exc: object) -> None:
        self.active = False
        for session, before, wrapper in self._saved:
            if session.__dict__.get("send") is wrapper:
                if before is None:
                    del session.send
                else:
                    session.send = before
            # else: wrapped again by someone since; ours stays in the chain, inactive
        self._saved.clear()

    def _wrap(self, send: Callable[..., Any]) -> Callable[..., Any]:
        def send_and_collect(
            stream: Any,
            msg_or_type: Any,
            content: Any = None,
            parent: Any = None,
            *a: Any,
            **kw: Any,
        ) -> Any:
            sent = send(stream, msg_or_type, content, parent, *a, **kw)
            if self.active:
                self._observe(msg_or_type, content, parent)
            return sent

        return send_and_collect

    def _observe(self, msg_or_type: Any, content: Any, parent: Any) -> None:
        if isinstance(msg_or_type, dict):
            msg_type = msg_or_type.get("header", {}).get("msg_type")
            content = msg_or_type.get("content")
            parent = msg_or_type.get("parent_header")
        else:
            msg_type = msg_or_type
        if msg_type not in OUTPUT_TYPES or not isinstance(content, dict):
            return
        parent_id = parent.get("msg_id") if isinstance(parent, dict) else None
        if parent_id == self.parent_id:
            with self._lock:
                self.collector.add(msg_type, content)


def _distinct(items: list[Any]) -> list[Any]:
    seen: dict[int, Any] = {}
    for item in items:
        if item is not None and hasattr(item, "send"):
            seen.setdefault(id(item), item)
    return list(seen.values())


class _Tee:
    """A text stream that writes through to ``target`` and copies into a collector."""

    def __init__(self, target: Any, name: str, collector: OutputCollector) -> None:
        self._target = target
        self._name = name
        self._collector = collector

    def write(self, text: str) -> int:
        written = self._target.write(text)
        if text:
            self._collector.add("stream", {"name": self._name, "text": text})
        return written

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target, name)


@contextlib.contextmanager
def tee_std_streams(collector: OutputCollector) -> Iterator[None]:
    """Copy what is printed to ``sys.stdout``/``sys.stderr`` (terminal IPython)."""
    saved = sys.stdout, sys.stderr
    sys.stdout = _Tee(saved[0], "stdout", collector)  # type: ignore[assignment]
    sys.stderr = _Tee(saved[1], "stderr", collector)  # type: ignore[assignment]
    try:
        yield
    finally:
        if isinstance(sys.stdout, _Tee):
            sys.stdout = saved[0]
        if isinstance(sys.stderr, _Tee):
            sys.stderr = saved[1]


def flush_std_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


class ShellExecutor:
    """Runs approved code as nested cells of the user's IPython shell."""

    sandboxed = False  # the user's own process: never confined

    def __init__(self, shell: Any, guard: InterruptGuard) -> None:
        self.shell = shell
        self.guard = guard

    @property
    def cwd(self) -> str:
        """The shell's working directory now (user code may change it)."""
        return os.getcwd()

    async def run(self, block: CodeBlock, context: TurnContext = NO_CONTEXT) -> ExecResult:
        """Run the block as a nested cell; its output is captured from the messages sent for
        the request the turn (or the command) answers, ``context.parent_id``; without one (a
        terminal) from stdout and stderr."""
        cell = as_ipython_cell(block.language, block.code)
        collector = OutputCollector()
        with self._capture(collector, context.parent_id):
            result = await self._run_cell(cell)
        if self.guard.interrupted:  # Ctrl-C stops the instruction, not just this step
            raise asyncio.CancelledError
        return ExecResult(_status(result), collector.outputs)

    async def _run_cell(self, cell: str) -> Any:
        shell = self.shell
        exc_tuple = None
        try:
            transformed = shell.transform_cell(cell)
        except Exception:
            transformed, exc_tuple = cell, sys.exc_info()
        result = None
        self.guard.code_running = True
        try:
            result = await shell.run_cell_async(
                cell,
                store_history=False,
                transformed_cell=transformed,
                preprocessing_exc_tuple=exc_tuple,
            )
        finally:
            self.guard.code_running = False
            # what a real cell gets afterwards (e.g. the inline backend shows figures)
            shell.events.trigger("post_execute")
            shell.events.trigger("post_run_cell", result)
            flush_std_streams()
        return result

    @contextlib.contextmanager
    def _capture(self, collector: OutputCollector, parent_id: str | None) -> Iterator[None]:
        kernel = getattr(self.shell, "kernel", None)
        if kernel is None or parent_id is None:
            with tee_std_streams(collector):
                yield
            return
        sessions = [
            getattr(kernel, "session", None),
            getattr(self.shell.display_pub, "session", None),
            getattr(self.shell.displayhook, "session", None),
            getattr(sys.stdout, "session", None),
            getattr(sys.stderr, "session", None),
        ]
        with SessionTap(sessions, parent_id, collector):
            yield

    async def probe(self, name: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """Call the change/checkpoint probe here, in the user's own process."""
        from oi_kernel.execution.probe import local_probe

        return json.loads(local_probe().call(name, *args, **kwargs))

    async def arm_guard(self, settings: dict[str, Any]) -> None:
        """Run the next block under the runtime guard (``probe/guard.py``), here in the user's
        own process as in a child kernel."""
        from oi_kernel.execution.limits import parse_size

        try:
            memory = parse_size(settings.get("memory") or 0)
        except ValueError:
            memory = parse_size("2G")
        await self.probe("guard", {**settings, "memory": memory})

    async def guard_report(self) -> dict[str, Any]:
        """What the guard stopped in the block run after ``arm_guard``."""
        return await self.probe("guard_report")

    async def namespace_summary(self) -> str:
        """The user's variables, briefly (IPython's own names left out, secrets masked)."""
        from oi_kernel.core.namespace import summarize
        from oi_kernel.safety.redact import redact, secret_values_from_env

        return redact(summarize(user_variables(self.shell)), secret_values_from_env())


def user_variables(shell: Any) -> dict[str, Any]:
    """The user's namespace without what IPython put there (as ``%who`` decides)."""
    hidden = getattr(shell, "user_ns_hidden", {})
    missing = object()
    return {
        name: value
        for name, value in shell.user_ns.items()
        if hidden.get(name, missing) is not value
    }


def _status(result: Any) -> str:
    if result is None:
        return "error"
    error = result.error_before_exec or result.error_in_exec
    if error is None:
        return "ok"
    if isinstance(error, (KeyboardInterrupt, asyncio.CancelledError)):
        return "interrupted"
    return "error"
