"""What happens to one proposed block: risk review, the decision (asked or automatic),
the run with its timeout, and the feedback the model reads, each reported as an event
(which the session log records). ``StepRunner`` is a part the engine holds
(``engine.steps``), given what it uses (the settings, the seams, the model, where events
are recorded), never the engine."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from secrets import token_hex
from typing import TYPE_CHECKING, Any

from oi_kernel.core import approval_modes, changes, four_eyes, guard, identity, preview, prompts
from oi_kernel.core.caps import timeout_feedback, timeout_notice
from oi_kernel.core.events import (
    CodeProposed,
    Decided,
    Event,
    EventSink,
    GuardStopped,
    Notice,
    StepDone,
    StepReviewed,
    UntrustedNotice,
)
from oi_kernel.core.executor import Approver, ExecResult, Executor
from oi_kernel.core.model import Model
from oi_kernel.core.rollback import Rollback
from oi_kernel.core.small_model import handling_for
from oi_kernel.core.step_seams import StepEnd, StepSettings, offered_languages
from oi_kernel.core.tools import FIND, Toolbox, ToolSpec, tool_flags
from oi_kernel.core.turn_context import NO_CONTEXT, TurnContext, context_of, with_context
from oi_kernel.core.types import (
    ApprovalRequest,
    CodeBlock,
    Decision,
    StepRecord,
    StepStatus,
    Turn,
)
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


@dataclass
class _Review:
    """What the review found about one block before it is decided."""

    request: ApprovalRequest
    spec: ToolSpec | None
    language: str | None
    verdict: Verdict | None
    followed: list[dict[str, Any]]


class _Told:
    """A step's sink that keeps the last record the step told (``Decided``/``StepDone``)."""

    def __init__(self, emit: EventSink, index: int, block: CodeBlock) -> None:
        self.emit = emit
        self.last = StepRecord(index, block, status="stopped", feedback=NOT_REACHED)

    def __call__(self, event: Event) -> None:
        if isinstance(event, (Decided, StepDone)):
            self.last = event.record
        self.emit(event)


NOT_REACHED = "Not run: the user stopped this instruction."


class StepRunner:
    """Runs proposed blocks through review, decision and execution. It is given what it
    uses: the settings, where code runs (``executor``, ``toolbox``), how a decision is asked
    (``approver``, which the session may wrap later), the model (its handling shapes the
    feedback), ``record`` (what only the session log records) and the rollback part. It
    keeps what only the steps need: the variables whose values came from outside, and the
    fence around outside text."""

    def __init__(self, settings: Callable[[], StepSettings], executor: Executor, approver: Approver,
                 model: Model, record: EventSink, *, toolbox: Toolbox,
                 secrets: SecretSet, rollback: Rollback, log: logging.Logger,
                 author: str = "") -> None:
        self._settings = settings  # the running turn's, frozen (``Engine.settings``)
        self.executor = executor
        self.approver = approver
        self.model = model
        self.record = record
        self.toolbox = toolbox
        self.secrets = secrets
        self.rollback = rollback
        self.log = log
        self.author = author  # who asks when a turn's request does not say ("": this user)
        self.taint: Taint = {}  # variables whose values came from outside (safety.untrusted)
        self._names: SessionNames | None = None  # what earlier steps imported and defined
        self.fence = f"untrusted-{token_hex(6)}"  # delimits outside text

    @property
    def names(self) -> SessionNames:
        """What earlier steps of the session imported and defined (safety.known_safe)."""
        if self._names is None:
            from oi_kernel.safety.known_safe import SessionNames

            self._names = SessionNames()
        return self._names

    @property
    def settings(self) -> StepSettings:
        """The settings of the running turn (resolved once when it started)."""
        return self._settings()

    @property
    def step_timeout(self) -> float:
        return self.settings.step_timeout

    async def run_step(
        self, turn: Turn, index: int, block: CodeBlock, run_all: bool, emit: EventSink,
        reask: frozenset[str] | None = None,
    ) -> StepEnd:
        """Step ``index`` of ``turn``: review, decide, run ``block``. ``reask``: code
        approved before (``%load --replay``, ``%rebuild``) runs without asking unless the
        review flags one of these categories (or the policy's floor asks)."""
        told = _Told(emit, index, block)
        emit = with_context(told, context_of(emit))
        run_all, stop = await self._step(turn, index, block, run_all, emit, reask)
        return StepEnd(run_all, stop, told.last)

    async def _step(self, turn: Turn, index: int, block: CodeBlock, run_all: bool,
                    emit: EventSink, reask: frozenset[str] | None) -> tuple[bool, bool]:
        review = self._review(turn, index, block, emit)
        request, spec, language = review.request, review.spec, review.language
        emit = self._previewed(request, language or "", emit)
        if spec is None and (language is None
                             or language not in offered_languages(self.settings.languages)):
            self._refuse(turn, index, block, request, emit)
            return run_all, False
        asks = self.needs_approval(request, run_all if reask is None else True)
        if reask is not None:  # approved once already: asked again only for what it names
            asks = asks or any(f.category in reask for f in request.flags)
        emit(CodeProposed(request, asks))
        self._untrusted_notice(turn, index, review, asks, emit)
        decision = await self._decide(request, run_all, asks)
        if decision.action != "run":
            status, feedback = _not_run(decision)
            emit(Decided(StepRecord(index, block, decision, status, feedback=feedback),
                         turn.index, request, spec))
            return run_all, decision.action == "stop"
        emit(Decided(StepRecord(index, block, decision), turn.index, request, spec))
        ran_block = CodeBlock(language or block.language, decision.code, block.tool_call_id,
                              block.bare, tool=block.tool)
        await self._before_run(turn, review, block, ran_block, emit)
        guarded = guard.guarded(self.settings.guard, self.settings.approval, request, decision)
        stopped = await self._execute(turn, StepRecord(index, block, decision), ran_block,
                                      format_flags(request.flags), emit, spec, guarded=guarded)
        if stopped is not None:
            return await self._ask_after_stop(turn, request, ran_block, stopped, run_all, emit)
        return run_all or decision.run_all, False

    def _review(self, turn: Turn, index: int, block: CodeBlock, emit: EventSink) -> _Review:
        """The risk review of ``block`` and the approval request it makes (reported)."""
        settings = self.settings
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
            if approval_modes.asks_unsafe(settings.approval, settings.approval_floor):
                named = verdict.flag()
                flags += [named] if named else []
            sandboxed = self.executor.sandboxed
        followed = [u for u in turn.untrusted if u["read"]]
        if followed and (verdict is None or not verdict.stays_inside
                         or settings.untrusted_content == "ask"):
            flags = [*flags, untrusted_flag(followed, verdict, named=named is not None)]
        context = context_of(emit)  # the turn's own request: who sent it, whether stdin asks
        request = ApprovalRequest(turn.index, index, block, flags, sandboxed,
                                  run_all_allowed=not _asks(settings.approval_floor, None),
                                  tool=spec.label if spec else "",
                                  author=context.author or self.author or identity.person(),
                                  allow_stdin=context.allow_stdin)
        self.four_eyes_for(request)
        emit(StepReviewed(turn.index, index, block, flags, followed, spec))
        return _Review(request, spec, language, verdict, followed)

    def _refuse(self, turn: Turn, index: int, block: CodeBlock, request: ApprovalRequest,
                emit: EventSink) -> None:
        """A block in a language this session does not offer: refused, the model told."""
        offered = offered_languages(self.settings.languages)
        feedback = (f"Language '{block.language}' is not available here. Use one of: "
                    + ", ".join(offered) + ".")
        emit(Decided(StepRecord(index, block, status="refused", feedback=feedback),
                     turn.index, request, None))
        emit(Notice(feedback, "warning"))

    def _untrusted_notice(self, turn: Turn, index: int, review: _Review, asks: bool,
                          emit: EventSink) -> None:
        """A step that follows outside text and runs unasked: the user is told, once."""
        followed, verdict = review.followed, review.verdict
        if not followed or asks or turn.untrusted_noticed:
            return
        why = ("`%approval risky` asks about such steps" if self.settings.approval == "never"
               else "you chose Run all")
        if verdict is not None and verdict.stays_inside:
            why = "it is known safe and its effects stay in the namespace"
        emit(UntrustedNotice(f"Step {index} {untrusted_note(followed)} (text from outside "
                             f"your instruction) and runs without asking ({why}).",
                             "warning"))

    async def _before_run(self, turn: Turn, review: _Review, block: CodeBlock,
                          ran_block: CodeBlock, emit: EventSink) -> None:
        """The instruction's checkpoint (code only), and what the step binds, for the next
        steps' known-safe review."""
        if not block.tool:  # (a tool's effects are its server's: nothing here to roll back)
            problem = await self.rollback.ensure_checkpoint(turn)
            if problem:
                emit(Notice(problem, "warning"))
        if review.verdict is not None:
            self.names.ran(review.verdict if ran_block.code == block.code
                           else self.known_safe(ran_block.language, ran_block.code))

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
        decision = await self.approver.decide(again)
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
            return check(language, code, tuple(self.settings.known_safe),
                         tuple(self.settings.known_safe_denied), self.names)
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
        if self.settings.untrusted_content == "ask" and any(f.category == UNTRUSTED
                                                    for f in request.flags):
            return True
        if _asks(self.settings.approval_floor, request):
            return True
        return not run_all and _asks(self.settings.approval, request)

    def four_eyes_for(self, request: ApprovalRequest) -> None:
        """Mark ``request`` as needing a second person when four-eyes approval applies
        (the policy's floor first: it names who requires it)."""
        settings = self.settings
        for mode, source in ((settings.approval_floor, "policy"), (settings.approval, "setting")):
            if four_eyes.required((mode,), request.flags):
                request.four_eyes, request.four_eyes_source = mode, source
                return

    def _previewed(self, request: ApprovalRequest, language: str, emit: EventSink) -> EventSink:
        """The step's previews (``core.preview``) for ``request``; the sink for the step's
        events (it adds the comparison of a previewed step's real run)."""
        request.preview = preview.for_request(self.settings, self.executor, request, language, emit)
        return preview.comparing(request, emit)

    async def _decide(self, request: ApprovalRequest, run_all: bool,
                      asks: bool | None = None) -> Decision:
        if not (self.needs_approval(request, run_all) if asks is None else asks):
            return Decision("run", request.block.code, by="auto")
        await preview.before_card(self.settings, request, True)  # ``flagged``: on the card
        decision = await self.approver.decide(request)
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
        tracked = False if block.tool else await self.rollback.track_begin(block.language)
        try:
            limits = await self._arm_guard() if guarded else None
        except Exception as exc:  # fails closed: the step is asked about, not run unguarded
            self.log.exception("the runtime guard could not be armed")
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
            self.record(StepDone(ended, turn.index, block, spec))
            raise
        changed = None
        if tracked and (result is None or result.status != "died"):
            changed = await self.rollback.track_end()
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
        emit(self._done(turn.index, ran, block, spec, result, flags))
        return stopped

    def _done(self, turn: int, ran: StepRecord, block: CodeBlock, spec: ToolSpec | None,
              result: ExecResult, flags: str) -> StepDone:
        """A step that ran to its end: its outputs and the feedback the model reads (outputs
        masked, outside text fenced, changes summarised)."""
        handling = handling_for(self.model, self.settings)
        text = result.message or handling.output_text(result.outputs, block.code,
                                                    self.settings.max_output_chars)
        text = self.secrets.redact(text)  # before the LLM sees it
        found = self._outside(block, spec, result, text)
        outside = ", ".join(s.phrase() for s in found)
        if block.tool:
            feedback = prompts.tool_feedback(result.status, text, outside, self.fence)
        else:
            feedback = _with_changes(prompts.step_feedback(
                result.status, text, flags, block.code, handling.small, outside, self.fence),
                ran.changes)
        return StepDone(replace(ran, status=result.status, outputs=result.outputs,
                                feedback=feedback), turn, block, spec,
                        [{"source": s.label, "kind": s.kind, "phrase": s.phrase(),
                          "verb": s.verb} for s in found])

    async def _guard_report(self) -> dict[str, Any] | None:
        try:
            report = await self.executor.guard_report()  # type: ignore[attr-defined]
            if not report.get("guarded"):
                self.log.warning("a step meant to run guarded ran without the guard "
                                      "(its cell never started)")
            return report
        except Exception:  # (e.g. a child restarted after a time limit: the limit says it)
            self.log.exception("the runtime guard's report could not be read")
            return None

    async def _arm_guard(self) -> tuple[float, str] | None:
        """Have the executor run the next block under the guard; (its time limit, its
        memory limit as text), or None when this executor cannot guard (then the step runs
        as the review decided, unguarded: the log's execution record has no guard stop)."""
        arm = getattr(self.executor, "arm_guard", None)
        if arm is None:
            return None
        memory = self.settings.guard_memory_limit.strip()
        await arm(guard.settings(self.executor.cwd, memory))
        return self.settings.guard_time_limit, "" if memory in ("", "0") else memory

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
        run = (self.toolbox.run(block, self.step_timeout or self.settings.tools.call_timeout)
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
