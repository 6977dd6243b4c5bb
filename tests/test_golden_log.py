"""Logs written before a change keep working after it: a session log recorded by an earlier
version (tests/golden/session_v1.jsonl, written by tests/golden/record.py and never
re-recorded) still parses, exports, verifies and replays the same. This is the guard for
changes to how the engine reports and records a turn."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import nbformat
import pytest

from oi_kernel.record.export import export_notebook
from oi_kernel.record.replay import parse_session
from oi_kernel.record.session_log import read_log
from tests.golden import record as golden

GOLDEN = Path(__file__).parent / "golden" / "session_v1.jsonl"

RAN = [  # what ran, in order: the edit, not the proposal; the failed step is left out
    "data = [3, 4, 5]\nprint(sum(data))",
    "print(data[-1])",
    "print(max(data) * 2)",
    "%%bash\necho $((6 * 7))",
    "with open('largest.txt', 'w') as f:\n    f.write(str(max(data) * 2))",
    "print(len(data))",
]


def sha(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()


@pytest.fixture
def log(tmp_path: Path) -> Path:
    """A copy of the golden log (tests may not change the original)."""
    copy = tmp_path / "logs" / "golden.jsonl"
    copy.parent.mkdir()
    copy.write_bytes(GOLDEN.read_bytes())
    return copy


@pytest.mark.unit
def test_the_golden_log_is_what_the_recorder_says() -> None:
    records = read_log(GOLDEN)
    assert records[0]["event"] == "session_start" and records[0]["v"] == 1
    assert [r["instruction"] for r in records if r["event"] == "turn_start"] == [
        golden.TURN_1,
        golden.TURN_2,
    ]
    decisions = [(r["turn"], r["step"], r["action"]) for r in records if r["event"] == "decision"]
    assert decisions == [
        (1, 1, "approved"),
        (1, 2, "approved"),
        (1, 3, "approved"),
        (2, 1, "edited"),
        (2, 2, "approved"),
        (2, 3, "approved"),
        (2, 4, "skipped"),
    ]
    for r in records:  # every decision and execution names the code it is about by its hash
        if r["event"] in ("execution",) or (r["event"] == "decision" and r["code"]):
            assert r["sha256"] == sha(r["code"]), r


@pytest.mark.unit
def test_golden_log_parses_into_the_same_turns() -> None:
    session = parse_session(read_log(GOLDEN))
    assert session.start["cwd"] == golden.WORK
    turns = [a for a in session.actions if not isinstance(a, dict)]
    assert [t.instruction for t in turns] == [golden.TURN_1, golden.TURN_2]
    assert [len(t.replies) for t in turns] == [4, 2]
    assert [a["code"] for a in session.actions if isinstance(a, dict)] == [golden.DIRECT]


@pytest.mark.unit
def test_golden_log_exports_what_ran(log: Path, tmp_path: Path) -> None:
    nb = nbformat.read(export_notebook(log, tmp_path / "golden.ipynb"), as_version=4)
    nbformat.validate(nb)
    cells = [c for c in nb.cells if c.cell_type == "code"]
    assert [c.source for c in cells] == RAN
    assert [c.outputs[0].text for c in cells if c.outputs] == ["12\n", "5\n", "10\n", "42\n", "3\n"]
    meta = [c.metadata.oi_kernel for c in cells]
    assert [m.get("decision") for m in meta[:5]] == ["approved"] * 2 + ["edited"] + ["approved"] * 2
    assert all(
        m.sha256 == sha(c.source.removeprefix("%%bash\n"))
        for m, c in zip(meta[:5], cells[:5], strict=True)
    )
    assert meta[5].direct == "python"
    assert nb.metadata.oi_kernel.session == "golden-0"
    text = "\n".join(c.source for c in nb.cells)
    assert "shutil.rmtree" not in text and "data[10]" not in text
    assert f"**Instruction 1:** {golden.TURN_1}" in text


@pytest.mark.kernel
def test_golden_log_exports_a_notebook_that_verifies(log: Path, tmp_path: Path) -> None:
    from oi_kernel.record.verify import verify_notebook

    path = export_notebook(log, tmp_path / "nb" / "golden.ipynb")
    report = verify_notebook(path)
    assert report.ok, report.format()
    assert [c.status for c in report.cells] == ["same"] * len(RAN)


@pytest.mark.kernel
def test_golden_log_replays_the_same(log: Path) -> None:
    from oi_kernel.api.replay import replay_log

    report = replay_log(log)
    assert report.ok, report.format()
    assert [(c.turn, c.step, c.status) for c in report.checks] == [
        (1, 1, "same"),
        (1, 2, "same"),
        (1, 3, "same"),
        (2, 1, "same"),
        (2, 2, "same"),
        (2, 3, "same"),
        (2, 4, "skipped"),
        (None, "direct", "same"),
    ], report.format()


@pytest.mark.unit
def test_a_record_from_a_newer_writer_is_read_with_its_known_fields(log: Path) -> None:
    """Fields added later are ignored by today's readers, not an error."""
    records = [json.loads(line) for line in log.read_text().splitlines()]
    for r in records:
        r["added_later"] = {"anything": [1, 2]}
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    session = parse_session(read_log(log))
    assert len([a for a in session.actions if not isinstance(a, dict)]) == 2
