"""Export a session log to a notebook and verify it by re-running it in a real kernel."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest

from oi_kernel.core.types import code_hash
from oi_kernel.errors import OIError
from oi_kernel.record.export import build_notebook, export_notebook
from oi_kernel.record.session_log import SessionLog, read_log
from oi_kernel.record.verify import compare_outputs, normalize_text, verify_notebook

MODEL = "openai/gpt-4o-mini"


# ---------------------------------------------------------------- helpers


def run_cells(sources: list[str], cwd: Path) -> list[list[dict[str, Any]]]:
    """Run the sources in one real python3 kernel; the nbformat outputs of each, as plain dicts."""
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    client = NotebookClient(
        nb,
        timeout=60,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(cwd)}},
    )
    client.execute()
    return [json.loads(json.dumps(cell.outputs)) for cell in nb.cells]


class Recorder:
    """Writes the events the engine writes, in the same shapes."""

    def __init__(self, directory: Path, cwd: Path) -> None:
        self.log = SessionLog(directory, session_id="test-session")
        self.log.write(
            "session_start",
            kernel="open-interpreter",
            model=MODEL,
            child_kernel="python3",
            cwd=str(cwd),
            oi_version="0.1.0",
            python=sys.version.split()[0],
        )
        self.turn = 0

    def instruction(self, text: str) -> None:
        self.turn += 1
        self.log.write("turn_start", turn=self.turn, instruction=text)

    def llm(self, call: int, text: str = "", tool_calls: list[dict[str, Any]] = ()) -> None:
        messages = [{"role": "system", "content": "..."}, {"role": "user", "content": "..."}]
        self.log.write("llm_request", turn=self.turn, step=call, model=MODEL,
                       messages=messages, tools=True)  # fmt: skip
        usage = {"prompt_tokens": 120, "completion_tokens": 30, "cost": 0.0001}
        self.log.write("llm_response", turn=self.turn, step=call, text=text,
                       tool_calls=list(tool_calls), usage=usage, latency_s=0.8,
                       finish_reason="tool_calls" if tool_calls else "stop")  # fmt: skip

    def step(
        self,
        step: int,
        language: str,
        proposed: str,
        *,
        action: str = "approved",
        ran: str | None = None,
        by: str = "user",
        status: str = "ok",
        outputs: list[dict[str, Any]] = (),
    ) -> None:
        self.log.write("code_proposed", turn=self.turn, step=step, language=language,
                       code=proposed, sha256=code_hash(proposed), flags=[])  # fmt: skip
        code = proposed if ran is None else ran
        runs = action not in ("skipped", "stopped")
        self.log.write("decision", turn=self.turn, step=step, action=action,
                       code=code if runs else "", sha256=code_hash(code) if runs else "",
                       reason="" if runs else "not now", by=by)  # fmt: skip
        if runs:
            self.log.write("execution", turn=self.turn, step=step, language=language, code=code,
                           sha256=code_hash(code), status=status, outputs=list(outputs),
                           duration_s=0.05, feedback="...")  # fmt: skip

    def direct(self, code: str, outputs: list[dict[str, Any]], kind: str = "python") -> None:
        self.log.write("direct", kind=kind, code=code, status="ok", outputs=outputs,
                       duration_s=0.01)  # fmt: skip

    def end_turn(self, steps: int) -> None:
        self.log.write("turn_end", turn=self.turn, reason="done", steps=steps, usage={})

    def close(self) -> Path:
        self.log.write("session_end")
        self.log.close()
        return self.log.path


THREE_TURN_SOURCES = [
    "x = 21 * 2\nprint(x)",
    "print(x * 10)",
    "1 / 0",
    "y = x + 1\ny",
    "%%bash\necho hello from bash",
]


@pytest.fixture(scope="module")
def three_turn_outputs(tmp_path_factory: pytest.TempPathFactory) -> list[list[dict[str, Any]]]:
    return run_cells(THREE_TURN_SOURCES, tmp_path_factory.mktemp("record"))


@pytest.fixture
def three_turn_log(tmp_path: Path, three_turn_outputs: list[list[dict[str, Any]]]) -> Path:
    out = three_turn_outputs
    rec = Recorder(tmp_path / "logs", tmp_path)
    rec.instruction("Make a variable x = 42 and print it")
    rec.llm(1, tool_calls=[{"id": "c1", "name": "execute", "arguments": "{}"}])
    rec.step(1, "python", "x = 21 * 2\nprint(x)", outputs=out[0])
    rec.step(2, "python", "import shutil; shutil.rmtree('data')", action="skipped")
    rec.llm(2, text="Done: x is 42.")
    rec.end_turn(2)
    rec.instruction("Now use x again")
    rec.llm(1)
    rec.step(1, "python", "print(x + 1)", action="edited", ran="print(x * 10)", outputs=out[1])
    rec.step(2, "python", "1 / 0", status="error", outputs=out[2])
    rec.end_turn(2)
    rec.direct("y = x + 1\ny", out[3])
    rec.instruction("Say hello from the shell")
    rec.llm(1)
    rec.step(1, "shell", "echo hello from bash", by="auto", action="auto", outputs=out[4])
    rec.end_turn(1)
    return rec.close()


def code_cells(nb: Any) -> list[Any]:
    return [c for c in nb.cells if c.cell_type == "code"]


def all_text(nb: Any) -> str:
    return "\n".join(c.source for c in nb.cells)


# ---------------------------------------------------------------- export


def test_three_turn_session_exports_what_ran(three_turn_log: Path, tmp_path: Path) -> None:
    out = export_notebook(three_turn_log, tmp_path / "out" / "nested" / "session.ipynb")
    assert out.exists()
    nb = nbformat.read(out, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata.kernelspec == {
        "name": "python3",
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    assert nb.metadata.language_info.name == "python"
    cells = code_cells(nb)
    assert [c.source for c in cells] == [
        "x = 21 * 2\nprint(x)",
        "print(x * 10)",  # the edit, not the proposal
        "y = x + 1\ny",
        "%%bash\necho hello from bash",
    ]
    assert [c.execution_count for c in cells] == [1, 2, 3, 4]
    assert cells[2].outputs[0].execution_count == 3
    assert cells[0].outputs[0].text == "42\n"
    assert cells[3].outputs[0].text == "hello from bash\n"
    text = all_text(nb)
    assert "shutil.rmtree" not in text  # skipped
    assert "print(x + 1)" not in text  # the proposal that was edited
    assert "1 / 0" not in text  # failed, left out by default
    assert "**Instruction 1:** Make a variable x = 42 and print it" in text
    assert text.index("**Instruction 2:**") < text.index("print(x * 10)")
    assert text.index("y = x + 1") < text.index("**Instruction 3:**")


def test_provenance_metadata(three_turn_log: Path, tmp_path: Path) -> None:
    nb = nbformat.read(export_notebook(three_turn_log, tmp_path / "s.ipynb"), as_version=4)
    meta = nb.metadata.oi_kernel
    assert meta.session == "test-session"
    assert meta.model == MODEL
    assert meta.log == str(three_turn_log.resolve())
    assert meta.version and meta.exported_at.endswith("Z")
    first, edited, direct, shell = (c.metadata.oi_kernel for c in code_cells(nb))
    assert first.turn == 1 and first.step == 1 and first.decision == "approved"
    assert first.by == "user" and first.language == "python" and first.model == MODEL
    assert first.sha256 == code_hash("x = 21 * 2\nprint(x)")
    assert first.time.endswith("Z")
    assert edited.decision == "edited" and edited.sha256 == code_hash("print(x * 10)")
    assert direct.direct == "python"
    assert shell.decision == "auto" and shell.by == "auto" and shell.language == "shell"
    assert nb.cells[0].cell_type == "markdown" and "test-session" in nb.cells[0].source


def test_failed_steps_only_with_include_failed(three_turn_log: Path, tmp_path: Path) -> None:
    path = export_notebook(three_turn_log, tmp_path / "f.ipynb", include_failed=True)
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    index = next(i for i, c in enumerate(nb.cells) if c.source == "1 / 0")
    failed = nb.cells[index]
    assert failed.metadata.oi_kernel.failed == "error"
    assert failed.outputs[-1].ename == "ZeroDivisionError"
    assert "failed when it ran" in nb.cells[index - 1].source
    assert "shutil.rmtree" not in all_text(nb)  # skipped is never exported


def test_overwrite_needs_force(three_turn_log: Path, tmp_path: Path) -> None:
    target = tmp_path / "s.ipynb"
    target.write_text("precious", encoding="utf-8")
    with pytest.raises(OIError, match=r"exists; pass --force \(or force=True\) to overwrite"):
        export_notebook(three_turn_log, target)
    assert target.read_text(encoding="utf-8") == "precious"
    export_notebook(three_turn_log, target, force=True)
    nbformat.validate(nbformat.read(target, as_version=4))


def test_title(three_turn_log: Path) -> None:
    records = read_log(three_turn_log)
    assert (
        build_notebook(records, title="Sales report").cells[0].source.startswith("# Sales report")
    )
    assert build_notebook(records, title="").cells[0].source.startswith("**Instruction 1:**")


def test_empty_session_still_exports(tmp_path: Path) -> None:
    rec = Recorder(tmp_path, tmp_path)
    rec.instruction("What is a notebook?")
    rec.llm(1, text="A document of code and prose.")
    rec.end_turn(0)
    path = export_notebook(rec.close(), tmp_path / "empty.ipynb")
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert code_cells(nb) == []
    assert "**Instruction 1:** What is a notebook?" in all_text(nb)


def test_empty_log_is_refused(tmp_path: Path) -> None:
    log = tmp_path / "empty.jsonl"
    log.write_text("", encoding="utf-8")
    with pytest.raises(OIError, match="no events"):
        export_notebook(log, tmp_path / "x.ipynb")


def test_torn_last_line_and_direct_shell(tmp_path: Path) -> None:
    rec = Recorder(tmp_path, tmp_path)
    out = [{"output_type": "stream", "name": "stdout", "text": "hi\n"}]
    rec.direct("echo hi", out, kind="shell")
    path = rec.close()
    with open(path, "a", encoding="utf-8") as f:
        f.write('{"v": 1, "seq": 9, "event": "dire')
    nb = build_notebook(read_log(path))
    assert [c.source for c in code_cells(nb)] == ["!echo hi"]


def test_unknown_language_becomes_a_note(tmp_path: Path) -> None:
    rec = Recorder(tmp_path, tmp_path)
    rec.instruction("cobol please")
    rec.step(1, "cobol", "DISPLAY 'HI'.", outputs=[])
    nb = build_notebook(read_log(rec.close()))
    assert code_cells(nb) == []
    assert "'cobol'" in all_text(nb)


def test_import_is_light() -> None:
    code = "import sys, oi_kernel.record.export; print(sorted({'nbformat','nbclient'} & set(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


# ---------------------------------------------------------------- verify (real kernels)


def test_export_then_verify_passes(three_turn_log: Path, tmp_path: Path) -> None:
    path = export_notebook(three_turn_log, tmp_path / "nb" / "s.ipynb", include_failed=True)
    before = path.read_bytes()
    report = verify_notebook(path)
    assert report.ok, report.format()
    assert [c.status for c in report.cells] == ["same"] * 5
    assert path.read_bytes() == before  # the notebook itself is never rewritten
    assert "OK: 5 of 5" in report.format()


def test_tampered_output_fails_and_names_the_cell(three_turn_log: Path, tmp_path: Path) -> None:
    path = export_notebook(three_turn_log, tmp_path / "s.ipynb")
    nb = nbformat.read(path, as_version=4)
    index = next(i for i, c in enumerate(nb.cells) if c.source == "print(x * 10)")
    nb.cells[index].outputs[0].text = "421\n"
    nbformat.write(nb, path)
    report = verify_notebook(path)
    assert not report.ok
    bad = [c for c in report.cells if c.status != "same"]
    assert [(c.index, c.status) for c in bad] == [(index, "different")]
    assert "'421'" in bad[0].detail and "'420'" in bad[0].detail
    table = report.format()
    assert "FAILED: 3 of 4" in table
    assert any(
        line.split()[:1] == [str(index)] and "different" in line for line in table.splitlines()
    )


def test_volatile_output_still_verifies(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    sources = [
        "class Thing: pass\nprint(Thing())\nprint(object())\nThing",
        "%time total = sum(range(200000))",
        "import datetime, random, time\n"
        "t0 = time.perf_counter(); time.sleep(random.random() / 50)\n"
        "print(f'took {time.perf_counter() - t0:.4f} s at {datetime.datetime.now().isoformat()}')\n"
        "print(f'{random.uniform(1, 2):.2f}it/s')",
        "import os, tempfile\nprint(os.getcwd())\nprint(tempfile.mkdtemp())",
        "from IPython.display import Image, display\nimport os\n"
        "display(Image(data=b'\\x89PNG\\r\\n\\x1a\\n' + os.urandom(32), format='png'))",
        "print('\\x1b[31mred\\x1b[0m', flush=True)\nimport sys; print('warn', file=sys.stderr)",
    ]
    outputs = run_cells(sources, project)
    assert "0x" in outputs[0][0]["text"]
    rec = Recorder(tmp_path / "logs", project)
    rec.instruction("print volatile things")
    for step, (source, out) in enumerate(zip(sources, outputs, strict=True), start=1):
        rec.step(step, "python", source, outputs=out)
    path = export_notebook(rec.close(), project / "volatile.ipynb")
    report = verify_notebook(path)
    assert report.ok, report.format()


def test_verify_runs_in_a_copy(tmp_path: Path) -> None:
    record_dir, project, elsewhere = tmp_path / "rec", tmp_path / "project", tmp_path / "other"
    for d in (record_dir, project, elsewhere):
        d.mkdir()
    for d in (record_dir, project):
        (d / "input.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    sources = [
        "print(open('input.csv').read())",
        "with open('out.txt', 'w') as f:\n    f.write('made')",
    ]
    outputs = run_cells(sources, record_dir)
    rec = Recorder(tmp_path / "logs", record_dir)
    rec.instruction("read the csv and write a file")
    rec.step(1, "python", sources[0], outputs=outputs[0])
    rec.step(2, "python", sources[1], outputs=outputs[1])
    path = export_notebook(rec.close(), project / "session.ipynb")

    report = verify_notebook(path)
    assert report.ok, report.format()
    assert sorted(p.name for p in project.iterdir()) == ["input.csv", "session.ipynb"]
    assert report.workdir != str(project)

    elsewhere_report = verify_notebook(path, cwd=elsewhere)
    assert not elsewhere_report.ok
    assert elsewhere_report.cells[0].status == "error"
    assert "FileNotFoundError" in elsewhere_report.cells[0].detail
    assert not (elsewhere / "out.txt").exists()

    in_place = verify_notebook(path, in_place=True)
    assert in_place.ok, in_place.format()
    assert (project / "out.txt").read_text(encoding="utf-8") == "made"


def test_missing_kernel_is_a_clear_error(three_turn_log: Path, tmp_path: Path) -> None:
    path = export_notebook(three_turn_log, tmp_path / "s.ipynb")
    with pytest.raises(OIError, match="No kernel named 'no-such-kernel'"):
        verify_notebook(path, kernel_name="no-such-kernel")


# ---------------------------------------------------------------- normalisation tables


@pytest.mark.parametrize(
    ("recorded", "rerun"),
    [
        ("<__main__.Thing object at 0x7f3a2b1c9d60>", "<__main__.Thing object at 0x7f11aa22bb30>"),
        ("took 1.23 s", "took 0.98 s"),
        ("took 12.5ms", "took 3.1ms"),
        (
            "CPU times: user 3 ms, sys: 0 ns, total: 3 ms\nWall time: 3.1 ms",
            "CPU times: x\nWall time: y",
        ),
        ("100%|██| 10/10 [00:01<00:00, 9.52it/s]", "100%|██| 10/10 [00:02<00:00, 4.10it/s]"),
        ("at 2025-01-31T09:15:02.123456", "at 2026-05-09T07:35:25.000001"),
        ("2025-01-31 09:15:02+00:00", "2026-05-09 07:35:25+00:00"),
        ("\x1b[31mred\x1b[0m", "red"),
        ("/tmp/tmpab12cd/file.txt", "/tmp/tmpzz99yy/file.txt"),
        ("id 123e4567-e89b-12d3-a456-426614174000", "id 00000000-1111-2222-3333-444444444444"),
        ("Cell In[3], line 1", "Cell In[17], line 1"),
        ("trailing   \n\n", "trailing"),
    ],
)
def test_volatile_text_normalises_equal(recorded: str, rerun: str) -> None:
    assert normalize_text(recorded) == normalize_text(rerun)


@pytest.mark.parametrize(
    ("recorded", "rerun"),
    [
        ("420", "421"),
        ("hello", "Hello"),
        ("the 1990s", "the 1980s"),
        ("a\nb", "a\nc"),
    ],
)
def test_real_differences_survive_normalisation(recorded: str, rerun: str) -> None:
    assert normalize_text(recorded) != normalize_text(rerun)


def test_run_directories_are_normalised() -> None:
    roots = ["/home/me/project", "/tmp/oi-verify-x/project"]
    assert normalize_text("/home/me/project/a.csv", roots) == normalize_text(
        "/tmp/oi-verify-x/project/a.csv", roots
    )


def _stream(name: str, text: str) -> dict[str, Any]:
    return {"output_type": "stream", "name": name, "text": text}


def _display(data: dict[str, Any]) -> dict[str, Any]:
    return {"output_type": "display_data", "data": data, "metadata": {}}


def _error(ename: str) -> dict[str, Any]:
    return {"output_type": "error", "ename": ename, "evalue": "?", "traceback": []}


PNG_A = {"image/png": "iVBORw0KGgoAAAA", "text/plain": "<Figure size 640x480 with 1 Axes>"}
PNG_B = {"image/png": "iVBORw0KGgoBBBB", "text/plain": "<Figure size 640x480 with 1 Axes>"}
WIDGET = {"application/vnd.jupyter.widget-view+json": {"model_id": "abc", "version_major": 2}}
WIDGET2 = {"application/vnd.jupyter.widget-view+json": {"model_id": "xyz", "version_major": 2}}


@pytest.mark.parametrize(
    ("recorded", "rerun", "status"),
    [
        (
            [_stream("stdout", "a\nb\n")],
            [_stream("stdout", "a\n"), _stream("stdout", "b\n")],
            "same",
        ),
        (
            [_stream("stdout", "a\n")],
            [_stream("stdout", "a\n"), _stream("stderr", "w\n")],
            "different",
        ),
        ([_display(PNG_A)], [_display(PNG_B)], "same"),
        ([_display(PNG_A)], [], "different"),
        ([_display(WIDGET)], [_display(WIDGET2)], "same"),
        ([_error("ValueError")], [_error("ValueError")], "same"),
        ([_error("ValueError")], [_error("KeyError")], "different"),
        ([_stream("stdout", "ok\n")], [_stream("stdout", "ok\n"), _error("NameError")], "error"),
    ],
)
def test_compare_outputs(recorded: list[Any], rerun: list[Any], status: str) -> None:
    assert compare_outputs(recorded, rerun)[0] == status


def test_redacted_code_is_exported_redacted_and_marked(tmp_path: Path) -> None:
    secret = "sk-test-123456789"
    rec = Recorder(tmp_path, tmp_path)
    rec.log.add_secrets([secret])
    rec.instruction("call the API")
    rec.step(1, "python", f"key = {secret!r}", outputs=[])
    nb = build_notebook(read_log(rec.close()))
    (cell,) = code_cells(nb)
    assert cell.source == "key = '[REDACTED]'"
    assert cell.metadata.oi_kernel.sha256_mismatch is True


def test_timeout_marks_the_cell_and_skips_the_rest(tmp_path: Path) -> None:
    rec = Recorder(tmp_path / "logs", tmp_path)
    rec.instruction("wait")
    rec.step(1, "python", "import time\ntime.sleep(60)", outputs=[])
    rec.step(2, "python", "print('after')", outputs=[_stream("stdout", "after\n")])
    path = export_notebook(rec.close(), tmp_path / "slow.ipynb")
    report = verify_notebook(path, timeout=3)
    assert not report.ok
    assert [c.status for c in report.cells] == ["error", "skipped"]
    assert "timed out after 3 s" in report.cells[0].detail
