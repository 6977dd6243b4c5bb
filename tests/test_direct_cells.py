"""Direct cells (``%%python``) on the fast path: output relayed from the child still
packed (large frames not even copied), decoded for the session log only after the reply.
What a frontend sees must not change: busy, execute_input, outputs, reply, idle; a request
aborted after an error never reaches the child; the log has every cell, in order."""

from __future__ import annotations

import queue
import time
from pathlib import Path
from typing import Any

import pytest

from oi_kernel.record.session_log import read_log
from tests.env import oi_env
from tests.kernel_client import KernelSession


@pytest.fixture(scope="module")
def ks(_server, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("direct")
    env = oi_env(_server, tmp)
    with KernelSession(env=env, cwd=str(tmp)) as session:
        assert session.execute("%%python\nwarm = 1", timeout=90).status == "ok"
        yield session


def all_iopub(ks: KernelSession, msg_id: str, timeout: float = 60) -> list[dict[str, Any]]:
    """Every iopub message of one request, status and execute_input included, in order."""
    messages: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            msg = ks.kc.get_iopub_msg(timeout=1)
        except queue.Empty:
            continue
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        messages.append(msg)
        if msg["header"]["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return messages
    raise TimeoutError(f"no idle for {msg_id}")


def replies(ks: KernelSession, msg_ids: list[str], timeout: float = 60) -> dict[str, dict]:
    found: dict[str, dict] = {}
    deadline = time.monotonic() + timeout
    while len(found) < len(msg_ids) and time.monotonic() < deadline:
        try:
            reply = ks.kc.get_shell_msg(timeout=1)
        except queue.Empty:
            continue
        if reply["parent_header"].get("msg_id") in msg_ids:
            found[reply["parent_header"]["msg_id"]] = reply
    return found


def test_message_order_and_counts(ks):
    msg_id = ks.kc.execute("%%python\nprint('out')\n6 * 7")
    kinds = [
        (m["header"]["msg_type"], m["content"].get("execution_state", ""))
        for m in all_iopub(ks, msg_id)
    ]
    assert kinds == [
        ("status", "busy"),
        ("execute_input", ""),
        ("stream", ""),
        ("execute_result", ""),
        ("status", "idle"),
    ]
    reply = replies(ks, [msg_id])[msg_id]
    assert reply["content"]["status"] == "ok"


def test_execute_result_carries_the_wrappers_count(ks):
    first = ks.execute("%%python\n1")
    second = ks.execute("%%python\n2")
    counts = [r.of_type("execute_result")[0]["content"]["execution_count"] for r in (first, second)]
    assert counts == [
        first.reply["content"]["execution_count"],
        second.reply["content"]["execution_count"],
    ]
    assert counts[1] == counts[0] + 1


def test_cells_queued_behind_an_error_are_aborted_and_never_run(ks):
    failing = ks.kc.execute("%%python\n1/0")
    queued = ks.kc.execute("%%python\nqueued_ran = True")
    got = replies(ks, [failing, queued])
    assert got[failing]["content"]["status"] == "error"
    assert got[failing]["content"]["ename"] == "ZeroDivisionError"
    assert got[queued]["content"]["status"] == "aborted"
    check = ks.execute("%%python\nprint('queued_ran' in dir())")
    assert check.stdout == "False\n"


def test_error_reply_and_error_output_agree(ks):
    result = ks.execute("%%python\nraise ValueError('boom')")
    [error] = result.of_type("error")
    content = result.reply["content"]
    assert content["status"] == "error"
    assert (content["ename"], content["evalue"]) == ("ValueError", "boom")
    assert content["traceback"] == error["content"]["traceback"]


def log_records(ks: KernelSession) -> list[dict[str, Any]]:
    path = Path(ks.execute("%log").text.split("`")[1])
    return read_log(path)


def test_every_direct_cell_is_in_the_log_right_after_it(ks):
    ks.execute("%%python\nprint('logged-marker')")
    ks.execute("%%python\nraise KeyError('logged-error')")
    directs = [r for r in log_records(ks) if r["event"] == "direct"]
    assert directs[-2]["status"] == "ok"
    assert directs[-2]["outputs"][0]["text"] == "logged-marker\n"
    assert directs[-1]["status"] == "error"
    assert directs[-1]["outputs"][0]["ename"] == "KeyError"
    seqs = [r["seq"] for r in log_records(ks)]
    assert seqs == sorted(seqs)


def _directs_on_disk(path: Path) -> list[str]:
    """The code of the ``direct`` records already on disk (no request is sent)."""
    return [r["code"] for r in read_log(path) if r["event"] == "direct"]


def test_a_direct_cells_record_reaches_the_disk_without_another_request(ks):
    path = Path(ks.execute("%log").text.split("`")[1])
    ks.execute("%%python\nidle_marker = 1")
    deadline = time.monotonic() + 5
    while "idle_marker = 1" not in _directs_on_disk(path):
        assert time.monotonic() < deadline, "record not written while the kernel was idle"
        time.sleep(0.02)


def test_cells_sent_back_to_back_are_logged_within_a_bounded_time(ks):
    """Run All: records wait while requests keep coming, but never longer than
    ``LOG_MAX_DELAY_S`` (a killed kernel loses no record older than that), in order."""
    from oi_kernel.kernel.direct import LOG_MAX_DELAY_S

    path = Path(ks.execute("%log").text.split("`")[1])
    first = "%%python\nstream_0 = 0"
    ks.execute(first)
    started = time.monotonic()
    i, seen_while_busy = 1, False
    while time.monotonic() - started < LOG_MAX_DELAY_S + 1.0:
        ks.execute(f"%%python\nstream_{i} = {i}")
        i += 1
        if time.monotonic() - started > LOG_MAX_DELAY_S + 0.3:
            seen_while_busy = seen_while_busy or "stream_0 = 0" in _directs_on_disk(path)
    assert seen_while_busy, "the first record was still queued while cells kept coming"
    codes = [c for c in _directs_on_disk(path) if c.startswith("stream_")]
    assert codes[:i - 1] == [f"stream_{n} = {n}" for n in range(len(codes[:i - 1]))]
    codes = [r["code"] for r in log_records(ks) if r["event"] == "direct"
             and r["code"].startswith("stream_")]
    assert codes == [f"stream_{n} = {n}" for n in range(i)]


def test_a_large_output_reaches_the_frontend_whole_and_the_log_cut(ks):
    code = "import sys\nsys.stdout.write('a' + 'x' * 6_000_000 + 'z\\n')\nsys.stdout.flush()"
    result = ks.execute("%%python\n" + code, timeout=120)
    assert result.status == "ok"
    text = result.stdout
    assert len(text) == 6_000_003 and text.startswith("ax") and text.endswith("xz\n")
    [record] = [r for r in log_records(ks) if r["event"] == "direct"][-1:]
    kept = record["outputs"][0]["text"]
    assert kept.startswith("axxx") and kept.endswith("xxz\n")
    assert "[... 4,000,003 characters cut ...]" in kept


def test_the_child_link_is_unsigned_and_private(ks):
    """The child's connection file has an empty key (see ChildKernel._start): its ipc
    sockets live in a 0700 directory only our user can enter."""
    code = (
        "import json, os, stat\n"
        "from ipykernel.connect import get_connection_file\n"
        "path = get_connection_file()\n"
        "info = json.load(open(path))\n"
        "mode = stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode)\n"
        "print(repr(info['key']), info['transport'], oct(mode & 0o777))"
    )
    assert ks.execute("%%python\n" + code).stdout == "'' ipc 0o700\n"


def test_large_results_and_displays_arrive_whole(ks):
    """Messages over 64 KB come from the child as ZeroMQ frames, not bytes."""
    code = (
        "from IPython.display import HTML, display\n"
        "display(HTML('<p>' + 'h' * 100_000 + '</p>'))\n"
        "'r' * 100_000"
    )
    result = ks.execute("%%python\n" + code)
    assert result.status == "ok"
    [shown] = result.of_type("display_data")
    assert shown["content"]["data"]["text/html"] == "<p>" + "h" * 100_000 + "</p>"
    [value] = result.of_type("execute_result")
    assert value["content"]["data"]["text/plain"] == repr("r" * 100_000)
    assert value["content"]["execution_count"] == result.reply["content"]["execution_count"]


def test_the_wrapper_offers_no_subshells(ks):
    """Its state belongs to one event loop: a subshell would run requests in another
    thread (OIKernelApp.init_sockets)."""
    msg_id = ks.kc.kernel_info()
    reply = replies(ks, [msg_id])[msg_id]
    assert "kernel subshells" not in reply["content"].get("supported_features", [])
    assert reply["content"]["implementation"] == "oi_kernel"


def test_other_cell_magics_run_in_the_child_without_the_model(ks, _server):
    _server.reset()
    result = ks.execute("%%bash\necho from-bash-$((6 * 7))")
    assert result.status == "ok", result.text
    assert result.stdout == "from-bash-42\n"
    html = ks.execute("%%html\n<b>bold</b>")
    shown = [m["content"]["data"]["text/html"] for m in html.of_type("display_data")]
    assert [text.strip() for text in shown] == ["<b>bold</b>"]
    assert _server.requests == []  # neither went to the model


def _history_db_codes(ipython_dir: Path) -> list[str]:
    import sqlite3

    db = ipython_dir / "profile_default" / "history.sqlite"
    if not db.exists():
        return []
    with sqlite3.connect(db) as conn:
        return [row[0] for row in conn.execute("SELECT source_raw FROM history")]


@pytest.mark.kernel
def test_the_childs_history_database_is_written_in_batches_and_complete_at_shutdown(
        _server, tmp_path):
    """ChildKernel._start: IPython's history.sqlite gets the cells in batches of
    HISTORY_BATCH (not one transaction per cell) and the rest at shutdown; the session's
    own history (``%history``, ``_i``) is complete all along."""
    from oi_kernel.execution.child import HISTORY_BATCH

    ipython_dir = tmp_path / "ipython"
    env = {**oi_env(_server, tmp_path), "IPYTHONDIR": str(ipython_dir)}
    codes = [f"hist_{i} = {i}" for i in range(3)]
    with KernelSession(env=env, cwd=str(tmp_path)) as session:
        for code in codes:
            assert session.execute("%%python\n" + code, timeout=90).status == "ok"
        shown = session.execute("%%python\n%history -n").stdout
        assert all(code in shown for code in codes), shown
        assert session.execute("%%python\nprint(_i2)").stdout == codes[1] + "\n"
        assert HISTORY_BATCH > len(codes) + 2
        assert not set(codes) & set(_history_db_codes(ipython_dir)), "written per cell"
    deadline = time.monotonic() + 20  # the child writes the rest as it exits
    while not set(codes) <= set(_history_db_codes(ipython_dir)):
        assert time.monotonic() < deadline, _history_db_codes(ipython_dir)
        time.sleep(0.1)
