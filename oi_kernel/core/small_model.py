"""How the turn loop treats the model: one handling object instead of checks spread through it.

``ModelHandling`` is the default for a capable model and changes nothing. A small model
(``SmallModelHandling``) cannot be trusted the same way, so the loop gets help at five
points: fewer LLM calls per instruction; worked examples close to the instruction in the
request (with the instruction's values named); its drafts checked before anyone is asked
to approve them (set aside and redrawn when the code visibly cannot be right, brackets it
left open closed); compact error feedback; and the turn ended once its code ran cleanly
and showed a result (such a model does not know when it is done).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from oi_kernel.core import codeblocks, dialects, examples, prompts
from oi_kernel.core import drafts as checks
from oi_kernel.core.consensus import Tally, code_key, sampling_plan
from oi_kernel.core.conversation import Conversation
from oi_kernel.core.events import DraftSetAside, DraftsSampled, EventSink, Notice
from oi_kernel.core.model import Model
from oi_kernel.core.output_text import outputs_to_text
from oi_kernel.core.types import CodeBlock, Reply, Turn
from oi_kernel.errors import LLMError
from oi_kernel.languages import normalize_language

REDRAW_TEMPERATURE = 0.5  # a new draft after one was set aside: near the greedy answer
MIN_SAMPLES = 4  # fewer samples than this seldom change the choice (benchmarks/SMALL_MODEL.md)
Sampler = Callable[[dict[str, Any]], Awaitable[Reply]]


@dataclass
class Draft:
    """A small model's reply whose code showed mistakes before it ran."""

    problems: list[str]
    text: str
    blocks: list[CodeBlock]


class ModelHandling:
    """A capable model: the loop as it is."""

    small = False

    def __init__(self, settings: Any, turns: Sequence[Turn] = ()) -> None:
        self.settings = settings  # the turn's settings (core.settings.TurnSettings)
        self.turns = turns  # the session's turns so far (the engine's)

    def step_limit(self) -> int:
        """LLM calls allowed for one instruction."""
        return self.settings.max_steps

    def step_limit_setting(self) -> str:
        """Where the user raises ``step_limit``."""
        return "OI_MAX_STEPS / c.Engine.max_steps"

    def prepare_request(self, request: list[dict[str, Any]], conversation: Conversation,
                        instruction: str) -> list[dict[str, Any]]:
        """The request as sent (after the context budget was applied)."""
        return request

    def sampling(self, redraw: int) -> dict[str, Any] | None:
        """Request parameters for the ``redraw``-th new draft (0: the first)."""
        return None

    async def consensus(self, turn: Turn, call: int, reply: Reply, blocks: list[CodeBlock],
                        sample: Sampler, conversation: Conversation,
                        emit: EventSink) -> tuple[Reply, list[CodeBlock]]:
        """The reply and blocks to go on with, after comparing the reply with more samples
        of the same request (``sample`` draws one)."""
        return reply, blocks

    def review_drafts(self, turn: Turn, call: int, reply: Reply, blocks: list[CodeBlock],
                      drafts: list[Draft], conversation: Conversation,
                      emit: EventSink) -> list[CodeBlock]:
        """The blocks to propose; [] asks the model again."""
        return blocks

    def output_text(self, outputs: list[dict[str, Any]], code: str, max_chars: int) -> str:
        """What the model reads of a step's outputs."""
        return outputs_to_text(outputs, max_chars=max_chars)

    def turn_done(self, turn: Turn, new_steps: int) -> bool:
        """Whether the turn ends after these steps without asking the model again."""
        return False


class SmallModelHandling(ModelHandling):
    """A small local model (``local/...``): see the module docstring."""

    small = True

    def step_limit(self) -> int:
        return max(1, min(self.settings.max_steps, self.settings.small_model_max_steps))

    def step_limit_setting(self) -> str:
        if self.step_limit() < self.settings.max_steps:
            return "OI_SMALL_MODEL_MAX_STEPS / c.Engine.small_model_max_steps"
        return super().step_limit_setting()

    def prepare_request(self, request: list[dict[str, Any]], conversation: Conversation,
                        instruction: str) -> list[dict[str, Any]]:
        """Worked examples close to the current instruction, as user/assistant pairs just
        before it (the tail is never cut), with the built-in prompt only."""
        if not conversation.turn_starts or self.settings.system_message.strip():
            return request
        start = conversation.turn_starts[-1]
        if start >= len(conversation):
            return request
        at = len(request) - (len(conversation) - start)
        shown = examples.closest(instruction, self.settings.small_model_examples)
        task = request[at]
        content = task.get("content")
        if isinstance(content, str) and content.startswith(instruction) and shown:
            # the instruction as the examples show tasks: its values named (only here, in
            # the request; the conversation keeps what the user wrote)
            content = examples.task_with_names(instruction) + content[len(instruction):]
            task = {**task, "content": content}
        return [*request[:at], *shown, task, *request[at + 1:]]

    def sampling(self, redraw: int) -> dict[str, Any] | None:
        return {"temperature": REDRAW_TEMPERATURE, "seed": redraw} if redraw else None

    def review_drafts(self, turn: Turn, call: int, reply: Reply, blocks: list[CodeBlock],
                      drafts: list[Draft], conversation: Conversation,
                      emit: EventSink) -> list[CodeBlock]:
        """Python code is checked before anyone is asked to approve it (``drafts.problems``).
        A draft with visible mistakes is set aside ([] returned: ask again) while redraws
        and LLM calls remain; after the last one, the draft with the fewest mistakes (the
        earliest among equals) goes on as the reply."""
        redraws = self.settings.small_model_redraws
        if not _all_python(blocks):
            return blocks
        if self.settings.small_model_samples > 0:  # the samples were the redraws
            return [_close_brackets(block, conversation, emit) for block in blocks]
        if redraws <= 0:
            return blocks
        blocks = [_close_brackets(block, conversation, emit) for block in blocks]
        found = self._visible_problems(turn, blocks)
        if not found:
            return blocks
        drafts.append(Draft(found, reply.text, blocks))
        emit(DraftSetAside(turn.index, call, "\n\n".join(b.code for b in blocks), found))
        if len(drafts) <= redraws and call < self.step_limit():
            conversation.drop_last()  # the draft's assistant message: the model tries afresh
            emit(Notice(f"Draft {len(drafts)} set aside: {'; '.join(found)}. Asking the "
                        f"model for another (LLM call {call + 1} of {self.step_limit()})."))
            return []
        best = min(drafts, key=lambda d: len(d.problems))
        if best is not drafts[-1]:
            conversation.messages[-1] = {"role": "assistant", "content": best.text}
        emit(Notice(f"No draft without visible mistakes; proposing draft "
                    f"{drafts.index(best) + 1} ({'; '.join(best.problems)}).", "warning"))
        return best.blocks

    async def consensus(self, turn: Turn, call: int, reply: Reply, blocks: list[CodeBlock],
                        sample: Sampler, conversation: Conversation,
                        emit: EventSink) -> tuple[Reply, list[CodeBlock]]:
        """Self-consistency (``core.consensus``): up to ``small_model_samples`` more drafts
        of the same request, and the Python code most drafts without visible mistakes agree
        on goes on (the first, greedy, one among equals). A draft repeating code that
        already failed in this instruction counts as a mistake. Sampling stops once the
        choice is settled, after ``small_model_sample_seconds``, or at an LLM error. A
        model too slow for ``MIN_SAMPLES`` replies within that time is not sampled at all
        (the first reply's time is the measure): a few samples would cost time and rarely
        change the choice."""
        count = self.settings.small_model_samples
        if count <= 0 or reply.tool_calls or not _all_python(blocks):
            return reply, blocks
        budget = self.settings.small_model_sample_seconds
        if reply.latency_s > 0 and budget / reply.latency_s < MIN_SAMPLES:
            emit(DraftsSampled(turn.index, call, {"reply_s": round(reply.latency_s, 3),
                                                  "budget_s": budget}, "skipped"))
            return reply, blocks
        problems = self._draft_problems(turn)
        tally = Tally(planned=count + 1)
        tally.add(reply.text, blocks, problems(blocks))
        started = time.monotonic()
        error = await _draw(tally, sample, count, started + budget, problems)
        if error:
            emit(DraftsSampled(turn.index, call, {"error": error}, "error"))
        best = tally.winner()
        emit(DraftsSampled(turn.index, call, {
            "drawn": tally.drawn, "seconds": round(time.monotonic() - started, 3),
            "chosen": tally.candidates.index(best),
            "drafts": [{"code": "\n\n".join(b.code for b in c.blocks), "votes": c.votes,
                        "problems": c.problems} for c in tally.candidates]}))
        if best.problems:
            which = ("the first draft" if best is tally.candidates[0]
                     else f"the code {tally.summary()} agree on")
            emit(Notice(f"None of the {tally.drawn} drafts is without visible mistakes; "
                        f"proposing {which} ({'; '.join(best.problems)}).", "warning"))
        if best is tally.candidates[0]:
            return reply, blocks
        conversation.messages[-1] = {"role": "assistant", "content": best.text}
        emit(Notice(f"Proposing the code {tally.summary()} agree on (small-model mode), "
                    "not the model's first draft."))
        return dataclasses.replace(reply, text=best.text), best.blocks

    def _draft_problems(self, turn: Turn) -> Callable[[list[CodeBlock]], list[str]]:
        """What is visibly wrong with a draft's blocks: no Python code, mistakes the checks
        see (its brackets closed first), code that already failed in this instruction."""
        known = self._known_names()
        failed = {code_key([s.block]) for s in turn.steps
                  if s.status != "ok" or prompts.shows_no_result(s.feedback)}

        def problems(found: list[CodeBlock]) -> list[str]:
            if not found or not _all_python(found):
                return ["it has no Python code"]
            fixed = [dataclasses.replace(b, code=checks.close_brackets(b.code) or b.code)
                     for b in found]
            listed = self._visible_problems(turn, fixed, known)
            if any(code_key([b]) in failed for b in fixed):
                listed.append("it repeats code that already ran in this instruction without "
                              "a result")
            return listed

        return problems

    def _known_names(self) -> set[str]:
        """Names the session's earlier code defined (a draft may read them)."""
        return checks.names_bound_by(s.block.code for t in self.turns for s in t.steps)

    def _visible_problems(self, turn: Turn, blocks: list[CodeBlock],
                          known: set[str] | None = None) -> list[str]:
        """What ``drafts.problems`` finds in the blocks as an answer to the turn."""
        names = self._known_names() if known is None else known
        return [p for b in blocks for p in checks.problems(b.code, turn.instruction, names)]

    def output_text(self, outputs: list[dict[str, Any]], code: str, max_chars: int) -> str:
        """The failing line and the error, not the traceback."""
        return prompts.small_model_output_text(outputs, code, max_chars)

    def turn_done(self, turn: Turn, new_steps: int) -> bool:
        """A reply whose code all ran without error and showed output ends the turn (shown
        its output, SmolLM2 writes more code). An error or a silent run is fed back so the
        model can fix it, unless it just repeated code that already ran in this turn (with
        greedy decoding it would repeat it until the step cap)."""
        if new_steps == 0:
            return False
        new, earlier = turn.steps[-new_steps:], turn.steps[:-new_steps]
        if all(step.status == "ok" for step in new) and not any(
            prompts.shows_no_result(step.feedback) for step in new
        ):
            return True
        tried = {step.block.code.strip() for step in earlier}
        return any(step.block.code.strip() in tried for step in new)


def _all_python(blocks: list[CodeBlock]) -> bool:
    return all(normalize_language(b.language) == "python" for b in blocks)


def _close_brackets(block: CodeBlock, conversation: Conversation, emit: EventSink) -> CodeBlock:
    """A block whose only mistake is a bracket left open, closed (in the conversation too,
    so the model sees the code that runs)."""
    fixed = checks.close_brackets(block.code)
    if fixed is None:
        return block
    last = conversation.messages[-1]
    if last.get("role") == "assistant" and isinstance(last.get("content"), str):
        last["content"] = last["content"].replace(block.code, fixed, 1)
    emit(Notice("Closed a bracket the model left open (its code did not parse)."))
    return dataclasses.replace(block, code=fixed)


def handling_for(llm: Model, settings: Any, turns: Sequence[Turn] = ()) -> ModelHandling:
    """The handling of the engine's current model, its ``settings`` and ``turns``."""
    kind = SmallModelHandling if llm.is_small_model else ModelHandling
    return kind(settings, turns)


async def _draw(tally: Tally, sample: Sampler, count: int, deadline: float,
                problems: Callable[[list[CodeBlock]], list[str]]) -> str:
    """Draw up to ``count`` more drafts into ``tally`` until the choice is settled or the
    ``deadline`` (``time.monotonic()``) passed; an LLM error's text stops it ("" if none)."""
    for params in sampling_plan(count):
        if time.monotonic() > deadline or tally.settled():
            break
        try:
            text = (await sample(params)).text
        except LLMError as exc:
            return str(exc)
        found = codeblocks.extract_code_blocks(text)
        if not found and (bare := dialects.bare_code(text)):
            found = [bare]
        tally.add(text, found, problems(found))
    return ""
