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
