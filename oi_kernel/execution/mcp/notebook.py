"""``call_tool``: how an exported notebook calls an MCP tool again.

Export writes a tool step as::

    from oi_kernel.execution.mcp.notebook import call_tool
    call_tool("prices", "lookup_price", {"item": "apple"})

It finds the server by name in the same MCP config files as the kernel (``$OI_MCP_CONFIG``,
``mcp.json`` in the Jupyter config directories), starts it once per kernel, calls the tool,
and displays the result. When the server is not configured or cannot be reached it raises
``ToolUnreachable`` (``oi-kernel verify`` then keeps the recorded result and says so);
a tool that reports an error raises ``ToolCallError``.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from oi_kernel.errors import OIError


class ToolUnreachable(OIError):
    """The MCP server is not configured here or could not be reached."""


class ToolCallError(OIError):
    """The tool reported an error."""


_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_connections: dict[str, Any] = {}


def _background_loop() -> asyncio.AbstractEventLoop:
    """A loop in a daemon thread: a notebook's own loop is busy running the cell."""
    global _loop
    with _lock:
        if _loop is None:
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="oi-mcp-calls", daemon=True).start()
            _loop = loop
        return _loop


def _connection(server: str) -> Any:
    from oi_kernel.execution.mcp.config import load_servers
    from oi_kernel.execution.mcp.connection import Connection

    if server not in _connections:
        specs = {s.name: s for s in load_servers()}
        if server not in specs:
            raise ToolUnreachable(
                f"The MCP server {server!r} is not configured here: add it to the file at "
                "$OI_MCP_CONFIG or to mcp.json in a Jupyter config directory.")
        _connections[server] = Connection(specs[server])
    return _connections[server]


def call_tool(server: str, tool: str, arguments: dict[str, Any] | None = None,
              *, timeout: float = 60.0, display: bool = True) -> list[dict[str, Any]]:
    """Call ``tool`` of ``server`` with ``arguments``; display and return its outputs."""
    from oi_kernel.execution.mcp.connection import ServerUnavailable
    from oi_kernel.execution.mcp.results import result_outputs

    conn = _connection(server)
    future = asyncio.run_coroutine_threadsafe(conn.call(tool, dict(arguments or {}), timeout),
                                              _background_loop())
    try:
        result = future.result(timeout + 60)
    except ServerUnavailable as exc:
        raise ToolUnreachable(str(exc)) from None
    is_error, outputs = result_outputs(result)
    text = "\n".join(str(o["data"].get("text/plain", "")) for o in outputs)
    if is_error:
        raise ToolCallError(f"{server} › {tool}: {text}")
    if display:
        from IPython.display import display as show

        for out in outputs:
            show(out["data"], raw=True)
    return outputs
