"""What happens to one proposed block: risk review, the decision (asked or automatic),
the run with its timeout, and the feedback the model reads, each reported as an event
(which the session log records). ``StepRunner`` is a part the engine holds
(``engine.steps``); the seams (executor, approver), the LLM, the session's secrets and the
settings stay the engine's, which the part reads through ``StepHost``."""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from oi_kernel.core import approval_modes, changes, four_eyes, guard, identity, prompts
from oi_kernel.core.caps import timeout_feedback, timeout_notice
from oi_kernel.core.conversation import Conversation
from oi_kernel.core.events import (
    CodeProposed,
    Decided,
    Event,
    EventSink,
    GuardStopped,
    Notice,
    StepDone,
    StepReviewed,
    TurnDone,
    TurnStarted,
    UntrustedNotice,
)
from oi_kernel.core.executor import Approver, ExecResult, Executor
from oi_kernel.core.rollback import Rollback
from oi_kernel.core.small_model import ModelPolicy
from oi_kernel.core.tools import FIND, Toolbox, Tools, ToolSpec, tool_flags
from oi_kernel.core.turn_context import NO_CONTEXT, TurnContext, context_of
from oi_kernel.core.types import (
    ApprovalRequest,
    CodeBlock,
    Decision,
    StepRecord,
    StepStatus,
    Turn,
)
from oi_kernel.errors import ApprovalUnavailableError
from oi_kernel.languages import normalize_language
from oi_kernel.safety.redact import SecretSet
from oi_kernel.safety.risk import Flag, character_flags, format_flags, review_or_flag
from oi_kernel.safety.untrusted import UNREADABLE, Source, Taint, carries_text, code_sources
from oi_kernel.safety.untrusted.flag import UNTRUSTED, untrusted_flag, untrusted_note

if TYPE_CHECKING:  # (safety.known_safe is imported with the first block, not at start-up)
    from oi_kernel.safety.known_safe import SessionNames, Verdict



# Flags of a tool step that ask whatever the approval mode: the server says it destroys data,
# or the tool's description or schema changed since a person approved it (a "rug pull").
TOOL_ALWAYS_ASKS = frozenset({"destructive", "tool-changed"})
# Flags that are advice only under `risky`: a block with nothing but these runs unasked, since
# the known-safe review found all of it known safe (else its own flag asks) and the run-time
# guard stops a write that would replace an existing file.
RISKY_ADVICE = frozenset({"overwrite-file"})


class StepHost(Protocol):
    """What the step runner reads from the engine that holds it, live (settings change and
    the approver may be wrapped): the seams, the session's secrets, the rollback part, the
    settings (``c.Engine.*``), ``publish`` for what only the log records."""

    executor: Executor
    approver: Approver
    toolbox: Toolbox
    tool_settings: Tools
    secrets: SecretSet
    rollback: Rollback
    log: logging.Logger
    approval: str
    approval_floor: str
    untrusted_content: str
    known_safe: list[str]  # the user's entries for the known-safe review
    known_safe_denied: list[str]  # the administrator's
    step_timeout: float
    guard: str
    guard_time_limit: float
    guard_memory_limit: str
    max_output_chars: int
    turns: list[Turn]  # as the events build them (core.turn_fold): read, never assigned
    conversation: Conversation  # (only where the next instruction will start)

    @property
    def auto_run(self) -> bool: ...

    @property
    def policy(self) -> ModelPolicy: ...

    def offered_languages(self) -> list[str]: ...

    def publish(self, event: Event) -> None: ...

    def tee(self, emit: EventSink) -> EventSink: ...


class StepRunner:
    """Runs proposed blocks through review, decision and execution: a part the engine holds
    (``engine.steps``). It keeps what only the steps need: the variables whose values came
    from outside, and the fence around outside text."""

    def __init__(self, host: StepHost) -> None:
        self.host = host
        self.taint: Taint = {}  # variables whose values came from outside (safety.untrusted)
        self._names: SessionNames | None = None  # what earlier steps imported and defined
        self.fence = f"untrusted-{secrets.token_hex(6)}"  # delimits outside text for the model

    @property
    def names(self) -> SessionNames:
        """What earlier steps of the session imported and defined (safety.known_safe)."""
        if self._names is None:
            from oi_kernel.safety.known_safe import SessionNames

            self._names = SessionNames()
        return self._names

    # where a step runs and how long it may: the engine's, read when the step runs
    @property
    def executor(self) -> Executor:
        return self.host.executor

    @property
    def toolbox(self) -> Toolbox:
        return self.host.toolbox

    @property
    def tool_settings(self) -> Tools:
        return self.host.tool_settings

    @property
    def step_timeout(self) -> float:
        return self.host.step_timeout

    async def run_code_steps(
        self, title: str, blocks: list[CodeBlock], emit: EventSink, *,
        reask: frozenset[str] | None = None, stop_on_failure: bool = False, **log_fields: Any
    ) -> Turn:
        """Propose recorded code (``%load --replay``, ``%rebuild``) through the same review,
        approval and execution path as the model's code, without calling the LLM. The
        conversation is not changed; the steps are recorded as a turn (``log_fields`` go in
        its turn_start). ``reask``: code approved before runs without asking unless the
        review flags one of these categories (or the policy's floor asks);
        ``stop_on_failure``: a step that does not end "ok" ends the turn there."""
        emit = self.host.tee(emit)
        emit(TurnStarted(len(self.host.turns) + 1, title, log_fields,
                         conversation_index=len(self.host.conversation.turn_starts)))
        turn = self.host.turns[-1]  # as the events build it (core.turn_fold)
        run_all, reason = False, ""
        try:
            for block in blocks:
                run_all, stop = await self.run_step(turn, len(turn.steps) + 1, block,
                                                    run_all, emit, reask)
                failed = stop_on_failure and turn.steps[-1].status not in ("ok", "skipped")
                if stop or failed:
                    reason = "stopped"
                    break
            else:
                reason = "done"
        except asyncio.CancelledError:
            reason = "interrupted"
            raise
        except ApprovalUnavailableError:
            reason = "approval_unavailable"
            raise
        finally:
            emit(TurnDone(turn, reason))
        return turn

    async def run_step(
        self, turn: Turn, index: int, block: CodeBlock, run_all: bool, emit: EventSink,
        reask: frozenset[str] | None = None,
    ) -> tuple[bool, bool]:
        """Step ``index`` of ``turn``: review, decide, run ``block``; its record is what its
        events build (``turn.steps``). Returns (run_all, stop). ``reask``: see
        ``run_code_steps``."""
        verdict: Verdict | None = None
        named: Flag | None = None  # the known-safe review's flag, when it is on the card
        if block.tool:
            spec = self.toolbox.spec(block.tool)
            language: str | None = block.language
            flags = tool_flags(spec) + character_flags(block.code, "json")
            sandboxed = False
        else:
            spec = None
            language = normalize_language(block.language)
            flags = review_or_flag(language or block.language, block.code)
            verdict = self.known_safe(language or block.language, block.code)
            if approval_modes.asks_unsafe(self.host.approval, self.host.approval_floor):
                named = verdict.flag()
                flags += [named] if named else []
            sandboxed = self.executor.sandboxed
        followed = [u for u in turn.untrusted if u["read"]]
        if followed and (verdict is None or not verdict.stays_inside
                         or self.host.untrusted_content == "ask"):
            flags = [*flags, untrusted_flag(followed, verdict, named=named is not None)]
        context = context_of(emit)  # the turn's own request: who sent it, whether stdin asks
        request = ApprovalRequest(turn.index, index, block, flags, sandboxed,
                                  run_all_allowed=not _asks(self.host.approval_floor, None),
                                  tool=spec.label if spec else "",
                                  author=context.author or identity.person(),
                                  allow_stdin=context.allow_stdin)
        self.four_eyes_for(request)
        emit(StepReviewed(turn.index, index, block, flags, followed, spec))
        if spec is None and (language is None or language not in self.host.offered_languages()):
            feedback = (f"Language '{block.language}' is not available here. Use one of: "
                        + ", ".join(self.host.offered_languages()) + ".")
            emit(Decided(StepRecord(index, block, status="refused", feedback=feedback),
                         turn.index, request, spec))
            emit(Notice(feedback, "warning"))
            return run_all, False
        if reask is None:
            asks = self.needs_approval(request, run_all)
        else:  # approved once already: asked again only for what the review names
            asks = self.needs_approval(request, True) or any(f.category in reask
                                                             for f in flags)
        emit(CodeProposed(request, asks))
        if followed and not asks and not turn.untrusted_noticed:
            why = ("`%approval risky` asks about such steps" if self.host.auto_run
                   else "you chose Run all")
            if verdict is not None and verdict.stays_inside:
                why = "it is known safe and its effects stay in the namespace"
            emit(UntrustedNotice(f"Step {index} {untrusted_note(followed)} (text from outside "
                                 f"your instruction) and runs without asking ({why}).",
                                 "warning"))
        decision = await self._decide(request, run_all, asks)
        if decision.action != "run":
            status, feedback = _not_run(decision)
            emit(Decided(StepRecord(index, block, decision, status, feedback=feedback),
                         turn.index, request, spec))
            return run_all, decision.action == "stop"
        emit(Decided(StepRecord(index, block, decision), turn.index, request, spec))
        ran_block = CodeBlock(language or block.language, decision.code, block.tool_call_id,
                              block.bare, tool=block.tool)
        if not block.tool:  # (a tool's effects are its server's: nothing here to roll back)
            problem = await self.host.rollback.ensure_checkpoint(turn)
            if problem:
                emit(Notice(problem, "warning"))
        if verdict is not None:  # what the step binds, for the next steps' review
            self.names.ran(verdict if decision.code == block.code
                           else self.known_safe(ran_block.language, decision.code))
        guarded = guard.guarded(self.host.guard, self.host.approval, request, decision)
        stopped = await self._execute(turn, StepRecord(index, block, decision), ran_block,
                                      format_flags(flags), emit, spec, guarded=guarded)
        if stopped is not None:
            return await self._ask_after_stop(turn, request, ran_block, stopped, run_all, emit)
        return run_all or decision.run_all, False

    async def _ask_after_stop(
        self, turn: Turn, request: ApprovalRequest, block: CodeBlock, stopped: guard.GuardStop,
        run_all: bool, emit: EventSink,
    ) -> tuple[bool, bool]:
        """A guarded step was stopped (by the guard or a default limit): the session log
        records it, and the step is asked about, its card saying what stopped it; approved,
        it runs again without the guard and its limits, as approved. Nothing is rolled back
        in between: the guard stopped the step before the operation, and what it did before
        (variables, new files) is what the approved run starts from."""
        index = request.step
        emit(GuardStopped(turn.index, index, stopped))
        again = replace(request, block=block, flags=[*stopped.flags(), *request.flags])
        emit(CodeProposed(again, True))
        decision = await self.host.approver.decide(again)
        if decision.action != "run":
            status, _feedback = _not_run(decision)
            emit(Decided(StepRecord(index, block, decision, status,
                                    feedback=stopped.declined()), turn.index, again))
            return run_all, decision.action == "stop"
        emit(Decided(StepRecord(index, block, decision), turn.index, again))
        rerun = replace(block, code=decision.code)
        await self._execute(turn, StepRecord(index, block, decision), rerun,
                            format_flags(again.flags), emit)
        return run_all or decision.run_all, False

    def known_safe(self, language: str, code: str) -> Verdict:
        """The known-safe review of a block (safety.known_safe); when it fails, a verdict
        naming the failure (it fails closed: under ``risky`` such a block asks)."""
        from oi_kernel.safety.known_safe import Verdict, check

        try:
            return check(language, code, tuple(self.host.known_safe),
                         tuple(self.host.known_safe_denied), self.names)
        except Exception as exc:
            return Verdict((f"the known-safe review failed ({type(exc).__name__}: {exc})",))

    def needs_approval(self, request: ApprovalRequest, run_all: bool = False) -> bool:
        """Whether the policy asks the user about this block. "Run all" skips the asking for
        the rest of the instruction, but not below ``approval_floor``. A tool its server
        calls destructive, or whose description changed since it was approved, always asks,
        "Run all" or auto-run alike; ``mcp_find`` never does."""
        if request.block.tool == FIND:
            return False
        if request.four_eyes:  # a second person decides: never by "Run all" or auto-run
            return True
        if request.block.tool and any(f.category in TOOL_ALWAYS_ASKS for f in request.flags):
            return True
        if self.host.untrusted_content == "ask" and any(f.category == UNTRUSTED
                                                    for f in request.flags):
            return True
        if _asks(self.host.approval_floor, request):
            return True
        return not run_all and _asks(self.host.approval, request)

    def four_eyes_for(self, request: ApprovalRequest) -> None:
        """Mark ``request`` as needing a second person when four-eyes approval applies
        (the policy's floor first: it names who requires it)."""
        for mode, source in ((self.host.approval_floor, "policy"), (self.host.approval, "setting")):
            if four_eyes.required((mode,), request.flags):
                request.four_eyes, request.four_eyes_source = mode, source
                return

    async def _decide(self, request: ApprovalRequest, run_all: bool,
                      asks: bool | None = None) -> Decision:
        if not (self.needs_approval(request, run_all) if asks is None else asks):
            return Decision("run", request.block.code, by="auto")
        decision = await self.host.approver.decide(request)
        if (request.four_eyes and decision.action == "run"
                and identity.same_person(decision.by, request.author)):
            # the approver let the author run it (an API callback): not a second person
            return Decision("skip", by=decision.by, reason=four_eyes.refusal_text(
                request.author, request.four_eyes, request.four_eyes_source))
        return decision

    async def _execute(
        self, turn: Turn, step: StepRecord, block: CodeBlock, flags: str, emit: EventSink,
        spec: ToolSpec | None = None, guarded: bool = False,
    ) -> guard.GuardStop | None:
        """Run ``block``, the code ``step`` was decided to run, and say how it went
        (``StepDone``: ``step`` with its status, outputs, feedback, duration and changes).
        ``guarded``: under the runtime guard and the default limits; what stopped it, if
        anything, is returned (the step is then asked about)."""
        tracked = False if block.tool else await self.host.rollback.track_begin(block.language)
        try:
            limits = await self._arm_guard() if guarded else None
        except Exception as exc:  # fails closed: the step is asked about, not run unguarded
            self.host.log.exception("the runtime guard could not be armed")
            return guard.GuardStop([{"event": "guard", "what": "setting up the guard failed "
                                     f"({type(exc).__name__}: {exc}), so nothing ran"}])
        started = time.monotonic()
        try:
            result = await self._run_with_timeout(block, context_of(emit),
                                                  limits[0] if limits else 0)
        except asyncio.CancelledError:
            ended = replace(step, status="interrupted", duration_s=time.monotonic() - started,
                            feedback=prompts.step_feedback("interrupted", ""))
            # recorded only: the front door is being stopped and shows no result
            self.host.publish(StepDone(ended, turn.index, block, spec))
            raise
        changed = None
        if tracked and (result is None or result.status != "died"):
            changed = await self.host.rollback.track_end()
        ran = replace(step, duration_s=time.monotonic() - started, changes=changed)
        stopped = None
        if limits is not None and not (result is not None and result.status == "died"):
            stopped = guard.stop_of(await self._guard_report(), result, limits[0],
                                    limits[1], result is None and limits[0] > 0 and (
                                        not self.step_timeout or limits[0] < self.step_timeout))
        if result is None and stopped is not None:  # the guard's time limit: asked about next
            emit(StepDone(replace(ran, status="interrupted", feedback=stopped.summary()),
                          turn.index, block, spec))
            return stopped
        if result is None:  # the step timeout stopped it (the executor interrupted the child)
            feedback = _with_changes(prompts.step_feedback(
                "timeout", timeout_feedback(self.step_timeout), flags), changed)
            emit(Notice(timeout_notice(self.step_timeout), "warning"))
            emit(StepDone(replace(ran, status="interrupted", feedback=feedback), turn.index,
                          block, spec))
            return None
        if result.status == "died":
            emit(Notice(result.message, "error"))  # the user sees it too, not only the model
        policy = self.host.policy
        text = result.message or policy.output_text(result.outputs, block.code,
                                                    self.host.max_output_chars)
        text = self.host.secrets.redact(text)  # before the LLM sees it
        found = self._outside(block, spec, result, text)
        outside = ", ".join(s.phrase() for s in found)
        if block.tool:
            feedback = prompts.tool_feedback(result.status, text, outside, self.fence)
        else:
            feedback = _with_changes(prompts.step_feedback(
                result.status, text, flags, block.code, policy.small, outside, self.fence),
                changed)
        emit(StepDone(replace(ran, status=result.status, outputs=result.outputs,
                              feedback=feedback), turn.index, block, spec,
                      [{"source": s.label, "kind": s.kind, "phrase": s.phrase(),
                        "verb": s.verb} for s in found]))
        return stopped

    async def _guard_report(self) -> dict[str, Any] | None:
        try:
            report = await self.executor.guard_report()  # type: ignore[attr-defined]
            if not report.get("guarded"):
                self.host.log.warning("a step meant to run guarded ran without the guard "
                                      "(its cell never started)")
            return report
        except Exception:  # (e.g. a child restarted after a time limit: the limit says it)
            self.host.log.exception("the runtime guard's report could not be read")
            return None

    async def _arm_guard(self) -> tuple[float, str] | None:
        """Have the executor run the next block under the guard; (its time limit, its
        memory limit as text), or None when this executor cannot guard (then the step runs
        as the review decided, unguarded: the log's execution record has no guard stop)."""
        arm = getattr(self.executor, "arm_guard", None)
        if arm is None:
            return None
        memory = self.host.guard_memory_limit.strip()
        await arm(guard.settings(self.executor.cwd, memory))
        return self.host.guard_time_limit, "" if memory in ("", "0") else memory

    def _outside(self, block: CodeBlock, spec: ToolSpec | None, result: ExecResult,
                 text: str) -> list[Source]:
        """The outside text this step's output carries to the model (none: []); the turn
        notes it from the step's ``StepDone``. A tool's result always counts (but
        mcp_find's); code counts when it read from outside and printed words
        (safety.untrusted)."""
        if block.tool:
            return [Source("tool", spec.label if spec else block.tool)] if (
                block.tool != FIND and text.strip()) else []
        if result.status == "died":  # the namespace is gone, and with it what it held
            self.taint = {}
            self.names.clear()
            return []
        found, self.taint = code_sources(block.language, block.code, self.taint)
        if UNREADABLE in found and _did_not_parse(result):
            found.remove(UNREADABLE)  # a SyntaxError: nothing ran, nothing was read
        return found if carries_text(text) else []

    async def _run_with_timeout(
        self, block: CodeBlock, context: TurnContext = NO_CONTEXT, limit: float = 0
    ) -> ExecResult | None:
        """The executor's result, or None when ``step_timeout`` (or ``limit``, the lower
        one) expired first.

        On expiry the run is cancelled, which the executor turns into an interrupt
        of the child (and a restart if it will not stop). A cancellation from
        outside (the user's interrupt) still propagates.
        """
        run = (self.toolbox.run(block, self.step_timeout or self.tool_settings.call_timeout)
               if block.tool else self.executor.run(block, context=context))
        timeout = min(t for t in (self.step_timeout, limit, float("inf")) if t)
        if timeout == float("inf"):
            return await run
        task = asyncio.ensure_future(run)
        expired = False

        def expire() -> None:
            nonlocal expired
            expired = True
            task.cancel()

        timer = asyncio.get_running_loop().call_later(timeout, expire)
        try:
            return await task
        except asyncio.CancelledError:
            if expired and task.cancelled():
                return None
            raise
        finally:
            timer.cancel()


def _did_not_parse(result: ExecResult) -> bool:
    return result.status == "error" and any(
        o.get("ename") in ("SyntaxError", "IndentationError", "TabError")
        for o in result.outputs if o.get("output_type") == "error")


def _not_run(decision: Decision) -> tuple[StepStatus, str]:
    """The status and feedback of a step the user skipped or stopped at."""
    why = f" Reason: {decision.reason}" if decision.reason else ""
    if decision.action == "stop":
        return "stopped", "The user stopped this instruction; the code was not run." + why
    return "skipped", "The user declined to run this code." + why


def _with_changes(feedback: str, changed: dict[str, Any] | None) -> str:
    """The step's feedback and, after it, what the step changed (bounded)."""
    summary = changes.for_model(changed)
    return f"{feedback}\n\n{summary}" if summary else feedback


def _asks(approval: str, request: ApprovalRequest | None) -> bool:
    """Whether ``approval`` asks about ``request`` (None: about a step without flags)."""
    asks = approval_modes.BY_NAME[approval].asks if approval in approval_modes.BY_NAME else ""
    if asks == "every":
        return True
    return asks == "unsafe" and request is not None and any(
        getattr(f, "category", None) not in RISKY_ADVICE for f in request.flags)
