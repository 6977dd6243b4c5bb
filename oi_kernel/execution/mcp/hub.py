"""The configured MCP servers of one session, as a ``ToolProvider`` for the engine.

Servers start in the background: ``start_soon`` (when the session warms up) and, at the
latest, ``prepare`` before a turn's first request, which waits for them at most ``wait``
seconds (2 s in a notebook; a server's connect timeout for scripts and ``%mcp``): the model
gets the tools that are ready. A server that fails to start is reported once, with the end of
its stderr, and left alone until ``%mcp reload``; one that crashed is started again when it is
next needed. Each tool's description, schema and annotations are checked for text aimed at
the model and compared with the version pinned for this user (``pins.py``); what was found
is the spec's ``trust`` (flags on its cards) and a notice, once.
"""

from __future__ import annotations

import asyncio
import logging
import time
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
from oi_kernel.execution.mcp.pins import Pin, PinStore
from oi_kernel.execution.mcp.results import result_outputs
from oi_kernel.execution.mcp.trust import ToolVersion, diff, version_of, visible
from oi_kernel.safety.risk import HIGH, MEDIUM

log = logging.getLogger(__name__)


class McpTools:
    """Connections to every configured server and the tools they offer."""

    def __init__(self, servers: list[ServerSpec], pins: PinStore | None = None,
                 wait: float = 2.0) -> None:
        self.connections = [Connection(s) for s in servers]
        self.pins = pins
        self.wait = wait  # seconds an instruction waits for servers still starting
        self._starting: asyncio.Task[list[str]] | None = None
        self._waited: asyncio.Task[list[str]] | None = None  # the starts waited for
        self._reported: set[str] = set()
        self._specs: list[ToolSpec] = []
        self._specs_key: tuple[Any, ...] = ()
        self._versions: dict[str, ToolVersion] = {}  # sha256 -> every version seen
        self._judged: dict[tuple[Any, ...], list[tuple[str, str, str]]] = {}  # trust flags
        self._seen: dict[tuple[str, str], tuple[ToolVersion, str]] = {}  # first this session

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
        for conn, result in zip(wanted, results, strict=True):
            if isinstance(result, BaseException) and not isinstance(
                    result, asyncio.CancelledError) and conn.state != "failed":
                conn.state = "failed"
                conn.error = (str(result) if isinstance(result, ServerUnavailable)
                              else f"failed to start: {describe(result)}")
        return []

    async def prepare(self, wait: float | None = None) -> list[str]:
        """Wait for the servers at most ``wait`` seconds (default: the hub's) (the rest go on starting in the
        background); notices, each said once: servers that failed (with the end of their
        stderr), servers not ready yet, tools whose description looks poisoned or changed."""
        self.start_soon()
        assert self._starting is not None
        if wait is None:  # waited once for these starts already: not again each request
            wait = 0.0 if self._waited is self._starting else self.wait
        self._waited = self._starting
        if wait > 0:
            await asyncio.wait({self._starting}, timeout=wait)
        ready = [c for c in self.connections if c.state == "ready"]
        stale = [c for c in ready if time.monotonic() - c.listed_at > 5.0]
        if stale or any(c._relisting is not None and not c._relisting.done() for c in ready):
            bound = min(max(wait, 0.5), 2.0)
            await asyncio.gather(*(c.relist(bound) for c in stale),
                                 *(c.wait_relisted(bound) for c in ready))
        notices = []
        waiting = []
        for conn in self.connections:
            if conn.state == "failed":
                notices.append(self._once(
                    f"failed:{conn.spec.name}:{conn.attempt}", failure_text(conn)
                    + "\nThe other tools and code still work; fix the server and run "
                    "%mcp reload."))
            elif conn.state in ("starting", "idle", "dead"):
                waiting.append(conn.spec.name)
        if waiting:
            key = "waiting:" + ",".join(f"{n}:{self.connection(n).attempt}" for n in waiting)
            names = ", ".join(f"'{n}'" for n in waiting)
            notices.append(self._once(
                key, f"MCP server{'s' if len(waiting) > 1 else ''} {names} "
                f"{'are' if len(waiting) > 1 else 'is'} still starting: "
                f"{'their' if len(waiting) > 1 else 'its'} tools are not offered to the "
                "model yet (they will be once ready; %mcp shows the state)."))
        self.specs()
        notices += self._trust_notices()
        return [n for n in notices if n]

    def _once(self, key: str, text: str) -> str:
        if key in self._reported:
            return ""
        self._reported.add(key)
        return text

    async def close(self) -> None:
        if self._starting is not None and not self._starting.done():
            self._starting.cancel()
        await asyncio.gather(*(c.close() for c in self.connections), return_exceptions=True)

    # ------------------------------------------------------------ tools
    def specs(self) -> list[ToolSpec]:
        key = tuple((c.spec.name, id(c.tools), len(c.tools)) for c in self.connections)
        if key != self._specs_key:
            self._specs_key, self._specs = key, self._build_specs()
        self._judge(self._specs)
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
                version = version_of(tool)
                spec.fingerprint = version.sha256
                self._versions.setdefault(spec.fingerprint, version)
                self._seen.setdefault((spec.server, spec.tool),
                                      (version, time.strftime("%H:%M")))
                specs.append(spec)
        return specs

    # ------------------------------------------------------------ trust
    def state(self, spec: ToolSpec) -> tuple[str, Pin | None, ToolVersion | None]:
        """("new" | "pinned" | "changed", the pin, the version it is compared with)."""
        pin = self.pins.get(spec.server, spec.tool) if self.pins is not None else None
        if pin is not None:
            return ("pinned" if pin.sha256 == spec.fingerprint else "changed"), pin, pin.version
        seen, _ = self._seen.get((spec.server, spec.tool), (None, ""))
        if seen is not None and seen.sha256 != spec.fingerprint:
            return "changed", None, seen
        return "new", None, None

    def _judge(self, specs: list[ToolSpec]) -> None:
        """Each spec's ``trust`` flags from its description and its pin (the text of the
        flags is computed once per version and pin state)."""
        for spec in specs:
            if spec.fingerprint not in self._versions:
                continue
            state, pin, before = self.state(spec)
            key = (spec.name, spec.fingerprint, state,
                   (pin.sha256, pin.by, pin.pinned_at) if pin is not None else None)
            trust = self._judged.get(key)
            if trust is None:
                trust = self._judged[key] = self._trust(spec, state, pin, before)
            spec.trust[:] = trust

    def _trust(self, spec: ToolSpec, state: str, pin: Pin | None,
               before: ToolVersion | None) -> list[tuple[str, str, str]]:
        version = self._versions[spec.fingerprint]
        trust = []
        found = version.findings()
        if found:
            trust.append((HIGH, "tool-description",
                          f"the description of {spec.label} that the model reads "
                          f"{'; '.join(found)}: \u201c{visible(spec.description)}\u201d"))
        if state == "changed" and before is not None:
            since = (pin.since() if pin is not None else
                     f"since this session first listed it at "
                     f"{self._seen[(spec.server, spec.tool)][1]}")
            old = f"approved {pin.date}" if pin is not None else "first listed"
            trust.append((HIGH, "tool-changed",
                          f"the description of {spec.label} changed {since}:\n"
                          + diff(before, version, old)))
        elif not spec.read_only and (pin is None or not pin.approved):
            trust.append((MEDIUM, "new-tool",
                          f"you have not approved {spec.label} before; the model reads its "
                          f"description: \u201c{visible(spec.description)}\u201d"))
        return trust

    def _trust_notices(self) -> list[str]:
        """Once per version: tools whose description looks poisoned or changed (the model
        reads them even when it never calls the tool)."""
        out = []
        if self.pins is not None:
            out += [self._once("pins:" + p, p) for p in self.pins.problems]
            self.pins.problems.clear()
        for spec in self._specs:
            for severity, category, reason in spec.trust:
                if category in ("tool-description", "tool-changed") and severity == HIGH:
                    out.append(self._once(f"{category}:{spec.fingerprint}:{spec.name}",
                                          f"⚠ MCP tool {spec.label}: {reason}"))
        return out

    def approved(self, spec: ToolSpec) -> None:
        """A person approved a call of ``spec`` as it was shown: pin that version."""
        version = self._versions.get(spec.fingerprint)
        if self.pins is None or version is None or spec.kind != "mcp":
            return
        try:
            self.pins.pin(spec.server, spec.tool, version, "you")
        except OSError as exc:
            log.warning("could not write the MCP pin file: %s", exc)
            self.pins.problems.append(f"The MCP pin file {self.pins.path} could not be "
                                      f"written ({exc}); approvals are not kept.")
        self._judge(self._specs)

    def _pin_first_call(self, spec: ToolSpec) -> None:
        """A call that ran without asking pins the version when nothing is pinned yet."""
        version = self._versions.get(spec.fingerprint)
        if self.pins is None or version is None:
            return
        if self.pins.get(spec.server, spec.tool) is None:
            try:
                self.pins.pin(spec.server, spec.tool, version, "auto-run")
            except OSError as exc:
                log.warning("could not write the MCP pin file: %s", exc)
            self._judge(self._specs)

    def connection(self, server: str) -> Connection | None:
        return next((c for c in self.connections if c.spec.name == server), None)

    async def call(self, spec: ToolSpec, arguments: dict[str, Any], timeout: float) -> ExecResult:
        """Call the tool; a server problem is an error result (the turn goes on)."""
        conn = self.connection(spec.server)
        if conn is None:
            return ExecResult("error", [error_output(f"No MCP server '{spec.server}'.")])
        self._pin_first_call(spec)
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
        """``%mcp``: each server, its state, and each tool's description as the model reads
        it (invisible characters marked), with what was found and whether it is pinned."""
        lines = []
        by_server: dict[str, list[ToolSpec]] = {}
        for spec in self.specs():
            by_server.setdefault(spec.server, []).append(spec)
        for conn in self.connections:
            s = conn.spec
            where = s.url if s.url else " ".join([s.command, *s.args])
            tools = by_server.get(s.name, [])
            state = conn.state + (f" ({conn.error})" if conn.error and conn.state != "ready"
                                  else "")
            lines.append(f"- **{s.name}** ({s.transport}: `{where}`) — {state}; "
                         f"{len(tools)} tool{'s' if len(tools) != 1 else ''}"
                         f"  \n  from {s.source}")
            if conn.stderr and conn.state == "failed":
                lines.append("  its stderr ends:\n\n```\n" + visible(conn.stderr) + "\n```")
            for spec in tools[:60]:
                lines.append("  " + self._tool_line(spec))
            if len(tools) > 60:
                lines.append(f"  - … and {len(tools) - 60} more")
        return "\n".join(lines)

    def _tool_line(self, spec: ToolSpec) -> str:
        state, pin, _ = self.state(spec)
        if state == "pinned" and pin is not None:
            mark = ("pinned: you approved it on " + pin.date if pin.approved
                    else "pinned: first called without asking on " + pin.date)
        elif state == "changed":
            mark = "**CHANGED** " + (pin.since() if pin else "since this session listed it")
        else:
            mark = "new: not approved yet"
        hints = ("read-only" if spec.read_only else "destructive" if spec.destructive
                 else "may change things")
        text = f"- `{spec.tool}` ({hints}; {mark}): {_quote(visible(spec.description))}"
        for severity, category, reason in spec.trust:
            if severity == HIGH:
                first, _, rest = reason.partition("\n")
                text += f"\n    - ⚠ **{category}**: {first}"
                if rest:
                    text += "\n\n      ```diff\n" + "".join(
                        f"      {line}\n" for line in rest.splitlines()) + "      ```\n"
        return text


def _quote(text: str) -> str:
    return "\u201c" + text.replace("\n", " ") + "\u201d"


def failure_text(conn: Connection) -> str:
    """A server that failed to start, with the end of its stderr (what it said itself)."""
    text = conn.error if conn.error.startswith("MCP server") else (
        f"MCP server '{conn.spec.name}' {conn.error or 'failed to start'}")
    if conn.stderr and "stderr lines" not in text:
        text += "\nIts last stderr lines:\n" + visible(conn.stderr)
    return text
