"""Tools in the Open Interpreter kernel: %mcp, %tool, a tool call approved on stdin with
its result in the cell, and the MCP server stopped with the kernel."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import psutil
import pytest

from tests import llm_server as S
from tests.env import oi_env
from tests.kernel_client import KernelSession

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tk(_server, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tools")
    config = tmp / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"prices": {
        "command": sys.executable, "args": ["-m", "tests.mcp_server"], "cwd": str(ROOT)}}}))
    env = oi_env(_server, tmp, OI_AUTO_RUN="0", OI_MCP_CONFIG=str(config))
    with KernelSession(env=env, cwd=str(tmp)) as ks:
        yield ks


def call(name: str, args: dict) -> S.Response:
    return S.tool_calls([S.Call(json.dumps(args), name)])


def test_mcp_lists_servers_and_tools(tk):
    text = tk.mcp_listing()
    assert "prices" in text and "ready" in text and "lookup_price" in text


def test_tool_call_approved_on_stdin_shows_result(tk, _server):
    _server.reset()
    _server.enqueue(call("prices__lookup_price", {"item": "apple"}), S.text("1.25 EUR."))
    result = tk.execute("price of an apple?", stdin=["y"], timeout=90)
    assert result.status == "ok"
    assert result.prompts and "Call this tool?" in result.prompts[0]
    assert "tool prices › lookup_price · runs on its MCP server" in result.prompts[0]
    assert '"item": "apple"' in result.prompts[0]
    assert "apple: 1.25 EUR" in result.text
    [told] = [m["content"] for m in _server.requests[1]["messages"] if m["role"] == "tool"]
    assert told.startswith("[Untrusted content: the result of the MCP tool prices › lookup_price")
    assert "\napple: 1.25 EUR\n" in told


def test_notebook_function_tool(tk, _server):
    _server.reset()
    assert tk.execute("%%python\ndef add_tax(amount: float, rate: float = 0.2) -> float:\n"
                      "    'Add tax to an amount.'\n    return amount * (1 + rate)\n").status == "ok"
    offered = tk.execute("%tool add_tax")
    assert offered.status == "ok" and "`add_tax(amount, rate)`: offered" in offered.text
    assert "add_tax" in tk.execute("%tool").text
    _server.enqueue(call("add_tax", {"amount": 10}), S.text("12."))
    result = tk.execute("10 with tax", stdin=["y"], timeout=90)
    assert "add_tax(amount=10)" in result.prompts[0] and "12.0" in result.text
    tools = [t["function"]["name"] for t in _server.requests[0]["tools"]]
    assert tools[:2] == ["execute", "add_tax"] and "prices__lookup_price" in tools
    assert "No longer offered" in tk.execute("%tool -d add_tax").text
    missing = tk.execute("%tool no_such_function")
    assert "not a function in this kernel" in missing.text or "define it first" in missing.text


def test_server_stops_with_the_kernel(_server, tmp_path):
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"prices": {
        "command": sys.executable, "args": ["-m", "tests.mcp_server"], "cwd": str(ROOT)}}}))
    ks = KernelSession(env=oi_env(_server, tmp_path, OI_MCP_CONFIG=str(config)),
                       cwd=str(tmp_path))
    try:
        assert "ready" in ks.mcp_listing()
        kernel = psutil.Process(ks.km.provisioner.process.pid)
        servers = [p for p in kernel.children(recursive=True)
                   if "tests.mcp_server" in " ".join(p.cmdline())]
        assert servers
    finally:
        ks.close()
    gone, alive = psutil.wait_procs(servers, timeout=15)
    assert not alive, f"left running: {alive}"


def test_magic_tool_and_mcp_in_a_python_kernel(_server, tmp_path):
    """``%oi tool`` / ``%oi mcp`` in an ordinary python3 kernel: the function runs in the
    notebook's own namespace."""
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"prices": {
        "command": sys.executable, "args": ["-m", "tests.mcp_server"], "cwd": str(ROOT)}}}))
    env = oi_env(_server, tmp_path, OI_AUTO_RUN="1", OI_APPROVAL_UI="stdin",
                 OI_MCP_CONFIG=str(config))
    _server.reset()
    with KernelSession(kernel_name="python3", env=env, cwd=str(tmp_path)) as ks:
        assert ks.execute("%load_ext oi_kernel").status == "ok"
        assert ks.execute("def double(x: int) -> int:\n    'Double x.'\n    return 2 * x\n"
                          ).status == "ok"
        assert "`double(x)`: offered" in ks.execute("%oi tool double").text
        assert "lookup_price" in ks.mcp_listing("%oi mcp")
        _server.enqueue(call("double", {"x": 21}),
                        call("prices__lookup_price", {"item": "pear"}), S.text("done"))
        result = ks.execute("%%oi\ndouble 21, then the pear price", timeout=90)
        assert result.status == "ok", result.text
        assert "42" in result.text and "pear: 2.5 EUR" in result.text
        assert ks.execute("print(_ * 1)").status == "ok"  # the namespace is the user's


def test_mcp_reload_reads_the_config_again(_server, tmp_path):
    config = tmp_path / "mcp.json"
    entry = {"command": sys.executable, "args": ["-m", "tests.mcp_server"], "cwd": str(ROOT)}
    config.write_text(json.dumps({"mcpServers": {"prices": entry}}))
    env = oi_env(_server, tmp_path, OI_AUTO_RUN="0", OI_MCP_CONFIG=str(config))
    with KernelSession(env=env, cwd=str(tmp_path)) as ks:
        assert "shop" not in ks.mcp_listing()
        config.write_text(json.dumps({"mcpServers": {"shop": entry}}))
        ks.execute("%mcp reload", timeout=90)
        text = ks.mcp_listing()
        assert "shop" in text and "ready" in text and "prices" not in text
