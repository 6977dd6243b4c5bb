"""``%%oi`` in an ordinary python3 kernel: a real ipykernel started by jupyter_client,
litellm talking HTTP to the scripted server, the approval card driven as a widget
frontend would (clicks are comm messages), interrupts as real SIGINTs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from oi_kernel.magics.magics import _cell_transformer
from tests import llm_server as S
from tests.env import oi_env
from tests.kernel_client import KernelSession

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def magic_env(server: S.ScriptedLLMServer, tmp: Path, **extra: str) -> dict[str, str]:
    return oi_env(server, tmp, **{"OI_AUTO_RUN": "0", "OI_APPROVAL_UI": "auto", **extra})


def start_kernel(server: S.ScriptedLLMServer, tmp: Path, widgets: bool = True,
                 **extra: str) -> KernelSession:
    """A python3 kernel with ``%load_ext oi_kernel``; ``widgets``: this client then announces a
    widget manager, as JupyterLab does (its cells show the card without stdin)."""
    ks = KernelSession(kernel_name="python3", env=magic_env(server, tmp, **extra), cwd=str(tmp))
    loaded = ks.execute("%load_ext oi_kernel")
    assert loaded.status == "ok", loaded.text
    if widgets:
        ks.announce_widgets()
    return ks


def tool_results(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


def user_texts(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "user"]


class Clicker:
    """Acts on each approval card of a cell like a user at a widget frontend."""

    def __init__(self, ks: KernelSession, buttons: list[str]) -> None:
        self.ks = ks
        self.buttons = list(buttons)
        self.states: dict[str, dict[str, Any]] = {}
        self.cards = 0
        self.stdout_at_card: list[str] = []
        self._stdout = ""

    def __call__(self, msg: dict[str, Any]) -> None:
        kind, content = msg["header"]["msg_type"], msg["content"]
        if kind == "comm_open":
            self.states[content["comm_id"]] = dict(content["data"]["state"])
        elif kind == "comm_msg" and content["data"].get("method") == "update":
            self.states.setdefault(content["comm_id"], {}).update(content["data"]["state"])
        elif kind == "stream":
            self._stdout += content["text"]
        elif kind == "display_data" and WIDGET_VIEW in content["data"]:
            self.cards += 1
            self.stdout_at_card.append(self._stdout)
            if self.buttons:
                self.click(self.buttons.pop(0))

    def click(self, cls: str) -> None:
        found = [c for c, st in self.states.items() if cls in st.get("_dom_classes", ())]
        assert found, f"no widget with class {cls}"
        msg = self.ks.kc.session.msg(
            "comm_msg",
            {"comm_id": found[-1], "data": {"method": "custom", "content": {"event": "click"}}},
        )
        self.ks.kc.shell_channel.send(msg)


def interrupt_when(ks: KernelSession, ready: Any, timeout: float = 20) -> threading.Thread:
    """Send SIGINT (as Jupyter's interrupt button does) once ``ready()`` is true."""

    def wait_then_interrupt() -> None:
        deadline = time.monotonic() + timeout
        while not ready() and time.monotonic() < deadline:
            time.sleep(0.05)
        ks.km.interrupt_kernel()

    thread = threading.Thread(target=wait_then_interrupt, daemon=True)
    thread.start()
    return thread


@pytest.fixture(scope="module")
def kernel(_server, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("magic")
    ks = start_kernel(_server, tmp)
    ks.tmp = tmp
    yield ks
    ks.close()


@pytest.fixture
def ip(kernel, _server):
    """The shared python3 kernel with a fresh conversation and an empty script."""
    _server.reset()
    assert kernel.execute("%oi reset").status == "ok"
    return kernel


# ---------------------------------------------------------------------- namespace
def test_variables_flow_between_the_user_and_the_model(ip, _server):
    assert ip.execute("sales = [3, 4, 5]").status == "ok"
    _server.enqueue(
        S.tool_call("total = sum(sales)\nprint('total', total)\ntotal * 2"), S.text("It is 12.")
    )
    result = ip.execute("%%oi -y\nadd up sales")
    assert result.status == "ok", result.text
    assert "total 12\n" in result.stdout  # the user sees the output as usual
    assert "It is 12." in result.text
    first = user_texts(_server.requests[0])[-1]
    assert first.startswith("add up sales")
    assert "sales: list[3] = [3, 4, 5]" in first  # the model was told about the variable
    assert tool_results(_server.requests[1]) == [  # print + last expression, then the change
        "total 12\n24\n\nWhat the code changed:\n- total: int 12 (new)"]
    after = ip.execute("print(total + 1)")
    assert after.stdout == "13\n"  # the model's variable is the user's now


def test_displays_and_stderr_reach_the_model(ip, _server):
    code = (
        "import sys\nfrom IPython.display import display\n"
        "print('to-out')\nprint('to-err', file=sys.stderr)\n"
        "display({'text/plain': 'shown-display', 'text/html': '<b>shown-html</b>'}, raw=True)\n"
        "'last-value'"
    )
    _server.enqueue(S.tool_call(code), S.text("done"))
    result = ip.execute("%%oi -y\nshow things")
    fed = tool_results(_server.requests[1])[0]
    for expected in ("to-out", "to-err", "shown-display", "last-value"):
        assert expected in fed
    assert "to-err" in result.stderr
    assert any(
        "shown-html" in m["content"]["data"].get("text/html", "")
        for m in result.of_type("display_data")
    )


def test_error_is_fed_back_and_the_exception_handler_is_untouched(ip, _server):
    before = ip.execute("print(repr(get_ipython().CustomTB), get_ipython().custom_exceptions)")
    _server.enqueue(
        S.tool_call("print(undefined_name)"),
        S.tool_call("undefined_name = 7\nprint(undefined_name)"),
        S.text("Fixed it."),
    )
    result = ip.execute("%%oi -y\nprint a number")
    assert result.status == "ok"
    assert len(result.of_type("error")) == 1  # the failing step's traceback is visible
    assert "7\n" in result.stdout
    fed = tool_results(_server.requests[1])[0]
    assert "NameError" in fed and "undefined_name" in fed
    after = ip.execute("print(repr(get_ipython().CustomTB), get_ipython().custom_exceptions)")
    assert after.stdout == before.stdout
    assert after.stdout.rstrip().endswith("()")  # no custom exception handler installed


# ---------------------------------------------------------------------- approval
def test_card_blocks_until_run_is_clicked(ip, _server):
    _server.enqueue(S.tool_call("print('ran-after-click')"), S.text("done"))
    clicker = Clicker(ip, ["oi-run"])
    result = ip.execute("%%oi\nprint something", on_message=clicker)
    assert result.status == "ok", result.text
    assert clicker.cards == 1
    assert clicker.stdout_at_card == [""]  # nothing ran before the click
    assert result.stdout == "ran-after-click\n"
    records = [
        m["content"]["data"]["text/html"]
        for m in result.of_type("update_display_data")
        if "oi-card-decided" in m["content"]["data"].get("text/html", "")
    ]
    assert len(records) == 1 and "approved" in records[0]


def test_skip_runs_nothing_and_tells_the_model(ip, _server):
    _server.enqueue(S.tool_call("print('must-not-run')"), S.text("ok, skipped"))
    result = ip.execute("%%oi\ndo it", on_message=Clicker(ip, ["oi-skip"]))
    assert "must-not-run" not in result.stdout
    assert "declined" in tool_results(_server.requests[1])[0]


def test_yes_option_runs_without_a_card(ip, _server):
    _server.enqueue(S.tool_call("print('no-card')"), S.text("done"))
    clicker = Clicker(ip, [])
    result = ip.execute("%%oi --yes\ngo", on_message=clicker)
    assert clicker.cards == 0
    assert result.stdout == "no-card\n"
    # the cell's SIGINT handler is gone afterwards: a plain cell sees ipykernel's own
    probe = ip.execute("import signal\nprint(signal.getsignal(signal.SIGINT).__name__)")
    assert probe.stdout == "default_int_handler\n"


def test_interrupt_while_the_card_is_pending(ip, _server):
    _server.enqueue(S.tool_call("print('never')"))
    clicker = Clicker(ip, [])
    interrupt_when(ip, lambda: clicker.cards > 0)
    started = time.monotonic()
    result = ip.execute("%%oi\nwait for me", on_message=clicker, timeout=30)
    assert time.monotonic() - started < 20  # (a card that ignores it waits for the 30 s timeout)
    assert result.status == "error"
    assert result.reply["content"]["ename"] == "KeyboardInterrupt"
    assert "never" not in result.stdout
    assert ip.execute("print('next cell works')").stdout == "next cell works\n"
    _server.enqueue(S.text("still here"))
    again = ip.execute("%%oi\nare you there")
    assert again.status == "ok" and "still here" in again.text
    # the interrupted step's tool call was answered, so the request is valid
    assert tool_results(_server.requests[-1]) and user_texts(_server.requests[-1])[0].startswith(
        "wait for me"
    )


@pytest.mark.parametrize(
    "sleep",
    ["import time\ntime.sleep(60)", "import asyncio\nawait asyncio.sleep(60)"],
    ids=["blocking", "awaiting"],
)
def test_interrupt_while_the_code_runs(ip, _server, sleep):
    _server.enqueue(S.tool_call(f"print('sleeping', flush=True)\n{sleep}"))
    seen: list[str] = []
    interrupt_when(ip, lambda: "sleeping" in "".join(seen))

    def watch(msg: dict[str, Any]) -> None:
        if msg["header"]["msg_type"] == "stream":
            seen.append(msg["content"]["text"])

    started = time.monotonic()
    result = ip.execute("%%oi -y\nsleep a while", on_message=watch, timeout=40)
    assert time.monotonic() - started < 20
    assert result.reply["content"]["ename"] == "KeyboardInterrupt"
    assert len(_server.requests) == 1  # the model was not asked to go on
    assert ip.execute("print('alive')").stdout == "alive\n"


def test_interrupt_while_the_reply_streams(ip, _server):
    _server.enqueue(S.text("word " * 800, chunk_size=5, delay=0.05))
    seen: list[str] = []
    interrupt_when(ip, lambda: bool(seen))
    started = time.monotonic()
    result = ip.execute("%%oi\ntalk a lot", on_message=lambda m: seen.append(m), timeout=60)
    assert time.monotonic() - started < 20  # the whole reply would take 40 s
    assert result.reply["content"]["ename"] == "KeyboardInterrupt"
    _server.enqueue(S.text("back"))
    assert "back" in ip.execute("%%oi\nare you there").text


# ---------------------------------------------------------------------- conversation and options
def test_conversation_continues_until_reset(ip, _server):
    _server.enqueue(S.text("first answer"), S.text("second answer"))
    ip.execute("%%oi\nfirst question")
    ip.execute("%%oi\nsecond question")
    texts = [t.split("\n\n[")[0] for t in user_texts(_server.requests[1])]
    assert texts == ["first question", "second question"]
    assert ip.execute("%oi reset").status == "ok"
    _server.enqueue(S.text("fresh"))
    ip.execute("%%oi\nthird question")
    assert [t.split("\n\n[")[0] for t in user_texts(_server.requests[2])] == [
        "third question"
    ]


def test_cell_options_apply_to_that_cell_only(ip, _server):
    _server.set_fallback(S.tool_call("print('again')"))
    capped = ip.execute("%%oi -y -m openai/other-model --max-steps 2\nloop")
    assert capped.status == "ok"
    assert len(_server.requests) == 2
    assert {r["model"] for r in _server.requests} == {"other-model"}
    assert "step cap" in capped.text
    shown = ip.execute("%oi model")
    assert "openai/scripted" in shown.text  # the cell's model did not stick


def test_line_commands(ip, _server):
    _server.enqueue(S.tool_call("print('hist')"), S.text("done"))
    ip.execute("%%oi -y\nremember me")
    history = ip.execute("%oi history").text
    # plain text in a text frontend: the fenced listing indented by four spaces
    assert ". remember me — done\n       - step 1 (python): auto, ok" in history
    assert "%oi export" in ip.execute("%oi help").text
    assert ip.execute("%oi model openai/changed").status == "ok"
    assert "openai/changed" in ip.execute("%oi model").text
    ip.execute("%oi model openai/scripted")
    bad = ip.execute("%oi nonsense")
    assert bad.status == "error" and "%oi reset" in bad.stderr


def test_export_writes_a_notebook_of_what_ran(ip, _server):
    import nbformat

    _server.enqueue(S.tool_call("exported_value = 6 * 7\nprint(exported_value)"), S.text("42"))
    ip.execute("%%oi -y\ncompute the answer")
    out = ip.tmp / "magic-export.ipynb"
    result = ip.execute(f"%oi export {out} --force")
    assert result.status == "ok", result.text
    nb = nbformat.read(out, as_version=4)
    nbformat.validate(nb)
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    assert "exported_value = 6 * 7\nprint(exported_value)" in code
    assert nb.metadata["oi_kernel"]["kernel"] == "ipython-magic"
    log = ip.execute("%oi log").text.split("`")[1]
    events = [json.loads(line) for line in Path(log).read_text().splitlines()]
    assert events[0]["event"] == "session_start" and events[0]["kernel"] == "ipython-magic"
    turn_starts = [e["instruction"] for e in events if e["event"] == "turn_start"]
    assert "compute the answer" in turn_starts  # the plain instruction, without the summary


def test_other_magics_still_work(ip):
    timed = ip.execute("%%time\nx_timed = 1")
    assert timed.status == "ok" and "Wall time" in timed.stdout
    other = ip.execute("%%oinotours\nhello")
    assert other.status == "error" and "oinotours" in other.stderr


def test_without_autoawait_the_fix_is_named(ip, _server):
    try:
        assert ip.execute("%autoawait off").status == "ok"
        result = ip.execute("%%oi\nhello")
        assert result.status == "error" and "%autoawait on" in result.stderr
    finally:
        ip.execute("%autoawait on")
    assert _server.requests == []


def test_an_empty_instruction_is_a_usage_error(ip, _server):
    result = ip.execute("%%oi\n   \n")
    assert result.status == "error"
    assert "instruction" in result.stderr
    assert _server.requests == []


def test_no_model_gives_the_notebook_fix(ip, _server):
    try:
        assert ip.execute("%config LLM.model = ''").status == "ok"
        result = ip.execute("%%oi\nhello")
        assert result.status == "error"
        assert result.reply["content"]["ename"] == "NotConfiguredError"
        assert "%oi model NAME" in result.reply["content"]["evalue"]
        assert "Traceback" not in result.text
        assert _server.requests == []
    finally:
        ip.execute("%config LLM.model = 'openai/scripted'")


# ---------------------------------------------------------------------- kernels of their own
def test_stdin_approval_when_asked_for(_server, tmp_path):
    _server.reset()
    with start_kernel(_server, tmp_path, OI_APPROVAL_UI="stdin") as ks:
        _server.enqueue(S.tool_call("print('approved-on-stdin')"), S.text("done"))
        clicker = Clicker(ks, [])
        result = ks.execute("%%oi\nask me", stdin=["y"], on_message=clicker)
        assert result.status == "ok", result.text
        assert result.prompts and "Run this code?" in result.prompts[0]
        assert clicker.cards == 0
        assert result.stdout == "approved-on-stdin\ndone\n"  # the reply printed: a stdin frontend
        assert "print('approved-on-stdin')" in result.prompts[0]  # the question shows the code
        _server.enqueue(S.tool_call("print('needs-approval')"))
        refused = ks.execute("%%oi\nno stdin here")  # a frontend that cannot answer
        assert refused.reply["content"]["ename"] == "ApprovalUnavailableError"
        assert "%%oi -y" in refused.reply["content"]["evalue"]
        assert "needs-approval" not in refused.stdout


def test_a_client_without_widgets_or_stdin_is_refused_at_once(_server, tmp_path):
    """nbclient's way: no stdin and no widget manager. Refused on the first block, with how to
    allow code; once this client announces a widget manager, the same cell shows the card."""
    _server.reset()
    with start_kernel(_server, tmp_path, widgets=False) as ks:
        _server.enqueue(S.tool_call("print('needs-approval')"))
        clicker = Clicker(ks, [])
        refused = ks.execute("%%oi\nno one is watching", on_message=clicker, timeout=30)
        assert refused.reply["content"]["ename"] == "ApprovalUnavailableError"
        evalue = refused.reply["content"]["evalue"]
        for fix in ("%oi auto_run on", "%%oi -y", "OI_AUTO_RUN=1"):
            assert fix in evalue
        assert "OI_APPROVAL_UI" not in evalue
        assert clicker.cards == 0 and "needs-approval" not in refused.stdout
        assert len(_server.requests) == 1
        ks.announce_widgets()  # as JupyterLab's widget manager does when it connects
        _server.enqueue(S.tool_call("print('clicked-run')"), S.text("done"))
        shown = ks.execute("%%oi\nnow someone is", on_message=Clicker(ks, ["oi-run"]))
        assert shown.status == "ok", shown.text
        assert "clicked-run" in shown.stdout


def test_config_and_unload(_server, tmp_path):
    _server.reset()
    with start_kernel(_server, tmp_path) as ks:
        probe = (
            "import signal\nip = get_ipython()\n"
            "print(len(ip.input_transformers_cleanup), signal.getsignal(signal.SIGINT))"
        )
        loaded = ks.execute(probe).stdout
        assert ks.execute("%unload_ext oi_kernel").status == "ok"
        unloaded = ks.execute(probe).stdout
        assert int(unloaded.split()[0]) == int(loaded.split()[0]) - 1
        assert unloaded.split()[1:] == loaded.split()[1:]  # the SIGINT handler is as it was
        gone = ks.execute("%%oi\nhello")
        assert gone.status == "error" and "Cell magic `%%oi` not found" in gone.stderr
        assert ks.execute("%oi help").status == "error"
        # IPython config reaches the engine (it is a child of the shell)
        ks.execute("get_ipython().config.Engine.max_steps = 1")
        assert ks.execute("%load_ext oi_kernel").status == "ok"
        _server.set_fallback(S.tool_call("print('again')"))
        capped = ks.execute("%%oi -y\nloop")
        assert len(_server.requests) == 1 and "step cap" in capped.text


def test_lab_extension_comm_status_code_ran_and_unload(_server, tmp_path):
    """The JupyterLab extension's ``oi_kernel`` comm is served after ``%load_ext``."""
    from tests.test_frontend_comm import Frontend

    _server.reset()
    with start_kernel(_server, tmp_path) as ks:
        lab = Frontend(ks)
        comm_id = lab.open()
        status = lab.wait_comm(comm_id, "status")
        assert status["kernel"] == "ipython-magic" and status["model"] == "openai/scripted"
        _server.enqueue(S.tool_call("print(6 * 7)"), S.text("42."))
        messages = lab.execute("%%oi -y\nmultiply", cell_id="cell-7")
        data = [
            m["content"]["data"]
            for m in messages
            if m["header"]["msg_type"] == "comm_msg" and m["content"]["comm_id"] == comm_id
        ]
        ran = [d for d in data if d["type"] == "code_ran"]
        assert len(ran) == 1
        assert ran[0]["code"] == "print(6 * 7)" and ran[0]["cell_id"] == "cell-7"
        assert [d["turns"] for d in data if d["type"] == "status"][-1] == 1
        lab.execute("%unload_ext oi_kernel")
        closed = lab.open()  # nobody answers the target any more: the kernel closes it
        deadline = time.monotonic() + 30
        while not any(
            m["header"]["msg_type"] == "comm_close" and m["content"]["comm_id"] in (comm_id, closed)
            for m in lab.seen
        ):
            assert time.monotonic() < deadline, "the comm was not closed"
            lab._pump(0.1)


# ---------------------------------------------------------------------- the transformer (pure)
TRANSFORM_CASES = [
    ("plain", "%%oi\nplot sales\n", "await", "", "plot sales\n"),
    ("options", "%%oi -y -m gpt\nplot\n", "await", "-y -m gpt", "plot\n"),
    ("leading blank lines", "\n\n%%oi\nx\n", "await", "", "x\n"),
    ("indented", "  %%oi\nx\n", "await", "", "x\n"),
    ("quotes survive", "%%oi\nsay \"hi\" and 'bye'\n", "await", "", "say \"hi\" and 'bye'\n"),
    ("autoawait off", "%%oi\nx\n", "sync", "", "x\n"),
]


@pytest.mark.parametrize(("name", "cell", "mode", "options", "body"), TRANSFORM_CASES)
def test_transformer_rewrites_oi_cells(name, cell, mode, options, body):
    shell = SimpleNamespace(autoawait=mode == "await")
    out = _cell_transformer(shell)(cell.splitlines(keepends=True))
    assert len(out) == 1
    calls: list[tuple[str, str, str]] = []
    fake = SimpleNamespace(
        run_cell=lambda o, b: calls.append(("await", o, b)),
        run_cell_sync=lambda o, b: calls.append(("sync", o, b)),
    )
    source = out[0].removeprefix("await ")
    assert source != out[0] if mode == "await" else source == out[0]
    eval(source, {"__import__": lambda *a, **k: fake})  # noqa: S307
    assert calls == [(mode, options, body)]


@pytest.mark.parametrize("cell", ["%%oinot\nx\n", "%%time\nx = 1\n", "print('%%oi')\n", ""])
def test_transformer_leaves_other_cells_alone(cell):
    lines = cell.splitlines(keepends=True)
    assert _cell_transformer(SimpleNamespace(autoawait=True))(lines) == lines


def test_check_complete_keeps_reading_after_the_magic_line():
    transform = _cell_transformer(SimpleNamespace(autoawait=True))
    assert transform.has_side_effects  # IPython's check_complete skips such transformers


def test_terminal_ipython_prompts_on_stdin(_server, tmp_path):
    """Terminal IPython (no kernel): text output, the y/N prompt, variables shared."""
    _server.reset()
    _server.enqueue(
        S.tool_call("term_total = 6 * 7\nprint('term', term_total)"), S.text("It is 42.")
    )
    script = (
        "%load_ext oi_kernel\nx_before = 5\n"
        "%%oi\ncompute the answer\n\n\n"  # a cell magic ends at a blank line
        "y\n"  # the approval prompt
        "print('after', term_total + x_before)\nexit\n"
    )
    env = {**os.environ, **magic_env(_server, tmp_path)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "IPython",
            "--simple-prompt",
            "--no-banner",
            "--colors=NoColor",
            "--HistoryManager.enabled=False",
        ],
        input=script,
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    out = done.stdout
    assert "Run this code? [y/N" in out
    assert "print('term', term_total)" in out  # shown before the prompt
    assert "term 42" in out and "It is 42." in out and "after 47" in out
    assert "x_before: int = 5" in user_texts(_server.requests[0])[0]
    assert tool_results(_server.requests[1]) == [
        "term 42\n\nWhat the code changed:\n- term_total: int 42 (new)"]


def test_profile_instructions_and_undo_commands(llm_server, tmp_path):
    """`%oi profile`, `%oi instructions` and `%oi undo` work on the magic's engine."""
    from tests.kernel_client import KernelSession

    env = oi_env(llm_server, tmp_path, OI_AUTO_RUN="1")
    with KernelSession(kernel_name="python3", env=env, cwd=str(tmp_path)) as ks:
        assert ks.execute("%load_ext oi_kernel").status == "ok"
        assert "data_analyst" in ks.execute("%oi profile data_analyst").text
        assert ks.execute("%oi instructions Always answer in French.").status == "ok"
        llm_server.enqueue(S.text("Bonjour"))
        ks.execute("%%oi\nsay hello")
        system = llm_server.requests[-1]["messages"][0]["content"]
        assert "Always answer in French." in system
        assert "Removed the last instruction" in ks.execute("%oi undo").text
        llm_server.enqueue(S.text("ok"))
        ks.execute("%%oi\nsecond")
        users = [m["content"] for m in llm_server.requests[-1]["messages"] if m["role"] == "user"]
        assert not any("say hello" in u for u in users)
