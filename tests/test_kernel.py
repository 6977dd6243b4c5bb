"""The Open Interpreter kernel end to end: a real kernel started by jupyter_client,
a real child IPython kernel, and litellm talking HTTP to the scripted server."""

from __future__ import annotations

import json
import os
import queue
import signal
import threading
import time
from pathlib import Path

import pytest

from tests import llm_server as S
from tests.env import oi_env
from tests.kernel_client import KernelSession


def kernel_env(server: S.ScriptedLLMServer, tmp: Path, **extra: str) -> dict[str, str]:
    return oi_env(server, tmp, **{"OI_AUTO_RUN": "0", **extra})


@pytest.fixture(scope="module")
def kernel(_server, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("oi")
    with KernelSession(env=kernel_env(_server, tmp, OI_AUTO_RUN="1"), cwd=str(tmp)) as ks:
        ks.tmp = tmp
        yield ks


@pytest.fixture
def oi(kernel, _server):
    """The shared kernel with a fresh conversation and an empty script."""
    _server.reset()
    assert kernel.execute("%reset").status == "ok"
    assert kernel.execute("%auto_run on").status == "ok"
    return kernel


def sent_tool_results(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


def test_two_turns_share_variables_and_feed_output_back(oi, _server):
    _server.enqueue(S.tool_call("sales = [3, 4, 5]\nprint(sum(sales))"), S.text("The total is 12."))
    first = oi.execute("add up 3, 4 and 5")
    assert first.status == "ok"
    assert "12" in first.stdout
    assert "The total is 12." in first.text
    # the output went back to the LLM as the tool result
    assert sent_tool_results(_server.requests[1]) == [
        "12\n\nWhat the code changed:\n- sales: list[3] (new)"]

    _server.enqueue(S.tool_call("print(max(sales) * 10)"), S.text("50"))
    second = oi.execute("multiply the largest by ten")
    assert "50" in second.stdout
    body = _server.requests[2]
    users = [m["content"] for m in body["messages"] if m["role"] == "user"]
    assert users == ["add up 3, 4 and 5", "multiply the largest by ten"]  # history kept


def test_failing_step_is_shown_to_llm_and_fixed(oi, _server):
    _server.enqueue(
        S.tool_call("print(undefined_name)"),
        S.tool_call("undefined_name = 7\nprint(undefined_name)"),
        S.text("Fixed it."),
    )
    result = oi.execute("print a number")
    assert result.status == "ok"
    assert "7\n" in result.stdout
    assert result.of_type("error") == []  # recovered: shown compactly (tests/test_step_errors)
    assert "NameError: name 'undefined_name' is not defined" in result.text
    fed_back = sent_tool_results(_server.requests[1])[0]
    assert "NameError" in fed_back and "undefined_name" in fed_back


def test_markdown_mode_runs_fenced_blocks(kernel, _server, tmp_path):
    env = kernel_env(_server, tmp_path, OI_AUTO_RUN="1", OI_TOOL_MODE="markdown")
    _server.reset()
    with KernelSession(env=env, cwd=str(tmp_path)) as ks:
        _server.enqueue(
            S.text("Let me compute.\n```python\nprint(6 * 7)\n```\n", chunk_size="random", seed=3),
            S.text("It is 42."),
        )
        result = ks.execute("what is six times seven")
        assert result.status == "ok"
        # No widget frontend: the reply is printed as it streams, around the code's output.
        assert result.stdout == "Let me compute.\n```python\nprint(6 * 7)\n```\n42\nIt is 42.\n"
        assert "tools" not in _server.requests[0]
        assert "42" in _server.requests[1]["messages"][-1]["content"]


def test_step_cap_ends_the_turn(oi, _server):
    oi.execute("%max_steps 2")
    try:
        _server.set_fallback(S.tool_call("print('again')"))
        result = oi.execute("loop forever")
        assert result.status == "ok"
        assert len(_server.requests) == 2
        assert "step cap" in result.text
    finally:
        oi.execute("%max_steps 10")


def test_output_is_cut_to_head_and_tail_for_the_llm(oi, _server):
    _server.enqueue(S.tool_call("for i in range(20000):\n    print('line', i)"), S.text("ok"))
    result = oi.execute("print many lines")
    assert "line 19999" in result.stdout  # the user sees everything
    fed = sent_tool_results(_server.requests[1])[0]
    assert len(fed) < 10_000
    assert "line 0" in fed and "line 19999" in fed and "cut" in fed


def test_interrupt_while_code_runs(oi, _server):
    _server.enqueue(S.tool_call("import time\nprint('sleeping', flush=True)\ntime.sleep(30)"))
    timer = threading.Timer(2.0, oi.km.interrupt_kernel)
    timer.start()
    started = time.monotonic()
    result = oi.execute("sleep a while", timeout=40)
    elapsed = time.monotonic() - started
    assert result.status == "error"
    assert result.reply["content"]["ename"] == "KeyboardInterrupt"
    assert elapsed < 20, elapsed  # the interrupt ended it: the sleep alone takes 30 s
    assert oi.execute("%%python\nprint('alive')").stdout == "alive\n"


def test_interrupt_while_streaming(oi, _server):
    _server.enqueue(S.text("word " * 400, chunk_size=5, delay=0.05))
    timer = threading.Timer(1.5, oi.km.interrupt_kernel)
    timer.start()
    started = time.monotonic()
    result = oi.execute("talk a lot", timeout=30)
    assert time.monotonic() - started < 12  # the whole reply would take 20 s
    assert result.reply["content"]["ename"] == "KeyboardInterrupt"
    _server.enqueue(S.text("back"))
    assert "back" in oi.execute("are you there").text


def test_child_death_is_reported_and_child_restarts(oi, _server):
    oi.execute("%%python\nkept = 1")
    _server.enqueue(S.tool_call("import os\nos._exit(3)"), S.text("It died."))
    started = time.monotonic()
    result = oi.execute("crash python", timeout=30)
    assert time.monotonic() - started < 20  # told, not waited out to the cell's timeout
    assert "The child kernel died" in result.text and "restarts on the next cell" in result.text
    assert "died" in sent_tool_results(_server.requests[1])[0]
    after = oi.execute("%%python\nprint('kept' in dir())")
    assert after.stdout == "False\n"
    assert "restarted" in after.stderr
    # the conversation survived the restart
    _server.enqueue(S.text("still here"))
    oi.execute("hello")
    assert any(
        m["content"] == "crash python"
        for m in _server.requests[-1]["messages"]
        if m["role"] == "user"
    )


def test_direct_python_and_shell_cells(oi):
    py = oi.execute("%%python\nvalue = 5\nvalue * 2")
    assert py.status == "ok"
    results = py.of_type("execute_result")
    assert results and results[0]["content"]["data"]["text/plain"] == "10"
    assert oi.execute("!echo from-shell").stdout.strip() == "from-shell"
    err = oi.execute("%%python\n1/0")
    assert err.status == "error"
    assert err.reply["content"]["ename"] == "ZeroDivisionError"
    assert len(err.of_type("error")) == 1


def test_unknown_magic_lists_known_ones(oi):
    result = oi.execute("%nonsense")
    assert result.status == "error"
    assert "%model" in result.reply["content"]["evalue"]


def test_empty_cell_makes_no_llm_call(oi, _server):
    assert oi.execute("   \n  ").status == "ok"
    assert _server.requests == []


@pytest.mark.parametrize(
    ("answers", "ran", "told"),
    [
        (["y"], "approved-ran", None),
        (["n"], None, "declined"),
        (["e", "print('edited-ran')"], "edited-ran", None),
    ],
)
def test_stdin_approval(oi, _server, answers, ran, told):
    oi.execute("%auto_run off")
    _server.enqueue(S.tool_call("print('approved-ran')"), S.text("done"))
    result = oi.execute("do it", stdin=answers)
    assert result.prompts and "Run this code?" in result.prompts[0]
    assert "print('approved-ran')" in result.prompts[0]  # the prompt shows what it asks about
    if ran:
        assert result.stdout == f"{ran}\ndone\n"  # then the model's last reply, as text
    else:
        assert result.stdout == "done\n"
        assert told in sent_tool_results(_server.requests[1])[0]


@pytest.mark.parametrize("answers", [["\x04"], ["e", "\x04"]])
def test_ctrl_d_at_the_prompt_stops_the_instruction(oi, _server, answers):
    """jupyter console sends EOT for Ctrl-D: the instruction stops, nothing runs, the kernel
    lives and takes the next cell."""
    oi.execute("%auto_run off")
    _server.enqueue(S.tool_call("print('must not run')"), S.text("never asked"))
    result = oi.execute("do it", stdin=answers)
    assert result.status == "ok", result.text
    assert "must not run" not in result.stdout and "Internal error" not in result.text
    assert len(_server.requests) == 1  # stopped: the model is not asked again
    assert oi.execute("%%python\nprint('still here')").stdout == "still here\n"


def test_is_complete_sends_no_status(oi):
    """jupyter console takes any idle from its session as the end of the cell it just sent:
    a late idle of the is_complete before it made the console stop reading stdin."""
    msg_id = oi.kc.is_complete("%%python")
    reply = oi.kc.get_shell_msg(timeout=30)
    assert reply["parent_header"]["msg_id"] == msg_id
    assert reply["content"]["status"] == "incomplete"
    statuses, deadline = [], time.monotonic() + 1.5
    while time.monotonic() < deadline:
        try:
            msg = oi.kc.get_iopub_msg(timeout=0.2)
        except queue.Empty:
            continue
        if msg["parent_header"].get("msg_id") == msg_id:
            statuses.append(msg["content"])
    assert statuses == []
    assert oi.execute("%%python\nprint('after')").stdout == "after\n"


def test_without_stdin_unapproved_code_is_refused(oi, _server):
    oi.execute("%auto_run off")
    _server.enqueue(S.tool_call("print('must not run')"))
    result = oi.execute("do it")
    assert result.status == "error"
    assert "must not run" not in result.stdout
    assert "%auto_run on" in result.reply["content"]["evalue"]


def test_no_model_configured_gives_clear_message(_server, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.endswith("API_KEY")}
    env.update({"OI_MODEL": "", "OI_LOG_DIR": str(tmp_path), "OI_DISABLE_LOCAL_MODEL": "1"})
    with KernelSession(env=env, cwd=str(tmp_path)) as ks:
        result = ks.execute("do something")
        assert result.status == "error"
        assert "No language model is configured" in result.reply["content"]["evalue"]
        assert "OI_MODEL" in result.reply["content"]["evalue"]
        assert "Traceback" not in result.text


def test_session_log_records_the_turn(oi, _server):
    _server.enqueue(S.tool_call("print('logged')"), S.text("done"))
    oi.execute("log this")
    path = oi.execute("%log").text.split("`")[1]
    events = [json.loads(line) for line in Path(path).read_text().splitlines()]
    kinds = [e["event"] for e in events]
    assert "session_start" in kinds and "execution" in kinds
    run = [e for e in events if e["event"] == "execution"][-1]
    assert run["code"] == "print('logged')" and run["status"] == "ok"
    assert "sk-test-not-a-real-key-123456" not in Path(path).read_text()


def test_no_orphans_after_kernel_is_killed(_server, tmp_path):
    import psutil

    # A warm host of its own (another variable), which leaves soon after its kernel died.
    env = kernel_env(_server, tmp_path, OI_WARM_HOST_IDLE="1", ORPHAN_TEST=str(tmp_path))
    ks = KernelSession(env=env, cwd=str(tmp_path))
    try:
        _server.reset()
        _server.enqueue(S.text("hosted"))
        assert "hosted" in ks.execute("say hosted").text  # the LLM request went to the host
        ks.execute("%%python\nprint(1)")
        wrapper = psutil.Process(ks.km.provisioner.process.pid)
        children = wrapper.children(recursive=True)
        assert children, "the child kernel should be running"
        assert any("oi_kernel.llm.warm_host" in " ".join(c.cmdline()) for c in children)
        os.kill(wrapper.pid, signal.SIGKILL)
        gone, alive = psutil.wait_procs(children, timeout=10)
        assert not alive, f"orphaned: {alive}"
    finally:
        ks.kc.stop_channels()


def test_log_rebuilds_every_request_the_llm_received(oi, _server):
    """llm_request events store only what is new; together they give back every request."""
    from oi_kernel.record.session_log import llm_requests, read_log

    for i in range(3):
        _server.enqueue(S.tool_call(f"print({i})"), S.text(f"done {i}"))
        oi.execute(f"step {i}")
    path = oi.execute("%log").text.split("`")[1]
    records = read_log(path)
    rebuilt = llm_requests(records)[-6:]
    sent = [body["messages"] for body in _server.requests]

    def essence(messages: list[dict]) -> list[tuple]:  # litellm may reshape empty fields
        return [(m["role"], m.get("content") or "", m.get("tool_call_id")) for m in messages]

    assert [essence(r) for r in rebuilt] == [essence(m) for m in sent]
    last = [r for r in records if r["event"] == "llm_request"][-1]
    assert last["messages_before"] > 0 and len(last["messages"]) < len(rebuilt[-1])


def test_display_mode_text_prints_the_reply_and_live_updates_it_in_place(oi, _server):
    """A client without widgets gets the reply printed (all of it, in order); `%display live`
    streams it into one display updated in place, as a notebook UI shows it."""
    reply = "Counting to three: one, two, three. " * 3
    _server.enqueue(S.text(reply, chunk_size=5, delay=0.01))
    printed = oi.execute("count")
    assert printed.stdout == reply + "\n"
    assert printed.of_type("update_display_data") == []
    try:
        assert "`live`" in oi.execute("%display live").text
        _server.enqueue(S.text(reply, chunk_size=5, delay=0.01))
        live = oi.execute("count again")
        assert live.stdout == ""
        updates = live.of_type("update_display_data")
        assert updates and updates[-1]["content"]["data"]["text/markdown"] == reply
    finally:
        oi.execute("%display auto")
    bad = oi.execute("%display sideways")
    assert bad.status == "error" and "auto|live|text" in bad.reply["content"]["evalue"]
