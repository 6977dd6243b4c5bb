"""How a decision is asked: the stdin prompt, and a callback for the Python API.

The widget approval card lives in ``card.py``; every approver here only turns a
question into a ``Decision`` and knows nothing about LLMs or kernels. What a terminal is
shown goes through ``safety.visible``: no raw control character reaches it, and every
hidden character is a marker naming it.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from oi_kernel.core import four_eyes, identity
from oi_kernel.core.types import ApprovalRequest, Decision
from oi_kernel.errors import ApprovalUnavailableError
from oi_kernel.safety.visible import LONG_LINE, needs_marking, visible

Ask = Callable[[str], Awaitable[str]]

CHOICES = "[y/N/e(dit)/a(ll)/s(top)]"
CHOICES_VIEW = "[y/N/e(dit)/a(ll)/s(top)/v(iew all)]"
STDIN_PROMPT = f"Run this code? {CHOICES} "
# Under the question's heading when the model's reply was nothing but code (small-model mode).
RECOGNISED_PROMPT = "The reply had no code fence; it was recognised as code."
EDIT_PROMPT = "Replacement code (one line; write \\n for a newline; empty: back): "
HEAD_LINES = 12  # of a long block, the prompt shows this many first lines...
TAIL_LINES = 6  # ...and this many last ones (answer `v` for all of it)
MAX_LINE_CHARS = 240  # a longer line is cut in the summary (`v` shows it whole)
HIDDEN_NOTE = ("⚠ This code holds characters that show differently from what runs; each is "
               "marked ⟦…⟧ below (what runs is unchanged).")


def parse_answer(answer: str) -> str:
    """Map a typed answer to run / skip / edit / all / stop / view."""
    word = answer.strip().lower()
    if word in {"y", "yes", "r", "run"}:
        return "run"
    if word in {"e", "edit"}:
        return "edit"
    if word in {"a", "all", "run all"}:
        return "all"
    if word in {"s", "stop", "q", "quit"}:
        return "stop"
    if word in {"v", "view"}:
        return "view"
    if word in {"p", "preview"}:
        return "preview"
    return "skip"


def _indented(lines: list[str], cut: bool) -> list[str]:
    if cut:
        lines = [ln if len(ln) <= MAX_LINE_CHARS else ln[:MAX_LINE_CHARS] + " …" for ln in lines]
    return ["    " + ln for ln in lines]


def code_excerpt(code: str, full: bool = False) -> tuple[list[str], bool]:
    """The code as indented lines for a terminal prompt, and whether some of it is left out:
    a long block shows its first and last lines and how many are between. Hidden characters
    are shown as markers (``visible``), so a line is cut after they are made visible."""
    lines = visible(code, LONG_LINE).split("\n")
    if full or len(lines) <= HEAD_LINES + TAIL_LINES + 1:
        cut = not full and any(len(ln) > MAX_LINE_CHARS for ln in lines)
        return _indented(lines, not full), cut
    hidden = len(lines) - HEAD_LINES - TAIL_LINES
    gap = f"    … {hidden} more lines (answer v to view all {len(lines)}) …"
    return [*_indented(lines[:HEAD_LINES], True), gap, *_indented(lines[-TAIL_LINES:], True)], True


def flag_lines(flags: list[Any]) -> list[str]:
    """The risk flags as prompt lines ([] when there are none)."""
    if not flags:
        return []
    high = sum(1 for f in flags if f.severity == "high")
    head = f"⚠ {len(flags)} risk flag{'s' if len(flags) != 1 else ''}"
    head += f" ({high} high):" if high else ":"
    return [head, *(f"  - [{f.severity}] {f.category}: "
                    + visible(f.reason if f.reason.startswith(f"line {f.line}:") or not f.line
                              else f"line {f.line}: {f.reason}") for f in flags)]


def approval_prompt(request: ApprovalRequest, full: bool = False) -> str:
    """The whole question for a terminal: step, language, the code (or its first and last
    lines), the risk flags, then the choices. It is one ``input_request``, so a client
    that shows the prompt before earlier output (jupyter console does) still shows what
    is being approved."""
    code = request.block.code
    n = code.count("\n") + 1
    where = "sandboxed" if request.sandboxed else "runs on this machine"
    head = (f"── Step {request.step} · {visible(request.block.language)} · {n} line"
            f"{'s' if n != 1 else ''} · {where} ──")
    if request.tool:
        head = (f"── Step {request.step} · tool {request.tool} · runs on its MCP server ──\n"
                "Arguments (JSON):")
    if request.block.bare:
        head += "\n" + RECOGNISED_PROMPT
    if request.four_eyes:
        author = visible(request.author)
        head += ("\n" + four_eyes.waiting_text(author, request.four_eyes,
                                                request.four_eyes_source)
                 + "\n" + four_eyes.how_to_proceed(request.four_eyes_source))
    if needs_marking(code):
        head += "\n" + HIDDEN_NOTE
    body, cut = code_excerpt(code, full)
    choices = CHOICES_VIEW if cut else CHOICES
    if request.preview is not None and request.preview.available:
        choices = choices[:-1] + "/p(review)]"
    previewed = request.previewed
    body += previewed.lines() if previewed is not None else []
    if request.preview is not None and not request.preview.available:
        body.append(f"(Preview is not available: {request.preview.why_not})")
    # The first line is empty: the question starts on a line of its own, even after a reply
    # the client printed without its last newline.
    question = "Call this tool?" if request.tool else "Run this code?"
    return "\n".join(["", head, *body, *flag_lines(request.flags), f"{question} {choices} "])


def edit_prompt(code: str) -> str:
    """The edit question: the code being replaced (whole), and how to type the new code."""
    lines = ["Editing. The code now:", *_indented(visible(code).split("\n"), False)]
    if needs_marking(code):
        lines.append("(⟦…⟧ marks a hidden character: typed back, a marker is plain text.)")
    if "\n" in code:
        escaped = visible(code).replace("\\", "\\\\").replace("\n", "\\n")
        lines.append(f"As one line (copy, change, paste): {escaped}")
    return "\n".join([*lines, EDIT_PROMPT])


def answerer(answer: str) -> str:
    """Who typed ``answer``: the ``by`` an ``ask`` may attach to it (the input_reply's
    header username, ``session.stdin.Answer``), with ``core.identity``'s fallbacks."""
    return identity.person(getattr(answer, "by", None))


class StdinApprover:
    """Asks on the frontend's stdin (a terminal's prompt); refuses when the request's turn may
    not ask there (``request.allow_stdin``, from the turn's context: the cell's request says).

    Every question carries what it is about (``approval_prompt``): a client may draw
    the prompt before the output that was sent just before it. The decision names who
    answered (``answerer``). Under four-eyes approval a run answered by the instruction's
    author becomes a skip that says why and how to proceed (a terminal has no one else to
    wait for; the question said so before it was answered)."""

    shows_code = True

    def __init__(self, ask: Ask) -> None:
        self.ask = ask

    async def decide(self, request: ApprovalRequest) -> Decision:
        if not request.allow_stdin:
            raise ApprovalUnavailableError()
        decision = await self._ask_until_decided(request)
        if (request.four_eyes and decision.action == "run"
                and identity.same_person(decision.by, request.author)):
            return Decision("skip", by=decision.by, reason=four_eyes.refusal_text(
                request.author, request.four_eyes, request.four_eyes_source))
        return decision

    async def _ask_until_decided(self, request: ApprovalRequest) -> Decision:
        code = original = request.block.code
        full = False
        by = ""
        try:
            while True:
                answer = await self.ask(approval_prompt(request, full))
                by = answerer(answer)
                choice = parse_answer(answer)
                if choice == "view":
                    full = True
                    continue
                if choice == "preview" and request.preview is not None:
                    await request.preview.run(code)
                    continue
                if choice != "edit":
                    break
                answer = await self.ask(edit_prompt(code))
                by = answerer(answer)
                if answer.strip():
                    edited = _unescape(answer)
                    if request.previewed is None:
                        return Decision("run", edited, edited=edited != request.block.code,
                                        by=by)
                    # previewed before: the edit is asked about again (p previews it)
                    code = edited
                    request = replace(request, block=replace(request.block, code=code))
        except EOFError:  # Ctrl-D at the prompt: the user leaves this instruction
            return Decision("stop", reason="Ctrl-D at the prompt", by=by or identity.person())
        if choice in {"run", "all"}:
            return Decision("run", code, run_all=choice == "all", by=by,
                            edited=code != original)
        if choice == "stop":
            return Decision("stop", by=by)
        return Decision("skip", by=by)


def _unescape(line: str) -> str:
    """A one-line edit: ``\\n`` is a newline, ``\\\\`` a backslash."""
    out, i = [], 0
    while i < len(line):
        if line[i] == "\\" and i + 1 < len(line) and line[i + 1] in "n\\":
            out.append("\n" if line[i + 1] == "n" else "\\")
            i += 2
        else:
            out.append(line[i])
            i += 1
    return "".join(out)


class CallbackApprover:
    """Wraps ``approve(request) -> bool | str | Decision`` (sync or async) for the API.

    True runs the code, False skips it, a string runs that string instead. A dict
    ``{"preview": True}`` (or ``{"preview": True, "code": edited}``) previews the code in a
    disposable copy first (``core.preview``) and asks again: ``request.previewed`` then
    holds what it would do.
    """

    shows_code = False

    def __init__(self, approve: Callable[[ApprovalRequest], Any]) -> None:
        self.approve = approve

    async def decide(self, request: ApprovalRequest) -> Decision:
        original = request.block.code
        answer = await self._ask(request)
        while isinstance(answer, dict) and answer.get("preview") and request.preview:
            code = str(answer.get("code") or request.block.code)
            if code != request.block.code:
                request = replace(request, block=replace(request.block, code=code))
            await request.preview.run(code)
            answer = await self._ask(request)
        if isinstance(answer, dict):
            raise ValueError("The approval callback asked for a preview, but previews are off "
                             "(Engine.preview = 'off'); or its dict answer was not "
                             "{'preview': True}. Return True, False, the code to run, or a "
                             "Decision.")
        if isinstance(answer, Decision):
            return answer
        if isinstance(answer, str):
            return Decision("run", answer, edited=answer != original)
        if answer:
            code = request.block.code
            return Decision("run", code, edited=code != original)
        return Decision("skip")


    async def _ask(self, request: ApprovalRequest) -> Any:
        answer = self.approve(request)
        return await answer if inspect.isawaitable(answer) else answer


class RefuseApprover:
    """No way to ask (the API without ``approve``): code that needs approval is not run."""

    async def decide(self, request: ApprovalRequest) -> Decision:
        raise ApprovalUnavailableError()
