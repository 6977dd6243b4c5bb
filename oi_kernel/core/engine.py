"""The turn loop shared by the kernel, the ``%%oi`` magic and the Python API.

One instruction is one turn: ask the LLM, take the code it proposes, get a decision for
each block, run what was approved, feed the output back, and repeat until a reply has no
code, a cap is hit, or the user stops. Two seams make the front doors differ: an
``Executor`` (where code runs) and an ``Approver`` (how a decision is asked); how the
loop treats the model is a ``ModelHandling``. Everything the loop does is reported once, as
a typed event (``core.events``): to the turn's sink (the front door) and to the engine's
``recorder`` (the session log's writer). The session that owns an engine is
assembled in ``oi_kernel.session.assembly``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from traitlets import Instance

from oi_kernel.core import codeblocks, dialects, prompts
from oi_kernel.core.answer_check import settle_answer
from oi_kernel.core.caps import Caps, cap_notice
from oi_kernel.core.context import fit_messages
from oi_kernel.core.conversation import Conversation
from oi_kernel.core.events import (
    ConversationReset,
    ConversationUndone,
    Decided,
    Event,
    EventSink,
    LLMFailed,
    LLMRequested,
    Notice,
    ReasoningDelta,
    ReplyDone,
    SampleDrawn,
    TextDelta,
    ToolNotice,
    ToolsUnsupported,
    TurnDone,
    TurnStarted,
)
from oi_kernel.core.executor import Approver, Executor
from oi_kernel.core.model import Model
from oi_kernel.core.replies import (
    CUT_BLOCK_NOTICE,
    answerer,
    assistant_tool_message,
    empty_notice,
    images_message,
    images_of,
)
from oi_kernel.core.rollback import Rollback
from oi_kernel.core.settings import EngineSettings, TurnSettings, freeze
from oi_kernel.core.small_model import Draft, ModelHandling, handling_for
from oi_kernel.core.step_seams import offered_languages
from oi_kernel.core.steps import NOT_REACHED, StepRunner
from oi_kernel.core.tools import (
    FIND,
    Offer,
    Toolbox,
    Tools,
    blocks_from_calls,
    fenced_tool_calls,
)
from oi_kernel.core.turn_context import context_of, with_context
from oi_kernel.core.turn_fold import TurnBuilder, fold_into
from oi_kernel.core.types import CodeBlock, Reply, StepRecord, Turn, Usage
from oi_kernel.errors import (
    ApprovalUnavailableError,
    InstructionTooLongError,
    LLMError,
    LLMToolsUnsupportedError,
)
from oi_kernel.safety.redact import SecretSet


class Engine(EngineSettings):
    """The conversation and its turn loop. It holds the seams (executor, approver), the LLM,
    the session's secrets and the settings; its parts are ``steps`` (one proposed block,
    ``core.steps``) and ``rollback`` (change summaries and checkpoints, ``core.rollback``)."""

    if TYPE_CHECKING:
        llm: Model
    else:  # a trait (configurable, observable); what it holds is a Model (core.model)
        llm = Instance(object, help="The model (``oi_kernel.llm.client.LLM`` or any Model).")
    recorder = Instance(object, allow_none=True,
                        help="Records events: the session log's ``LogWriter`` (or None).")

    def __init__(self, executor: Executor, approver: Approver, *, llm: Model, author: str = "",
                 **kwargs: Any) -> None:
        super().__init__(llm=llm, **kwargs)
        self.executor = executor
        self.secrets = SecretSet(self.llm)  # masks outputs before the LLM sees them
        self.turns: list[Turn] = []  # derived from the turns' events (``publish``)
        self._fold = TurnBuilder(self.turns)
        self.toolbox = Toolbox()  # MCP servers and notebook functions offered beside code
        self.cell_edits: Any = None  # reviews edit_cell calls (session.cell_edits), if offered
        self.tool_settings = Tools(parent=self)
        # Set by an administrator's policy (session.policy_rules): the least approval that
        # applies even after "Run all", and who set each session cap (for its message).
        self.approval_floor = "never"
        self.preview_floor = ""  # the administrator's: "flagged" (core.preview)
        self.cap_sources: dict[str, str] = {}
        # "ask": the policy makes every step that follows outside content ask (Run all too)
        self.untrusted_content = ""
        # the policy's entries that are never known safe (safety.known_safe)
        self.known_safe_denied: list[str] = []
        self.profile_state: Any = None  # the active profile and %instructions (session.profile_state)
        self.conversation = Conversation()
        self._turn_settings: TurnSettings | None = None  # the running turn's (``settings``)
        self.rollback = Rollback(self.settings, executor, self.publish, log=self.log,
                                 conversation=self.conversation, undo=self.undo,
                                 log_path=lambda: getattr(self.recorder, "path", None))
        self.steps = StepRunner(self.settings, executor, approver, llm, self.publish,
                                toolbox=self.toolbox, secrets=self.secrets,
                                rollback=self.rollback, log=self.log,
                                author=author)
        self.usage = Usage()
        self._budget_noticed = False
        self._handling: ModelHandling | None = None
        self._sent: tuple[list[dict[str, Any]], list[dict] | None] = ([], None)  # last request

    @property
    def auto_run(self) -> bool:
        return self.approval == "never"

    def settings(self) -> TurnSettings:
        """The settings the running turn resolved when it started (frozen: a change by
        ``%config``, a command or the policy applies to the next turn); outside a turn, the
        settings now. The loop and its parts read only this during a turn."""
        return self._turn_settings or freeze(self)

    @property
    def handling(self) -> ModelHandling:
        """How the loop treats the model with ``settings()`` (small ones get help); made
        again when the model changes kind or the settings change."""
        settings, cached = self.settings(), self._handling
        if (cached is None or cached.small != self.llm.is_small_model
                or cached.settings != settings):
            self._handling = handling_for(self.llm, settings, self.turns)
        return self._handling

    def check_ready(self) -> None:
        """Refuse an instruction (an ``OIError``) while the administrator's policy (``floors``)
        or a start-up profile that failed to load (``profile_state``) says no."""
        for part in (self.floors, self.profile_state):
            if part is not None:
                part.check_turn()

    def publish(self, event: Event) -> None:
        """Record an event outside a turn's sink (a step interrupted, a checkpoint kept, the
        conversation reset): folded into the latest of ``turns``, then recorded."""
        self._fold(event)
        _record(self, event)

    def tee(self, emit: EventSink, turn: Turn | None = None) -> EventSink:
        """A turn's sink: each event is folded into ``turn`` (the loop's own record of it;
        without one, into the latest of ``turns``) and recorded, then goes on to the front
        door (with the context the front door's sink carries)."""
        fold = self._fold if turn is None else fold_into(turn)

        def out(event: Event) -> None:
            fold(event)
            _record(self, event)
            emit(event)

        return with_context(out, context_of(emit))

    def _start_turn(self, instruction: str, emit: EventSink,
                    fields: dict[str, Any] | None = None) -> tuple[Turn, EventSink]:
        """A new turn: its record (kept here, in ``turns``, and folded from its own events
        by its sink) and that sink, which has reported ``TurnStarted``."""
        started = TurnStarted(len(self.turns) + 1, instruction, fields or {},
                              conversation_index=len(self.conversation.turn_starts))
        turn = Turn(index=started.turn, instruction=instruction, started=started.started,
                    conversation_index=started.conversation_index)
        self.turns.append(turn)
        emit = self.tee(emit, turn)
        emit(started)
        return turn, emit

    def offered_languages(self) -> list[str]:
        """The available languages, limited to ``languages`` when that is set."""
        return offered_languages(self.settings().languages)

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The conversation's messages (change them through ``conversation``)."""
        return self.conversation.messages

    def reset(self) -> None:
        """Forget the conversation (the executor's state is the caller's business)."""
        self.conversation.clear()
        self.publish(ConversationReset())

    def undo(self, n: int = 1) -> list[str]:
        """Forget the last ``n`` instructions; returns them."""
        removed = self.conversation.undo(n)
        if removed:
            self.publish(ConversationUndone(len(removed), len(self.conversation)))
        return removed

    def build_request(self, use_tools: bool) -> list[dict[str, Any]]:
        """The messages of the next LLM request: system prompt, then the conversation."""
        handling, settings = self.handling, self.settings()
        system = prompts.system_prompt(
            use_tools=use_tools,
            languages=self.offered_languages(),
            cwd=self.executor.cwd,
            extra=settings.custom_instructions,
            small_model=handling.small,
            base=settings.system_message,
        )
        if not use_tools and (self.toolbox.providers or self.toolbox.functions):
            system += prompts.markdown_tools(self.toolbox.prompt_list())  # (not for edit_cell alone)
        messages = [{"role": "system", "content": system}, *self.conversation.messages]
        fitted = fit_messages(messages, self.budget_tokens(), self.llm.count_tokens,
                              protect_from=self.conversation.protect_from())
        instruction = self.turns[-1].instruction if self.turns else ""  # (``%tokens`` too)
        return handling.prepare_request(fitted, self.conversation, instruction)

    def budget_tokens(self) -> int:
        """The context budget for the next request, in tokens."""
        settings = self.settings()
        if settings.context_budget > 0:
            return settings.context_budget
        window = self.llm.context_window() or 32_000
        return max(2_000, window - settings.reply_reserve)

    def tool_budget_tokens(self) -> int:
        """How many tokens of tool definitions (beyond ``execute``) a request may carry."""
        window = self.llm.context_window() or 32_000
        return max(1_500, int(window * self.settings().tools.budget_fraction))

    async def _prepare_tools(self, emit: EventSink) -> Offer | None:
        """Start the MCP servers (first turn; bounded) and choose what this request offers."""
        if not self.toolbox:
            return None
        for text in await self.toolbox.prepare():
            emit(ToolNotice(text, "warning"))
        offer = self.toolbox.offer(self.tool_budget_tokens())
        if offer.hidden and not self._budget_noticed:
            self._budget_noticed = True
            shown = len(offer.routes) - offer.hidden
            emit(Notice(
                f"The MCP servers offer {len(offer.routes)} tools, more than fit the tool budget "
                f"({self.tool_budget_tokens():,} tokens, c.Tools.budget_fraction): {shown} are "
                f"offered directly, the other {offer.hidden} through {FIND} (search) and "
                "mcp_call. Limit a server with \"tools\": [...] in its MCP config.", "info"))
        return offer

    # ------------------------------------------------------------ the loop
    async def run_turn(self, instruction: str, emit: EventSink, context: str = "") -> Turn:
        """Carry out one instruction; returns its record. Cancellation = interrupt.
        ``context``: what the front door knows around the instruction (``%%oi``: the notebook's
        recent cells), sent to the model with it but not part of the turn's instruction.
        The turn reads one frozen settings object (``settings()``), resolved here."""
        self.llm.check_configured()
        self.check_ready()
        with _settings_of_turn(self) as settings:
            if len(instruction) > settings.max_instruction_chars:
                raise InstructionTooLongError(len(instruction), settings.max_instruction_chars)
            # before the turn exists: an interrupt here is clean
            note = await _namespace_note(self.executor, self.log)
            turn, emit = self._start_turn(instruction, emit)
            self.conversation.start_turn(instruction + context + note)
            reason, final_text = "", ""
            try:
                reason, final_text = await self._loop(turn, emit)
                if reason == "done":
                    final_text = await settle_answer(settings.check_answers, self.turns, turn,
                                                     final_text, emit, self._asker(turn, emit))
            except asyncio.CancelledError:
                reason = "interrupted"
                self.conversation.close_open_tool_calls(
                    "The user interrupted this step; it did not finish.")
                raise
            except LLMError as exc:
                reason = "llm_error"
                self.conversation.close_open_tool_calls("The step did not run.")
                if exc.partial_text:
                    self.conversation.append({"role": "assistant", "content": exc.partial_text})
                raise
            except ApprovalUnavailableError:
                reason = "approval_unavailable"
                self.conversation.close_open_tool_calls(
                    "The user could not be asked; the code was not run.")
                raise
            except Exception as exc:  # e.g. the child kernel did not start: keep the conversation valid
                reason = "error"
                self.conversation.close_open_tool_calls(f"The step did not run: {exc}")
                raise
            finally:
                self.rollback.settle_checkpoint()  # asked for early and not used: let go
                emit(TurnDone(turn, reason, final_text))
            return turn

    def _asker(self, turn: Turn, emit: EventSink) -> Callable[[str], Awaitable[str]]:
        """Sends ``message`` to the model within the turn; returns its new answer."""

        async def ask(message: str) -> str:
            self.conversation.append({"role": "user", "content": message})
            reason, text = await self._loop(turn, emit)
            return text if reason == "done" else ""

        return ask

    async def _loop(self, turn: Turn, emit: EventSink) -> tuple[str, str]:
        """Ask, run, feed back until the turn ends; returns why it ended and the answer."""
        self.rollback.start_checkpoint(turn)  # its round trip overlaps the wait for the model
        await self.llm.prepare()  # litellm imported, the model's server asked (small or not)
        if notice := self.llm.take_notice():
            emit(Notice(notice))
        handling, settings = self.handling, self.settings()
        run_all = False
        drafts: list[Draft] = []  # this reply's drafts set aside so far (small models)
        for call in range(1, handling.step_limit() + 1):
            if notice := cap_notice(_caps(settings), turn.usage, self.usage,
                                 settings.cap_sources):
                emit(Notice(notice, "warning"))
                return "cap", ""
            reply, blocks, problems = await self._ask(turn, call, emit, handling, len(drafts))
            if blocks and not problems:
                sample = self._sampler(turn, call, emit)
                reply, blocks = await handling.consensus(turn, call, reply, blocks, sample,
                                                       self.conversation, emit)
                blocks = handling.review_drafts(turn, call, reply, blocks, drafts,
                                              self.conversation, emit)
                if not blocks:
                    continue  # set aside: ask again
            drafts = []
            if not blocks and not problems:
                if not reply.text.strip() and not reply.tool_calls and not turn.steps:
                    emit(Notice(empty_notice(reply), "warning"))
                return "done", reply.text
            run_all, stop = await self._run_blocks(turn, reply, blocks, problems, run_all, emit)
            if stop:
                return "stopped", ""
            if handling.turn_done(turn, len(blocks)):
                return "done", ""
        emit(Notice(
            f"Stopped after {handling.step_limit()} LLM calls (the step cap). Say 'continue' to "
            f"go on, or raise it with {handling.step_limit_setting()}.", "warning"))
        return "max_steps", ""

    async def _ask(
        self, turn: Turn, call: int, emit: EventSink, handling: ModelHandling, redraw: int = 0
    ) -> tuple[Reply, list[CodeBlock], list[str]]:
        """One LLM call; ``redraw`` > 0: the n-th new draft after drafts set aside. A server
        that rejects tools is asked again at once without them (fenced code)."""
        offer = await self._prepare_tools(emit)
        while True:
            use_tools = self.llm.uses_tools()
            try:
                reply = await self._request(turn, call, emit, handling, redraw, use_tools,
                                            offer)
                break
            except LLMToolsUnsupportedError as exc:
                emit(ToolsUnsupported(turn.index, call, str(exc)))
                if self.llm.uses_tools():  # it did not take note: do not ask forever
                    raise
        self.usage = self.usage + reply.usage
        blocks, problems = self._proposed(reply, handling)
        emit(ReplyDone(call, reply, blocks, turn.index))
        return reply, blocks, problems

    def _sampler(self, turn: Turn, call: int,
                 emit: EventSink) -> Callable[[dict[str, Any]], Awaitable[Reply]]:
        """Draws another reply to the request just sent (not shown; usage counted;
        reported)."""
        messages, tools = self._sent

        async def sample(sampling: dict[str, Any]) -> Reply:
            reply = await self.llm.sample(messages, tools, sampling)
            self.usage = self.usage + reply.usage
            emit(SampleDrawn(turn.index, call, reply, sampling))
            return reply

        return sample

    async def _request(self, turn: Turn, call: int, emit: EventSink, handling: ModelHandling,
                       redraw: int, use_tools: bool, offer: Offer | None = None) -> Reply:
        messages = self.build_request(use_tools)
        tools = [prompts.execute_tool(self.offered_languages())] if use_tools else None
        if tools is not None and offer is not None:
            tools += offer.definitions
        self._sent = (messages, tools)
        model = self.settings().llm.model
        emit(LLMRequested(turn.index, call, model, use_tools, handling.small, messages))
        try:
            return await self.llm.stream(
                messages,
                tools,
                on_text=lambda delta: emit(TextDelta(delta)),
                on_retry=lambda text: emit(Notice(text, "warning")),
                sampling=handling.sampling(redraw),
                on_reasoning=lambda delta: emit(ReasoningDelta(delta)),
            )
        except LLMToolsUnsupportedError:
            raise
        except LLMError as exc:
            emit(LLMFailed(turn.index, call, str(exc), exc.partial_text))
            raise

    def _proposed(self, reply: Reply, handling: ModelHandling) -> tuple[list[CodeBlock], list[str]]:
        """The blocks a reply proposes (and problems to tell the model), its assistant
        message added to the conversation. Only the answer counts, never the reasoning; in
        small-model mode a reply that is nothing but code is recognised as code."""
        problems: list[str] = []
        if reply.tool_calls:
            blocks, problems = blocks_from_calls(self.toolbox, reply.tool_calls)
            self.conversation.append(assistant_tool_message(reply))
            return blocks, problems
        blocks = codeblocks.extract_code_blocks(reply.text)
        if reply.finish_reason == "length":  # the token limit cut the reply: no half block
            whole = codeblocks.extract_code_blocks(reply.text, allow_unclosed=False)
            if len(whole) < len(blocks):
                blocks, problems = whole, [codeblocks.CUT_BLOCK_PROBLEM]
        if not blocks and handling.small and (bare := dialects.bare_code(reply.text)):
            blocks = [bare]
        if self.toolbox:  # markdown mode: ```tool blocks call tools
            blocks, wrong = fenced_tool_calls(self.toolbox, blocks)
            problems += wrong
        if reply.text.strip():  # an empty one would be refused by some providers
            self.conversation.append({"role": "assistant", "content": reply.text})
        return blocks, problems

    async def _run_blocks(
        self,
        turn: Turn,
        reply: Reply,
        blocks: list[CodeBlock],
        problems: list[str],
        run_all: bool,
        emit: EventSink,
    ) -> tuple[bool, bool]:
        """Decide and run each block; feed results back. Returns (run_all, stop)."""
        feedback: list[str] = []
        records: list[StepRecord] = []  # each step as it ended (this loop's own state)
        stop = False
        answer = answerer(self.conversation, feedback)
        answered = {b.tool_call_id for b in blocks}
        if self.cell_edits is not None:  # edit_cell calls: reviewed as diffs, answered there
            blocks = await self.cell_edits.review(turn, blocks, emit, answer)
        for block in blocks:
            index = len(turn.steps) + 1
            if stop:
                record = StepRecord(index, block, status="stopped", feedback=NOT_REACHED)
                emit(Decided(record, turn.index))
            else:
                end = await self.steps.run_step(turn, index, block, run_all, emit)
                run_all, stop, record = end.run_all, end.stop, end.record
            records.append(record)
            answer(block.tool_call_id, record.feedback)
        for call in reply.tool_calls:  # calls that gave no block: say what was wrong
            if call.id not in answered:
                own = [p for p in problems if p.startswith(f"Tool call {call.id} ")]
                answer(call.id, "\n".join(own or problems) or "Unknown tool.")
        if problems and not reply.tool_calls:  # markdown mode: a cut block, a bad tool block
            feedback.extend(problems)
            if codeblocks.CUT_BLOCK_PROBLEM in problems:
                emit(Notice(CUT_BLOCK_NOTICE, "warning"))
        if feedback:  # markdown mode: one user message with every result
            self.conversation.append({"role": "user", "content": "\n\n".join(feedback)})
        images = images_of(records)[: self.settings().max_images]
        if images and self.llm.supports_vision():  # (others read the '[image ...]' text)
            self.conversation.append(images_message(images))
        return run_all, stop

    async def run_code_steps(
        self, title: str, blocks: list[CodeBlock], emit: EventSink, *,
        reask: frozenset[str] | None = None, stop_on_failure: bool = False, **log_fields: Any
    ) -> Turn:
        """Recorded code (``%load --replay``, ``%rebuild``) through the model's code's review,
        approval and execution, without the LLM; the conversation is not changed; the steps
        are a turn (``log_fields`` go in its turn_start). ``reask``: see ``run_step``;
        ``stop_on_failure``: a step that does not end "ok" ends the turn there."""
        with _settings_of_turn(self):
            turn, emit = self._start_turn(title, emit, log_fields)
            run_all, reason = False, ""
            try:
                for index, block in enumerate(blocks, 1):
                    end = await self.steps.run_step(turn, index, block, run_all, emit, reask)
                    run_all = end.run_all
                    failed = stop_on_failure and end.record.status not in ("ok", "skipped")
                    if end.stop or failed:
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

async def _namespace_note(executor: Executor, log: Any) -> str:
    """The user's variables, from executors that share the user's namespace (``%%oi``)."""
    try:
        text = await executor.namespace_summary()
    except Exception:  # a summary must never cost the user the turn
        log.exception("namespace summary failed")
        return ""
    return f"\n\n[Variables in the user's namespace]\n{text}" if text.strip() else ""


@contextmanager
def _settings_of_turn(engine: Engine) -> Iterator[TurnSettings]:
    """The engine's settings resolved once, frozen for the turn run inside this block (a
    turn run within a turn, such as the answer check's, keeps the outer one's)."""
    outer = engine._turn_settings
    engine._turn_settings = outer or freeze(engine)
    try:
        with engine.llm.pinned(engine._turn_settings.llm):  # c.LLM.* too
            yield engine._turn_settings
    finally:
        engine._turn_settings = outer


def _record(engine: Engine, event: Event) -> None:
    """The session log records ``event``; a failing log never breaks a turn."""
    if engine.recorder is not None:
        try:
            engine.recorder(event)
        except Exception:
            engine.log.exception("session log write failed")


def _caps(settings: TurnSettings) -> Caps:
    """The token and cost caps of a turn and of the session."""
    return Caps(settings.max_tokens_per_turn, settings.max_cost_per_turn,
                settings.max_tokens_per_session, settings.max_cost_per_session)
