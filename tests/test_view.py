"""How a turn is shown: the stdin approval question (self-contained: it carries the code),
the reply printed as text for terminals and batch runs, and in notebook UIs the reply's
copy of a proposed block folded once the block is shown as its own step. Pure: the view
is handed a list as its publisher, the approver a scripted ``ask``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from oi_kernel.approval.approvers import (
    StdinApprover,
    approval_prompt,
    edit_prompt,
    parse_answer,
)
from oi_kernel.core import events as E
from oi_kernel.core.types import ApprovalRequest, CodeBlock, Decision, Reply, StepRecord, Turn
from oi_kernel.errors import ApprovalUnavailableError
from oi_kernel.safety.risk import review
from oi_kernel.session.view import TurnView, live_display, plain_text


def request(code: str, language: str = "python", step: int = 1, **kw: Any) -> ApprovalRequest:
    return ApprovalRequest(1, step, CodeBlock(language, code), **kw)


# ---------------------------------------------------------------------- the stdin question
def test_the_prompt_carries_step_language_code_and_choices():
    prompt = approval_prompt(request("import math\nprint(math.pi)", step=3))
    lines = prompt.split("\n")
    assert lines[0] == ""  # on a line of its own, whatever was printed before
    assert lines[1] == "── Step 3 · python · 2 lines · runs on this machine ──"
    assert lines[2:4] == ["    import math", "    print(math.pi)"]
    assert lines[-1] == "Run this code? [y/N/e(dit)/a(ll)/s(top)] "


def test_the_prompt_lists_risk_flags_and_says_sandboxed():
    code = "import shutil\nshutil.rmtree('/home/me/data')"
    flags = review("python", code)
    assert flags
    prompt = approval_prompt(request(code, flags=flags, sandboxed=True))
    assert "· sandboxed ──" in prompt.split("\n")[1]
    assert f"⚠ {len(flags)} risk flag" in prompt
    for flag in flags:
        assert flag.reason in prompt and f"[{flag.severity}] {flag.category}" in prompt


def test_long_code_shows_first_and_last_lines_and_v_shows_all():
    code = "\n".join(f"x{i} = {i}" for i in range(40))
    short = approval_prompt(request(code))
    assert "x0 = 0" in short and "x11 = 11" in short and "x12 = 12" not in short
    assert "x34 = 34" in short and "x39 = 39" in short and "x33 = 33" not in short
    assert "… 22 more lines (answer v to view all 40) …" in short
    assert "· 40 lines ·" in short
    assert short.endswith("[y/N/e(dit)/a(ll)/s(top)/v(iew all)] ")
    full = approval_prompt(request(code), full=True)
    assert all(f"x{i} = {i}" in full for i in range(40)) and "v(iew" not in full


def test_a_very_long_line_is_cut_in_the_summary_only():
    code = "s = '" + "a" * 1000 + "'"
    short = approval_prompt(request(code))
    assert "a" * 1000 not in short and " …" in short and "v(iew all)" in short
    assert "a" * 1000 in approval_prompt(request(code), full=True)


def test_the_edit_prompt_shows_the_code_being_replaced():
    prompt = edit_prompt('print("a\\nb")\nx = 1')
    assert '    print("a\\nb")\n    x = 1' in prompt
    assert 'As one line (copy, change, paste): print("a\\\\nb")\\nx = 1' in prompt
    assert prompt.endswith("empty: back): ")


@pytest.mark.parametrize(
    ("answer", "choice"),
    [("y", "run"), ("YES", "run"), ("", "skip"), ("n", "skip"), ("e", "edit"), ("a", "all"),
     ("s", "stop"), ("v", "view"), ("view", "view"), ("what?", "skip")],
)
def test_parse_answer(answer, choice):
    assert parse_answer(answer) == choice


def decide(answers: list[str], req: ApprovalRequest, stdin: bool = True
           ) -> tuple[Decision, list[str]]:
    asked: list[str] = []
    replies = iter(answers)

    async def ask(prompt: str) -> str:
        asked.append(prompt)
        return next(replies)

    req.allow_stdin = stdin  # what the turn's context says (core.turn_context)
    return asyncio.run(StdinApprover(ask).decide(req)), asked


def test_view_then_run():
    code = "\n".join(f"x{i} = {i}" for i in range(40))
    decision, asked = decide(["v", "y"], request(code))
    assert decision.action == "run" and decision.code == code
    assert "v(iew all)" in asked[0] and "x20 = 20" in asked[1]


def test_edit_takes_one_line_with_escapes_and_an_empty_edit_goes_back():
    req = request("print(1)")
    decision, asked = decide(["e", "", "e", 'print("a\\\\nb")\\nprint(2)'], req)
    assert decision.action == "run" and decision.edited
    assert decision.code == 'print("a\\nb")\nprint(2)'
    assert [p.strip().split("\n")[0] for p in asked] == [
        "── Step 1 · python · 1 line · runs on this machine ──", "Editing. The code now:",
        "── Step 1 · python · 1 line · runs on this machine ──", "Editing. The code now:"]


def test_no_stdin_refuses_without_asking():
    with pytest.raises(ApprovalUnavailableError):
        decide([], request("print(1)"), stdin=False)


# ---------------------------------------------------------------------- the view
class Screen:
    """The messages a view published, and what a notebook would show after them."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, msg_type: str, content: dict[str, Any]) -> None:
        self.messages.append((msg_type, content))

    def of(self, *types: str) -> list[dict[str, Any]]:
        return [c for t, c in self.messages if t in types]

    def final(self) -> list[str]:
        """Each output's last text/markdown (or stream text), displays updated in place."""
        shown: list[list[str]] = []
        by_id: dict[str, list[str]] = {}
        for kind, c in self.messages:
            if kind == "stream":
                shown.append([c["text"]])
                continue
            text = c["data"].get("text/markdown", c["data"].get("text/plain", ""))
            display_id = (c.get("transient") or {}).get("display_id")
            if kind == "update_display_data":
                by_id[display_id][0] = text
            else:
                slot = [text]
                shown.append(slot)
                if display_id:
                    by_id[display_id] = slot
        return [slot[0] for slot in shown]


REPLY = "First I load it.\n```python\nimport math\nprint(math.pi)\n```\nThen we see."


def play(view: TurnView, chunks: list[str], needs_approval: bool = True,
         code: str = "import math\nprint(math.pi)") -> None:
    async def run() -> None:
        for chunk in chunks:
            view(E.TextDelta(chunk))
            await asyncio.sleep(0)
        view(E.ReplyDone(1, Reply(text="".join(chunks)), [CodeBlock("python", code)]))
        view(E.CodeProposed(request(code), needs_approval))
        record = StepRecord(1, CodeBlock("python", code), Decision("run", code))
        view(E.Decided(record))
        view(E.TurnDone(Turn(1, "go")))

    asyncio.run(run())


def pieces(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]


def test_text_display_prints_the_whole_reply_as_a_stream():
    screen = Screen()
    play(TurnView(screen, live=False, shows_code=False), pieces(REPLY, 3))
    assert screen.of("update_display_data") == []
    printed = "".join(c["text"] for c in screen.of("stream"))
    assert printed == REPLY + "\n"  # all of it, ending the line
    assert all(c["name"] == "stdout" for c in screen.of("stream"))
    assert screen.messages[0][0] == "stream" and screen.messages[0][1]["text"] == "Fir"


def test_a_batch_run_gets_each_reply_whole():
    """nbclient saves every stream message as an output: without stdin (nobody watching)
    the reply is printed once, complete."""
    screen = Screen()
    play(TurnView(screen, live=False, shows_code=True, pieces=False), pieces(REPLY, 3))
    assert [c["text"] for c in screen.of("stream")] == [REPLY + "\n"]


def test_text_display_without_a_prompt_shows_the_step():
    screen = Screen()
    play(TurnView(screen, live=False, shows_code=True), ["Here it is."])
    plain = [c["data"]["text/plain"] for c in screen.of("display_data")]
    assert "[step 1: python]\nimport math\nprint(math.pi)" in plain
    assert "*Step 1: approved by user*" in [c["data"]["text/markdown"]
                                             for c in screen.of("display_data")]


@pytest.mark.unit
@pytest.mark.parametrize("chunks", [pieces(REPLY, 3), [REPLY]])
@pytest.mark.parametrize("in_pieces", [True, False])
def test_text_display_shows_a_fenced_proposal_once(chunks, in_pieces):
    """papermill / ``oi-kernel run`` (issue 31): the reply printed the block, so its step
    names it instead of printing it a second time."""
    screen = Screen()
    play(TurnView(screen, live=False, shows_code=True, pieces=in_pieces), chunks,
         needs_approval=False)
    texts = [c["text"] for c in screen.of("stream")]
    texts += [c["data"]["text/plain"] for c in screen.of("display_data")]
    assert sum(t.count("print(math.pi)") for t in texts) == 1
    assert "[step 1: python] (the code above)" in texts


def test_live_display_folds_the_block_once_the_card_shows_it():
    screen = Screen()
    play(TurnView(screen, live=True, shows_code=False), pieces(REPLY, 5))
    final = screen.final()
    assert screen.of("stream") == []
    assert final[0] == "First I load it.\n\n*▸ python, 2 lines: step 1, below*\n\nThen we see."
    assert not any("print(math.pi)" in text for text in final)  # the card has it (not here)


def test_live_display_of_an_auto_run_step_shows_the_code_once():
    screen = Screen()
    play(TurnView(screen, live=True, shows_code=False), [REPLY], needs_approval=False)
    final = screen.final()
    assert sum(text.count("print(math.pi)") for text in final) == 1
    assert "runs without asking" in final[1]


def test_a_block_the_reply_does_not_contain_folds_nothing():
    screen = Screen()
    play(TurnView(screen, live=True, shows_code=False), ["Just prose."], code="print(2)")
    assert screen.final()[0] == "Just prose."
    assert len(screen.of("update_display_data")) == 0


@pytest.mark.parametrize(("mode", "widgets", "live"), [
    ("auto", True, True), ("auto", False, False), ("live", False, True), ("text", True, False)])
def test_live_display_choice(mode, widgets, live):
    assert live_display(mode, widgets) is live


@pytest.mark.parametrize(("markdown", "plain"), [
    ("Session log: `/l/a.jsonl`\n\nLast events:\n```\n1 09:00 turn_start 1\n2 09:01 llm\n```",
     "Session log: `/l/a.jsonl`\n\nLast events:\n    1 09:00 turn_start 1\n    2 09:01 llm"),
    ("````\nx = '```'\n````\nafter", "    x = '```'\nafter"),
    ("```python\nif x:\n\n    y()\n```", "    if x:\n\n        y()"),
    ("### Tools\n**on** and `x`", "Tools\n**on** and `x`"),
    ("~~~\na\n```\nb\n~~~", "    a\n    ```\n    b"),
    ("plain text", "plain text"),
])
def test_plain_text_of_a_commands_markdown(markdown, plain):
    assert plain_text(markdown) == plain
