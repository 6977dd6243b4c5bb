"""The Python API: the same engine as the kernel, for scripts, tests and other kernels.

    from oi_kernel import Interpreter

    with Interpreter(model="gpt-4o-mini", auto_run=True) as it:
        for chunk in it.chat("what is 2**100?"):
            print(chunk)

``chat()`` is a generator of typed chunks (``TextChunk``, ``CodeChunk``,
``ApprovalChunk``, ``OutputChunk``, ``MessageChunk``, ``UsageChunk``,
``NoticeChunk``); ``achat()`` is the same as an async generator. Approved code
runs in the Interpreter's own child IPython kernel, so variables persist across
instructions.

Async is the implementation: each Interpreter owns an event loop in a
background thread, where its engine, child kernel and LLM requests live. Both
``chat`` and ``achat`` start a turn on that loop and relay its chunks, so they
work from plain scripts and from inside Jupyter (where a loop already runs).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import copy
import inspect
import os
import queue
import sys
import threading
import weakref
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from . import __version__
from . import engine as E
from .approval import CallbackApprover
from .child import ChildKernel
from .conversation import ApprovalRequest, Decision, Turn, Usage
from .errors import ApprovalUnavailableError, OIError
from .languages import as_ipython_cell, normalize_language
from .llm import LLM, warm_up
from .outputs import outputs_to_text
from .runner import ChildRunner

SHUTDOWN_TIMEOUT_S = 20.0
_SETTLE_ITERATIONS = 5
_FULL = 10**9  # outputs_to_text limits for chunks: the caller gets everything


# ----------------------------------------------------------------------------- chunks


@dataclass
class TextChunk:
    """A piece of the assistant's reply as it streams."""

    text: str


@dataclass
class CodeChunk:
    """Code the model proposed; ``flags`` are the risk review's findings."""

    step: int
    language: str
    code: str
    flags: list[Any] = field(default_factory=list)
    needs_approval: bool = True


@dataclass
class ApprovalChunk:
    """The decision about a step: approved, edited, skipped, stopped or auto."""

    step: int
    decision: str
    code: str = ""  # what runs (the edited text when edited); "" when nothing runs


@dataclass
class OutputChunk:
    """What a step produced: nbformat v4 ``outputs`` and their plain ``text``."""

    step: int
    status: str  # ok, error, interrupted, died
    outputs: list[dict[str, Any]] = field(default_factory=list)
    text: str = ""


@dataclass
class MessageChunk:
    """The assistant's final answer of an instruction (the reply without code)."""

    text: str


@dataclass
class UsageChunk:
    """Tokens and cost of the whole instruction (cost None when unknown)."""

    prompt_tokens: int
    completion_tokens: int
    cost: float | None = None


@dataclass
class NoticeChunk:
    """Something the user should know: a retry, a refused language, the step cap."""

    text: str
    level: Literal["info", "warning", "error"] = "info"


Chunk = (
    TextChunk | CodeChunk | ApprovalChunk | OutputChunk | MessageChunk | UsageChunk | NoticeChunk
)


def to_chunks(event: E.Event) -> list[Chunk]:
    """The chunks an engine event becomes (none for bookkeeping events)."""
    if isinstance(event, E.TextDelta):
        return [TextChunk(event.text)]
    if isinstance(event, E.CodeProposed):
        req = event.request
        return [
            CodeChunk(
                req.step, req.block.language, req.block.code, list(req.flags), event.needs_approval
            )
        ]
    if isinstance(event, E.Decided):
        decision = event.record.decision
        if decision is None:
            return []
        code = decision.code if decision.action == "run" else ""
        return [ApprovalChunk(event.record.index, decision.label, code)]
    if isinstance(event, E.StepDone):
        return [_output_chunk(event.record.index, event.record.status, event.record.outputs)]
    if isinstance(event, E.Notice):
        return [NoticeChunk(event.text, event.level)]
    if isinstance(event, E.TurnDone):
        return _turn_chunks(event.turn)
    return []


def _output_chunk(
    step: int, status: str, outputs: list[dict[str, Any]], note: str = ""
) -> OutputChunk:
    text = outputs_to_text(outputs, max_chars=_FULL, max_error_chars=_FULL)
    return OutputChunk(step, status, outputs, "\n".join(t for t in (text, note) if t))


def _turn_chunks(turn: Turn) -> list[Chunk]:
    chunks: list[Chunk] = []
    if turn.final_text:
        chunks.append(MessageChunk(turn.final_text))
    if turn.llm_calls:
        u = turn.usage
        chunks.append(UsageChunk(u.prompt_tokens, u.completion_tokens, u.cost))
    return chunks


# ----------------------------------------------------------------------------- plumbing


class _LoopThread:
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


class _Job:
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


_END = object()  # marks the end of a turn's chunk stream


class _RefuseApprover:
    """No way to ask: code that needs approval is not run."""

    async def decide(self, request: ApprovalRequest) -> Decision:
        raise ApprovalUnavailableError()


def _off_loop(approve: Callable[[ApprovalRequest], Any]) -> Callable[[ApprovalRequest], Any]:
    """Run a synchronous approval callback in a worker thread, so it may block."""
    if inspect.iscoroutinefunction(approve):
        return approve

    async def call(request: ApprovalRequest) -> Any:
        answer = await asyncio.to_thread(approve, request)
        if inspect.isawaitable(answer):
            answer = await answer
        return answer

    return call


@dataclass
class _Resources:
    """What an Interpreter must release; kept apart so a finalizer can hold it."""

    loop: _LoopThread
    child: ChildKernel
    log: Any = None

    def release(self) -> None:
        if self.loop.alive:
            try:
                self.loop.call(_shutdown_loop(self.child), SHUTDOWN_TIMEOUT_S)
            except Exception:  # closing must not raise: the child dies with us anyway
                pass
            self.loop.stop()
        if self.log is not None and not self.log.closed:
            try:
                self.log.write("session_end")
            finally:
                self.log.close()


async def _shutdown_loop(child: ChildKernel) -> None:
    await child.shutdown()
    current = asyncio.current_task()
    others = [t for t in asyncio.all_tasks() if t is not current]
    for task in others:
        task.cancel()
    await asyncio.gather(*others, return_exceptions=True)


# ----------------------------------------------------------------------------- Interpreter


class Interpreter:
    """An LLM that writes code and runs it (after approval) in a child IPython kernel.

    ``model``, ``api_base`` and ``api_key`` default to $OI_MODEL, $OI_API_BASE and
    $OI_API_KEY (model names are litellm's). Approval: ``auto_run=True`` runs every
    block; else ``approve(request) -> bool | str | Decision`` is asked (True runs,
    False skips, a string runs that code instead; sync callbacks run in a worker
    thread, async ones are awaited); with neither, code is refused with
    ``ApprovalUnavailableError``. ``timeout`` caps the seconds one step may run.
    ``log=False`` writes no session log (else it goes to ``log_dir``, default
    $OI_LOG_DIR or the Jupyter data dir). ``llm`` replaces the litellm client (an
    ``LLM`` instance, e.g. a recorded one for replay).
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        auto_run: bool = False,
        approve: Callable[[ApprovalRequest], Any] | None = None,
        max_steps: int = 10,
        kernel_name: str = "python3",
        log_dir: str | os.PathLike[str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        custom_instructions: str = "",
        timeout: float | None = None,
        log: bool = True,
        llm: LLM | None = None,
    ) -> None:
        settings = {"model": model, "api_base": api_base, "api_key": api_key}
        if llm is None:
            llm = LLM(**{k: v for k, v in settings.items() if v is not None})
            warm_up()  # import litellm in the background: the first chat() need not wait
        self.llm = llm
        self.child = ChildKernel(
            kernel_name=kernel_name, cwd=str(Path(cwd).resolve()) if cwd else ""
        )
        self.runner = ChildRunner(self.child, on_restart=_weakly(self._on_restart))
        self.timeout = timeout
        self.engine = E.Engine(
            executor=self.runner,
            approver=CallbackApprover(_off_loop(approve)) if approve else _RefuseApprover(),
            llm=self.llm,
            approval="never" if auto_run else "always",
            max_steps=max_steps,
            custom_instructions=custom_instructions,
        )
        if timeout is not None:
            self._set_step_timeout(timeout)
        self._log_dir = log_dir
        self._logging = log
        self._emit: E.EventSink | None = None
        self._busy = False  # run_code in progress
        self._job: _Job | None = None  # the latest turn
        self._res = _Resources(_LoopThread(), self.child)
        self._finalizer = weakref.finalize(self, self._res.release)

    # ------------------------------------------------------------ state
    @property
    def messages(self) -> list[dict[str, Any]]:
        """The conversation sent to the LLM (system prompt excluded); assign to fork it."""
        return self.engine.messages

    @messages.setter
    def messages(self, value: list[dict[str, Any]]) -> None:
        self._check_idle()
        if not all(isinstance(m, dict) and "role" in m for m in value):
            raise OIError("messages must be a list of dicts with a 'role' (as it.messages gives).")
        self.engine.messages = copy.deepcopy(list(value))

    @property
    def turns(self) -> list[Turn]:
        """The record of every instruction so far: steps, decisions, outputs, end reason."""
        return self.engine.turns

    @property
    def usage(self) -> Usage:
        """Tokens and cost of every LLM request of this Interpreter."""
        return self.engine.usage

    @property
    def max_steps(self) -> int:
        """Most LLM calls for one instruction."""
        return self.engine.max_steps

    @max_steps.setter
    def max_steps(self, value: int) -> None:
        self.engine.max_steps = value

    @property
    def log_path(self) -> Path | None:
        """The session log's file (it exists from the first instruction on), or None."""
        return self._res.log.path if self._res.log is not None else None

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    # ------------------------------------------------------------ chatting
    def chat(self, message: str) -> Iterator[Chunk]:
        """Carry out one instruction, yielding chunks as they happen.

        Nothing runs until the generator is iterated. Leaving the loop early (or
        Ctrl-C) interrupts the instruction; errors (``OIError`` subclasses) are
        raised after the chunks that came before them.
        """
        chunks: queue.SimpleQueue[Any] = queue.SimpleQueue()
        job = self._start_turn(message, chunks.put)
        try:
            while (item := chunks.get()) is not _END:
                yield item
            job.future.result()
        finally:
            job.cancel_and_wait()

    async def achat(self, message: str) -> AsyncIterator[Chunk]:
        """``chat`` as an async generator, for code that runs in an event loop."""
        loop = asyncio.get_running_loop()
        chunks: asyncio.Queue[Any] = asyncio.Queue()
        previous = self._job
        if previous is not None and not previous.future.done():
            await _settle(previous)
        job = self._start_turn(
            message, lambda item: loop.call_soon_threadsafe(chunks.put_nowait, item)
        )
        try:
            while (item := await chunks.get()) is not _END:
                yield item
            await asyncio.wrap_future(job.future)
        finally:
            if not job.future.done():
                job.cancel()
                await asyncio.to_thread(job.wait)

    def run_code(self, code: str, language: str = "python") -> OutputChunk:
        """Run code in the child kernel directly (no LLM, no approval); logged as ``direct``."""
        self._check_idle()
        lang = normalize_language(language) or language
        source = as_ipython_cell(lang, code)
        self._busy = True
        try:
            result = self._res.loop.call(self._run_direct(lang, source))
        finally:
            self._busy = False
        return _output_chunk(0, result.status, result.outputs, result.message)

    def reset(self) -> None:
        """Forget the conversation; Python variables are kept (see ``restart``)."""
        self._check_idle()
        self.engine.reset()

    def restart(self) -> None:
        """Restart the child kernel: its variables are lost; the conversation is kept."""
        self._check_idle()
        self._res.loop.call(self.child.shutdown(), SHUTDOWN_TIMEOUT_S)
        if self._res.log is not None:
            self._res.log.write("child_restart", reason="restarted by the caller")

    def close(self) -> None:
        """Stop the child kernel and the background loop; close the session log. Idempotent."""
        self._finalizer()

    def __enter__(self) -> Interpreter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------ internals
    def _check_idle(self) -> None:
        if self.closed:
            raise OIError("This Interpreter is closed; create a new one.")
        job = self._job
        if job is not None and job.cancelling:
            job.wait()  # a turn left early: let it finish stopping
        if self._busy or (job is not None and not job.future.done()):
            raise OIError(
                "This Interpreter is busy with an instruction; finish iterating its chat() "
                "first (or use a second Interpreter)."
            )

    def _start_turn(self, message: str, put: Callable[[Any], None]) -> _Job:
        self._check_idle()
        job = _Job(self._res.loop.loop, self._turn(message, put))
        job.future.add_done_callback(lambda _f: put(_END))
        self._job = job
        return job

    async def _turn(self, message: str, put: Callable[[Any], None]) -> Turn:
        def emit(event: E.Event) -> None:
            for chunk in to_chunks(event):
                put(chunk)

        self._emit = emit
        try:
            self._ensure_log()
            self.child.start_soon().add_done_callback(_retrieve)  # boots while the LLM answers
            return await self.engine.run_turn(message, emit)
        finally:
            self._emit = None

    async def _run_direct(self, kind: str, source: str) -> E.ExecResult:
        self._ensure_log()
        result = await self.runner.run_code(source, timeout=self.timeout)
        self._write_log(
            "direct", kind=kind, code=source, status=result.status, outputs=result.outputs
        )
        return result

    def _set_step_timeout(self, seconds: float) -> None:
        """The engine's step timeout (it tells the LLM), else the runner's own limit."""
        if self.engine.has_trait("step_timeout"):
            self.engine.step_timeout = seconds
        else:
            self.runner.timeout = seconds

    def _ensure_log(self) -> None:
        if self._res.log is not None or not self._logging:
            return
        from .session_log import SessionLog

        log = SessionLog(self._log_dir, secrets=self.llm.secrets())
        log.write(
            "session_start",
            kernel="api",
            model=self.llm.model,
            child_kernel=self.child.kernel_name,
            cwd=self.child.cwd or os.getcwd(),
            oi_version=__version__,
            python=sys.version.split()[0],
        )
        self._res.log = log
        self.engine.log_sink = log

    def _write_log(self, event: str, **fields: Any) -> None:
        if self._res.log is not None:
            self._res.log.write(event, **fields)

    def _on_restart(self) -> None:
        self._write_log("child_restart", reason="the previous child kernel died")
        if self._emit is not None:
            self._emit(
                E.Notice(
                    "The Python kernel was restarted: variables from before are gone.", "warning"
                )
            )


async def _settle(job: _Job) -> None:
    """Let asyncio close an abandoned ``achat()`` generator (its finalizer needs a few loop
    iterations), then wait for the turn it cancelled to finish stopping."""
    for _ in range(_SETTLE_ITERATIONS):
        if job.cancelling or job.future.done():
            break
        await asyncio.sleep(0)
    if job.cancelling:
        await asyncio.to_thread(job.wait)


def _weakly(method: Callable[[], None]) -> Callable[[], None]:
    """A callback that does not keep its object alive (the child must not pin the Interpreter)."""
    ref = weakref.WeakMethod(method)  # type: ignore[arg-type]

    def call() -> None:
        target = ref()
        if target is not None:
            target()

    return call


def _retrieve(task: asyncio.Future[Any]) -> None:
    """Mark a background start's failure as seen (it is raised where the child is used)."""
    if not task.cancelled():
        task.exception()
