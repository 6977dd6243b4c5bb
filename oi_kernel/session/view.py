"""Renders engine events as Jupyter display messages, for any frontend.

The view knows nothing about kernels: it is handed a ``send_iopub(msg_type,
content)`` callable. It has two ways to show the model's reply as it streams:

- live (JupyterLab, Notebook 7, VS Code): one display per LLM reply, updated in place.
  Updates are coalesced, so a fast stream costs a handful of messages per second, not
  one per token. Once a proposed block is shown on its own (the approval card, or the
  step of a block that runs without asking), its copy in the reply is folded to one
  line, so each proposal is on screen once.
- text (jupyter console, nbclient, papermill: clients that do not update displays in
  place, or render only the first version of one): the reply is printed as a stdout
  stream, coalesced the same way, so all of its text is there in order.

The model's reasoning goes into a display of its own, collapsed under "thinking" (live),
or one line saying how long it was (text).

What the model wrote is shown through ``safety.visible``: a hidden character (a bidi
control, an escape sequence, a zero-width space) appears as a marker naming it, in the
streamed reply as in a step's code, so no raw control character reaches a terminal.
"""

from __future__ import annotations

import asyncio
import html
import re
import uuid
from typing import Any

from oi_kernel.core import changes
from oi_kernel.core import events as E
from oi_kernel.core.answer_check import marks_markdown, marks_plain
from oi_kernel.core.codeblocks import block_spans, reply_text
from oi_kernel.core.types import ApprovalRequest, CodeBlock, SendIOPub, StepRecord, Turn
from oi_kernel.safety.visible import visible
from oi_kernel.session.error_view import StepErrors

NO_LONG_MARK = 10**12  # streamed pieces are not whole lines: no long-line note there

DISPLAY_MODES = ("auto", "live", "text")


def markdown_bundle(text: str, plain: str | None = None) -> dict[str, Any]:
    """Markdown and plain text, each with its hidden characters marked (``visible``): the
    model's reply, a step's code, a notice quoting the model."""
    text = visible(text, NO_LONG_MARK)
    plain = visible(plain, NO_LONG_MARK) if plain is not None else text
    return {"text/markdown": text, "text/plain": plain}


_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def plain_text(markdown: str) -> str:
    """What a text frontend (jupyter console, nbclient) shows of a command's markdown: code
    blocks indented by four spaces instead of fenced, headings without their ``#``. Inline
    code keeps its backticks (they mark a path or a name in a sentence)."""
    lines, fence = [], ""
    for line in markdown.split("\n"):
        m = _FENCE_RE.match(line)
        if fence:
            if m and m[1][0] == fence[0] and len(m[1]) >= len(fence) and not line.strip(
                    )[len(m[1]):]:
                fence = ""
            else:
                lines.append("    " + line if line else "")
        elif m:
            fence = m[1]
        else:
            lines.append(re.sub(r"^#{1,6} +", "", line))
    return "\n".join(lines)


def say_bundle(markdown: str) -> dict[str, Any]:
    """A command's answer: markdown for notebooks, ``plain_text`` for text frontends."""
    return markdown_bundle(markdown, plain_text(markdown))


def code_markdown(language: str, code: str) -> str:
    fence = "````" if "```" in code else "```"
    return f"{fence}{language}\n{code}\n{fence}"


RECOGNISED_NOTE = "recognised as code (the reply had no code fence or tool call)"


def thinking_bundle(text: str, done: bool) -> dict[str, Any]:
    """The reasoning, collapsed under a "thinking" summary (HTML); one line as plain text."""
    words = len(text.split())
    label = f"thinking · {words:,} words" if done else f"thinking… · {words:,} words"
    body = (f'<details class="oi-thinking"><summary style="cursor:pointer;color:#777">'
            f'{label}</summary><pre style="white-space:pre-wrap;color:#777;margin:4px 0">'
            f"{html.escape(visible(text.strip(), NO_LONG_MARK))}</pre></details>")
    return {"text/html": body, "text/plain": f"[{label}]" if done else "[thinking…]"}


def live_display(mode: str, widgets: bool) -> bool:
    """Whether replies are updated in place: ``mode`` "live" or "text", or "auto": live when
    the frontend renders widgets (a notebook UI), as text otherwise (a terminal, nbclient)."""
    return widgets if mode == "auto" else mode == "live"


def folded(language: str, code: str, step: int) -> str:
    """What a block's place in the reply says once the block is shown as its step."""
    n = code.count("\n") + 1
    return f"\n*▸ {language}, {n} line{'s' if n != 1 else ''}: step {step}, below*\n\n"


class _ShownReply:
    """A finished reply in a live display, whose blocks can be folded one by one."""

    def __init__(self, display_id: str, text: str) -> None:
        self.display_id = display_id
        self.text = reply_text(text)  # (the same as ``text`` unless a dialect's calls)
        self.spans: list[tuple[int, int, CodeBlock]] = block_spans(self.text)
        self.folds: dict[int, str] = {}  # span index -> its one-line replacement
        self.sent = text  # what the display shows (as last sent)

    def fold(self, request: ApprovalRequest) -> bool:
        """Fold the first unfolded block with the request's code; False when none has it."""
        for i, (_, _, block) in enumerate(self.spans):
            if i not in self.folds and block.code.strip() == request.block.code.strip():
                self.folds[i] = folded(request.block.language, request.block.code, request.step)
                return True
        return False

    def render(self) -> str:
        parts, pos = [], 0
        for i, (start, end, _) in enumerate(self.spans):
            if i in self.folds:
                parts += [self.text[pos:start], self.folds[i]]
                pos = end
        return "".join([*parts, self.text[pos:]])


class TurnView:
    """One cell's rendering of a turn.

    ``live``: update the reply's display in place (else print it as a stream).
    ``pieces``: print the reply as it arrives (someone watches), else whole once complete
    (a batch run: nbclient saves each stream message as an output of its own).
    ``shows_code``: show a block that needs approval (False when the approver shows it
    itself: the card, or the stdin prompt).
    ``compact_errors``: show a step's error compactly (the executor held the child's own
    error message back: ``ChildRunner.hold_errors``), in full when the turn ends on it.
    """

    def __init__(self, send_iopub: SendIOPub, *, coalesce_s: float = 0.05, shows_code: bool = True,
                 live: bool = True, pieces: bool = True, settle_s: float = 0.5,
                 compact_errors: bool = False):
        self.send_iopub = send_iopub
        self.coalesce_s = coalesce_s
        self.settle_s = settle_s
        self.shows_code = shows_code
        self.live = live
        self.pieces = pieces
        self._text = ""  # this reply so far (live), or what is still to print (text)
        self._printed = ""  # the end of what was printed (text): does it end a line?
        self._display_id: str | None = None
        self._started = False  # this reply's first words were sent
        self._last_sent = ""  # the reply's text as last sent (live)
        self._thinking = ""  # this reply's reasoning so far
        self._thought_id: str | None = None  # its display (live)
        self._thought_sent: tuple[str, bool] = ("", False)  # (text, done) as last shown
        self._flush_handle: asyncio.TimerHandle | None = None
        self._reply: _ShownReply | None = None  # the last finished reply (live)
        self._reply_handle: asyncio.Handle | None = None  # its update, due this iteration
        self._settle_handle: asyncio.TimerHandle | None = None  # its update sent again
        self._printed_blocks: list[str] = []  # code of blocks printed in the last reply (text)
        self._errors = StepErrors(send_iopub, live) if compact_errors else None
        self.updates_sent = 0

    # ------------------------------------------------------------ streaming text
    def _flush(self) -> None:
        self._flush_handle = None
        self._send_thinking(done=bool(self._text.strip()))
        self._send_text()

    def _send_thinking(self, done: bool) -> None:
        """The reasoning's own display (live); one line once the reply ends (text)."""
        text = self._thinking
        if not text.strip() or (text, done) == self._thought_sent:
            return
        if not self.live:  # one line, before the answer's first words
            if done and not self._thought_sent[1]:
                line = f"[thinking · {len(text.split()):,} words]\n"
                self.send_iopub("stream", {"name": "stdout", "text": line})
                self._thought_sent = (text, done)
                self.updates_sent += 1
            return
        content = {"data": thinking_bundle(text, done), "metadata": {}}
        kind = "update_display_data" if self._thought_id else "display_data"
        self._thought_id = self._thought_id or uuid.uuid4().hex
        content["transient"] = {"display_id": self._thought_id}
        self._thought_sent = (text, done)
        self.send_iopub(kind, content)
        self.updates_sent += 1

    def _send_text(self) -> None:
        self._flush_handle = None
        if not self._text or (self.live and self._text == self._last_sent):
            return
        if not self.live:
            self.send_iopub("stream", {"name": "stdout", "text": visible(self._text, NO_LONG_MARK)})
            self._printed, self._text = self._text, ""
        elif self._display_id is None:
            self._last_sent = self._text
            self._display_id = uuid.uuid4().hex
            self.send_iopub("display_data", self._reply_content(self._text, self._display_id))
        else:
            self._last_sent = self._text
            self.send_iopub("update_display_data",
                         self._reply_content(self._text, self._display_id))
        self.updates_sent += 1

    @staticmethod
    def _reply_content(text: str, display_id: str) -> dict[str, Any]:
        return {"data": markdown_bundle(text), "metadata": {},
                "transient": {"display_id": display_id}}

    def _on_thinking(self, text: str) -> None:
        first = not self._thinking.strip()
        self._thinking += text
        if not self.live:
            return  # one line when the reply ends
        if first and self._thinking.strip():
            self._send_thinking(done=False)  # shows at once
        elif self._flush_handle is None:
            loop = asyncio.get_running_loop()
            self._flush_handle = loop.call_later(self.coalesce_s, self._flush)

    def _on_delta(self, text: str) -> None:
        self._text += text
        if not (self.live or self.pieces):
            return  # printed whole at the end of the reply
        if not self._started:
            self._started = True
            self._flush()  # the first words show at once
        elif self._flush_handle is None:
            loop = asyncio.get_running_loop()
            self._flush_handle = loop.call_later(self.coalesce_s, self._flush)

    def _end_reply(self, text: str | None = None, reasoning: str | None = None) -> None:
        """Flush the reply; with the complete reply, show its final split (a lone
        ``</think>`` turns what streamed as answer into reasoning)."""
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        if reasoning is not None and reasoning.strip() != self._thinking.strip():
            self._thinking = reasoning
        replaceable = self.live or not self.pieces  # (text already printed stays)
        if (text is not None and replaceable and text.strip() != self._text.strip()
                and (text.strip() or self._display_id is not None)):
            self._text = text
        self._send_thinking(done=True)
        self._thinking, self._thought_sent, self._thought_id = "", ("", False), None
        if not self.live and self._text and not self._text.endswith("\n"):
            self._text += "\n"
        elif not self.live and not self._text and self._printed[-1:] not in ("", "\n"):
            self._text = "\n"
        if self.live and self._display_id is not None:
            # The last version is sent once the blocks proposed just after this (in the
            # same loop iteration) are folded: one update, not a full one then a folded one.
            self._reply = _ShownReply(self._display_id, self._text)
            self._reply.sent = self._last_sent
            self._show_reply_soon()
        else:
            self._send_text()
        self._text = self._printed = self._last_sent = ""
        self._display_id = None
        self._started = False

    def _show_reply_soon(self) -> None:
        if self._reply_handle is None:
            self._reply_handle = asyncio.get_running_loop().call_soon(self._show_reply)

    def _show_reply(self, again: bool = False) -> None:
        """Send the finished reply's display as it is now (with its folds) if it changed;
        ``again``: even if not (see ``_fold``)."""
        self._reply_handle = None
        reply = self._reply
        if reply is None:
            return
        text = reply.render()
        if text != reply.sent or again:
            reply.sent = text
            self.send_iopub("update_display_data", self._reply_content(text, reply.display_id))
            self.updates_sent += 1

    def _fold(self, request: ApprovalRequest) -> None:
        """The block is shown as its own step now: fold its copy in the reply (live).

        JupyterLab renders markdown asynchronously and an earlier, slower render (the code
        is highlighted) can finish after a later one, leaving the display stale: the folded
        version is sent once more ``settle_s`` later, or when the turn ends if sooner."""
        reply = self._reply
        if reply is None or not reply.fold(request):
            return
        self._show_reply_soon()
        if self._settle_handle is not None:
            self._settle_handle.cancel()
        self._settle_handle = asyncio.get_running_loop().call_later(
            self.settle_s, self._settle)

    def _settle(self) -> None:
        self._settle_handle = None
        self._show_reply(again=True)

    def _finish_reply(self) -> None:
        """The turn ended: what is still due for the last reply is sent now."""
        if self._reply_handle is not None:
            self._reply_handle.cancel()
            self._show_reply()
        if self._settle_handle is not None:
            self._settle_handle.cancel()
            self._settle()
        self._reply = None

    def _show_changes(self, record: StepRecord) -> None:
        """What the step changed: added to the decided record when a card showed one (it
        stays in the saved notebook), else shown under the step."""
        shown = changes.for_cell(record.changes)
        if shown is None:
            return
        markup, plain = shown
        metadata = {"oi": {"changes": record.changes}}
        at = record.decision.shown if record.decision is not None else None
        if at:
            data = {"text/html": at["html"] + markup, "text/plain": f"{at['plain']}\n{plain}"}
            self.send_iopub("update_display_data", {
                "data": data, "metadata": metadata,
                "transient": {"display_id": at["display_id"]}})
        else:
            self.send_iopub("display_data", {"data": {"text/html": markup, "text/plain": plain},
                                          "metadata": metadata})

    # ------------------------------------------------------------ other events
    def show_markdown(self, text: str, plain: str | None = None) -> None:
        self.send_iopub("display_data", {"data": markdown_bundle(text, plain), "metadata": {}})

    def show_tool_outputs(self, outputs: list[dict[str, Any]]) -> None:
        """A tool step's result (code's outputs come from the kernel that ran it)."""
        for out in outputs:
            if out.get("output_type") == "error":
                self.send_iopub("error", {"ename": out.get("ename", "ToolError"),
                                       "evalue": out.get("evalue", ""),
                                       "traceback": out.get("traceback", [])})
            else:
                self.send_iopub("display_data", {"data": out.get("data", {}),
                                              "metadata": out.get("metadata", {})})

    def __call__(self, event: E.Event) -> None:
        if isinstance(event, E.TextDelta):
            self._on_delta(event.text)
        elif isinstance(event, E.ReasoningDelta):
            self._on_thinking(event.text)
        elif isinstance(event, E.ReplyDone):
            self._end_reply(event.reply.text, event.reply.reasoning)
            self._note_printed_blocks(event.reply.text)
        elif isinstance(event, E.CodeProposed):
            self._proposed(event)
        elif isinstance(event, E.StepDone) and event.record.block.tool:
            self.show_tool_outputs(event.record.outputs)
        elif isinstance(event, E.Decided) and self.shows_code:
            d = event.record.decision
            if d is not None and d.by != "auto":
                self.show_markdown(f"*Step {event.record.index}: {d.label} by "
                                   f"{visible(d.by)}*")
        elif isinstance(event, E.StepDone):
            if self._errors is not None:
                self._errors.show(event.record)
            self._show_changes(event.record)
        elif isinstance(event, E.Notice):
            icon = {"info": "ℹ️", "warning": "⚠️", "error": "❌"}[event.level]
            self.show_markdown(f"{icon} {event.text}", event.text)
        elif isinstance(event, E.AnswerChecked):
            self._end_reply()
            if marks := marks_markdown(event.check):
                self.send_iopub("display_data", {
                    "data": {"text/markdown": marks, "text/plain": marks_plain(event.check)},
                    "metadata": {"oi": {"answer_check": event.check.to_dict()}}})
        elif isinstance(event, E.TurnDone):
            self._end_reply()
            self._printed_blocks = []
            if self._errors is not None:
                self._errors.finish(event.turn)
            self._finish_reply()
            footer = turn_footer(event.turn)
            if footer:
                self.show_markdown(f"<sub>{footer}</sub>", footer)
        elif line := event.shown():  # any other event with a line to show
            self.show_markdown(f"ℹ️ {line}", line)

    def _note_printed_blocks(self, text: str | None) -> None:
        """Text mode: the blocks the reply just printed shows in full (a step of one of
        them then says "code above" instead of printing it again)."""
        if self.live or not text:
            self._printed_blocks = []
            return
        self._printed_blocks = [b.code.strip() for _, _, b in block_spans(text)]

    def _printed_above(self, code: str) -> bool:
        """Whether ``code`` was printed in the reply above (each printed block counts once)."""
        code = code.strip()
        if code in self._printed_blocks:
            self._printed_blocks.remove(code)
            return True
        return False

    def _proposed(self, event: E.CodeProposed) -> None:
        req = event.request
        if self.live:
            self._fold(req)
        if self.shows_code or not event.needs_approval:
            auto = "" if event.needs_approval else " · ▶️ **runs without asking**"
            bare = f" · 🔎 {RECOGNISED_NOTE}" if req.block.bare else ""
            plain_bare = f" ({RECOGNISED_NOTE})" if req.block.bare else ""
            what = f"🔧 tool {req.tool}" if req.tool else req.block.language
            head = f"**Step {req.step}** · {what}{auto}{bare}"
            plain_head = f"[step {req.step}: {req.tool or req.block.language}]{plain_bare}"
            if not req.tool and self._printed_above(req.block.code):
                self.show_markdown(f"{head} · the code above", f"{plain_head} (the code above)")
                return
            self.show_markdown(f"{head}\n\n" + code_markdown(req.block.language, req.block.code),
                               f"{plain_head}\n{req.block.code}")


def turn_footer(turn: Turn) -> str:
    """One line of totals for a finished turn: calls, tokens, cost, time."""
    if not turn.llm_calls:
        return ""
    import time

    u = turn.usage
    parts = [
        f"{turn.llm_calls} LLM call{'s' if turn.llm_calls != 1 else ''}"
        + (f" + {turn.samples} sample{'s' if turn.samples != 1 else ''}" if turn.samples else ""),
        f"{u.prompt_tokens:,} in / {u.completion_tokens:,} out tokens",
    ]
    if u.cost is not None:
        parts.append(f"${u.cost:.4f}")
    parts.append(f"{time.time() - turn.started:.1f} s")
    return " · ".join(parts)
