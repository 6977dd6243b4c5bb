"""The pure parts of answer checking: numbers as prose writes them (core.numbers), tracing
them to outputs (core.claims), and how the result reads (core.answer_check)."""

from __future__ import annotations

import time

import pytest

from oi_kernel.core.answer_check import ask_again, marks_markdown, marks_plain
from oi_kernel.core.claims import Check, Source, source_of, trace
from oi_kernel.core.numbers import output_numbers, prose_numbers


@pytest.mark.parametrize(("text", "found"), [
    ("41.3 EUR", [("41.3 EUR", 41.3, "currency")]),
    ("across 1,200 rows", [("1,200", 1200, "separated")]),
    ("across 1 200 rows", [("1 200", 1200, "separated")]),
    ("total 1.200,5", [("1.200,5", 1200.5, "separated")]),
    ("total 1.234.568 items", [("1.234.568", 1234568, "separated")]),
    ("a mean of 41,3", [("41,3", 41.3, "separated")]),
    ("grew 23%", [("23%", 23, "percent")]),
    ("grew 23 percent", [("23 percent", 23, "percent")]),
    ("fell −4.2%", [("−4.2%", -4.2, "percent")]),
    ("changed by -0.8", [("-0.8", -0.8, "decimal")]),
    ("$4.5M in sales", [("$4.5M", 4.5, "currency")]),
    ("€1.234,56", [("€1.234,56", 1234.56, "currency")]),
    ("p = 1.2e-5", [("1.2e-5", 1.2e-5, "scientific")]),
    ("the file is 3.2 GB", [("3.2 GB", 3.2, "unit")]),
    ("it took 15 ms", [("15 ms", 15, "unit")]),
    ("2.5 million users", [("2.5 million", 2.5, "scaled")]),
    ("from 10–20", [("10", 10, "integer"), ("20", 20, "integer")]),
    # not claims: list markers, steps, dates, times, versions, names, code
    ("1. first\n2) second", []),
    ("step 2 printed it; steps 1 and 3 did not; cell 4", []),
    ("on 2024-01-05, 05/01/2024, Jan 5, 2024 and 5 March 2023 at 12:30", []),
    ("Python 3.11.4 on 10.0.0.1", []),
    ("COVID-19, x2, col_3, 3rd, H2O, mp3", []),
    ("```python\nprint(42)\n```", []),
    ("call `df.head(5)`", []),
    ("the mean is `41.27`", [("41.27", 41.27, "decimal")]),
])
def test_numbers_in_prose(text, found):
    got = [(w.text, w.values[0], w.kind) for w in prose_numbers(text)]
    assert got == [(t, pytest.approx(v), k) for t, v, k in found]


def test_output_numbers_read_tables_and_formats():
    table = ("       price   qty\ncount  1,200.0  3\nmean   41.270000  2.5\n"
             "std    4.127000e+01  -0.25")
    values = [v for v, _ in output_numbers(table)]
    assert values == pytest.approx([1200.0, 3, 41.27, 2.5, 41.27, -0.25])


OUT = [Source(2, 1, "mean    41.2749\nrows 1200\ngrowth 0.2304\nbytes 3215000000\nt 0.015")]


@pytest.mark.parametrize(("answer", "step_or_none", "how"), [
    ("41.2749", 1, "exact"),
    ("41.27", 1, "rounded"),
    ("41.3", 1, "rounded"),
    ("41.2", None, ""),  # truncated, not rounded
    ("41.28", None, ""),
    ("1,200 rows", 1, "exact"),
    ("1 200 rows", 1, "exact"),
    ("1.2k rows", 1, "converted"),
    ("23%", 1, "share"),
    ("23.04%", 1, "share"),
    ("32%", None, ""),  # transposed digits
    ("3.2 GB", 1, "converted"),
    ("3.0 GiB", 1, "converted"),
    ("15 ms", 1, "converted"),
    ("-41.27", None, ""),  # the sign is part of the claim
    ("1,300", None, ""),
])
def test_trace_matches_by_value_and_shown_precision(answer, step_or_none, how):
    check = trace(f"The answer: {answer}.", "", OUT, [], turn=2)
    [claim] = check.claims
    if step_or_none is None:
        assert claim.found is None
    else:
        assert claim.found is not None and claim.found.step == step_or_none
        assert claim.found.how == how


def test_this_instruction_first_then_earlier_then_changes_then_code():
    current = [Source(3, 1, "7.5"), Source(3, 2, "x: int 3 → int 9", "changes"),
               Source(3, 2, "df.nlargest(4)", "code")]
    earlier = [Source(1, 2, "7.5 11")]
    check = trace("7.5, 11, 9 and the top 4", "", current, earlier, turn=3)
    where = [(c.text, c.found and (c.found.turn, c.found.step, c.found.where))
             for c in check.claims]
    assert where == [("7.5", (3, 1, "output")), ("11", (1, 2, "output")),
                     ("9", (3, 2, "changes")), ("4", (3, 2, "code"))]


def test_the_users_numbers_and_bare_years_are_not_claims():
    check = trace("Of the 50 numbers in 2023, 7 are odd.", "look at 50 numbers",
                  [Source(1, 1, "8")], [], turn=1)
    assert [c.text for c in check.claims] == ["7"]
    assert check.quoted == 2
    assert check.claims[0].found is None


def test_hundreds_of_numbers_stop_with_a_reason():
    answer = " ".join(f"{i}.5" for i in range(1000))
    check = trace(answer, "", [Source(1, 1, "0.5 1.5")], [], turn=1, limit=300)
    assert len(check.claims) == 300
    assert "stopped tracing after 300 of 1000 numbers" in check.note
    assert "more than 300 numbers" in check.note


def test_a_cut_output_is_said_so():
    kept = source_of(1, 2, "head 1 2\n[... 5,000 characters (80 lines) cut ...]\ntail 9")
    check = trace("The value is 77.", "", [kept], [], turn=1)
    assert check.untraced and "output of step 2 was too large and was cut" in check.note


def test_tracing_a_2000_word_session_is_cheap():
    outputs = [Source(1, i, " ".join(f"{i * 1000 + j}.{j:02d}" for j in range(200)))
               for i in range(10)]
    answer = " ".join(f"value {i * 1000 + 7}.07 and" for i in range(10)) * 4
    started = time.perf_counter()
    for _ in range(20):
        check = trace(answer, "", outputs, [])
    per_answer = (time.perf_counter() - started) / 20
    assert not check.untraced
    assert per_answer < 0.05  # generous here; benchmarks/claims.py measures the 5 ms goal


def check_of(*claims: tuple[str, int | None]) -> Check:
    from oi_kernel.core.claims import Claim, Found

    return Check(2, [Claim(t, "decimal", 0, 0, Found(turn, 1, t, "exact") if turn else None)
                     for t, turn in claims])


def test_marks_read_as_the_issue_says():
    check = check_of(("41.3", 2), ("23%", None), ("7", 1))
    plain = marks_plain(check)
    assert plain.splitlines() == ["23% — not in any output",
                                  "traced: 41.3 ← step 1 · 7 ← instruction 1, step 1"]
    md = marks_markdown(check)
    assert "<b class=\"oi-claim-missing\">23% — not in any output</b>" in md
    assert 'title="step 1 printed 41.3"' in md
    assert ask_again(check).startswith("These numbers appear in no output: 23%.")


def test_all_traced_is_one_quiet_line_and_nothing_is_nothing():
    assert marks_plain(check_of(("41.3", 2))) == "numbers traced: 41.3 ← step 1"
    assert marks_markdown(check_of(("41.3", 2))).count("<sub>") == 1
    assert marks_plain(Check(1)) == marks_markdown(Check(1)) == ""


def test_a_check_survives_the_log():
    check = check_of(("41.3", 2), ("23%", None))
    assert Check.from_dict(check.to_dict()) == check


def test_many_untraced_numbers_share_one_line():
    answer = " ".join(f"{i}.25" for i in range(1, 41))
    check = trace(answer, "", [Source(1, 1, "nothing")], [], turn=1)
    [line] = marks_plain(check).splitlines()
    assert line.startswith("40 numbers: 1.25, 2.25, 3.25,")
    assert line.endswith("30.25 and 10 more — not in any output")
    assert marks_markdown(check).count("oi-claim-missing") == 1


def test_the_users_numbers_in_the_code_are_still_the_users():
    """'Compute 2 + 3': the answer '2 + 3 = 5' claims only 5 (2 and 3 are the user's, even
    though the code holds them too)."""
    check = trace("2 + 3 = 5.", "Compute 2 + 3 and print the result.",
                  [Source(1, 1, "5"), Source(1, 1, "print(2 + 3)", "code")], [], turn=1)
    assert [(c.text, c.found and c.found.where) for c in check.claims] == [("5", "output")]
    assert check.quoted == 2


def test_verify_checks_only_numbers_traced_to_outputs():
    import nbformat

    from oi_kernel.record.claims_cells import claim_problems

    code = nbformat.v4.new_code_cell("print(41.27)", id="c1")
    answer = nbformat.v4.new_markdown_cell("The mean is 41.27; top 5.", id="a1")
    found = {"turn": 1, "step": 1, "how": "exact"}
    answer.metadata["oi_kernel"] = {"answer_check": {"turn": 1, "claims": [
        {"text": "41.27", "found": {**found, "printed": "41.27", "where": "output"},
         "cell": "c1"},
        {"text": "5", "found": {**found, "printed": "5", "where": "code"}, "cell": "c1"},
        {"text": "9%", "found": None}]}}
    nb = nbformat.v4.new_notebook(cells=[code, answer])
    same = [{"output_type": "stream", "name": "stdout", "text": "41.27\n"}]
    changed = [{"output_type": "stream", "name": "stdout", "text": "42.27\n"}]
    assert claim_problems(nb, {0: same}) == []
    assert claim_problems(nb, {0: changed}) == [
        "the answer's 41.27 was traced to 41.27 in cell c1, which no longer prints it "
        "(now: '42.27')"]
    assert claim_problems(nb, {0: "timed out"}) == []  # the cell's own check says so


def test_what_is_searched_is_bounded_and_said(monkeypatch):
    from oi_kernel.core import claims

    big = "\n".join(str(i * 7) for i in range(100_000))  # ~590,000 characters
    check = trace("First 0, last 699993, middle 350000.", "", [Source(1, 1, big)], [], turn=1)
    assert [(c.text, c.found is not None) for c in check.claims] == [
        ("0", True), ("699993", True), ("350000", False)]
    assert "the output of step 1 was too large and was cut" in check.note
    monkeypatch.setattr(claims, "MAX_TOTAL_CHARS", 1000)
    earlier = [Source(1, 1, "5 " * 400), Source(1, 2, "9 " * 400)]
    check = trace("It is 9.", "", [], earlier, turn=2)
    assert check.claims[0].found is None
    assert "1 earlier output not searched (more than 1,000 characters of outputs)" in check.note


def test_a_failing_check_keeps_the_answer(monkeypatch):
    import asyncio

    from oi_kernel.core import answer_check
    from oi_kernel.core import events as E
    from oi_kernel.core.types import Turn

    def broken(*args):
        raise ValueError("bad table")

    monkeypatch.setattr(answer_check, "check_answer", broken)
    seen: list = []

    async def never(message: str) -> str:
        raise AssertionError("not asked")

    turn = Turn(1, "go")
    text = asyncio.run(answer_check.settle_answer("ask-model", [turn], turn, "It is 5.",
                                                  seen.append, never))
    assert text == "It is 5."
    [notice] = seen
    assert isinstance(notice, E.Notice) and notice.level == "warning"
    assert "could not be checked (ValueError: bad table)" in notice.text
