"""The child kernel on a real Jupyter Kernel Gateway (``jupyter kernelgateway`` on 127.0.0.1,
started once for the module): turns, widgets, input, interrupts, completion, the child's
death, restart and shutdown of the wrapper (no kernel left behind, also when it is
killed), a lost connection, and the Python API."""

from __future__ import annotations

import asyncio
import json
import signal
import threading
import time
import uuid

import psutil
import pytest

from oi_kernel.errors import ChildKernelError
from oi_kernel.session.assembly import RESTART_NOTICE
from tests import gateway_support as G
from tests import llm_server as S
from tests.env import TEST_KEY
from tests.kernel_client import KernelSession
from tests.test_card import send_shell
from tests.test_kernel import kernel_env

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def gateway():
    with G.kernel_gateway() as gw:
        yield gw


def gateway_env(server, tmp, gw, **extra):
    return kernel_env(server, tmp, OI_CHILD_GATEWAY_URL=gw.url, OI_CHILD_GATEWAY_TOKEN=gw.token,
                      **extra)


@pytest.fixture(scope="module")
def lab(gateway, _server, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gw")
    with KernelSession(env=gateway_env(_server, tmp, gateway, OI_AUTO_RUN="1"),
                       cwd=str(tmp)) as ks:
        # what JupyterLab's widget manager does on connecting: open the control comm
        send_shell(ks, "comm_open", {"comm_id": uuid.uuid4().hex,
                                     "target_name": "jupyter.widget.control", "data": {}},
                   metadata={"version": "1.0.0"})
        ks.tmp = tmp
        yield ks


@pytest.fixture
def oi(lab, _server):
    _server.reset()
    assert lab.execute("%reset").status == "ok"
    return lab


def child_pid(oi) -> int:
    return int(oi.execute("%%python\nimport os\nprint(os.getpid())", timeout=120).stdout)


def test_turns_run_in_a_kernel_the_gateway_started(oi, _server, gateway):
    _server.enqueue(S.tool_call("import os\nsales = [3, 4, 5]\nprint(sum(sales), os.getpid())"),
                    S.text("The total is 12."))
    first = oi.execute("add up 3, 4 and 5", timeout=120)
    assert first.status == "ok", first.text
    total, pid = first.stdout.split()
    assert total == "12" and "The total is 12." in first.text
    assert psutil.Process(int(pid)).ppid() == gateway.proc.pid  # the gateway's kernel
    _server.enqueue(S.tool_call("print(max(sales) * 10)"), S.text("50"))
    assert "50" in oi.execute("multiply the largest by ten").stdout  # variables persist
    kernels = gateway.kernels()
    assert len(kernels) == 1
    status = oi.execute("%status").text
    assert gateway.url in status and kernels[0]["id"] in status
    assert "the gateway's job" in status


def test_sandbox_is_the_gateways_job(oi, gateway):
    before = gateway.kernels()
    text = oi.execute("%sandbox on").text
    assert "the gateway's job" in text and gateway.url in text
    assert gateway.kernels()[0]["id"] == before[0]["id"]  # nothing restarted


def test_input_and_widgets_through_the_gateway(oi):
    asked = oi.execute("%%python\nname = input('name? ')\nprint('hi', name)", stdin=["Ada"])
    assert asked.prompts == ["name? "] and asked.stdout == "hi Ada\n"

    created = oi.execute("%%python\nimport ipywidgets as w\nslider = w.IntSlider(value=3)\nslider")
    opens = [m for m in created.of_type("comm_open")
             if m["content"]["data"]["state"].get("_model_name") == "IntSliderModel"]
    assert opens, created.text
    comm_id = opens[0]["content"]["comm_id"]
    send_shell(oi, "comm_msg", {"comm_id": comm_id, "data": {
        "method": "update", "state": {"value": 7}, "buffer_paths": []}})
    deadline = time.monotonic() + 10
    value = ""
    while time.monotonic() < deadline and value != "7":
        value = oi.execute("%%python\nprint(slider.value)").stdout.strip()
    assert value == "7"  # frontend -> child
    changed = oi.execute("%%python\nslider.value = 9")
    assert any(m["content"]["data"].get("state", {}).get("value") == 9
               for m in changed.of_type("comm_msg") if m["content"]["comm_id"] == comm_id)


def test_interrupt_goes_through_the_gateway(oi):
    timer = threading.Timer(1.5, oi.km.interrupt_kernel)
    timer.start()
    started = time.monotonic()
    result = oi.execute("%%python\nkept = 5\nimport time\ntime.sleep(60)")
    assert time.monotonic() - started < 20
    assert "KeyboardInterrupt" in result.text
    assert oi.execute("%%python\nprint(kept)").stdout == "5\n"  # the same kernel goes on


def test_completion_and_inspection_come_from_the_gateway_kernel(oi):
    made = oi.execute("%%python\nmy_gateway_value = 1")
    assert made.status == "ok", made.text
    code = "%%python\nmy_gate"
    replies = []
    for _ in range(3):  # a loaded machine can make the child's first completion miss once
        started = time.monotonic()
        msg_id = oi.kc.complete(code, len(code))
        reply = oi.kc.get_shell_msg(timeout=30)
        assert reply["parent_header"]["msg_id"] == msg_id
        replies.append((round(time.monotonic() - started, 2), reply["content"]))
        if "my_gateway_value" in reply["content"]["matches"]:
            break
    assert "my_gateway_value" in replies[-1][1]["matches"], replies
    assert replies[-1][1]["cursor_start"] == len("%%python\n"), replies
    code = "%%python\nlen"
    oi.kc.inspect(code, len(code))
    reply = oi.kc.get_shell_msg(timeout=20)
    assert reply["content"]["found"]


def test_large_output_arrives_whole(oi):
    result = oi.execute("%%python\nprint('x' * 5_000_000)")
    assert len(result.stdout) == 5_000_001


def test_child_death_is_reported_and_the_next_cell_has_a_new_kernel(oi, gateway):
    oi.execute("%%python\nlost = 1")
    died = oi.execute("%%python\nimport os, signal\nos.kill(os.getpid(), signal.SIGKILL)")
    assert died.status == "error"
    assert "died" in died.text and "variables were lost" in died.text
    after = oi.execute("%%python\nprint('lost' in dir())", timeout=120)
    assert after.stdout == "False\n"
    assert RESTART_NOTICE in after.stderr
    assert len(gateway.kernels()) == 1  # the restarted one, nothing left behind


def test_restart_and_kill_of_the_wrapper_leave_no_kernel(gateway, _server, tmp_path):
    before = len(gateway.kernels())
    with KernelSession(env=gateway_env(_server, tmp_path, gateway), cwd=str(tmp_path)) as ks:
        child_pid(ks)
        first = {k["id"] for k in gateway.wait_for_kernels(before + 1)}
        ks.km.restart_kernel(now=False)  # shutdown_request: the wrapper deletes its kernel
        ks.kc.wait_for_ready(timeout=60)
        child_pid(ks)
        second = {k["id"] for k in gateway.wait_for_kernels(before + 1)}
        assert first != second
        ks.km.provisioner.process.send_signal(signal.SIGKILL)  # no chance to clean up
        gateway.wait_for_kernels(before, timeout=20)  # the reaper deleted it


def test_lost_connection_then_a_restarted_gateway(_server, tmp_path):
    with G.kernel_gateway() as gw:
        with KernelSession(env=gateway_env(_server, tmp_path, gw), cwd=str(tmp_path)) as ks:
            ks.execute("%%python\nwas_here = 1", timeout=120)
            killer = threading.Timer(1.0, G.stop, (gw, signal.SIGKILL))
            killer.start()
            cut = ks.execute("%%python\nimport time\ntime.sleep(30)")
            killer.join()
            assert cut.status == "error"
            assert f"Lost the connection to the gateway {gw.url}" in cut.text
            G.restart(gw)
            after = ks.execute("%%python\nprint('was_here' in dir())", timeout=120)
            assert after.stdout == "False\n", after.text
            assert "no longer has the child kernel" in after.stderr
            assert RESTART_NOTICE in after.stderr
            assert len(gw.kernels()) == 1


def test_a_lost_websocket_reconnects_to_the_same_kernel(gateway):
    from oi_kernel.execution.placement import new_child_kernel

    async def scenario() -> None:
        child = new_child_kernel(gateway_url=gateway.url, gateway_token=gateway.token)
        notices: list[str] = []
        child.notify = notices.append
        outputs: list[str] = []
        child.on_iopub = lambda m: outputs.append(child.unpack(m["content"]).get("text", ""))
        await child.start_soon()
        try:
            await child.execute("kept = 41")
            child._link.ws.close()  # the connection breaks; the kernel lives on
            for _ in range(100):
                if not child.is_running:
                    break
                await asyncio.sleep(0.05)
            assert not child.is_running
            assert await child.ensure_running() is False  # reconnected, not restarted
            assert "variables are kept" in notices[-1]
            await child.execute("print(kept + 1)")
            assert outputs[-1] == "42\n"
        finally:
            await child.shutdown()

    before = len(gateway.kernels())
    asyncio.run(scenario())
    assert len(gateway.kernels()) == before


def test_a_wrong_token_is_a_clear_error(gateway):
    from oi_kernel.execution.placement import new_child_kernel

    async def start() -> None:
        child = new_child_kernel(gateway_url=gateway.url, gateway_token="wrong-token")
        await child.start_soon()

    with pytest.raises(ChildKernelError) as caught:
        asyncio.run(start())
    text = str(caught.value)
    assert "did not start on the gateway" in text and ("403" in text or "401" in text)
    assert "OI_CHILD_GATEWAY_TOKEN" in text


def _kernel_username(gateway, **options) -> str:
    """KERNEL_USERNAME as the kernel the gateway started sees it in os.environ."""
    from oi_kernel.execution.placement import new_child_kernel

    async def ask() -> str:
        child = new_child_kernel(gateway_url=gateway.url, gateway_token=gateway.token, **options)
        try:
            await child.start_soon()
            reply = await child.execute("", silent=True, user_expressions={
                "u": "__import__('os').environ.get('KERNEL_USERNAME', '(unset)')"})
            return reply["user_expressions"]["u"]["data"]["text/plain"].strip("'")
        finally:
            await child.shutdown()

    return asyncio.run(ask())


@pytest.mark.kernel
def test_the_start_request_carries_kernel_username(gateway, monkeypatch):
    """Issue 31: Enterprise Gateway starts kernels only for a user it authorizes, named by
    KERNEL_USERNAME in the start request (Kernel Gateway passes KERNEL_* to the kernel)."""
    import getpass

    for name in ("OI_CHILD_GATEWAY_USERNAME", "KERNEL_USERNAME", "JUPYTERHUB_USER"):
        monkeypatch.delenv(name, raising=False)
    assert _kernel_username(gateway) == getpass.getuser()  # the OS user by default
    monkeypatch.setenv("JUPYTERHUB_USER", "hub-ada")
    assert _kernel_username(gateway) == "hub-ada"  # on a hub, the hub's user
    assert _kernel_username(gateway, gateway_username="grace") == "grace"  # the setting wins


def test_the_python_api_runs_on_the_gateway(gateway, llm_server, monkeypatch, tmp_path):
    from oi_kernel import Interpreter

    monkeypatch.setenv("OI_CHILD_GATEWAY_URL", gateway.url)
    monkeypatch.setenv("OI_CHILD_GATEWAY_TOKEN", gateway.token)
    before = len(gateway.kernels())
    llm_server.enqueue(S.tool_call("import os\nprint(os.getppid())"), S.text("done"))
    with Interpreter("openai/scripted", api_base=llm_server.url, api_key=TEST_KEY,
                     auto_run=True, log_dir=tmp_path) as it:
        list(it.chat("where am I?"))
        assert it.turns[-1].steps[0].outputs[0]["text"].strip() == str(gateway.proc.pid)
        assert len(gateway.kernels()) == before + 1
    assert len(gateway.kernels()) == before


def test_a_policy_forces_the_gateway(gateway, llm_server, monkeypatch, tmp_path):
    from oi_kernel import Interpreter

    admin = tmp_path / "admin"
    admin.mkdir()
    (admin / "oi_kernel_policy.json").write_text(json.dumps(
        {"gateway_url": gateway.url, "sandbox": "required"}))
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(admin))
    monkeypatch.setenv("OI_CHILD_GATEWAY_URL", "http://127.0.0.1:9")  # the user's: overruled
    monkeypatch.setenv("OI_CHILD_GATEWAY_TOKEN", gateway.token)
    monkeypatch.delenv("OI_SANDBOX", raising=False)
    llm_server.enqueue(S.tool_call("import os\nprint(os.getppid())"), S.text("done"))
    with Interpreter("openai/scripted", api_base=llm_server.url, api_key=TEST_KEY,
                     auto_run=True, log_dir=tmp_path) as it:
        list(it.chat("where am I?"))
        assert it.turns[-1].steps[0].outputs[0]["text"].strip() == str(gateway.proc.pid)
        from oi_kernel.session.status import status_markdown

        status = status_markdown(it.session)
        assert "the gateway's job" in status and str(admin) in status
