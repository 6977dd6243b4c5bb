"""The ACP client's MCP servers (``mcpServers`` of ``session/new``, ``load``, ``resume``,
``fork``): checked and turned into our server specs, then joined to the session's MCP hub
under the same approval and the administrator's policy."""

from __future__ import annotations

from typing import Any

from acp import RequestError

from oi_kernel.errors import ConfigError
from oi_kernel.session.assembly import Session


def client_servers(servers: list[Any], cwd: str) -> list[Any]:
    """The client's MCP servers as our ``ServerSpec``s (stdio and streamable HTTP; the
    client's environment and headers kept). InvalidParams saying what to change otherwise."""
    from oi_kernel.execution.mcp.config import parse_config

    table: dict[str, Any] = {}
    for server in servers:
        name = getattr(server, "name", "")
        if getattr(server, "type", None) == "sse" or getattr(server, "type", None) == "acp":
            raise RequestError.invalid_params({"mcpServers": f"MCP server {name!r}: the "
                                               f"{server.type} transport is not supported here; "
                                               "use stdio or streamable HTTP."})
        if hasattr(server, "url"):
            table[name] = {"url": server.url,
                           "headers": {h.name: h.value for h in server.headers or []}}
        else:
            table[name] = {"command": server.command, "args": list(server.args or []),
                           "env": {e.name: e.value for e in server.env or []}, "cwd": cwd}
    try:
        return parse_config({"mcpServers": table}, "the ACP client's session/new", {})
    except ConfigError as exc:
        raise RequestError.invalid_params({"mcpServers": str(exc)}) from None


def add_client_servers(session: Session, specs: list[Any]) -> None:
    """Give the session the client's servers next to the configured ones (a configured
    server of the same name wins); the administrator's policy applies to them alike."""
    from oi_kernel.execution.mcp.connection import Connection
    from oi_kernel.execution.mcp.hub import McpTools
    from oi_kernel.execution.mcp.pins import PinStore, default_path
    from oi_kernel.session.tools import PinOnApproval, mcp_provider

    policy = session.policy
    allowed = [s for s in specs if policy is None or not policy.active
               or policy.mcp_server_allowed(s.name)]
    for refused in (s for s in specs if s not in allowed):
        session.policy_notices.append(f"MCP server {refused.name!r} from the client not "
                                      "started: the administrator's policy does not allow it.")
    hub = mcp_provider(session)
    engine = session.engine
    if hub is None:
        settings = engine.tool_settings
        hub = McpTools([], PinStore(default_path(settings.pin_file)),
                       wait=settings.connect_timeout)
        engine.toolbox.providers.append(hub)
        if not isinstance(engine.steps.approver, PinOnApproval):
            engine.steps.approver = PinOnApproval(engine.steps.approver, engine.toolbox)
    known = {s.name for s in hub.servers}
    hub.connections.extend(Connection(s) for s in allowed if s.name not in known)
