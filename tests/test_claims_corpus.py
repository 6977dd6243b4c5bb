"""The answer-check corpus holds its lines: planted wrong numbers marked (≥ 95%, also after a
2,000-word session), correct numbers not marked (≤ 2%), tracing cheap (median < 5 ms).
The same measurement as ``python benchmarks/claims.py``; a failure prints the misses."""

from __future__ import annotations

import statistics

from benchmarks import claims


def test_the_corpus_is_big_enough_with_a_third_planted():
    pairs = claims.load()
    assert len(pairs) >= 150
    planted = sum(bool(p["planted"]) for p in pairs)
    assert planted >= len(pairs) / 3 - 1


def test_the_corpus_meets_the_goals():
    result = claims.measure(claims.load())
    report = claims.table(result) + "\n" + claims.misses_text(result)
    print(report)
    planted, correct = result.overall(result.planted), result.overall(result.correct)
    assert planted.share >= claims.MARKED_GOAL, report
    assert result.session.share >= claims.MARKED_GOAL, report
    assert correct.share <= claims.FALSE_LIMIT, report
    assert statistics.median(result.cost_ms) < claims.COST_LIMIT_MS, report
    for kind, tally in result.planted.items():  # every kind of error is caught somewhat
        assert tally.share >= 0.8, (kind, report)
