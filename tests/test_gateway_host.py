"""The other direction: the Open Interpreter kernel itself launched *by* a gateway, behind a
Jupyter server started with ``--gateway-url`` (what JupyterLab does). A client speaks to the
server's kernel websocket as JupyterLab would: the approval card (widget comm messages),
stdin approval, an interrupt and a restart through the server's REST API, shutdown."""

from __future__ import annotations

import json
import os
import queue
import secrets
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from typing import Any

import pytest

from tests import gateway_support as G
from tests import llm_server as S
from tests.browser_support import free_port
from tests.test_kernel import kernel_env

pytestmark = pytest.mark.timeout(240)
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


class Server:
    """``jupyter server --gateway-url=...`` on 127.0.0.1 with a token."""

    def __init__(self, gateway: G.Gateway, tmp: Any) -> None:
        self.port = free_port()
        self.token = secrets.token_hex(8)
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "JUPYTER_GATEWAY_AUTH_TOKEN": gateway.token,
               "JUPYTER_RUNTIME_DIR": str(tmp / "server-runtime"),
               "JUPYTER_CONFIG_DIR": str(tmp / "server-config")}
        exe = os.path.join(os.path.dirname(sys.executable), "jupyter-server")
        self.log = tmp / "server.log"
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [exe, "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={self.port}",
                 "--ServerApp.port_retries=0", f"--IdentityProvider.token={self.token}",
                 "--ServerApp.open_browser=False", "--allow-root",
                 f"--gateway-url={gateway.url}", f"--ServerApp.root_dir={tmp}"],
                env=env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 90
        while self.api("/api/status")[0] != 200:
            assert self.proc.poll() is None and time.monotonic() < deadline, self.log.read_text()
            time.sleep(0.1)

    def api(self, path: str, method: str = "GET", body: Any = None) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.url + path, data=data, method=method, headers={
            "Authorization": f"token {self.token}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                raw = response.read()
                return response.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as exc:
            return exc.code, None
        except OSError:
            return 0, None

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Channels:
    """One kernel's websocket on the server (the legacy JSON protocol, as a test client)."""

    def __init__(self, server: Server, kernel_id: str) -> None:
        import websocket
        from jupyter_client.session import Session

        self.session = Session(key=b"")
        url = (f"ws://127.0.0.1:{server.port}/api/kernels/{kernel_id}/channels"
               f"?session_id={self.session.session}")
        self.ws = websocket.create_connection(
            url, header=[f"Authorization: token {server.token}"], timeout=60)
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                raw = self.ws.recv()
            except Exception:
                return
            if raw:
                self.messages.put(json.loads(raw))

    def send(self, msg_type: str, content: dict[str, Any], channel: str = "shell",
             parent: dict[str, Any] | None = None, metadata: dict[str, Any] | None = None) -> str:
        from jupyter_client.jsonutil import json_default

        msg = self.session.msg(msg_type, content, parent=parent, metadata=metadata)
        msg["channel"] = channel
        self.ws.send(json.dumps(msg, default=json_default))
        return msg["header"]["msg_id"]

    def execute(self, code: str, *, stdin: list[str] | None = None, on_message: Any = None,
                timeout: float = 90) -> dict[str, Any]:
        """Run a cell: its reply content plus the iopub messages and prompts it caused."""
        answers = list(stdin or [])
        msg_id = self.send("execute_request", {
            "code": code, "silent": False, "store_history": True, "user_expressions": {},
            "allow_stdin": stdin is not None, "stop_on_error": True})
        result: dict[str, Any] = {"reply": None, "iopub": [], "prompts": [], "idle": False}
        deadline = time.monotonic() + timeout
        while result["reply"] is None or not result["idle"]:
            msg = self.messages.get(timeout=max(0.1, deadline - time.monotonic()))
            parent = msg["parent_header"].get("msg_id")
            kind, channel = msg["header"]["msg_type"], msg.get("channel")
            if channel == "stdin" and kind == "input_request":
                result["prompts"].append(msg["content"]["prompt"])
                self.send("input_reply", {"value": answers.pop(0) if answers else ""},
                          channel="stdin", parent=msg["header"])
            elif parent != msg_id:
                continue
            elif channel == "shell" and kind == "execute_reply":
                result["reply"] = msg["content"]
            elif kind == "status":
                result["idle"] = result["idle"] or msg["content"]["execution_state"] == "idle"
            else:
                result["iopub"].append(msg)
                if on_message is not None:
                    on_message(msg)
        result["stdout"] = "".join(m["content"]["text"] for m in result["iopub"]
                                   if m["header"]["msg_type"] == "stream")
        return result

    def close(self) -> None:
        self.ws.close()


@pytest.fixture(scope="module")
def hosted(_server, tmp_path_factory):
    """A gateway whose kernels get the scripted model, a server in front of it, and an
    Open Interpreter kernel started through the server (so on the gateway)."""
    tmp = tmp_path_factory.mktemp("hosted")
    env = kernel_env(_server, tmp, OI_APPROVAL_UI="auto", LITELLM_LOCAL_MODEL_COST_MAP="True")
    # Kernel Gateway gives its kernels PATH, the client's KERNEL_* variables and only the
    # variables of its own environment that are on this list (or the kernelspec's env).
    env["KG_ENV_PROCESS_WHITELIST"] = ",".join([*env, "HOME"])
    with G.kernel_gateway(env=env) as gateway:
        server = Server(gateway, tmp)
        try:
            status, kernel = server.api("/api/kernels", "POST", {"name": "open-interpreter"})
            assert status == 201, server.log.read_text()
            channels = Channels(server, kernel["id"])
            yield gateway, server, kernel["id"], channels
            channels.close()
        finally:
            server.stop()


def test_the_kernel_runs_on_the_gateway_and_asks_on_stdin(hosted, _server):
    gateway, server, kernel_id, channels = hosted
    assert [k["id"] for k in gateway.kernels()] == [kernel_id]
    _server.reset()
    _server.enqueue(S.tool_call("print(6 * 7)"), S.text("42"))
    result = channels.execute("multiply six by seven", stdin=["y"])
    assert result["reply"]["status"] == "ok", result
    assert result["prompts"] and "42" in result["stdout"], result["iopub"]


def test_the_card_works_through_the_gateway(hosted, _server):
    gateway, server, kernel_id, channels = hosted
    channels.send("comm_open", {"comm_id": uuid.uuid4().hex,
                                "target_name": "jupyter.widget.control", "data": {}},
                  metadata={"version": "1.0.0"})
    states: dict[str, dict[str, Any]] = {}
    cards = []

    def frontend(msg: dict[str, Any]) -> None:
        kind, content = msg["header"]["msg_type"], msg["content"]
        if kind == "comm_open":
            states[content["comm_id"]] = dict(content["data"]["state"])
        elif kind == "comm_msg" and content["data"].get("method") == "update":
            states.setdefault(content["comm_id"], {}).update(content["data"]["state"])
        elif kind == "display_data" and WIDGET_VIEW in content["data"]:
            cards.append(msg)
            run = [c for c, st in states.items() if "oi-run" in st.get("_dom_classes", ())]
            channels.send("comm_msg", {"comm_id": run[-1], "data": {
                "method": "custom", "content": {"event": "click"}}})

    _server.reset()
    _server.enqueue(S.tool_call("print('clicked through the gateway')"), S.text("ok"))
    result = channels.execute("say it", on_message=frontend)
    assert result["reply"]["status"] == "ok"
    assert cards and "clicked through the gateway" in result["stdout"]


def test_interrupt_and_restart_through_the_server(hosted):
    gateway, server, kernel_id, channels = hosted
    timer = threading.Timer(
        2.0, lambda: server.api(f"/api/kernels/{kernel_id}/interrupt", "POST", {}))
    timer.start()
    started = time.monotonic()
    result = channels.execute("%%python\nkept = 1\nimport time\ntime.sleep(60)")
    timer.join()
    assert time.monotonic() - started < 30
    assert "KeyboardInterrupt" in json.dumps(result["iopub"])
    status, _ = server.api(f"/api/kernels/{kernel_id}/restart", "POST", {})
    assert status == 200
    after = channels.execute("%%python\nprint('kept' in dir())")
    assert after["stdout"] == "False\n"  # a new kernel (and child)
    status, _ = server.api(f"/api/kernels/{kernel_id}", "DELETE")
    assert status == 204
    gateway.wait_for_kernels(0)
