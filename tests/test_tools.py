"""Tools beyond code end to end: a real MCP server (tests/mcp_server.py, the official SDK)
over stdio and streamable HTTP, called by the scripted model through litellm and the
engine, with approval, results fed back, failures, a size budget; notebook functions
offered with %tool. Plus the pure parts (names, config) as tables."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from oi_kernel import Interpreter
from oi_kernel.core.types import ApprovalRequest, Decision
from oi_kernel.errors import ConfigError
from oi_kernel.execution.mcp.config import parse_config
from oi_kernel.execution.mcp.names import VALID_NAME, tool_name
from oi_kernel.record.session_log import read_log
from tests import llm_server as S
from tests.env import TEST_KEY

ROOT = Path(__file__).resolve().parents[1]


def server_entry(*extra: str, **keys) -> dict:
    return {"command": sys.executable, "args": ["-m", "tests.mcp_server", *extra],
            "cwd": str(ROOT), **keys}


def write_config(tmp: Path, servers: dict) -> Path:
    path = tmp / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def make(server, tmp: Path, **kw) -> Interpreter:
    return Interpreter("openai/scripted", api_base=server.url, api_key=TEST_KEY,
                       log_dir=tmp / "logs", cwd=tmp, **kw)


def call(name: str, args: dict, call_id: str | None = None) -> S.Response:
    return S.tool_calls([S.Call(json.dumps(args), name, call_id)])


# a tool's result reaches the model framed as untrusted data (docs/security.md)
FRAMED = re.compile(r"\[Untrusted content: [^\n]*\]\n<<<(untrusted-\w+)\n(.*)\n\1>>>", re.S)


def unframed(text: str) -> str:
    """``text`` with the untrusted-content frame around a tool's result taken off."""
    return FRAMED.sub(lambda m: m[2], text)


def tool_messages(body: dict) -> list[str]:
    return [unframed(m["content"]) for m in body["messages"] if m["role"] == "tool"]


def offered(body: dict) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools") or []]


@pytest.fixture
def prices_config(tmp_path, monkeypatch):
    path = write_config(tmp_path, {"prices": server_entry()})
    monkeypatch.setenv("OI_MCP_CONFIG", str(path))
    monkeypatch.setenv("OI_TEST_SECRET_VALUE", "do-not-leak")
    return path


def test_mcp_tool_called_approved_and_fed_back(llm_server, tmp_path, prices_config):
    asked: list[ApprovalRequest] = []

    def approve(request: ApprovalRequest) -> bool:
        asked.append(request)
        return True

    llm_server.enqueue(call("prices__add", {"a": 2, "b": 3}),
                       call("prices__lookup_price", {"item": "apple"}),
                       S.text("Apples cost 1.25 EUR."))
    with make(llm_server, tmp_path, approve=approve) as it:
        chunks = list(it.chat("price of apples?"))
        log = it.log_path
    first, second, third = llm_server.requests
    names = offered(first)
    assert names[0] == "execute" and "prices__lookup_price" in names
    assert all(VALID_NAME.match(n) for n in names)
    schema = next(t for t in first["tools"] if t["function"]["name"] == "prices__add")
    assert schema["function"]["parameters"]["required"] == ["a", "b"]
    assert tool_messages(second) == ["5.0"]
    assert tool_messages(third)[-1] == "apple: 1.25 EUR"
    # add is not marked read-only: asked; lookup_price is read-only but policy is "always"
    assert [r.tool for r in asked] == ["prices › add", "prices › lookup_price"]
    assert json.loads(asked[0].block.code) == {"a": 2, "b": 3}
    outputs = [c for c in chunks if type(c).__name__ == "OutputChunk"]
    assert [o.text for o in outputs] == ["5.0", "apple: 1.25 EUR"]
    events = [r for r in read_log(log) if r.get("tool")]
    assert {r["event"] for r in events} == {"code_proposed", "decision", "execution"}
    execution = [r for r in events if r["event"] == "execution"][-1]
    assert execution["server"] == "prices" and execution["server_tool"] == "lookup_price"
    assert execution["outputs"][0]["data"]["text/plain"] == "apple: 1.25 EUR"


def test_policies_edit_skip_and_errors(llm_server, tmp_path, prices_config):
    asked: list[str] = []

    def approve(request: ApprovalRequest):
        asked.append(request.tool)
        if request.tool.endswith("lookup_price"):
            return True
        if request.tool.endswith("delete_item"):
            return Decision("skip", reason="keep it")
        return '{"item": "pear"}'  # an edit of the JSON arguments

    llm_server.enqueue(
        call("prices__lookup_price", {"item": "apple"}),  # read-only: runs under risky
        call("prices__add", {"a": 1, "b": 1}),  # not read-only: asks (the edit is bad JSON args)
        call("prices__delete_item", {"item": "apple"}),  # destructive: asks, skipped
        call("prices__lookup_price", {"item": "kiwi"}),  # the tool's own error
        call("prices__nope", {}),  # no such tool
        S.text("Done."))
    with make(llm_server, tmp_path, approve=approve) as it:
        it.engine.approval = "risky"
        list(it.chat("prices"))
    results = [tool_messages(b)[-1] for b in llm_server.requests[1:]]
    assert results[0] == "apple: 1.25 EUR"
    assert results[1].startswith("The tool call failed:") and "item" in results[1]
    assert results[2].startswith("The user declined") and "keep it" in results[2]
    assert results[3].startswith("The tool call failed:") and "unknown item 'kiwi'" in results[3]
    assert 'no tool named "prices__nope"' in results[4]
    # the kiwi lookup asks too: it follows the result of the first lookup (outside content)
    assert asked == ["prices › add", "prices › delete_item", "prices › lookup_price"]


def test_destructive_asks_even_when_auto_run(llm_server, tmp_path, prices_config):
    asked = []
    llm_server.enqueue(call("prices__delete_item", {"item": "pear"}),
                       call("prices__add", {"a": 1, "b": 2}), S.text("ok"))
    with make(llm_server, tmp_path, approve=lambda r: asked.append(r.tool) or True,
              auto_run=True) as it:
        list(it.chat("x"))
    assert asked == ["prices › delete_item"]
    assert tool_messages(llm_server.requests[-1])[-2:] == ["deleted pear: True", "3.0"]


def test_destructive_asks_even_after_run_all(llm_server, tmp_path, prices_config):
    asked = []

    def approve(request: ApprovalRequest) -> Decision:
        asked.append(request.tool)
        return Decision("run", request.block.code, run_all=True)

    llm_server.enqueue(call("prices__add", {"a": 1, "b": 2}),
                       call("prices__lookup_price", {"item": "pear"}),
                       call("prices__delete_item", {"item": "pear"}), S.text("ok"))
    with make(llm_server, tmp_path, approve=approve) as it:
        list(it.chat("x"))
    assert asked == ["prices › add", "prices › delete_item"]  # lookup ran under Run all


def test_server_environment_crash_and_restart(llm_server, tmp_path, prices_config):
    llm_server.enqueue(call("prices__env", {}), call("prices__crash", {}),
                       call("prices__lookup_price", {"item": "pear"}), S.text("ok"))
    with make(llm_server, tmp_path, auto_run=True) as it:
        list(it.chat("x"))
    env, crash, after = [tool_messages(b)[-1] for b in llm_server.requests[1:]]
    assert "PATH" in env and "OI_TEST_SECRET_VALUE" not in env and "OI_API_KEY" not in env
    assert "closed the connection" in crash and "started again" in crash
    assert after == "pear: 2.5 EUR"


def test_missing_executable_and_hung_server(llm_server, tmp_path, monkeypatch):
    path = write_config(tmp_path, {
        "gone": {"command": "no-such-mcp-server-xyz"},
        "hung": server_entry("--silent", connect_timeout=2),
        "prices": server_entry()})
    monkeypatch.setenv("OI_MCP_CONFIG", str(path))
    llm_server.enqueue(call("prices__add", {"a": 1, "b": 2}), S.text("ok"), S.text("again"))
    with make(llm_server, tmp_path, auto_run=True) as it:
        started = time.monotonic()
        chunks = list(it.chat("x"))
        took = time.monotonic() - started
        notices = [c.text for c in chunks if type(c).__name__ == "NoticeChunk"]
        assert any("'no-such-mcp-server-xyz' was not found" in n for n in notices)
        assert any("'hung' did not answer within 2 s" in n for n in notices)
        assert tool_messages(llm_server.requests[1])[-1] == "3.0"
        again = list(it.chat("y"))  # failures are reported once
        assert not [c for c in again if type(c).__name__ == "NoticeChunk"]
    assert took < 25


def test_budget_puts_the_rest_behind_find_and_call(llm_server, tmp_path, monkeypatch):
    path = write_config(tmp_path, {"big": server_entry("--many", "200")})
    monkeypatch.setenv("OI_MCP_CONFIG", str(path))
    llm_server.enqueue(call("mcp_find", {"query": "number 150"}),
                       call("mcp_call", {"tool": "big__generated_tool_150",
                                         "arguments": {"text": "hi"}}),
                       S.text("ok"))
    with make(llm_server, tmp_path, auto_run=True) as it:
        chunks = list(it.chat("use tool 150"))
    first = llm_server.requests[0]
    names = offered(first)
    assert names[-2:] == ["mcp_find", "mcp_call"]
    assert 5 < len(names) < 60
    size = len(json.dumps(first["tools"]))
    assert size / 3.5 < 32_000 * 0.05 + 400  # the default budget of a 32k-token model
    assert "big__generated_tool_150" in tool_messages(llm_server.requests[1])[-1]
    assert tool_messages(llm_server.requests[2])[-1] == "tool 150: hi"
    notices = [c.text for c in chunks if type(c).__name__ == "NoticeChunk"]
    assert any("207 tools" in n and "mcp_find" in n for n in notices)


def test_streamable_http_server(llm_server, tmp_path, monkeypatch):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "tests.mcp_server", "--http", str(port)],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        path = write_config(tmp_path, {"web": {"url": f"http://127.0.0.1:{port}/mcp",
                                               "headers": {"X-Test": "1"}}})
        monkeypatch.setenv("OI_MCP_CONFIG", str(path))
        llm_server.enqueue(call("web__lookup_price", {"item": "pear"}), S.text("ok"))
        with make(llm_server, tmp_path, auto_run=True) as it:
            list(it.chat("x"))
        assert tool_messages(llm_server.requests[1]) == ["pear: 2.5 EUR"]
    finally:
        proc.kill()
        proc.wait(10)


# ----------------------------------------------------------------- pure parts
@pytest.mark.parametrize("server,tool,expected", [
    ("prices", "lookup_price", "prices__lookup_price"),
    ("my server", "get.file", "my_server__get_file"),
    ("9lives", "tool", "m9lives__tool"),
    ("srv", "tööl", "srv__t_l"),
])
def test_tool_names(server, tool, expected):
    assert tool_name(server, tool, set()) == expected


def test_tool_names_long_and_colliding_stay_valid_and_unique():
    taken: set[str] = set()
    names = [tool_name("s" * 30, "t" * 80, taken), tool_name("a.b", "x", taken),
             tool_name("a_b", "x", taken), tool_name("a b", "x", taken)]
    assert len(set(names)) == 4 and all(VALID_NAME.match(n) for n in names)


@pytest.mark.parametrize("data,problem", [
    ({}, "no \"mcpServers\""),
    ({"mcpServers": {"x": {"args": []}}}, "needs \"command\""),
    ({"mcpServers": {"x": {"url": "ftp://a"}}}, "http://"),
    ({"mcpServers": {"x": {"command": "a", "args": "b"}}}, "list of strings"),
    ({"mcpServers": {"x": {"command": "a", "timeout": -1}}}, "positive number"),
])
def test_config_errors_say_what_to_fix(data, problem):
    with pytest.raises(ConfigError, match=problem):
        parse_config(data, "f.json", {})


def test_config_shapes():
    specs = parse_config({"mcpServers": {
        "a": {"command": "npx", "args": ["-y", "srv"], "env": {"K": "v"}, "tools": ["t"]},
        "b": {"url": "http://127.0.0.1:1/mcp", "headers": {"A": "b"}, "timeout": 5},
        "c": {"command": "x", "disabled": True}}}, "f.json", {"call_timeout": 9})
    assert [(s.name, s.transport) for s in specs] == [("a", "stdio"), ("b", "http")]
    assert specs[0].env == {"K": "v"} and specs[0].tools == ["t"]
    assert specs[0].call_timeout == 9 and specs[1].call_timeout == 5


def add_tax(amount: float, rate: float = 0.2) -> float:
    """Add tax to an amount.

    amount: the net amount in euros
    """
    return round(amount * (1 + rate), 2)


def test_notebook_function_as_tool(llm_server, tmp_path):
    asked = []
    llm_server.enqueue(call("add_tax", {"amount": 10}),
                       call("add_tax", {"amont": 10}),  # a bad argument: the error goes back
                       S.text("12 EUR."))
    with make(llm_server, tmp_path, approve=lambda r: asked.append(r.block.code) or True,
              tools=[add_tax]) as it:
        list(it.chat("10 EUR with tax?"))
        log = it.log_path
    tool = next(t for t in llm_server.requests[0]["tools"]
                if t["function"]["name"] == "add_tax")["function"]
    assert tool["description"] == "Add tax to an amount."
    assert tool["parameters"] == {"type": "object", "required": ["amount"], "properties": {
        "amount": {"type": "number", "description": "the net amount in euros"},
        "rate": {"type": "number", "default": 0.2}}}
    assert asked == ["add_tax(amount=10)", "add_tax(amont=10)"]
    assert "12.0" in tool_messages(llm_server.requests[1])[-1]
    bad = tool_messages(llm_server.requests[2])[-1]
    assert "TypeError" in bad and "amont" in bad
    codes = [r["code"] for r in read_log(log) if r["event"] == "execution"]
    assert codes == ["add_tax(amount=10)", "add_tax(amont=10)"]


def test_export_verify_and_replay_with_tool_calls(llm_server, tmp_path, prices_config,
                                                  monkeypatch):
    from oi_kernel.api.replay import replay_log
    from oi_kernel.record.export import export_notebook
    from oi_kernel.record.verify import verify_notebook

    llm_server.enqueue(call("prices__lookup_price", {"item": "apple"}),
                       call("add_tax", {"amount": 10}), S.text("12 EUR."))
    with make(llm_server, tmp_path, auto_run=True, tools=[add_tax]) as it:
        list(it.chat("apple price, and 10 with tax"))
        log = it.log_path
    nb_path = export_notebook(log, tmp_path / "out.ipynb")
    nb = json.loads(nb_path.read_text())
    sources = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    assert sources[-2:] == [
        "from oi_kernel.execution.mcp.notebook import call_tool\n"
        "call_tool('prices', 'lookup_price', {'item': 'apple'});",
        "add_tax(amount=10)"]
    assert sources[0].startswith("def add_tax(")
    tool_cell = [c for c in nb["cells"] if c["cell_type"] == "code"][-2]
    assert tool_cell["metadata"]["oi_kernel"]["tool"] == {"server": "prices",
                                                          "tool": "lookup_price"}
    report = verify_notebook(nb_path, cwd=tmp_path)
    assert report.ok, report.format()
    assert [c.status for c in report.cells] == ["same", "same", "same"]
    # the server is not configured where the notebook is verified: the result is kept
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.setenv("OI_MCP_CONFIG", str(write_config(tmp_path / "elsewhere", {})))
    report = verify_notebook(nb_path, cwd=tmp_path)
    assert [c.status for c in report.cells] == ["same", "kept", "same"], report.format()
    assert report.ok and "recorded result kept" in report.cells[1].detail
    # replay: the recorded MCP result, no server (its config is gone too)
    monkeypatch.delenv("OI_MCP_CONFIG")
    replayed = replay_log(log, cwd=tmp_path)
    assert replayed.ok, replayed.format()
    assert [c.status for c in replayed.checks] == ["same", "same", "same"]


def test_markdown_mode_fenced_tool_block(llm_server, tmp_path, prices_config):
    fence = "```"
    llm_server.enqueue(
        S.text(f'Let me look.\n{fence}tool\n{{"tool": "prices__lookup_price", '
               f'"arguments": {{"item": "pear"}}}}\n{fence}\n'),
        S.text(f'{fence}tool\n{{"tool": "nope"}}\n{fence}\n'),
        S.text("Pears cost 2.5 EUR."))
    with make(llm_server, tmp_path, auto_run=True) as it:
        it.llm.tool_mode = "markdown"
        list(it.chat("pear price?"))
    first, second, third = llm_server.requests
    assert "tools" not in first or not first["tools"]
    system = first["messages"][0]["content"]
    assert "```tool" in system and "- prices__lookup_price(item): Look up the price" in system
    assert second["messages"][-1]["role"] == "user"
    assert unframed(second["messages"][-1]["content"]) == "pear: 2.5 EUR"
    assert "there is no tool named 'nope'" in third["messages"][-1]["content"]


def test_config_sources_and_precedence(tmp_path, monkeypatch):
    from oi_kernel.execution.mcp.config import load_servers

    jupyter_dir = tmp_path / "jupyter"
    jupyter_dir.mkdir()
    write_config(jupyter_dir, {"a": {"command": "from-jupyter"}, "j": {"command": "j"}})
    configured = tmp_path / "configured.json"
    configured.write_text(json.dumps({"mcpServers": {"a": {"command": "from-c-tools"}}}))
    env_file = tmp_path / "env.json"
    env_file.write_text(json.dumps({"mcpServers": {"e": {"url": "http://127.0.0.1:9/mcp"}}}))
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(jupyter_dir))
    monkeypatch.setenv("OI_MCP_CONFIG", str(env_file))
    servers = {s.name: s for s in load_servers(str(configured))}
    assert list(servers) == ["e", "a", "j"]
    assert servers["a"].command == "from-c-tools"
    monkeypatch.setenv("OI_MCP_CONFIG", str(tmp_path / "missing.json"))
    with pytest.raises(ConfigError, match="OI_MCP_CONFIG points at .*missing.json"):
        load_servers()


def test_profile_key_sets_the_config(tmp_path):
    from oi_kernel.session.profiles import SETTINGS

    assert SETTINGS["mcp_config"].owner == "tools"


def test_hung_tool_call_times_out_and_the_server_stays_usable(llm_server, tmp_path,
                                                               monkeypatch):
    path = write_config(tmp_path, {"prices": server_entry(timeout=1)})
    monkeypatch.setenv("OI_MCP_CONFIG", str(path))
    llm_server.enqueue(call("prices__slow", {"seconds": 3}),
                       call("prices__lookup_price", {"item": "apple"}), S.text("ok"))
    with make(llm_server, tmp_path, auto_run=True) as it:
        list(it.chat("x"))
    hung, after = [tool_messages(b)[-1] for b in llm_server.requests[1:]]
    assert "did not answer within 1 s" in hung
    assert after == "apple: 1.25 EUR"


def test_image_result_shown_and_described(llm_server, tmp_path, prices_config):
    llm_server.enqueue(call("prices__chart", {}), S.text("A red square."))
    with make(llm_server, tmp_path, auto_run=True) as it:
        chunks = list(it.chat("chart"))
    out = next(c for c in chunks if type(c).__name__ == "OutputChunk")
    assert out.outputs[0]["data"]["image/png"].startswith("iVBOR")
    told = tool_messages(llm_server.requests[1])[-1]
    assert "image/png" in told and "iVBOR" not in told


def test_without_the_sdk_the_message_says_how_to_install(monkeypatch):
    from oi_kernel.errors import OIError
    from oi_kernel.execution.mcp.connection import load_sdk

    monkeypatch.setitem(sys.modules, "mcp", None)
    with pytest.raises(OIError, match=r"pip install 'oi-kernel\[mcp\]'"):
        load_sdk()


def test_mcp_without_servers_or_sdk_says_how_to_install(llm_server, tmp_path, monkeypatch):
    from oi_kernel.session.tools import describe_mcp

    monkeypatch.delenv("OI_MCP_CONFIG", raising=False)
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path / "config"))  # no mcp.json there
    with make(llm_server, tmp_path) as it:
        monkeypatch.setitem(sys.modules, "mcp", None)
        text = describe_mcp(it.session)
    assert "No MCP servers are configured" in text and "pip install 'oi-kernel[mcp]'" in text


def test_c_tools_settings_come_from_the_config_file(tmp_path):
    from traitlets.config import Config, Configurable

    from oi_kernel.core.tools import Tools

    cfg = Config({"Tools": {"mcp_config": str(tmp_path / "m.json"), "budget_fraction": 0.1}})
    tools = Tools(parent=Configurable(config=cfg))
    assert tools.mcp_config == str(tmp_path / "m.json") and tools.budget_fraction == 0.1


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_launcher_stops_a_server_when_its_parent_is_killed(tmp_path):
    """A server that ignores stdin would outlive a SIGKILLed kernel; the launcher asks Linux
    to stop it with its parent."""
    import psutil

    pid_file = tmp_path / "pid"
    parent = subprocess.Popen([sys.executable, "-c", (
        "import subprocess, sys, time\n"
        "p = subprocess.Popen([sys.executable, '-m', 'oi_kernel.execution.mcp.launch', "
        "sys.executable, '-c', 'import time; time.sleep(120)'], stdin=subprocess.DEVNULL)\n"
        f"open({str(pid_file)!r}, 'w').write(str(p.pid))\n"
        "time.sleep(120)\n")], cwd=ROOT)
    try:
        deadline = time.monotonic() + 30
        while not pid_file.exists() or not pid_file.read_text():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        server = psutil.Process(int(pid_file.read_text()))
        time.sleep(1.0)  # the launcher has exec'd the server
        assert "time.sleep(120)" in " ".join(server.cmdline())
    finally:
        parent.kill()
        parent.wait(10)
    gone, alive = psutil.wait_procs([server], timeout=10)
    assert not alive


def test_resource_results_are_shown_by_their_text_or_described():
    """What a tool returns besides text and images, in the SDK's own types: an embedded text
    resource shows its text, a binary one is described, a link names its target, and
    structured content without text is shown as JSON."""
    import mcp.types as t

    from oi_kernel.execution.mcp.results import result_outputs

    result = t.CallToolResult(content=[
        t.EmbeddedResource(type="resource", resource=t.TextResourceContents(
            uri="file:///notes.txt", text="three apples", mime_type="text/plain")),
        t.EmbeddedResource(type="resource", resource=t.BlobResourceContents(
            uri="file:///data.bin", blob="AAAA", mime_type="application/octet-stream")),
        t.ResourceLink(type="resource_link", name="report", uri="file:///report.pdf"),
    ], is_error=False)
    error, outputs = result_outputs(result)
    texts = [o["data"]["text/plain"] for o in outputs]
    assert not error
    assert texts == ["[resource file:///notes.txt]\nthree apples",
                     "[resource file:///data.bin: application/octet-stream, 3 bytes]",
                     "[resource link report: file:///report.pdf]"]
    structured = t.CallToolResult(content=[], structured_content={"total": 3}, is_error=True)
    error, outputs = result_outputs(structured)
    assert error and outputs[0]["data"]["application/json"] == {"total": 3}
