"""The widget approval card and widgets created by user code, driven through
jupyter_client acting as a widget-rendering frontend (it opens the widget control
comm and clicks buttons by sending the comm messages JupyterLab would send)."""

from __future__ import annotations

import html
import threading
import time
import uuid
from typing import Any

import pytest

from tests import llm_server as S
from tests.kernel_client import CellResult, KernelSession
from tests.test_kernel import kernel_env, sent_tool_results


def send_shell(ks: KernelSession, msg_type: str, content: dict[str, Any],
               metadata: dict[str, Any] | None = None) -> None:
    msg = ks.kc.session.msg(msg_type, content, metadata=metadata)
    ks.kc.shell_channel.send(msg)


class Frontend:
    """Watches a cell's iopub for approval cards and acts on them like a user."""

    def __init__(self, ks: KernelSession, actions: list[tuple[str, str | None]]) -> None:
        self.ks = ks
        self.actions = list(actions)  # (button class, replacement code or None) per card
        self.models: dict[str, dict[str, Any]] = {}
        self.cards_seen = 0
        self.outputs_before_click: list[str] = []
        self.seen_text = ""

    def __call__(self, msg: dict[str, Any]) -> None:
        kind = msg["header"]["msg_type"]
        content = msg["content"]
        if kind == "comm_open":
            self.models[content["comm_id"]] = dict(content["data"]["state"])
        elif kind == "comm_msg" and content["data"].get("method") == "update":
            self.models.setdefault(content["comm_id"], {}).update(content["data"]["state"])
        elif kind == "stream":
            self.seen_text += content["text"]
        elif (
            kind == "display_data" and "application/vnd.jupyter.widget-view+json" in content["data"]
        ):
            self.cards_seen += 1
            self.outputs_before_click.append(self.seen_text)
            if self.actions:
                self.act(*self.actions.pop(0))

    def comm_with_class(self, cls: str) -> str:
        found = [cid for cid, st in self.models.items() if cls in st.get("_dom_classes", ())]
        assert found, f"no widget with class {cls}"
        return found[-1]

    def act(self, button: str, new_code: str | None) -> None:
        if new_code is not None:
            self.click("oi-edit")
            send_shell(
                self.ks,
                "comm_msg",
                {
                    "comm_id": self.comm_with_class("oi-code"),
                    "data": {"method": "update", "state": {"value": new_code}, "buffer_paths": []},
                },
            )
        self.click(button)

    def click(self, cls: str) -> None:
        send_shell(
            self.ks,
            "comm_msg",
            {
                "comm_id": self.comm_with_class(cls),
                "data": {"method": "custom", "content": {"event": "click"}},
            },
        )


@pytest.fixture(scope="module")
def lab(_server, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("card")
    with KernelSession(env=kernel_env(_server, tmp), cwd=str(tmp)) as ks:
        # what JupyterLab's widget manager does on connecting: open the control comm
        send_shell(
            ks,
            "comm_open",
            {"comm_id": uuid.uuid4().hex, "target_name": "jupyter.widget.control", "data": {}},
            metadata={"version": "1.0.0"},
        )
        yield ks


@pytest.fixture
def oi(lab, _server):
    _server.reset()
    assert lab.execute("%reset").status == "ok"
    return lab


def run_with(
    oi: KernelSession, actions: list[tuple[str, str | None]], instruction: str = "go", **kw: Any
) -> tuple[CellResult, Frontend]:
    frontend = Frontend(oi, actions)
    return oi.execute(instruction, on_message=frontend, **kw), frontend


def records(result: CellResult) -> list[str]:
    return [
        m["content"]["data"]["text/html"]
        for m in result.of_type("update_display_data")
        if "oi-card-decided" in m["content"]["data"].get("text/html", "")
    ]


def test_run_click_runs_exactly_the_shown_code(oi, _server):
    _server.enqueue(S.tool_call("print('ran-after-click')"), S.text("done"))
    result, fe = run_with(oi, [("oi-run", None)])
    assert fe.cards_seen == 1
    assert fe.outputs_before_click == [""]  # nothing ran before the click
    assert result.stdout == "ran-after-click\n"
    rec = records(result)
    assert len(rec) == 1 and "approved" in rec[0] and "ran-after-click" in rec[0]
    assert 'class="oi-code-ran"' in rec[0]


def final_texts(result: CellResult) -> list[str]:
    """What the cell shows at the end: each output's last version (displays updated in
    place by display_id), as markdown, html or plain text; a pending card as its model."""
    slots: list[list[str]] = []
    by_id: dict[str, list[str]] = {}
    for m in result.of_type("display_data", "update_display_data", "stream"):
        c = m["content"]
        if m["header"]["msg_type"] == "stream":
            slots.append([c["text"]])
            continue
        data = c["data"]
        text = data.get("text/markdown") or data.get("text/html") or data.get("text/plain", "")
        display_id = (c.get("transient") or {}).get("display_id")
        if m["header"]["msg_type"] == "update_display_data":
            by_id[display_id][0] = text
        else:
            slots.append([text])
            by_id[display_id or ""] = slots[-1]
    return [slot[0] for slot in slots]


def test_each_proposal_is_shown_once_in_a_notebook(oi, _server):
    """Markdown mode: the reply's fenced code is folded once the card shows it; the decided
    record keeps the code that ran (so the code is on screen once, not two or three times)."""
    code = "print('shown-once-' + 'x')"
    _server.enqueue(S.text(f"I will print it.\n```python\n{code}\n```\nThat is all.",
                           chunk_size=7), S.text("done"))
    result, fe = run_with(oi, [("oi-run", None)])  # a fenced block in text: markdown style
    assert fe.cards_seen == 1 and result.stdout == "shown-once-x\n"
    final = final_texts(result)
    assert sum(html.unescape(text).count(code) for text in final) == 1, final
    assert "*▸ python, 1 line: step 1, below*" in final[0]
    assert "I will print it." in final[0] and "That is all." in final[0]
    assert [t for t in final if "oi-card-decided" in t and code in html.unescape(t)]


def test_skip_runs_nothing_and_tells_the_llm(oi, _server):
    _server.enqueue(S.tool_call("print('must-not-run')"), S.text("ok, skipped"))
    result, _ = run_with(oi, [("oi-skip", None)])
    assert "must-not-run" not in result.stdout
    assert "declined" in sent_tool_results(_server.requests[1])[0]
    assert "skipped" in records(result)[0]


def test_edit_then_run_runs_the_edited_text(oi, _server):
    _server.enqueue(S.tool_call("print('original')"), S.text("done"))
    result, _ = run_with(oi, [("oi-run", "print('edited version')")])
    assert result.stdout == "edited version\n"
    assert "edited" in records(result)[0]
    path = oi.execute("%log").text.split("`")[1]
    log = open(path).read()
    assert '"action": "edited"' in log and "edited version" in log


def test_run_all_approves_the_remaining_steps(oi, _server):
    _server.enqueue(
        S.tool_call("print('one')"),
        S.tool_call("print('two')"),
        S.tool_call("print('three')"),
        S.text("all done"),
    )
    result, fe = run_with(oi, [("oi-run-all", None)])
    assert fe.cards_seen == 1
    assert result.stdout == "one\ntwo\nthree\n"


def test_stop_ends_the_instruction(oi, _server):
    _server.enqueue(S.tool_call("print('no')"))
    result, _ = run_with(oi, [("oi-stop", None)])
    assert result.stdout == ""
    assert len(_server.requests) == 1
    assert "stopped" in records(result)[0]


def test_interrupt_cancels_a_pending_card(oi, _server):
    _server.enqueue(S.tool_call("print('never')"))
    fe = Frontend(oi, [])

    def interrupt_when_card_shows() -> None:
        deadline = time.monotonic() + 20
        while fe.cards_seen == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        oi.km.interrupt_kernel()

    threading.Thread(target=interrupt_when_card_shows, daemon=True).start()
    started = time.monotonic()
    result = oi.execute("wait for me", on_message=fe, timeout=30)
    assert result.reply["content"]["ename"] == "KeyboardInterrupt"
    assert time.monotonic() - started < 20  # (a card that ignores it waits for the 30 s timeout)
    assert "never" not in result.stdout
    assert "stopped" in records(result)[0]
    assert oi.execute("%%python\nprint('next cell works')").stdout == "next cell works\n"


def test_child_widget_updates_flow_both_ways(oi):
    created = oi.execute("%%python\nimport ipywidgets as w\nslider = w.IntSlider(value=3)\nslider")
    opens = [
        m
        for m in created.of_type("comm_open")
        if m["content"]["data"]["state"].get("_model_name") == "IntSliderModel"
    ]
    assert opens, "the child's widget should be announced to the frontend"
    comm_id = opens[0]["content"]["comm_id"]
    views = [
        m
        for m in created.of_type("execute_result")
        if "application/vnd.jupyter.widget-view+json" in m["content"]["data"]
    ]
    assert (
        views[0]["content"]["data"]["application/vnd.jupyter.widget-view+json"]["model_id"]
        == comm_id
    )

    send_shell(
        oi,
        "comm_msg",
        {
            "comm_id": comm_id,
            "data": {"method": "update", "state": {"value": 7}, "buffer_paths": []},
        },
    )
    deadline = time.monotonic() + 10
    value = ""
    while time.monotonic() < deadline and value != "7":
        value = oi.execute("%%python\nprint(slider.value)").stdout.strip()
    assert value == "7"  # frontend -> child

    changed = oi.execute("%%python\nslider.value = 9")
    updates = [
        m["content"]["data"]
        for m in changed.of_type("comm_msg")
        if m["content"]["comm_id"] == comm_id
    ]
    assert any(u.get("state", {}).get("value") == 9 for u in updates)  # child -> frontend


def test_page_reload_gets_one_merged_widget_state(oi, _server):
    """A reconnecting frontend asks for all widget states once and must get the child's
    widgets and the wrapper's cards in a single update_states reply."""
    oi.execute("%%python\nimport ipywidgets as w\nreloaded = w.IntSlider(value=4)\nreloaded")
    _server.enqueue(S.tool_call("print('pending card')"))
    fe = Frontend(oi, [])
    replies: list[dict[str, Any]] = []

    def collect(msg: dict[str, Any]) -> None:
        data = msg["content"].get("data") or {}
        if msg["header"]["msg_type"] == "comm_msg" and data.get("method") == "update_states":
            replies.append(data)

    def reload_when_card_shows() -> None:
        deadline = time.monotonic() + 20
        while fe.cards_seen == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        comm_id = uuid.uuid4().hex
        send_shell(oi, "comm_open", {"comm_id": comm_id, "target_name": "jupyter.widget.control",
                                     "data": {}}, metadata={"version": "1.0.0"})
        send_shell(oi, "comm_msg", {"comm_id": comm_id, "data": {"method": "request_states"}})
        deadline = time.monotonic() + 10
        while not replies and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # a second (unmerged) reply would arrive now
        oi.km.interrupt_kernel()

    thread = threading.Thread(target=reload_when_card_shows, daemon=True)
    thread.start()
    oi.execute("show a card", on_message=fe, on_other=collect, timeout=40)
    thread.join(20)
    assert len(replies) == 1
    models = {s["model_name"] for s in replies[0]["states"].values()}
    assert "IntSliderModel" in models  # from the child
    assert "ButtonModel" in models  # the wrapper's approval card
