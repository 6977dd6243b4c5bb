"""The Python API: the same engine as the kernel, for scripts, tests and other kernels.

    from oi_kernel import Interpreter

    with Interpreter(model="gpt-4o-mini", auto_run=True) as it:
        for chunk in it.chat("what is 2**100?"):
            print(chunk)

``chat()`` is a generator of typed chunks (``TextChunk``, ``ThinkingChunk``, ``CodeChunk``,
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
import inspect
import os
import queue
import weakref
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oi_kernel.api.advice import for_script
from oi_kernel.api.chunks import (  # the chunk types are part of this module's API
    ApprovalChunk,  # noqa: F401
    Chunk,
    CodeChunk,  # noqa: F401
    MessageChunk,  # noqa: F401
    NoticeChunk,  # noqa: F401
    OutputChunk,
    TextChunk,  # noqa: F401
    UsageChunk,  # noqa: F401
    _output_chunk,
    to_chunks,
)
from oi_kernel.api.commands import said
from oi_kernel.api.loop import SHUTDOWN_TIMEOUT_S, Job, LoopThread
from oi_kernel.api.states import States
from oi_kernel.approval.approvers import CallbackApprover, RefuseApprover
from oi_kernel.core import events as E
from oi_kernel.core.conversation import MessageList
from oi_kernel.core.executor import ExecResult
from oi_kernel.core.rollback import Checkpoint
from oi_kernel.core.types import ApprovalRequest, Turn, Usage
from oi_kernel.errors import OIError
from oi_kernel.languages import as_ipython_cell, normalize_language
from oi_kernel.llm.client import LLM
from oi_kernel.session.assembly import Kind, Session, Wiring, build_session

_SETTLE_ITERATIONS = 5
_END = object()  # marks the end of a turn's chunk stream


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

    loop: LoopThread
    session: Session

    def release(self) -> None:
        if self.loop.alive:
            try:
                self.loop.call(_shutdown_loop(self.session), SHUTDOWN_TIMEOUT_S)
            except Exception:  # closing must not raise: the child dies with us anyway
                pass
            self.loop.stop()
        self.session.close()


async def _shutdown_loop(session: Session) -> None:
    await session.close_tools()
    await session.child.shutdown()
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
    ``LLM`` instance, e.g. a recorded one for replay). ``max_steps`` defaults to
    $OI_MAX_STEPS or 10. Under an administrator's policy (``oi_kernel_policy.json``), a
    keyword that would lower it (``auto_run=True`` where approval is required, a higher
    ``max_steps``, ``log=False`` where logs are kept) raises ``PolicyError``.
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        auto_run: bool = False,
        approve: Callable[[ApprovalRequest], Any] | None = None,
        max_steps: int | None = None,
        kernel_name: str = "python3",
        log_dir: str | os.PathLike[str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        custom_instructions: str = "",
        timeout: float | None = None,
        log: bool = True,
        llm: LLM | None = None,
        session_kind: Kind = "api",
        tools: list[Callable[..., Any]] | tuple[Callable[..., Any], ...] = (),
    ) -> None:
        settings = {"model": model, "api_base": api_base, "api_key": api_key}
        own_llm = llm is None
        if llm is None:
            llm = LLM(**{k: v for k, v in settings.items() if v is not None})
        self._emit: E.EventSink | None = None  # the running turn's (its notices go there)
        approver = CallbackApprover(_off_loop(approve)) if approve else RefuseApprover()
        self.session = build_session(
            session_kind,
            Wiring(approver, notify=_weak_notify(self)),
            llm=llm,
            child_options={"kernel_name": kernel_name,
                           "cwd": str(Path(cwd).resolve()) if cwd else ""},
            engine_options={"approval": "never" if auto_run else "always",
                            "custom_instructions": custom_instructions,
                            **({"max_steps": max_steps} if max_steps is not None else {}),
                            **({"step_timeout": timeout} if timeout is not None else {})},
            log_dir=log_dir,
            logging=log,
        )
        if own_llm:
            self.session.warm_up()  # import litellm in the background: chat() need not wait
        self.llm = llm
        self.engine = self.session.engine
        self.child = self.session.child
        self.runner = self.session.runner
        self.timeout = timeout
        self._busy = False  # run_code in progress
        self._job: Job | None = None  # the latest turn
        self._res = _Resources(LoopThread(), self.session)
        self._finalizer = weakref.finalize(self, self._res.release)
        self.states = States(self)  # named states: save, restore, drop (``api.states``)
        if tools:
            self.add_tools(*tools)

    # ------------------------------------------------------------ state
    @property
    def messages(self) -> MessageList:
        """The conversation sent to the LLM (system prompt excluded), as a list that also
        carries where each instruction starts. Assign a (deep) copy to another Interpreter
        to fork it; for a list built by hand the instructions are found by their role."""
        return self.engine.conversation.as_list()

    @messages.setter
    def messages(self, value: list[dict[str, Any]]) -> None:
        self._check_idle()
        self.engine.conversation.replace(value)

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
        return self.session.log_path

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
            if (failure := job.future.exception()) is not None:
                raise for_script(failure)
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
            try:
                await asyncio.wrap_future(job.future)
            except Exception as exc:
                raise for_script(exc) from None
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
            result = self._res.loop.call(_run_direct(self, lang, source))
        finally:
            self._busy = False
        return _output_chunk(0, result.status, result.outputs, result.message)

    def add_tools(self, *functions: Callable[..., Any]) -> list[str]:
        """Offer Python functions to the model as tools: each is defined in the child kernel
        from its source, and its schema comes from its signature, type hints and docstring
        (as ``%tool NAME`` in a notebook). A call runs ``f(**arguments)`` in the child as a
        code step (reviewed, approved, logged, exported as ordinary code)."""
        import textwrap

        from oi_kernel.session.tools import offer_functions

        self._check_idle()
        names = []
        for function in functions:
            try:
                source = textwrap.dedent(inspect.getsource(function))
            except (OSError, TypeError) as exc:
                raise OIError(f"The source of {function!r} is not available ({exc}): define "
                              "the tool in a file or a notebook cell.") from None
            result = self._res.loop.call(_run_direct(self, "python", source))
            if result.status != "ok":
                raise OIError(f"Defining {function.__name__} in the kernel failed: "
                              f"{result.message or result.outputs}")
            names.append(function.__name__)
        return self._res.loop.call(offer_functions(self.session, names))

    @property
    def checkpoints(self) -> list[Checkpoint]:
        """The checkpoints kept (one before each instruction that ran code), oldest first;
        ``restore(cp.number)`` goes back to one."""
        return list(self.engine.rollback.checkpoints)

    def undo(self, n: int = 1) -> str:
        """Forget the last ``n`` instructions and roll back what their code did (variables
        and files, as of the checkpoint before the first of them). Returns what was restored
        and what could not be, in words."""
        self._check_idle()
        removed, rolled = self._res.loop.call(self.engine.rollback.undo_and_roll_back(n))
        if not removed:
            return "Nothing to undo: the conversation is empty."
        return rolled or f"Forgot {len(removed)} instruction(s); no code had run, nothing to roll back."

    def restore(self, number: int) -> str:
        """Go back to checkpoint ``number`` (see ``checkpoints``); later instructions are
        forgotten. Returns what was restored and what could not be."""
        self._check_idle()
        _removed, rolled = self._res.loop.call(self.engine.rollback.restore(number))
        return rolled

    def rebuild(self, dry_run: bool = False) -> str:
        """After the child kernel died or was restarted: re-run, in the new one, the recorded
        code that built the lost one's variables (approved code that ran to the end, in
        order; steps flagged for the network, deletion or installs ask ``approve`` again; the
        first failing step stops it). ``dry_run`` only lists the steps. Returns what it
        restored, skipped and why, in words (Markdown), as ``%rebuild`` shows it."""
        from oi_kernel.session.rebuild import rebuild

        return said(self, lambda ctx: rebuild(ctx, dry_run))

    def reset(self) -> None:
        """Forget the conversation; Python variables are kept (see ``restart``)."""
        self._check_idle()
        self.engine.reset()

    def restart(self) -> None:
        """Restart the child kernel: its variables are lost; the conversation is kept."""
        self._check_idle()
        self._res.loop.call(self.session.restart_child("restarted by the caller"),
                            SHUTDOWN_TIMEOUT_S)

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

    def _start_turn(self, message: str, put: Callable[[Any], None]) -> Job:
        self._check_idle()
        job = Job(self._res.loop.loop, self._turn(message, put))
        job.future.add_done_callback(lambda _f: put(_END))
        self._job = job
        return job

    async def _turn(self, message: str, put: Callable[[Any], None]) -> Turn:
        def emit(event: E.Event) -> None:
            for chunk in to_chunks(event):
                put(chunk)

        self._emit = emit
        try:
            self.session.open_log()  # opened now: a log that cannot be opened fails the turn
            self.child.start_soon().add_done_callback(_retrieve)  # boots while the LLM answers
            return await self.engine.run_turn(message, emit)
        finally:
            self._emit = None


async def _run_direct(it: Interpreter, kind: str, source: str) -> ExecResult:
    """``source`` run in the child kernel without the model or approval, logged as a
    ``direct`` run (``run_code``, and the functions ``add_tools`` defines)."""
    it.session.open_log()
    result = await it.runner.run_code(source, timeout=it.timeout)
    it.session.publish(E.DirectRun(kind, source, result.status, result.outputs))
    return result


async def _settle(job: Job) -> None:
    """Let asyncio close an abandoned ``achat()`` generator (its finalizer needs a few loop
    iterations), then wait for the turn it cancelled to finish stopping."""
    for _ in range(_SETTLE_ITERATIONS):
        if job.cancelling or job.future.done():
            break
        await asyncio.sleep(0)
    if job.cancelling:
        await asyncio.to_thread(job.wait)


def _weak_notify(it: Interpreter) -> Callable[[str], None]:
    """The session's notices as chunks of the running turn, without the session (which the
    child kernel's callbacks reach) keeping the Interpreter alive."""
    ref = weakref.ref(it)

    def notify(text: str) -> None:
        target = ref()
        if target is not None and target._emit is not None:
            target._emit(E.Notice(text, "warning"))

    return notify


def _retrieve(task: asyncio.Future[Any]) -> None:
    """Mark a background start's failure as seen (it is raised where the child is used)."""
    if not task.cancelled():
        task.exception()
