"""The turn loop shared by the kernel, the ``%%oi`` magic and the Python API.

One instruction is one turn: ask the LLM, take the code it proposes, get a
decision for each block, run what was approved, feed the output back, and repeat
until a reply has no code, a cap is hit, or the user stops. Two seams make the
front doors differ: an ``Executor`` (where code runs) and an ``Approver`` (how a
decision is asked). Everything the loop does is reported as events to a sink and
recorded in the session log.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from traitlets import Enum, Float, Instance, Integer, List, Unicode, default, observe
from traitlets.config import LoggingConfigurable

from . import codeblocks, config, prompts
from .context import fit_messages
from .conversation import (
    ApprovalRequest,
    CodeBlock,
    Decision,
    Reply,
    StepRecord,
    Turn,
    Usage,
    code_hash,
)
from .errors import ApprovalUnavailableError, InstructionTooLongError, LLMError, OIError
from .languages import available_languages, normalize_language
from .limits import Caps, cap_notice, env_number, timeout_feedback, timeout_notice
from .llm import LLM

ExecStatus = Literal["ok", "error", "interrupted", "died"]


@dataclass
class ExecResult:
    """What running one block produced."""

    status: ExecStatus
    outputs: list[dict[str, Any]] = field(default_factory=list)
    message: str = ""  # for "died": what happened and what it means


class Executor(Protocol):
    """Where approved code runs (a child kernel, or the user's own IPython shell)."""

    sandboxed: bool

    async def run(self, block: CodeBlock) -> ExecResult: ...


class Approver(Protocol):
    """How a decision is asked (widget card, stdin, a callback)."""

    async def decide(self, request: ApprovalRequest) -> Decision: ...


# ------------------------------------------------------------------- events
@dataclass
class TextDelta:
    text: str


@dataclass
class ReplyDone:
    step: int
    reply: Reply
    blocks: list[CodeBlock]


@dataclass
class CodeProposed:
    request: ApprovalRequest
    needs_approval: bool = True


@dataclass
class Decided:
    record: StepRecord


@dataclass
class StepDone:
    record: StepRecord


@dataclass
class Notice:
    text: str
    level: Literal["info", "warning", "error"] = "info"


@dataclass
class TurnDone:
    turn: Turn


Event = TextDelta | ReplyDone | CodeProposed | Decided | StepDone | Notice | TurnDone

CUT_BLOCK_NOTICE = (
    "The reply reached the model's output token limit inside a code block: that block was "
    "cut off and was not run. The model was asked to send it again."
)
EMPTY_REPLY_NOTICE = (
    "The model sent an empty reply (no text and no code). Ask again or rephrase; if it keeps "
    "happening, check the model (`%model`) and its server."
)
EventSink = Callable[[Event], None]


class Engine(LoggingConfigurable):
    """The conversation and its turn loop."""

    approval = Enum(
        ["always", "risky", "never"],
        config=True,
        help="When to ask before running code: 'always' (every block), 'risky' (only blocks "
        "the risk review flags), 'never' (run everything: auto-run). Env: OI_APPROVAL; "
        "OI_AUTO_RUN=1 means 'never'.",
    )

    @default("approval")
    def _approval_default(self) -> str:
        help_text = self.traits()["approval"].help
        env = config.env_choice("OI_APPROVAL", ["always", "risky", "never"], "", help=help_text)
        if env:
            return env
        return "never" if config.env_flag("OI_AUTO_RUN", help=help_text) else "always"

    max_steps = Integer(
        10,
        config=True,
        help="Most LLM calls for one instruction before the turn stops. Env: OI_MAX_STEPS.",
    )

    @default("max_steps")
    def _max_steps_default(self) -> int:
        return config.env_int("OI_MAX_STEPS", 10, minimum=1, help=self.traits()["max_steps"].help)

    max_instruction_chars = Integer(
        100_000,
        config=True,
        help="Longest instruction (characters) sent to the LLM; a longer one is refused with "
        "a message before any request (about 4 characters per token: 100,000 is ~25,000 "
        "tokens). Put large data in a file and name it instead. Env: OI_MAX_INSTRUCTION_CHARS.",
    )

    @default("max_instruction_chars")
    def _max_instruction_chars_default(self) -> int:
        help_text = self.traits()["max_instruction_chars"].help
        return config.env_int("OI_MAX_INSTRUCTION_CHARS", 100_000, minimum=1, help=help_text)

    def _load_config(self, cfg: Any, section_names: Any = None, traits: Any = None) -> None:
        """A bad value in the config is reported and ignored (see oi_kernel.config)."""
        config.load_config_tolerantly(self, super()._load_config, cfg, section_names, traits)

    @observe("max_steps")
    def _check_max_steps(self, change: dict[str, Any]) -> None:
        if change["new"] < 1:
            raise OIError("max_steps must be at least 1 (it counts LLM calls per instruction).")

    small_model_max_steps = Integer(
        3,
        config=True,
        help="Most LLM calls for one instruction with a small local model (local/...): its "
        "first try and the retries after an error or missing output (the lower of this and "
        "max_steps applies). Env: OI_SMALL_MODEL_MAX_STEPS.",
    )

    @default("small_model_max_steps")
    def _small_model_max_steps_default(self) -> int:
        help_text = self.traits()["small_model_max_steps"].help
        return config.env_int("OI_SMALL_MODEL_MAX_STEPS", 3, minimum=1, help=help_text)

    small_model_examples = Integer(
        3,
        config=True,
        help="Worked examples sent to a small local model with each request (those closest "
        "to the instruction, from prompts.SMALL_EXAMPLES); 0: none.",
    )

    small_model_redraws = Integer(
        2,
        config=True,
        help="Drafts of a small local model that may be set aside per instruction because the "
        "code itself shows a mistake (a name it never set, a value of the instruction left "
        "out, invalid syntax, nothing printed; see oi_kernel.drafts); the model is then asked "
        "again, sampling at temperature 0.5 with a fixed seed per redraw. Each redraw is an "
        "LLM call within small_model_max_steps. 0: propose every draft.",
    )

    def step_limit(self) -> int:
        """LLM calls allowed for one instruction with the current model."""
        if getattr(self.llm, "is_small_model", False):
            return max(1, min(self.max_steps, self.small_model_max_steps))
        return self.max_steps

    def _step_limit_setting(self) -> str:
        if self.step_limit() < self.max_steps:
            return "OI_SMALL_MODEL_MAX_STEPS / c.Engine.small_model_max_steps"
        return "OI_MAX_STEPS / c.Engine.max_steps"

    step_timeout = Float(
        config=True,
        help="Seconds one code block may run before it is interrupted (the child kernel is "
        "restarted if it does not stop within a few seconds) and the LLM is told it timed out; "
        "0: no limit. Env: OI_STEP_TIMEOUT.",
    )
    max_tokens_per_turn = Integer(
        config=True, help="Most tokens (prompt + completion) one instruction may use; 0: no cap. "
        "Env: OI_MAX_TOKENS.",
    )
    max_cost_per_turn = Float(
        config=True, help="Most cost in USD one instruction may use (models with a known price); "
        "0: no cap. Env: OI_MAX_COST.",
    )
    max_tokens_per_session = Integer(
        config=True, help="Most tokens the whole session may use; 0: no cap. "
        "Env: OI_MAX_SESSION_TOKENS.",
    )
    max_cost_per_session = Float(
        config=True, help="Most cost in USD the whole session may use; 0: no cap. "
        "Env: OI_MAX_SESSION_COST.",
    )

    @default("step_timeout")
    def _step_timeout_default(self) -> float:
        return env_number("OI_STEP_TIMEOUT")

    @default("max_tokens_per_turn")
    def _max_tokens_per_turn_default(self) -> int:
        return int(env_number("OI_MAX_TOKENS"))

    @default("max_cost_per_turn")
    def _max_cost_per_turn_default(self) -> float:
        return env_number("OI_MAX_COST")

    @default("max_tokens_per_session")
    def _max_tokens_per_session_default(self) -> int:
        return int(env_number("OI_MAX_SESSION_TOKENS"))

    @default("max_cost_per_session")
    def _max_cost_per_session_default(self) -> float:
        return env_number("OI_MAX_SESSION_COST")

    max_output_chars = Integer(
        6000, config=True, help="Characters of a step's output the LLM sees (head + tail)."
    )
    context_budget = Integer(
        0,
        config=True,
        help="Most prompt tokens per request. Older turns are condensed to fit (outputs first, "
        "then code, then whole turns become one-line summaries); the system prompt, the current "
        "instruction and the previous turn are kept. 0: the model's input limit from litellm's "
        "model map minus reply_reserve (32,000 when unknown). Env: OI_CONTEXT_BUDGET.",
    )

    @default("context_budget")
    def _context_budget_default(self) -> int:
        return config.env_int("OI_CONTEXT_BUDGET", 0, minimum=0,
                              help=Engine.context_budget.help)

    reply_reserve = Integer(
        4096, config=True, help="Tokens kept free for the reply when the budget is automatic."
    )
    max_images = Integer(
        3, config=True, help="Most images per step shown to a vision-capable model."
    )
    custom_instructions = Unicode(
        "", config=True, help="Text appended to the system prompt (your own instructions)."
    )
    system_message = Unicode(
        "",
        config=True,
        help="Replaces the built-in system prompt (custom_instructions are still appended). "
        "Risky: the built-in prompt tells the model how to propose code (the execute tool or "
        "fenced blocks) and that each step is approved; without that the model may stop "
        "writing runnable code. Empty: the built-in prompt.",
    )
    languages = List(
        Unicode(),
        config=True,
        help="Languages offered to the model (a subset of those installed, e.g. ['python']); "
        "empty: every available one.",
    )
    llm = Instance(LLM, allow_none=True)
    log_sink = Instance(object, allow_none=True, help="A SessionLog (or None).")

    def __init__(self, executor: Executor, approver: Approver, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if self.llm is None:
            self.llm = LLM(parent=self)
        self.executor = executor
        self.approver = approver
        self.messages: list[dict[str, Any]] = []
        self._turn_starts: list[int] = []  # index in messages of each turn's instruction
        self._last_logged: list[dict[str, Any]] = []  # the previous request, as logged
        self.turns: list[Turn] = []
        self.usage = Usage()
        # Checks run before each turn; one raises an OIError to refuse (e.g. a bad profile).
        self.preflight: list[Callable[[], None]] = []

    @property
    def auto_run(self) -> bool:
        return self.approval == "never"

    # ------------------------------------------------------------ helpers
    def _log(self, event: str, **fields: Any) -> None:
        if self.log_sink is not None:
            try:
                self.log_sink.write(event, **fields)
            except Exception:  # the log must never break a turn
                self.log.exception("session log write failed")

    def reset(self) -> None:
        """Forget the conversation (the executor's state is the caller's business)."""
        self.messages.clear()
        self._turn_starts.clear()
        self._log("conversation_reset")

    def offered_languages(self) -> list[str]:
        """The available languages, limited to ``languages`` when that is set."""
        wanted = {normalize_language(name) for name in self.languages}
        return [n for n in available_languages() if not self.languages or n in wanted]

    def build_request(self, use_tools: bool) -> list[dict[str, Any]]:
        """The messages of the next LLM request: system prompt, then the conversation."""
        system = prompts.system_prompt(
            use_tools=use_tools,
            languages=self.offered_languages(),
            cwd=getattr(self.executor, "cwd", None) or os.getcwd(),
            extra=self.custom_instructions,
            small_model=getattr(self.llm, "is_small_model", False),
            base=self.system_message,
        )
        messages = [{"role": "system", "content": system}, *self.messages]
        fitted = fit_messages(messages, self.budget_tokens(), self.llm.count_tokens,
                              protect_from=self._protect_from())
        return self._with_small_model_examples(fitted)

    def _with_small_model_examples(self, request: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """For small models (with the built-in prompt): worked examples close to the current
        instruction, as user/assistant pairs just before it (the tail is never cut)."""
        if not (getattr(self.llm, "is_small_model", False) and self._turn_starts
                and not self.system_message.strip()):
            return request
        start = self._turn_starts[-1]
        if start >= len(self.messages):
            return request
        at = len(request) - (len(self.messages) - start)
        instruction = self.turns[-1].instruction if self.turns else ""
        examples = prompts.small_model_examples(instruction, self.small_model_examples)
        task = request[at]
        content = task.get("content")
        if isinstance(content, str) and content.startswith(instruction) and examples:
            # the instruction as the examples show tasks: its values named (only here, in
            # the request; the conversation keeps what the user wrote)
            content = prompts.small_model_task(instruction) + content[len(instruction):]
            task = {**task, "content": content}
        return [*request[:at], *examples, task, *request[at + 1:]]

    def budget_tokens(self) -> int:
        """The context budget for the next request, in tokens."""
        if self.context_budget > 0:
            return self.context_budget
        window = self.llm.context_window() or 32_000
        return max(2_000, window - self.reply_reserve)

    def _protect_from(self) -> int | None:
        """Index (in the request) of the previous turn's instruction: kept whole from there."""
        starts = [i for i in self._turn_starts if i < len(self.messages)]
        if len(starts) >= 2:
            return starts[-2] + 1
        return 1 if starts else None

    # ------------------------------------------------------------ the loop
    async def _namespace_note(self) -> str:
        """The user's variables, from executors that share the user's namespace (``%%oi``)."""
        summary = getattr(self.executor, "namespace_summary", None)
        if summary is None:
            return ""
        try:
            text = await summary()
        except Exception:  # a summary must never cost the user the turn
            self.log.exception("namespace summary failed")
            return ""
        return f"\n\n[Variables in the user's namespace]\n{text}" if text.strip() else ""

    def _check_instruction(self, instruction: str) -> None:
        if len(instruction) > self.max_instruction_chars:
            raise InstructionTooLongError(len(instruction), self.max_instruction_chars)

    async def run_turn(self, instruction: str, emit: EventSink) -> Turn:
        """Carry out one instruction; returns its record. Cancellation = interrupt."""
        self.llm.check_configured()
        for check in self.preflight:
            check()
        self._check_instruction(instruction)
        if notice := getattr(self.llm, "take_notice", lambda: "")():
            emit(Notice(notice))
        note = await self._namespace_note()  # before the turn exists: an interrupt here is clean
        turn = Turn(index=len(self.turns) + 1, instruction=instruction)
        self.turns.append(turn)
        self._log("turn_start", turn=turn.index, instruction=instruction)
        self._turn_starts.append(len(self.messages))
        self.messages.append({"role": "user", "content": instruction + note})
        run_all = False
        drafts: list[_Draft] = []  # this reply's drafts set aside so far (small models)
        try:
            for call in range(1, self.step_limit() + 1):
                if notice := self._cap_notice(turn):
                    turn.end_reason = "cap"
                    emit(Notice(notice, "warning"))
                    break
                reply, blocks, problems = await self._ask(turn, call, emit, len(drafts))
                if blocks and not problems:
                    blocks = self._check_draft(turn, call, reply, blocks, drafts, emit)
                    if not blocks:
                        continue  # set aside: ask again
                drafts = []
                if not blocks and not problems:
                    turn.final_text = reply.text
                    turn.end_reason = "done"
                    if not reply.text.strip() and not reply.tool_calls:
                        emit(Notice(EMPTY_REPLY_NOTICE, "warning"))
                    break
                run_all, stop = await self._run_blocks(turn, reply, blocks, problems, run_all, emit)
                if stop:
                    turn.end_reason = "stopped"
                    break
                if _small_model_done(self.llm, turn, len(blocks)):
                    turn.end_reason = "done"
                    break
            else:
                turn.end_reason = "max_steps"
                emit(
                    Notice(
                        f"Stopped after {self.step_limit()} LLM calls (the step cap). Say "
                        f"'continue' to go on, or raise it with {self._step_limit_setting()}.",
                        "warning",
                    )
                )
        except asyncio.CancelledError:
            turn.end_reason = "interrupted"
            self._close_open_tool_calls("The user interrupted this step; it did not finish.")
            raise
        except LLMError as exc:
            turn.end_reason = "llm_error"
            self._close_open_tool_calls("The step did not run.")
            if exc.partial_text:
                self.messages.append({"role": "assistant", "content": exc.partial_text})
            raise
        except ApprovalUnavailableError:
            turn.end_reason = "approval_unavailable"
            self._close_open_tool_calls("The user could not be asked; the code was not run.")
            raise
        except Exception as exc:  # e.g. the child kernel did not start: keep the conversation valid
            turn.end_reason = "error"
            self._close_open_tool_calls(f"The step did not run: {exc}")
            raise
        finally:
            self._log(
                "turn_end",
                turn=turn.index,
                reason=turn.end_reason or "error",
                steps=len(turn.steps),
                usage=dataclasses.asdict(turn.usage),
            )
            emit(TurnDone(turn))
        return turn

    async def run_code_steps(
        self, title: str, blocks: list[CodeBlock], emit: EventSink, **log_fields: Any
    ) -> Turn:
        """Propose recorded code (``%load --replay``) through the same review, approval and
        execution path as the model's code, without calling the LLM. The conversation is
        not changed; the steps are recorded as a turn (``log_fields`` go in its turn_start)."""
        turn = Turn(index=len(self.turns) + 1, instruction=title)
        self.turns.append(turn)
        self._log("turn_start", turn=turn.index, instruction=title, **log_fields)
        run_all = False
        try:
            for block in blocks:
                record = StepRecord(index=len(turn.steps) + 1, block=block)
                turn.steps.append(record)
                run_all, stop = await self._run_step(turn, record, run_all, emit)
                if stop:
                    turn.end_reason = "stopped"
                    break
            else:
                turn.end_reason = "done"
        except asyncio.CancelledError:
            turn.end_reason = "interrupted"
            raise
        except ApprovalUnavailableError:
            turn.end_reason = "approval_unavailable"
            raise
        finally:
            self._log("turn_end", turn=turn.index, reason=turn.end_reason or "error",
                      steps=len(turn.steps), usage=dataclasses.asdict(turn.usage))
            emit(TurnDone(turn))
        return turn

    def _request_messages(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        """The request's messages for the log: only the new ones when the request extends the
        previous one (``messages_before`` of them are as logged before), so a long session's
        log grows linearly, not quadratically; the full list after any condensing."""
        before = self._last_logged
        self._last_logged = list(messages)
        if before and len(before) <= len(messages) and messages[: len(before)] == before:
            return {"messages_before": len(before), "messages": messages[len(before):]}
        return {"messages_before": 0, "messages": messages}

    async def _ask(
        self, turn: Turn, call: int, emit: EventSink, redraw: int = 0
    ) -> tuple[Reply, list[CodeBlock], list[str]]:
        """One LLM call; ``redraw`` > 0: the n-th new draft after drafts set aside."""
        await self.llm.prepare()
        use_tools = self.llm.uses_tools()
        messages = self.build_request(use_tools)
        tools = [prompts.execute_tool(self.offered_languages())] if use_tools else None
        self._log(
            "llm_request",
            turn=turn.index,
            step=call,
            model=self.llm.model,
            tools=use_tools,
            **self._request_messages(messages),
        )
        try:
            reply = await self.llm.stream(
                messages,
                tools,
                on_text=lambda delta: emit(TextDelta(delta)),
                on_retry=lambda text: emit(Notice(text, "warning")),
                sampling={"temperature": REDRAW_TEMPERATURE, "seed": redraw} if redraw else None,
            )
        except LLMError as exc:
            self._log(
                "llm_error",
                turn=turn.index,
                step=call,
                error=str(exc),
                partial_text=exc.partial_text,
            )
            raise
        turn.llm_calls += 1
        turn.usage = turn.usage + reply.usage
        self.usage = self.usage + reply.usage
        self._log(
            "llm_response",
            turn=turn.index,
            step=call,
            text=reply.text,
            tool_calls=[dataclasses.asdict(c) for c in reply.tool_calls],
            usage=dataclasses.asdict(reply.usage),
            latency_s=round(reply.latency_s, 4),
            finish_reason=reply.finish_reason,
        )
        problems: list[str] = []
        if reply.tool_calls:
            blocks, problems = codeblocks.blocks_from_tool_calls(reply.tool_calls)
            self.messages.append(_assistant_tool_message(reply))
        else:
            blocks = codeblocks.extract_code_blocks(reply.text)
            if reply.finish_reason == "length":  # the token limit cut the reply: no half block
                whole = codeblocks.extract_code_blocks(reply.text, allow_unclosed=False)
                if len(whole) < len(blocks):
                    blocks, problems = whole, [codeblocks.CUT_BLOCK_PROBLEM]
            self.messages.append({"role": "assistant", "content": reply.text})
        emit(ReplyDone(call, reply, blocks))
        return reply, blocks, problems

    def _check_draft(
        self,
        turn: Turn,
        call: int,
        reply: Reply,
        blocks: list[CodeBlock],
        drafts: list[_Draft],
        emit: EventSink,
    ) -> list[CodeBlock]:
        """A small model's Python code is checked before anyone is asked to approve it
        (``drafts.problems``). A draft with visible mistakes is set aside ([] returned: ask
        again) while redraws and LLM calls remain; after the last one, the draft with the
        fewest mistakes (the earliest among equals) goes on as the reply."""
        if not (getattr(self.llm, "is_small_model", False) and self.small_model_redraws > 0
                and all(normalize_language(b.language) == "python" for b in blocks)):
            return blocks
        from . import drafts as checks

        blocks = [self._close_brackets(block, emit) for block in blocks]
        known = checks.names_bound_by(s.block.code for t in self.turns for s in t.steps)
        found = [p for b in blocks for p in checks.problems(b.code, turn.instruction, known)]
        if not found:
            return blocks
        drafts.append(_Draft(found, reply.text, blocks))
        self._log("draft_set_aside", turn=turn.index, step=call,
                  code="\n\n".join(b.code for b in blocks), problems=found)
        if len(drafts) <= self.small_model_redraws and call < self.step_limit():
            self.messages.pop()  # the draft's assistant message: the model tries afresh
            emit(Notice(f"Draft {len(drafts)} set aside: {'; '.join(found)}. Asking the "
                        f"model for another (LLM call {call + 1} of {self.step_limit()})."))
            return []
        best = min(drafts, key=lambda d: len(d.problems))
        if best is not drafts[-1]:
            self.messages[-1] = {"role": "assistant", "content": best.text}
        emit(Notice(f"No draft without visible mistakes; proposing draft "
                    f"{drafts.index(best) + 1} ({'; '.join(best.problems)}).", "warning"))
        return best.blocks

    def _close_brackets(self, block: CodeBlock, emit: EventSink) -> CodeBlock:
        """A small model's block whose only mistake is a bracket left open, closed (in the
        conversation too, so the model sees the code that runs)."""
        from .drafts import close_brackets

        fixed = close_brackets(block.code)
        if fixed is None:
            return block
        last = self.messages[-1]
        if last.get("role") == "assistant" and isinstance(last.get("content"), str):
            last["content"] = last["content"].replace(block.code, fixed, 1)
        emit(Notice("Closed a bracket the model left open (its code did not parse)."))
        return dataclasses.replace(block, code=fixed)

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
        stop = False
        for block in blocks:
            record = StepRecord(index=len(turn.steps) + 1, block=block)
            turn.steps.append(record)
            if stop:
                record.status = "stopped"
                record.feedback = "Not run: the user stopped this instruction."
            else:
                run_all, stop = await self._run_step(turn, record, run_all, emit)
            self._answer_tool_call(block.tool_call_id, record.feedback, feedback)
        answered = {b.tool_call_id for b in blocks}
        for call in reply.tool_calls:  # calls that gave no block: say what was wrong
            if call.id not in answered:
                self._answer_tool_call(call.id, "\n".join(problems) or "Unknown tool.", feedback)
        if problems and not reply.tool_calls:  # markdown mode: a block cut by the token limit
            feedback.extend(problems)
            emit(Notice(CUT_BLOCK_NOTICE, "warning"))
        if feedback:  # markdown mode: one user message with every result
            self.messages.append({"role": "user", "content": "\n\n".join(feedback)})
        self._show_images(turn.steps[len(turn.steps) - len(blocks):])
        return run_all, stop

    def _show_images(self, records: list[StepRecord]) -> None:
        """Vision models see the images the steps displayed (as a user message after the
        results, since tool results are text); others get the '[image ...]' description."""
        images = [
            f"data:{mime};base64,{data.strip()}"
            for r in records for o in r.outputs
            for mime, data in (o.get("data") or {}).items()
            if mime in ("image/png", "image/jpeg") and isinstance(data, str)
        ][: self.max_images]
        if images and self.llm.supports_vision():
            parts: list[dict[str, Any]] = [
                {"type": "text", "text": "The images displayed by the code above:"}]
            parts += [{"type": "image_url", "image_url": {"url": url}} for url in images]
            self.messages.append({"role": "user", "content": parts})

    async def _run_step(
        self, turn: Turn, record: StepRecord, run_all: bool, emit: EventSink
    ) -> tuple[bool, bool]:
        block = record.block
        language = normalize_language(block.language)
        flags = _review(language or block.language, block.code)
        request = ApprovalRequest(
            turn.index, record.index, block, flags, getattr(self.executor, "sandboxed", False)
        )
        self._log(
            "code_proposed",
            turn=turn.index,
            step=record.index,
            language=block.language,
            code=block.code,
            sha256=code_hash(block.code),
            flags=[dataclasses.asdict(f) for f in flags],
        )
        if language is None or language not in self.offered_languages():
            record.status = "refused"
            record.feedback = (
                f"Language '{block.language}' is not available here. Use one of: "
                + ", ".join(self.offered_languages())
                + "."
            )
            emit(Notice(record.feedback, "warning"))
            return run_all, False
        emit(CodeProposed(request, self._needs_approval(request, run_all)))
        decision = await self._decide(request, run_all)
        record.decision = decision
        self._log(
            "decision",
            turn=turn.index,
            step=record.index,
            action=decision.label,
            code=decision.code if decision.action == "run" else "",
            sha256=code_hash(decision.code) if decision.action == "run" else "",
            reason=decision.reason,
            by=decision.by,
        )
        emit(Decided(record))
        if decision.action != "run":
            record.status = "stopped" if decision.action == "stop" else "skipped"
            why = f" Reason: {decision.reason}" if decision.reason else ""
            record.feedback = (
                "The user stopped this instruction; the code was not run." + why
                if decision.action == "stop"
                else "The user declined to run this code." + why
            )
            return run_all, decision.action == "stop"
        await self._execute(
            turn,
            record,
            CodeBlock(language, decision.code, block.tool_call_id),
            _format_flags(flags),
            emit,
        )
        emit(StepDone(record))
        return run_all or decision.run_all, False

    def _needs_approval(self, request: ApprovalRequest, run_all: bool) -> bool:
        if self.approval == "never" or run_all:
            return False
        return not (self.approval == "risky" and not request.flags)

    async def _decide(self, request: ApprovalRequest, run_all: bool) -> Decision:
        if not self._needs_approval(request, run_all):
            return Decision("run", request.block.code, by="auto")
        return await self.approver.decide(request)

    async def _execute(
        self,
        turn: Turn,
        record: StepRecord,
        block: CodeBlock,
        flags: str,
        emit: EventSink | None = None,
    ) -> None:
        started = time.monotonic()
        try:
            result = await self._run_with_timeout(block)
        except asyncio.CancelledError:
            record.status = "interrupted"
            record.duration_s = time.monotonic() - started
            record.feedback = prompts.step_feedback("interrupted", "")
            self._log_execution(turn, record, block)
            raise
        record.duration_s = time.monotonic() - started
        if result is None:  # the step timeout stopped it (the executor interrupted the child)
            record.status = "interrupted"
            record.feedback = prompts.step_feedback(
                "timeout", timeout_feedback(self.step_timeout), flags
            )
            if emit is not None:
                emit(Notice(timeout_notice(self.step_timeout), "warning"))
            self._log_execution(turn, record, block)
            return
        record.status = result.status
        record.outputs = result.outputs
        if result.status == "died" and emit is not None:
            emit(Notice(result.message, "error"))  # the user sees it too, not only the model
        from .outputs import outputs_to_text
        from .redact import redact, secret_values_from_env

        text = result.message or outputs_to_text(result.outputs, max_chars=self.max_output_chars)
        small = getattr(self.llm, "is_small_model", False)
        if small and not result.message:  # the failing line and the error, not the traceback
            text = prompts.small_model_output_text(result.outputs, block.code,
                                                   self.max_output_chars)
        text = redact(text, [*self.llm.secrets(), *secret_values_from_env()])  # before the LLM
        record.feedback = prompts.step_feedback(result.status, text, flags, block.code, small)
        self._log_execution(turn, record, block)

    async def _run_with_timeout(self, block: CodeBlock) -> ExecResult | None:
        """The executor's result, or None when ``step_timeout`` expired first.

        On expiry the run is cancelled, which the executor turns into an interrupt
        of the child (and a restart if it will not stop). A cancellation from
        outside (the user's interrupt) still propagates.
        """
        if not self.step_timeout:
            return await self.executor.run(block)
        task = asyncio.ensure_future(self.executor.run(block))
        expired = False

        def expire() -> None:
            nonlocal expired
            expired = True
            task.cancel()

        timer = asyncio.get_running_loop().call_later(self.step_timeout, expire)
        try:
            return await task
        except asyncio.CancelledError:
            if expired and task.cancelled():
                return None
            raise
        finally:
            timer.cancel()

    def _cap_notice(self, turn: Turn) -> str:
        """The message for a token or cost cap this turn or the session reached; "" if none."""
        caps = Caps(
            self.max_tokens_per_turn,
            self.max_cost_per_turn,
            self.max_tokens_per_session,
            self.max_cost_per_session,
        )
        return cap_notice(caps, turn.usage, self.usage)

    def _log_execution(self, turn: Turn, record: StepRecord, block: CodeBlock) -> None:
        self._log(
            "execution",
            turn=turn.index,
            step=record.index,
            language=block.language,
            code=block.code,
            sha256=code_hash(block.code),
            status=record.status,
            outputs=record.outputs,
            duration_s=round(record.duration_s, 4),
            feedback=record.feedback,
        )

    # ------------------------------------------------------------ messages
    def _answer_tool_call(self, call_id: str | None, text: str, feedback: list[str]) -> None:
        """A tool result message (tool mode), or text for the next user message (markdown)."""
        if call_id:
            self.messages.append({"role": "tool", "tool_call_id": call_id, "content": text})
        else:
            feedback.append(text)

    def _close_open_tool_calls(self, text: str) -> None:
        """Every tool call needs a result, or the next request is invalid."""
        while (call_id := _first_unanswered(self.messages)) is not None:
            self.messages.append({"role": "tool", "tool_call_id": call_id, "content": text})


REDRAW_TEMPERATURE = 0.5  # a new draft after one was set aside: near the greedy answer


@dataclass
class _Draft:
    """A small model's reply whose code showed mistakes before it ran."""

    problems: list[str]
    text: str
    blocks: list[CodeBlock]


def _small_model_done(llm: Any, turn: Turn, new_steps: int) -> bool:
    """Small models cannot tell when a task is done (shown its output, SmolLM2 writes more
    code): for them, a reply whose code all ran without error and showed output ends the
    turn. An error or a silent run is fed back so the model can fix it, unless it just
    repeated code that already ran in this turn (with greedy decoding it would repeat it
    until the step cap)."""
    if not getattr(llm, "is_small_model", False) or new_steps == 0:
        return False
    new, earlier = turn.steps[-new_steps:], turn.steps[:-new_steps]
    if all(step.status == "ok" for step in new) and not any(
        prompts.shows_no_result(step.feedback) for step in new
    ):
        return True
    tried = {step.block.code.strip() for step in earlier}
    return any(step.block.code.strip() in tried for step in new)


def _assistant_tool_message(reply: Reply) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": reply.text or None,
        "tool_calls": [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in reply.tool_calls
        ],
    }


def _first_unanswered(messages: list[dict[str, Any]]) -> str | None:
    """The id of the first tool call of the last assistant message that has no result."""
    for i in range(len(messages) - 1, -1, -1):
        msg = messages[i]
        if msg.get("role") == "assistant":
            answered = {m.get("tool_call_id") for m in messages[i + 1 :] if m.get("role") == "tool"}
            for call in msg.get("tool_calls") or []:
                if call["id"] not in answered:
                    return call["id"]
            return None
    return None


def _review(language: str, code: str) -> list[Any]:
    try:
        from .risk import review

        return review(language, code)
    except Exception:  # a reviewer bug must not block the user's work (tests catch it)
        return []


def _format_flags(flags: list[Any]) -> str:
    if not flags:
        return ""
    from .risk import format_flags

    return format_flags(flags)
