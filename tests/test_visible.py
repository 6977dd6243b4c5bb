"""What you see is what runs (pure parts): each class of hidden character, in each place a
block is shown for a decision or a record (the card, the decided record as HTML and as
text, the terminal question, %history, %log, the exported notebook), appears as a marker
naming it and never raw; the risk review flags it for every language and for a tool's JSON
arguments. The kernel, jupyter console and JupyterLab tests are in test_visible_kernel.py,
test_console.py and test_browser_visible.py."""

from __future__ import annotations

import json
import os

import pytest

from oi_kernel.approval.approvers import approval_prompt, edit_prompt
from oi_kernel.approval.card import header_html, record_html, record_plain, visible_code_html
from oi_kernel.core.types import ApprovalRequest, CodeBlock, Decision, StepRecord, Turn, code_hash
from oi_kernel.record.export import build_notebook
from oi_kernel.record.listing import history_markdown, log_markdown
from oi_kernel.safety.risk import HIGH, MEDIUM, character_flags, review
from oi_kernel.safety.visible import (
    LONG_LINE,
    has_hidden,
    hidden_findings,
    identifier_problem,
    needs_marking,
    visible,
)

pytestmark = pytest.mark.unit

# (class, the hidden text, a marker that must be shown in its place)
CHARACTERS = [
    ("bidi RLO", "\u202e", "⟦U+202E RLO⟧"),
    ("bidi isolates", "\u2066admin\u2069", "⟦U+2066 LRI⟧"),
    ("bidi RLM", "\u200f", "⟦U+200F RLM⟧"),
    ("arabic letter mark", "\u061c", "⟦U+061C ALM⟧"),
    ("ESC sequence", "\x1b[2K\x1b[1A", "⟦U+001B ESC⟧[2K⟦U+001B ESC⟧[1A"),
    ("carriage return", "x\ry", "⟦U+000D CR⟧"),
    ("backspace", "\x08", "⟦U+0008 BS⟧"),
    ("DEL", "\x7f", "⟦U+007F DEL⟧"),
    ("C1 CSI", "\x9b2J", "⟦U+009B CSI⟧"),
    ("C1 NEL", "\x85", "⟦U+0085 NEL⟧"),
    ("zero width space", "a\u200bb", "⟦U+200B ZWSP⟧"),
    ("word joiner", "\u2060", "⟦U+2060 WJ⟧"),
    ("BOM", "\ufeff", "⟦U+FEFF BOM⟧"),
    ("soft hyphen", "\u00ad", "⟦U+00AD SHY⟧"),
    ("tag characters", "\U000e0041\U000e0042", "⟦U+E0041 TAG A⟧⟦U+E0042 TAG B⟧"),
    ("hangul filler", "\u3164", "⟦U+3164 HANGUL FILLER⟧"),
    ("no-break space", "\u00a0", "⟦U+00A0 NBSP⟧"),
    ("ideographic space", "\u3000", "⟦U+3000 IDEOGRAPHIC SPACE⟧"),
    ("line separator", "\u2028", "⟦U+2028 LSEP⟧"),
    ("private use", "\ue000", "⟦U+E000 PRIVATE USE⟧"),
]
IDS = [c[0] for c in CHARACTERS]


def block_with(hidden: str) -> str:
    """Ordinary-looking code with ``hidden`` in a string and in a comment."""
    return f'label = "ok{hidden}"\n# note{hidden}\nprint(label)'


def raw_chars(hidden: str) -> set[str]:
    return {ch for ch in hidden if not ch.isascii() or not ch.isprintable()}


def request_for(code: str, language: str = "python", tool: str = "") -> ApprovalRequest:
    flags = character_flags(code, "json" if tool else language) if tool else review(language,
                                                                                    code)
    return ApprovalRequest(1, 1, CodeBlock(language, code, tool=tool), flags, tool=tool)


def shown_places(code: str, tmp_path) -> dict[str, str]:
    """Every place this code is shown for a decision or a record, as text."""
    request = request_for(code)
    decision = Decision("run", code)
    turn = Turn(1, "do it", steps=[StepRecord(1, request.block, decision, "ok")])
    records = log_records(code)
    log = tmp_path / "session.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    nb = build_notebook(records, log_path=log)
    notes = [c.source for c in nb.cells if c.cell_type == "markdown"]
    return {
        "card": header_html(request) + visible_code_html(code, "python"),
        "record html (shown part)": record_html(request, decision).split('<pre class="oi-code-ran"')[0],
        "record plain": record_plain(request, decision),
        "stdin question": approval_prompt(request),
        "stdin question (view all)": approval_prompt(request, full=True),
        "edit question": edit_prompt(code),
        "%history": history_markdown([turn]),
        "%log": log_markdown(log, 10),
        "export note": "\n".join(notes),
    }


def log_records(code: str) -> list[dict]:
    """A session log of one instruction whose one block ran ``code``."""
    sha = code_hash(code)
    base = {"v": 1, "session": "s1", "t": "2026-11-27T00:00:00.000Z"}
    events = [
        {"event": "session_start", "kernel": "open-interpreter", "model": "openai/scripted"},
        {"event": "turn_start", "turn": 1, "instruction": "do it"},
        {"event": "code_proposed", "turn": 1, "step": 1, "language": "python", "code": code,
         "sha256": sha, "flags": [{"line": 1, "category": "hidden-characters",
                                   "severity": "high", "reason": "r"}]},
        {"event": "decision", "turn": 1, "step": 1, "action": "approved", "code": code,
         "sha256": sha, "reason": "", "by": "user"},
        {"event": "execution", "turn": 1, "step": 1, "language": "python", "code": code,
         "sha256": sha, "status": "ok", "outputs": [], "duration_s": 0.1, "feedback": ""},
        {"event": "turn_end", "turn": 1, "reason": "done", "steps": 1},
    ]
    return [{**base, "seq": i, **e} for i, e in enumerate(events, 1)]


@pytest.mark.parametrize(("name", "hidden", "mark"), CHARACTERS, ids=IDS)
def test_each_character_class_is_marked_in_every_place_it_is_shown(name, hidden, mark,
                                                                    tmp_path):
    code = block_with(hidden)
    for place, text in shown_places(code, tmp_path).items():
        leaked = {f"U+{ord(c):04X}" for c in raw_chars(hidden) if c in text}
        assert not leaked, f"{place} shows {leaked} raw"
        assert mark in text, f"{place} lacks the marker {mark!r}:\n{text}"
        assert "\x1b" not in text and "\r" not in text, place  # nothing a terminal obeys


@pytest.mark.parametrize(("name", "hidden", "mark"), CHARACTERS, ids=IDS)
def test_each_character_class_is_flagged_for_every_language(name, hidden, mark):
    code = block_with(hidden)
    for language in ("python", "shell", "javascript", "r", "html", "markdown", "cobol"):
        flags = [f for f in review(language, code)
                 if f.category in ("hidden-characters", "odd-whitespace")]
        assert flags, f"{language}: no flag for {name}"
        ch = next(iter(raw_chars(hidden)))
        assert any(f"U+{ord(ch):04X}" in f.reason and f.line in (1, 2) for f in flags), flags
        expected = MEDIUM if name in ("no-break space", "ideographic space") else HIGH
        assert {f.severity for f in flags} == {expected}, (language, flags)
        assert not has_hidden("".join(f.reason for f in flags))  # the reason itself is plain


def test_the_exported_cell_keeps_the_real_code_and_a_note_marks_it(tmp_path):
    code = block_with("\u202e")
    nb = build_notebook(log_records(code))
    cells = [c for c in nb.cells if c.cell_type == "code"]
    assert [c.source for c in cells] == [code]  # reproduces what ran, byte for byte
    assert cells[0].metadata.oi_kernel.sha256 == code_hash(code)
    found = cells[0].metadata.oi_kernel.hidden_characters
    assert found == ["line 1: U+202E RIGHT-TO-LEFT OVERRIDE (RLO) in a string",
                     "line 2: U+202E RIGHT-TO-LEFT OVERRIDE (RLO) in a comment"]
    note = nb.cells[nb.cells.index(cells[0]) - 1]
    assert note.cell_type == "markdown" and "⟦U+202E RLO⟧" in note.source
    assert "\u202e" not in note.source


def test_a_clean_block_is_shown_and_exported_unchanged(tmp_path):
    code = "import pandas as pd\ndf = pd.read_csv('sales.csv')  # ventes, données, 売上 ⚠️ 👩‍💻\n"
    assert not needs_marking(code) and visible(code) == code
    assert hidden_findings(code, "python") == [] and review("python", code) == []
    request = request_for(code)
    assert visible_code_html(code, "python") == ""
    assert "oi-code-visible" not in record_html(request, Decision("run", code))
    assert all(f"    {line}" in approval_prompt(request) for line in code.split("\n"))
    nb = build_notebook(log_records(code))
    assert [c.cell_type for c in nb.cells] == ["markdown", "markdown", "code"]  # no note


def test_the_record_keeps_the_real_code_hidden_and_shows_the_marked_code():
    code = block_with("\u2066")
    html = record_html(request_for(code), Decision("run", code))
    shown, kept = html.split('<pre class="oi-code-ran"')
    assert "oi-code-visible" in shown and "⟦U+2066 LRI⟧" in shown
    assert "line 1: U+2066 LEFT-TO-RIGHT ISOLATE (LRI) in a string" in shown
    assert kept.startswith(' data-language="python" style="display:none;')
    assert "\u2066" in kept  # the lab extension's "code that ran" is still the real code


def test_the_question_names_the_line_and_character_before_asking():
    prompt = approval_prompt(request_for(block_with("\x1b[2K\x1b[1A")))
    lines = prompt.split("\n")
    assert lines[-1].startswith("Run this code?")
    assert '    label = "ok⟦U+001B ESC⟧[2K⟦U+001B ESC⟧[1A"' in lines
    assert any("[high] hidden-characters: line 1: U+001B ESCAPE (ESC) in a string" in ln
               for ln in lines)
    assert "marked ⟦…⟧" in prompt


@pytest.mark.parametrize(("code", "problem"), [
    ("pаth = 1", "mixes scripts (Cyrillic, Latin): 'а' U+0430 CYRILLIC SMALL LETTER A"),
    ("οpen('x')", "mixes scripts (Greek, Latin)"),
    ("ｐrint(1)", "is read by Python as 'print'"),
    ("𝐞val('1')", "is read by Python as 'eval'"),
    ("сорy = 1", "mixes scripts"),
    ("ѕсоре = 2", "written in Cyrillic letters that look Latin"),
])
def test_confusable_identifiers_are_flagged_high(code, problem):
    flags = review("python", code)
    assert [f.category for f in flags if f.severity == HIGH] == ["mixed-script"]
    assert problem in flags[0].reason and flags[0].line == 1


@pytest.mark.parametrize("code", [
    "сумма = 1\nprint(сумма)",  # Russian, one script
    "データ = [1, 2]\n売上データ = データ",  # Japanese mixes kanji and kana
    "total_données = 3",  # accented Latin
    "x = 'pаth in a string is text'",  # (Python: strings are not identifiers)
])
def test_ordinary_non_ascii_identifiers_are_not_flagged(code):
    assert review("python", code) == []


def test_mixed_script_words_in_shell_and_javascript():
    assert [f.category for f in review("shell", "cаt notes.txt")] == ["mixed-script"]
    assert "mixed-script" in {f.category for f in review("javascript", "const pаth = 1;")}
    assert identifier_problem("Δt") and not identifier_problem("ΔΘ")


def test_a_tools_json_arguments_are_flagged_raw_or_escaped():
    raw = json.dumps({"path": "notes\u202e.txt"}, ensure_ascii=False)
    escaped = json.dumps({"path": "notes\u200b.txt"})  # "\\u200b" in the text
    assert [f.category for f in character_flags(raw, "json")] == ["hidden-characters"]
    flags = character_flags(escaped, "json")
    assert [f.severity for f in flags] == [HIGH]
    assert "U+200B ZERO WIDTH SPACE (ZWSP) in a JSON string" in flags[0].reason
    assert character_flags(json.dumps({"path": "notes.txt", "text": "a\r\nb"}), "json") == []
    request = request_for(raw, "json", tool="files › read")
    assert "⟦U+202E RLO⟧" in approval_prompt(request)
    assert "⟦U+202E RLO⟧" in visible_code_html(raw, "json")


def test_a_line_too_long_to_see_whole_is_marked_and_flagged():
    code = "x = 1" + " " * 600 + "; import os; os.remove('data.csv')"
    shown = visible(code)
    assert shown.startswith(f"⟦long line: {len(code):,} characters⟧ x = 1")
    flags = review("python", code)
    assert any(f.category == "long-line" and f.severity == MEDIUM for f in flags)
    assert f"⟦long line: {len(code):,} characters⟧" in approval_prompt(request_for(code))
    assert not needs_marking("y" * LONG_LINE)


def test_emoji_joiners_and_variation_selectors_are_not_hidden_characters():
    assert visible("print('⚠️ done ✔️ 👩‍💻 1️⃣ ℹ️ ‼️')") == "print('⚠️ done ✔️ 👩‍💻 1️⃣ ℹ️ ‼️')"
    assert visible("⚠\ufe0f\ufe0f") == "⚠️⟦U+FE0F VARIATION SELECTOR-16⟧"  # (a second one)
    assert visible("a\u200db") == "a⟦U+200D ZWJ⟧b"  # a joiner between letters is
    assert visible("x\ufe0f") == "x⟦U+FE0F VARIATION SELECTOR-16⟧"


def test_findings_say_line_character_and_place():
    code = 'ok = "x"\naccess = "user\u202e \u2066# admin\u2069 \u2066"  # \u200b\n\x1b = 1'
    assert [str(f) for f in hidden_findings(code, "python")] == [
        "line 2: U+202E RIGHT-TO-LEFT OVERRIDE (RLO) in a string",
        "line 2: U+2066 LEFT-TO-RIGHT ISOLATE (LRI) in a string",
        "line 2: U+2069 POP DIRECTIONAL ISOLATE (PDI) in a string",
        "line 2: U+200B ZERO WIDTH SPACE (ZWSP) in a comment",
        "line 3: U+001B ESCAPE (ESC)",
    ]
    flags = review("python", code)
    hidden = [f for f in flags if f.category == "hidden-characters"]
    assert [f.line for f in hidden] == [2, 3]  # one flag per line, naming every character
    assert hidden[0].reason.startswith("line 2: U+202E RIGHT-TO-LEFT OVERRIDE (RLO) in a "
                                       "string; U+2066 LEFT-TO-RIGHT ISOLATE (LRI) in a string")


def test_log_tail_reads_only_the_end_and_marks_text(tmp_path):
    log = tmp_path / "big.jsonl"
    filler = [{"seq": i, "event": "llm_request", "messages": ["x" * 1000]} for i in range(400)]
    records = filler + [{**r, "seq": 400 + r["seq"]} for r in log_records(block_with("\x1b[2J"))]
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert os.path.getsize(log) > 300_000
    text = log_markdown(log, 3)
    assert text.startswith(f"Session log: `{log}`")
    body = text.split("```")[1]
    assert [ln.split()[0] for ln in body.strip().split("\n")] == ["404", "405", "406"]
    assert "approved by user · sha256" in body and "⟦U+001B ESC⟧[2J" in body
    assert "\x1b" not in text


def test_the_cell_view_marks_the_reply_the_step_and_notices():
    """What the kernel shows in the cell besides the card: the model's reply (printed as text
    for jupyter console), a step that runs without asking, a notice quoting the model."""
    from oi_kernel.core import events as E
    from oi_kernel.core.types import Reply
    from oi_kernel.session.view import TurnView

    sent: list[tuple[str, dict]] = []
    view = TurnView(lambda kind, content: sent.append((kind, content)), live=False,
                    pieces=False)
    reply = "Done.\x1b[2K\x1b[1A Nothing to see\u202e here."
    view(E.TextDelta(reply))
    view(E.ReplyDone(1, Reply(reply, reasoning="thinking\x1b[2J"), []))
    view(E.CodeProposed(request_for(block_with("\u200b")), needs_approval=False))
    view(E.Notice("Language 'py\x1b[2J' is not available here.", "warning"))
    texts = [v for _, c in sent for v in ([c["text"]] if "text" in c else c["data"].values())]
    shown = "\n".join(texts)
    assert "Done.⟦U+001B ESC⟧[2K⟦U+001B ESC⟧[1A Nothing to see⟦U+202E RLO⟧ here." in shown
    assert 'label = "ok⟦U+200B ZWSP⟧"' in shown and "runs without asking" in shown
    assert "Language 'py⟦U+001B ESC⟧[2J' is not available" in shown
    assert not has_hidden(shown.replace("\n", " ")), ascii(shown)
