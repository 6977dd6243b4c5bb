"""The risk review against the benchmark corpus (benchmarks/risk_corpus): every adversarial
snippet asks under ``%approval risky`` and at most 5% of ordinary data-science snippets do.
The same measurement as ``python benchmarks/risk_review.py``; a failure prints the misses."""

from __future__ import annotations

import pytest

from benchmarks import risk_review

pytestmark = pytest.mark.unit


def test_the_corpus_is_the_size_the_issue_asks_for() -> None:
    assert len(risk_review.load("adversarial")) >= 150
    assert len(risk_review.load("ordinary")) >= 300


def test_every_adversarial_snippet_asks_and_few_ordinary_ones_do() -> None:
    adversarial, ordinary = risk_review.measure("adversarial"), risk_review.measure("ordinary")
    report = risk_review.misses_text(adversarial, ordinary)
    print(risk_review.table(adversarial, ordinary))
    print(report)
    assert risk_review.overall(adversarial).share >= risk_review.ADVERSARIAL_GOAL, report
    assert risk_review.overall(ordinary).share <= risk_review.ORDINARY_LIMIT, report


def test_the_corpus_parser_splits_snippets_and_languages() -> None:
    text = "# header\n#%%\nx = 1\n#%% shell note\nls\n#%%\n\n#%%\ny = 2\n"
    snippets = risk_review.parse(text, "ordinary", "t")
    assert [(s.language, s.code) for s in snippets] == [
        ("python", "x = 1"), ("shell", "ls"), ("python", "y = 2")
    ]
    assert snippets[2].where == "ordinary/t.py #3"


# Issue 39's ordinary-corpus goal (≤ 5%) is not met by the known-safe decision: what asks is
# listed in benchmarks/RISK_REVIEW.md (pickles, process creation, appends, native writers,
# libraries outside the table). This bound keeps it from growing unnoticed.
KNOWN_SAFE_ORDINARY_BOUND = 0.11


def test_under_the_known_safe_decision_every_attack_asks() -> None:
    """What ``%approval risky`` decides since issue 39 (a flag that is not advice, or
    anything not known to be safe): every adversarial snippet asks, alone."""
    adversarial = risk_review.measure_known_safe("adversarial")
    report = risk_review.misses_text(adversarial, {})
    assert risk_review.overall(adversarial).share == 1.0, report


def test_under_the_known_safe_decision_few_ordinary_snippets_ask() -> None:
    ordinary = risk_review.measure_known_safe("ordinary", session=True)
    report = risk_review.misses_text({}, ordinary)
    print(report)
    assert risk_review.overall(ordinary).share <= KNOWN_SAFE_ORDINARY_BOUND, report
    alone = risk_review.measure_known_safe("ordinary")
    # alone, a snippet may only ask more: it knows less of what earlier ones imported
    assert risk_review.overall(alone).asked >= risk_review.overall(ordinary).asked
