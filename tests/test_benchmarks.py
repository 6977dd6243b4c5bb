"""Keeps the benchmark scripts runnable: the statistics and analysis helpers, and one
``--quick`` run of every section (tiny iteration counts; the numbers are not checked,
only that each section ran and reported). Section 7 needs Open Interpreter's own venv
and the package index, so the smoke run leaves it out."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import streaming, tokens
from benchmarks.common import Summary, percentile
from benchmarks.run_all import SECTIONS

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [
        ([5.0], 90, 5.0),
        ([1.0, 2.0, 3.0, 4.0, 5.0], 50, 3.0),
        ([1.0, 2.0, 3.0, 4.0, 5.0], 90, 4.6),
        ([10.0, 0.0], 100, 10.0),
        ([3.0, 1.0, 2.0], 0, 1.0),
    ],
)
def test_percentile(values, q, expected):
    assert percentile(values, q) == pytest.approx(expected)


def test_summary_of_empty_series_is_nan_not_an_error():
    s = Summary.of([])
    assert s.n == 0 and s.median != s.median  # NaN


def test_streaming_analysis_separates_first_chunk_and_coalesced_updates():
    # chunks stamped at 0, 10, 20, 30 ms; the first is shown 2 ms later, the rest in one
    # update 50 ms after the second chunk arrived (+3 ms)
    turn = {"updates": [(100.002, [100.0]), (100.063, [100.010, 100.020, 100.030])]}
    result = streaming.analyse([turn])
    assert result["first"] == [pytest.approx(0.002)]
    assert result["oldest_minus_window"] == [pytest.approx(0.003)]
    assert sorted(result["every"]) == pytest.approx([0.002, 0.033, 0.043, 0.053])
    assert result["rates"] == [pytest.approx(1 / 0.061)]


def test_untruncated_baseline_grows_by_each_full_output():
    first = [{"role": "system", "content": "s"}, {"role": "user", "content": "go"}]
    call = {"role": "assistant", "content": None, "tool_calls": []}
    second = [*first, call, {"role": "tool", "tool_call_id": "a", "content": "cut"}]
    third = [
        {"role": "user", "content": "condensed"},
        call,
        {"role": "tool", "tool_call_id": "b", "content": "cut"},
    ]
    naive = tokens._untruncated([first, second, third], {"a": "x" * 400, "b": "y" * 800})
    assert naive[0] == first
    assert [m.get("content") for m in naive[2][2:]] == [None, "x" * 400, None, "y" * 800]
    assert second[3]["content"] == "cut"  # the recorded requests are left alone
    assert tokens._tokens(naive[2]) > tokens._tokens(naive[1]) + 190


@pytest.mark.timeout(900)
def test_quick_run_of_every_section_writes_a_report(tmp_path):
    keys = [k for k in SECTIONS if k != "7"]
    out = tmp_path / "RESULTS.md"
    proc = subprocess.run(
        [
            sys.executable,
            "benchmarks/run_all.py",
            "--quick",
            "--only",
            ",".join(keys),
            "-o",
            str(out),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=880,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = out.read_text()
    assert "failed:" not in report, report
    summary = report.split("## Summary", 1)[1].split("\n## ", 1)[0]
    for title in (
        "1. Execution overhead",
        "2. Output throughput",
        "3. LLM streaming latency",
        "4. Start-up",
        "5. Memory",
        "6. Prompt tokens",
    ):
        rows = [line for line in summary.splitlines() if line.startswith(f"| {title} |")]
        assert len(rows) >= 2, f"{title} reported nothing:\n{summary}"
        assert "nan" not in " ".join(rows).lower(), rows
    assert "Load average" in report
