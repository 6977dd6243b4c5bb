"""The ``oi_kernel`` comm (oi_kernel/frontend_comm.py), spoken to a real Open Interpreter
kernel through jupyter_client as the JupyterLab extension speaks it; the LLM is the
scripted HTTP server. A few pure checks of the event wrapper use fake comms."""

from __future__ import annotations

import json
import queue
import time
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from oi_kernel.core.engine import Engine
from oi_kernel.core.events import StepDone, TextDelta, TurnDone
from oi_kernel.core.types import CodeBlock, Decision, StepRecord, Turn
from oi_kernel.llm.client import LLM
from oi_kernel.session.frontend_comm import TARGET, FrontendComms
from tests import llm_server as S
from tests.env import oi_env
from tests.kernel_client import KernelSession

Msg = dict[str, Any]


class Frontend:
    """A frontend on a real kernel: every iopub message is kept, whatever its parent."""

    def __init__(self, ks: KernelSession) -> None:
        self.kc = ks.kc
        self.seen: list[Msg] = []

    def _pump(self, timeout: float) -> Msg | None:
        try:
            msg = self.kc.get_iopub_msg(timeout=timeout)
        except queue.Empty:
            return None
        self.seen.append(msg)
        return msg

    def comm_data(self, comm_id: str) -> list[dict[str, Any]]:
        return [
            m["content"]["data"]
            for m in self.seen
            if m["header"]["msg_type"] == "comm_msg" and m["content"]["comm_id"] == comm_id
        ]

    def wait_comm(self, comm_id: str, kind: str, start: int = 0, timeout: float = 60) -> dict:
        """The first ``kind`` message on ``comm_id`` among messages seen from ``start`` on."""
        deadline = time.monotonic() + timeout
        while True:
            for m in self.seen[start:]:
                c = m["content"]
                if (
                    m["header"]["msg_type"] == "comm_msg"
                    and c["comm_id"] == comm_id
                    and c["data"].get("type") == kind
                ):
                    return c["data"]
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {kind} on comm {comm_id} in {timeout} s")
            self._pump(0.1)

    def open(self) -> str:
        comm_id = uuid.uuid4().hex
        content = {
            "comm_id": comm_id,
            "target_name": TARGET,
            "data": {"type": "hello", "version": 1},
        }
        self.kc.shell_channel.send(self.kc.session.msg("comm_open", content))
        return comm_id

    def send(self, comm_id: str, data: dict[str, Any]) -> int:
        """Send a comm message; returns the index from which its answers can be looked for."""
        mark = len(self.seen)
        msg = self.kc.session.msg("comm_msg", {"comm_id": comm_id, "data": data})
        self.kc.shell_channel.send(msg)
        return mark

    def close(self, comm_id: str) -> None:
        self.kc.shell_channel.send(
            self.kc.session.msg("comm_close", {"comm_id": comm_id, "data": {}})
        )

    def execute(self, code: str, cell_id: str = "cell-1", timeout: float = 60) -> list[Msg]:
        """Run a cell as JupyterLab does (cellId in the metadata); its iopub messages."""
        msg = self.kc.session.msg(
            "execute_request",
            {
                "code": code,
                "silent": False,
                "store_history": True,
                "user_expressions": {},
                "allow_stdin": False,
                "stop_on_error": True,
            },
            metadata={"cellId": cell_id},
        )
        self.kc.shell_channel.send(msg)
        msg_id = msg["header"]["msg_id"]
        mark = len(self.seen)
        deadline = time.monotonic() + timeout
        while not any(
            m["parent_header"].get("msg_id") == msg_id
            and m["header"]["msg_type"] == "status"
            and m["content"]["execution_state"] == "idle"
            for m in self.seen[mark:]
        ):
            if time.monotonic() > deadline:
                raise TimeoutError(f"cell did not finish in {timeout} s: {code[:60]!r}")
            self._pump(0.1)
        return [m for m in self.seen[mark:] if m["parent_header"].get("msg_id") == msg_id]


@pytest.fixture(scope="module")
def kernel(_server, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("oi-comm")
    env = oi_env(_server, tmp, OI_AUTO_RUN="1")
    with KernelSession(env=env, cwd=str(tmp)) as ks:
        ks.tmp = tmp
        yield ks


@pytest.fixture(scope="module")
def frontend(kernel):
    return Frontend(kernel)


@pytest.fixture(scope="module")
def ran_turn(kernel, frontend, _server):
    """One auto-run turn with one step; returns (comm_id, the cell's messages)."""
    comm_id = frontend.open()
    frontend.wait_comm(comm_id, "status")
    frontend.execute("%auto_run on")  # whatever earlier tests set
    _server.reset()
    _server.enqueue(S.tool_call("print(6 * 7)"), S.text("It is 42."))
    messages = frontend.execute("multiply six by seven", cell_id="cell-42")
    assert any("42" in m["content"].get("text", "") for m in messages), messages
    return comm_id, messages


def test_open_pushes_status_at_once(frontend):
    comm_id = frontend.open()
    status = frontend.wait_comm(comm_id, "status", start=0)
    assert status["model"] == "openai/scripted"
    assert status["kernel"] == "open-interpreter"
    assert status["approval"] == "never"  # OI_AUTO_RUN=1
    assert status["sandbox"] is False
    assert status["sandbox_read"] == [] and status["sandbox_write"] == []
    assert set(status) >= {"prompt_tokens", "completion_tokens", "cost", "turns"}


def test_get_status_and_set_model_answer_with_status(frontend):
    comm_id = frontend.open()
    frontend.wait_comm(comm_id, "status")
    mark = frontend.send(comm_id, {"type": "get_status"})
    assert frontend.wait_comm(comm_id, "status", start=mark)["model"] == "openai/scripted"
    mark = frontend.send(comm_id, {"type": "set_model", "model": "openai/other-model"})
    assert frontend.wait_comm(comm_id, "status", start=mark)["model"] == "openai/other-model"
    mark = frontend.send(comm_id, {"type": "set_model", "model": "openai/scripted"})
    assert frontend.wait_comm(comm_id, "status", start=mark)["model"] == "openai/scripted"


def test_magics_that_change_settings_push_status_to_every_comm(frontend):
    first, second = frontend.open(), frontend.open()
    frontend.wait_comm(first, "status")
    frontend.wait_comm(second, "status")
    messages = frontend.execute("%approval risky")
    pushed = [
        (m["content"]["comm_id"], m["content"]["data"])
        for m in messages
        if m["header"]["msg_type"] == "comm_msg"
    ]
    assert (first, pushed[0][1]) in pushed and (second, pushed[0][1]) in pushed
    assert pushed[0][1]["approval"] == "risky"
    frontend.close(second)
    messages = frontend.execute("%auto_run on")
    targets = {m["content"]["comm_id"] for m in messages if m["header"]["msg_type"] == "comm_msg"}
    assert first in targets and second not in targets  # a closed comm is forgotten


def test_turn_sends_code_ran_with_cell_id_then_status(ran_turn):
    comm_id, messages = ran_turn
    data = [
        m["content"]["data"]
        for m in messages
        if m["header"]["msg_type"] == "comm_msg" and m["content"]["comm_id"] == comm_id
    ]
    kinds = [d["type"] for d in data]
    assert kinds == ["code_ran", "status"]
    ran, status = data
    assert ran["code"] == "print(6 * 7)"
    assert ran["language"] == "python"
    assert ran["cell_id"] == "cell-42"
    assert (ran["turn"], ran["step"]) == (1, 1)
    assert status["turns"] == 1
    assert status["prompt_tokens"] > 0 and status["completion_tokens"] > 0


def test_export_writes_the_notebook_and_refuses_to_overwrite(kernel, frontend, ran_turn):
    import nbformat

    comm_id, _ = ran_turn
    request = {
        "type": "export",
        "request_id": "r1",
        "path": "out/session.ipynb",
        "include_failed": False,
    }
    mark = frontend.send(comm_id, request)
    result = frontend.wait_comm(comm_id, "export_result", start=mark)
    assert result == {
        "type": "export_result",
        "request_id": "r1",
        "ok": True,
        "path": "out/session.ipynb",
        "error": "",
    }
    path = Path(kernel.tmp) / "out" / "session.ipynb"
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert "print(6 * 7)" in [c.source for c in nb.cells if c.cell_type == "code"]

    mark = frontend.send(comm_id, {**request, "request_id": "r2"})
    again = frontend.wait_comm(comm_id, "export_result", start=mark)
    assert again["request_id"] == "r2" and again["ok"] is False
    assert "exists" in again["error"]


def test_export_without_a_path_says_what_is_missing(frontend, ran_turn):
    comm_id, _ = ran_turn
    mark = frontend.send(comm_id, {"type": "export", "request_id": "r3", "path": " "})
    result = frontend.wait_comm(comm_id, "export_result", start=mark)
    assert result["ok"] is False and "No path" in result["error"]


def test_verify_reports_per_cell_and_kernel_stays_responsive(kernel, frontend, ran_turn):
    comm_id, _ = ran_turn
    request = {"type": "export", "request_id": "v0", "path": "verify-me.ipynb"}
    mark = frontend.send(comm_id, request)
    assert frontend.wait_comm(comm_id, "export_result", start=mark)["ok"] is True

    mark = frontend.send(comm_id, {"type": "verify", "request_id": "v1", "path": "verify-me.ipynb"})
    # While verify re-runs the notebook in a fresh kernel, this kernel answers cells.
    tokens = frontend.execute("%tokens")
    assert any("prompt tokens" in json.dumps(m["content"]) for m in tokens)
    # ...while verify was still running: its answer had not come yet.
    assert not any(d.get("request_id") == "v1" for d in frontend.comm_data(comm_id))

    result = frontend.wait_comm(comm_id, "verify_result", start=mark, timeout=120)
    assert result["ok"] is True, result
    assert result["cells"] and all(c["status"] == "same" for c in result["cells"])
    assert "OK" in result["report"]
    assert result["error"] == ""


def test_verify_of_a_missing_notebook_fails_with_the_reason(frontend, ran_turn):
    comm_id, _ = ran_turn
    mark = frontend.send(comm_id, {"type": "verify", "request_id": "v2", "path": "nope.ipynb"})
    result = frontend.wait_comm(comm_id, "verify_result", start=mark)
    assert result["ok"] is False and result["cells"] == []
    assert "No notebook" in result["error"]


# ---------------------------------------------------------------- pure: fake comms


class FakeComm:
    def __init__(self, comm_id: str) -> None:
        self.comm_id = comm_id
        self.sent: list[dict[str, Any]] = []
        self._closed = False
        self.on_close_cb: Any = None

    def send(self, data: dict[str, Any]) -> None:
        self.sent.append(data)

    def on_msg(self, cb: Any) -> None:
        self.on_msg_cb = cb

    def on_close(self, cb: Any) -> None:
        self.on_close_cb = cb


class FakeManager:
    def __init__(self) -> None:
        self.targets: dict[str, Any] = {}

    def register_target(self, name: str, f: Any) -> None:
        self.targets[name] = f

    def unregister_target(self, name: str, f: Any) -> None:
        self.targets.pop(name)


@pytest.fixture
def comms(monkeypatch):
    monkeypatch.setenv("OI_MODEL", "openai/scripted")
    executor = SimpleNamespace(sandboxed=False, cwd="/tmp")  # the Executor protocol's facts
    engine = Engine(executor=executor, approver=object(), llm=LLM())
    fc = FrontendComms(engine, lambda: None, kind="ipython-magic")
    manager = FakeManager()
    fc.register_target(manager)
    comm = FakeComm("c1")
    manager.targets[TARGET](comm, {"content": {"data": {"type": "hello"}}})
    return fc, engine, comm, manager


def _step(action: str, code: str = "x = 1", language: str = "py") -> StepDone:
    record = StepRecord(index=2, block=CodeBlock(language, "proposed"),
                        decision=Decision(action, code),  # type: ignore[arg-type]
                        status="ok" if action == "run" else "skipped")
    return StepDone(record)


def test_watch_forwards_every_event_and_reports_only_code_that_ran(comms):
    fc, engine, comm, _ = comms
    engine.turns.append(Turn(index=3, instruction="do it"))
    seen: list[Any] = []
    emit = fc.watch(seen.append, cell_id="abc")
    events = [TextDelta("hi"), _step("skip"), _step("run", "y = 2"), TurnDone(engine.turns[-1])]
    for event in events:
        emit(event)
    assert seen == events
    assert comm.sent[0]["type"] == "status" and comm.sent[0]["kernel"] == "ipython-magic"
    ran = [d for d in comm.sent if d["type"] == "code_ran"]
    assert ran == [
        {
            "type": "code_ran",
            "language": "python",
            "code": "y = 2",
            "cell_id": "abc",
            "turn": 3,
            "step": 2,
            "status": "ok",
        }
    ]
    assert comm.sent[-1]["type"] == "status" and comm.sent[-1]["turns"] == 1


def test_closed_comms_are_forgotten_and_close_unregisters(comms):
    fc, engine, comm, manager = comms
    comm.on_close_cb({})
    engine.approval = "risky"
    assert comm.sent[-1]["approval"] != "risky" and fc.open_comms == 0
    fc.close()
    assert TARGET not in manager.targets
    engine.llm.model = "openai/elsewhere"  # observers are gone: nothing is sent, nothing raises
    assert fc.open_comms == 0


def test_unknown_messages_and_empty_models_keep_the_comm_answering(comms):
    fc, engine, comm, _ = comms
    comm.on_msg_cb({"content": {"data": {"type": "bogus"}}})
    comm.on_msg_cb({"content": {"data": {"type": "set_model", "model": "  "}}})
    assert engine.llm.model == "openai/scripted"
    assert comm.sent[-1]["type"] == "status"
