"""The session log: format, crash safety, secrets, permissions."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from oi_kernel.core.types import Usage, code_hash
from oi_kernel.errors import OIError
from oi_kernel.record.session_log import (
    SCHEMA_VERSION,
    SessionLog,
    default_log_dir,
    list_logs,
    read_log,
    read_log_report,
)

SECRET = "sk-test-123456789"
# Shaped like an OpenAI project key but never passed to the log as a secret.
KEY_SHAPED = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z" * 2
ISO_MS_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def test_round_trip_has_header_and_fields(tmp_path: Path) -> None:
    with SessionLog(tmp_path, session_id="abc123") as log:
        log.write("session_start", kernel="api", model="gpt-4o-mini", cwd=str(tmp_path))
        log.write("turn_start", turn=1, instruction="plot sales by month")
        written = log.write("turn_end", turn=1, reason="done", steps=0, usage={})
    records = read_log(log.path)
    assert [r["seq"] for r in records] == [1, 2, 3]
    assert [r["event"] for r in records] == ["session_start", "turn_start", "turn_end"]
    assert all(r["v"] == SCHEMA_VERSION == 1 for r in records)
    assert all(r["session"] == "abc123" for r in records)
    assert all(ISO_MS_UTC.match(r["t"]) for r in records)
    assert records[1]["instruction"] == "plot sales by month"
    assert records[2] == written


def test_file_name_and_permissions(tmp_path: Path) -> None:
    directory = tmp_path / "new" / "logs"
    with SessionLog(directory, session_id="s1") as log:
        log.write("session_start")
    assert re.fullmatch(r"\d{8}T\d{6}Z-s1\.jsonl", log.path.name)
    assert log.path.parent == directory
    assert stat.S_IMODE(log.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert list_logs(directory) == [log.path]


def test_header_fields_cannot_be_overridden(tmp_path: Path) -> None:
    with SessionLog(tmp_path, session_id="s") as log:
        record = log.write("turn_start", seq=99, v=7, session="other", turn=1)
    assert (record["seq"], record["v"], record["session"]) == (1, 1, "s")


def test_unserialisable_fields_never_raise(tmp_path: Path) -> None:
    class Opaque:
        def __repr__(self) -> str:
            return "<Opaque thing>"

    class Broken:
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

    loop: list[object] = []
    loop.append(loop)
    with SessionLog(tmp_path) as log:
        log.write(
            "execution",
            obj=Opaque(),
            broken=Broken(),
            usage=Usage(10, 5, 0.001),
            path=tmp_path,
            data=b"\xffbytes",
            keys={(1, 2): "tuple key", 3: "int key"},
            tags={"b", "a"},
            loop=loop,
        )
    (record,) = read_log(log.path)
    assert record["obj"] == "<Opaque thing>"
    assert record["broken"].startswith("<unrepresentable Broken")
    assert record["usage"] == {"prompt_tokens": 10, "completion_tokens": 5, "cost": 0.001}
    assert record["path"] == str(tmp_path)
    assert record["data"].endswith("bytes")
    assert record["keys"] == {"(1, 2)": "tuple key", "3": "int key"}
    assert record["tags"] == ["a", "b"]
    assert "nested too deep" in json.dumps(record["loop"])


def test_truncated_last_line_is_skipped(tmp_path: Path) -> None:
    with SessionLog(tmp_path) as log:
        for turn in (1, 2):
            log.write("turn_start", turn=turn, instruction="x")
    with open(log.path, "a", encoding="utf-8") as f:
        f.write('{"v": 1, "seq": 3, "event": "turn_st')  # killed mid-write
    records, problems = read_log_report(log.path)
    assert [r["seq"] for r in records] == [1, 2]
    assert len(problems) == 1 and "line 3" in problems[0] and "incomplete" in problems[0]
    assert len(read_log(log.path)) == 2  # and no warning for a torn tail


def test_corrupt_middle_line_is_skipped_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    good = json.dumps({"v": 1, "seq": 1, "event": "turn_start"})
    path.write_text(f"{good}\nnot json at all\n[1, 2]\n{good}\n", encoding="utf-8")
    records, problems = read_log_report(path)
    assert len(records) == 2
    assert [p.split(":")[0] for p in problems] == ["line 2", "line 3"]
    with pytest.warns(UserWarning, match="line 2"):
        read_log(path)


def test_missing_log_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(OIError, match="No session log at"):
        read_log(tmp_path / "nope.jsonl")


def test_sigkill_leaves_every_completed_event(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import os, signal, sys
        from oi_kernel.record.session_log import SessionLog
        log = SessionLog({str(tmp_path)!r}, session_id="killed")
        print(log.path, flush=True)
        for i in range(200):
            log.write("llm_response", turn=1, step=i, text="x" * 5000)
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    repo = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([repo, os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    path = Path(proc.stdout.strip())
    records, problems = read_log_report(path)
    assert [r["seq"] for r in records] == list(range(1, 201))
    assert problems == []


def test_concurrent_writers_get_unique_sequence_numbers(tmp_path: Path) -> None:
    log = SessionLog(tmp_path)

    def worker(n: int) -> None:
        for i in range(100):
            log.write("llm_request", turn=n, step=i, messages=[{"content": "m" * 300}])

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    log.close()
    records, problems = read_log_report(log.path)
    assert problems == []
    assert sorted(r["seq"] for r in records) == list(range(1, 401))


def test_write_after_close_raises(tmp_path: Path) -> None:
    log = SessionLog(tmp_path)
    log.close()
    log.close()  # idempotent
    assert log.closed
    with pytest.raises(OIError, match="closed"):
        log.write("session_end")


def test_secrets_never_reach_the_file(tmp_path: Path) -> None:
    with SessionLog(tmp_path, secrets=[SECRET]) as log:
        code = f"import openai\nclient = openai.OpenAI(api_key={SECRET!r})"
        log.write(
            "llm_request",
            turn=1,
            step=1,
            model="gpt-4o-mini",
            messages=[
                {"role": "system", "content": "You are helpful."},
                {"role": "user", "content": f"my key is {SECRET} and also {KEY_SHAPED}"},
            ],
            tools=True,
        )
        log.write("code_proposed", turn=1, step=1, language="python", code=code,
                  sha256=code_hash(code), flags=[])  # fmt: skip
        log.write(
            "execution",
            turn=1,
            step=1,
            language="python",
            code=code,
            sha256=code_hash(code),
            status="ok",
            outputs=[
                {"output_type": "stream", "name": "stdout", "text": f"key={SECRET}\n"},
                {
                    "output_type": "execute_result",
                    "execution_count": 1,
                    "data": {"text/plain": repr(KEY_SHAPED)},
                    "metadata": {},
                },
            ],
            duration_s=0.01,
            feedback=f"printed {SECRET}",
        )
        log.add_secrets(["hunter2-later-secret"])
        log.write("llm_error", turn=1, step=2, error="auth failed for hunter2-later-secret")
    text = log.path.read_text(encoding="utf-8")
    assert SECRET not in text
    assert KEY_SHAPED not in text
    assert "hunter2-later-secret" not in text
    records = read_log(log.path)  # still valid JSON after redaction
    assert [r["event"] for r in records] == [
        "llm_request",
        "code_proposed",
        "execution",
        "llm_error",
    ]
    assert records[0]["messages"][0]["content"] == "You are helpful."


def test_default_log_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OI_LOG_DIR", str(tmp_path / "mine"))
    assert default_log_dir() == tmp_path / "mine"
    monkeypatch.delenv("OI_LOG_DIR")
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "data"))
    assert default_log_dir() == tmp_path / "data" / "oi_kernel" / "logs"


def test_default_directory_is_used_when_none_given(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("OI_LOG_DIR", str(tmp_path / "env"))
    with SessionLog() as log:
        log.write("session_start")
    assert log.path.parent == tmp_path / "env"
    assert os.path.exists(log.path)
