"""An answer's numbers checked against the session's steps, and how the result reads.

The engine calls ``check_answer`` when an instruction ends with prose (``c.Engine.
check_answers``); it gathers the sources from the turns' records (``sources``), traces the
answer (``core.claims``) and reports an ``AnswerChecked`` event. Front doors show the
check with ``marks_markdown`` (notebooks: a footnote line whose numbers name their step,
the printed value on hover) or ``marks_plain`` (terminals, the API, ACP: a compact list).
An untraced number always reads ``23% — not in any output``; an answer whose numbers all
trace gets one quiet line.
"""

from __future__ import annotations

import html
from collections.abc import Awaitable, Callable
from typing import Any

from oi_kernel.core.claims import Check, Claim, Source, source_of, trace
from oi_kernel.core.events import AnswerChecked, EventSink, Notice
from oi_kernel.core.types import StepRecord, Turn

NOT_FOUND = "not in any output"
CHECK_MODES = ("mark", "ask-model", "off")


def output_text(outputs: list[dict[str, Any]]) -> str:
    """The text a step printed: streams, text/plain (else markdown) of displays and results,
    an error's name and message."""
    parts: list[str] = []
    for o in outputs:
        kind = o.get("output_type")
        if kind == "stream":
            parts.append(_join(o.get("text")))
        elif kind in ("display_data", "execute_result"):
            data = o.get("data") or {}
            parts.append(_join(data.get("text/plain") or data.get("text/markdown") or ""))
        elif kind == "error":
            parts.append(f"{o.get('ename', '')}: {o.get('evalue', '')}")
    return "\n".join(parts)


def _join(value: Any) -> str:
    return "".join(str(v) for v in value) if isinstance(value, list) else str(value or "")


def _change_text(changes: dict[str, Any] | None) -> str:
    if not changes:
        return ""
    lines = [f"{v.get('name')}: {v.get('before', '')} {v.get('after', '')}"
             for v in changes.get("variables") or []]
    lines += [f"{f.get('path')} {f.get('size', '')} {f.get('before_size', '')}"
              for f in changes.get("files") or []]
    return "\n".join(lines)


def step_sources(turn: int, record: StepRecord) -> list[Source]:
    """What one step offers: its output, its change summary, the code that ran."""
    found = []
    if record.outputs:
        found.append(source_of(turn, record.index, output_text(record.outputs)))
    if record.changes:
        found.append(Source(turn, record.index, _change_text(record.changes), "changes"))
    code = record.code_ran
    if code:
        found.append(Source(turn, record.index, code, "code"))
    return found


def sources(turns: list[Turn], current: Turn) -> tuple[list[Source], list[Source]]:
    """(this instruction's sources, the earlier instructions' sources, latest first)."""
    mine = [s for r in current.steps for s in step_sources(current.index, r)]
    earlier = [s for t in reversed(turns) if t is not current
               for r in t.steps for s in step_sources(t.index, r)]
    return mine, earlier


def check_answer(answer: str, turns: list[Turn], current: Turn) -> Check:
    mine, earlier = sources(turns, current)
    return trace(answer, current.instruction, mine, earlier, turn=current.index)


# ----------------------------------------------------------------------------- showing it
def where(claim: Claim, turn: int) -> str:
    """"step 2", or "instruction 1, step 2" for an earlier instruction's step."""
    f = claim.found
    if f is None:
        return NOT_FOUND
    place = f"step {f.step}" if f.turn == turn else f"instruction {f.turn}, step {f.step}"
    if f.where == "changes":
        place += " (changes)"
    elif f.where == "code":
        place += " (code)"
    return place


def _detail(claim: Claim, turn: int) -> str:
    f = claim.found
    if f is None:
        return ""
    how = {"exact": "printed", "rounded": "printed", "share": "printed the share",
           "converted": "printed"}[f.how]
    return f"{where(claim, turn)} {how} {f.printed}"


MANY = 8  # more untraced numbers than this share one line


def _untraced_texts(untraced: list[Claim]) -> list[str]:
    """One entry per untraced number, or one for all when there are many (an answer with
    hundreds of numbers stays readable)."""
    if len(untraced) <= MANY:
        return [c.text for c in untraced]
    shown = ", ".join(c.text for c in untraced[:30])
    more = f" and {len(untraced) - 30} more" if len(untraced) > 30 else ""
    return [f"{len(untraced)} numbers: {shown}{more}"]


def marks_plain(check: Check) -> str:
    """The compact list for text frontends ("" when there is nothing to say)."""
    if not check.claims and not check.note:
        return ""
    untraced = check.untraced
    traced = [c for c in check.claims if c.found is not None]
    lines = [f"{text} — {NOT_FOUND}" for text in _untraced_texts(untraced)]
    if traced:
        listed = " · ".join(f"{c.text} ← {where(c, check.turn)}" for c in traced[:12])
        more = f" · +{len(traced) - 12} more" if len(traced) > 12 else ""
        head = "numbers traced" if not untraced else "traced"
        lines.append(f"{head}: {listed}{more}")
    if check.note:
        lines.append(f"({check.note})")
    return "\n".join(lines)


def marks_markdown(check: Check) -> str:
    """The footnote under the answer in a notebook: untraced numbers in bold, traced ones
    naming their step, the printed value on hover."""
    if not check.claims and not check.note:
        return ""
    parts = [f'<b class="oi-claim-missing">{html.escape(text)} — {NOT_FOUND}</b>'
             for text in _untraced_texts(check.untraced)]
    traced = []
    for c in check.claims:
        if c.found is None:
            continue
        title = html.escape(_detail(c, check.turn), quote=True)
        traced.append(f'<span class="oi-claim" title="{title}">{html.escape(c.text)}'
                      f' → {html.escape(where(c, check.turn))}</span>')
    if traced:
        parts.append(("✓ " if not check.untraced else "") + " · ".join(traced))
    if check.note:
        parts.append(f"<i>{html.escape(check.note)}</i>")
    return "<br>".join(f"<sub>{p}</sub>" for p in parts)


def ask_again(check: Check) -> str:
    """The message that sends an answer back once (``check_answers = "ask-model"``)."""
    listed = ", ".join(c.text for c in check.untraced)
    return (f"These numbers appear in no output: {listed}. Correct them, or compute them in "
            "a step, then give the answer again.")


async def settle_answer(mode: str, turns: list[Turn], turn: Turn, text: str, emit: EventSink,
                        ask: Callable[[str], Awaitable[str]]) -> str:
    """Check the answer ``text`` of ``turn`` (``mode``: ``check_answers``) and report it
    (``AnswerChecked``); with "ask-model" an answer with untraced numbers is first sent back
    once through ``ask`` (which returns the new answer, "" when there is none). Returns the
    answer the user is left with."""
    if mode == "off" or not text.strip():
        return text
    try:
        check = check_answer(text, turns, turn)
    except Exception as exc:  # a failing check never costs the user the answer
        emit(Notice(f"The answer's numbers could not be checked ({type(exc).__name__}: "
                    f"{exc}); the answer stands as written.", "warning"))
        return text
    asked = False
    if mode == "ask-model" and check.untraced:
        listed = ", ".join(c.text for c in check.untraced)
        emit(Notice(f"The answer has numbers found in no output ({listed}); the model is asked "
                    "once to correct them or compute them in a step.", "info"))
        again = await ask(ask_again(check))
        if again.strip():
            text, check, asked = again, check_answer(again, turns, turn), True
    emit(AnswerChecked(turn.index, check, text, asked))
    return text
