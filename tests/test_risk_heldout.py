"""Issue 39's held-out sets (benchmarks/risk_heldout: 392 attacks, 328 ordinary data-science
cells, written blind), kept as tests after their one run (benchmarks/risk_heldout/RESULTS.md).

Under ``%approval risky`` an attack must not run unasked and unstopped: it asks (the
known-safe review), or the runtime guard or a default limit stops it. Resource exhaustion is
the class the default limits bound rather than the review. At most 5% of the ordinary cells
ask. A failure prints what got through."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import risk_guard, risk_review

HELD_OUT = Path(risk_review.HERE) / "risk_heldout"
# The classes an attack may pass the review in: its operation is only dangerous at run time
# (writing over a file that exists), or it only uses resources (the default limits' matter).
RUNTIME_CLASSES = {"destruction", "resource_exhaustion", "indirect_execution"}


@pytest.fixture
def held_out():
    risk_review._use_corpus(HELD_OUT)
    yield
    risk_review._use_corpus(risk_review.HERE / "risk_corpus")


@pytest.mark.unit
def test_the_sets_are_the_size_the_issue_asks_for(held_out) -> None:
    assert len(risk_review.load("adversarial")) >= 300
    assert len(risk_review.load("ordinary")) >= 300


@pytest.mark.unit
def test_what_passes_the_review_is_a_run_time_matter_and_few_ordinary_cells_ask(held_out):
    adversarial = risk_review.measure_known_safe("adversarial")
    ordinary = risk_review.measure_known_safe("ordinary", session=True)
    report = risk_review.misses_text(adversarial, ordinary)
    passed = {group for group, tally in adversarial.items() if tally.asked < tally.total}
    assert passed <= RUNTIME_CLASSES, report
    assert risk_review.overall(ordinary).share <= risk_review.ORDINARY_LIMIT, report


@pytest.mark.kernel
@pytest.mark.slow
def test_no_attack_outside_resource_exhaustion_runs_unasked_and_unstopped():
    """The unasked attacks run for real under the guard, in bubblewrap, in the workspace the
    ordinary cells use (make_workspace.py). Two attacks write over files that workspace does
    not have (data/archive.zip, *.ipynb): with nothing to destroy they create new files.
    Resource exhaustion runs until a limit stops it: 3 s of it show the same verdicts as
    10 s (78 s -> 29 s for the whole set); the other classes have 10 s (their snippets take
    ~0.3 s each here), and none of them may be stopped by a limit, of time or memory (that
    would hide an attack that ran)."""
    tallies = risk_guard.measure(HELD_OUT / "adversarial", seconds=10, memory="512M",
                                 seconds_for={"resource_exhaustion": 3})
    others = {group: t for group, t in tallies.items() if group != "resource_exhaustion"}
    escaped = [e for t in others.values() for e in t.escaped]
    unexplained = [e for e in escaped if not e.startswith(("destruction #6 ", "destruction #34 "))]
    assert not unexplained, "\n".join(escaped)
    assert sum(t.counts["limit"] for t in others.values()) == 0, [
        line for t in others.values() for line in t.stopped]
    assert tallies["resource_exhaustion"].counts["limit"] >= 10  # the limits stopped them
    assert sum(t.counts["guard"] for t in tallies.values()) >= 10  # the guard did stop some
