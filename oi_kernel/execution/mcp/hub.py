"""The configured MCP servers of one session, as a ``ToolProvider`` for the engine.

Servers start in the background: ``start_soon`` (when the session warms up) and, at the
latest, ``prepare`` before a turn's first request, which waits for them (each bounded by
its connect timeout). A server that fails to start is reported once and left alone until
``%mcp reload``; one that crashed is started again when it is next needed.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from oi_kernel.core.executor import ExecResult
from oi_kernel.core.tools import ToolSpec, error_output
from oi_kernel.execution.mcp.config import ServerSpec
from oi_kernel.execution.mcp.connection import Connection, ServerUnavailable, describe
from oi_kernel.execution.mcp.names import (
    estimate_tokens,
    short_description,
    tool_name,
    trimmed_schema,
)
from oi_kernel.execution.mcp.results import result_outputs

log = logging.getLogger(__name__)


class McpTools:
    """Connections to every configured server and the tools they offer."""

    def __init__(self, servers: list[ServerSpec]) -> None:
        self.connections = [Connection(s) for s in servers]
        self._starting: asyncio.Task[list[str]] | None = None
        self._reported: set[str] = set()
        self._specs: list[ToolSpec] = []
        self._specs_key: tuple[Any, ...] = ()

    @property
    def servers(self) -> list[ServerSpec]:
        return [c.spec for c in self.connections]

    # ------------------------------------------------------------ lifecycle
    def start_soon(self) -> None:
        """Begin starting the servers (needs a running loop); does not wait."""
        if self._starting is None or self._starting.done():
            self._starting = asyncio.get_running_loop().create_task(self._start_all())

    async def _start_all(self) -> list[str]:
        wanted = [c for c in self.connections if c.state in ("idle", "dead")]
        results = await asyncio.gather(*(c.start() for c in wanted), return_exceptions=True)
        notices = []
        for conn, result in zip(wanted, results, strict=True):
            if isinstance(result, BaseException):
                if isinstance(result, asyncio.CancelledError):
                    continue
                text = str(result) if isinstance(result, ServerUnavailable) else (
                    f"MCP server '{conn.spec.name}' failed to start: {describe(result)}")
                if conn.state != "failed":
                    conn.state, conn.error = "failed", text
                notices.append(text)
        return notices

    async def prepare(self) -> list[str]:
        """Wait for the servers (each bounded); notices of new failures, once each."""
        self.start_soon()
        assert self._starting is not None
        notices = await asyncio.shield(self._starting)
        fresh = []
        for text in notices:
            if text not in self._reported:
                self._reported.add(text)
                fresh.append(text + "\nThe other tools and code still work; fix the server and "
                             "run %mcp reload.")
        return fresh

    async def close(self) -> None:
        if self._starting is not None and not self._starting.done():
            self._starting.cancel()
        await asyncio.gather(*(c.close() for c in self.connections), return_exceptions=True)

    # ------------------------------------------------------------ tools
    def specs(self) -> list[ToolSpec]:
        key = tuple((c.spec.name, id(c.tools), len(c.tools)) for c in self.connections)
        if key != self._specs_key:
            self._specs_key, self._specs = key, self._build_specs()
        return self._specs

    def _build_specs(self) -> list[ToolSpec]:
        taken: set[str] = set()
        specs = []
        for conn in self.connections:
            allowed = conn.spec.tools
            for tool in conn.tools:
                if allowed is not None and tool.name not in allowed:
                    continue
                notes = tool.annotations
                spec = ToolSpec(
                    name=tool_name(conn.spec.name, tool.name, taken),
                    description=short_description(tool.description or tool.title or tool.name),
                    parameters=trimmed_schema(tool.input_schema),
                    kind="mcp", server=conn.spec.name, tool=tool.name,
                    read_only=bool(notes and notes.read_only_hint),
                    destructive=bool(notes and notes.destructive_hint
                                     and not notes.read_only_hint),
                )
                spec.tokens = estimate_tokens(spec.definition())
                specs.append(spec)
        return specs

    def connection(self, server: str) -> Connection | None:
        return next((c for c in self.connections if c.spec.name == server), None)

    async def call(self, spec: ToolSpec, arguments: dict[str, Any], timeout: float) -> ExecResult:
        """Call the tool; a server problem is an error result (the turn goes on)."""
        conn = self.connection(spec.server)
        if conn is None:
            return ExecResult("error", [error_output(f"No MCP server '{spec.server}'.")])
        per_call = conn.spec.call_timeout
        if timeout:
            per_call = min(per_call, timeout)
        try:
            result = await conn.call(spec.tool, arguments, per_call)
        except ServerUnavailable as exc:
            return ExecResult("error", [error_output(str(exc))])
        except Exception as exc:  # a JSON-RPC error from the server, a malformed result
            return ExecResult("error", [error_output(
                f"MCP tool '{spec.label}' failed: {describe(exc)}")])
        is_error, outputs = result_outputs(result)
        if is_error:
            text = "\n".join(o["data"].get("text/plain", "") for o in outputs
                             if o.get("output_type") == "display_data")
            return ExecResult("error", [error_output(text or "the tool reported an error")])
        return ExecResult("ok", outputs)

    def describe(self) -> str:
        """``%mcp``: each server, its state and tools."""
        lines = []
        for conn in self.connections:
            s = conn.spec
            where = s.url if s.url else " ".join([s.command, *s.args])
            tools = [t.name for t in conn.tools
                     if s.tools is None or t.name in s.tools]
            state = conn.state + (f" ({conn.error})" if conn.error and conn.state != "ready"
                                  else "")
            lines.append(f"- **{s.name}** ({s.transport}: `{where}`) — {state}; "
                         f"{len(tools)} tool{'s' if len(tools) != 1 else ''}"
                         + (": " + ", ".join(f"`{t}`" for t in tools[:30]) if tools else "")
                         + (" …" if len(tools) > 30 else "")
                         + f"  \n  from {s.source}")
        return "\n".join(lines)
