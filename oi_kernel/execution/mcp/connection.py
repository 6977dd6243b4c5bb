"""One MCP server, connected for as long as the session lives.

The SDK's context managers (``mcp.Client`` around ``stdio_client`` or
``streamable_http_client``) hold anyio task groups: they must be entered and exited by
one task. So each server has an *owner task* that enters them, publishes the connected
client, and waits on a stop event; calls come from any task (each cell is one). Every
failure of the SDK (exception groups included) ends in the owner task and is turned
into ``ServerUnavailable`` with a sentence for the user. Nothing here imports ``mcp`` at
module import: the SDK costs a second or two and 25-55 MB.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import sys
import tempfile
import time
from typing import Any

from oi_kernel.errors import OIError
from oi_kernel.execution.mcp.config import ServerSpec

log = logging.getLogger(__name__)

# A stdio server gets these from the kernel's environment (plus the config's ``env``),
# never the kernel's secrets.
_BASE_ENV = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR")


class ServerUnavailable(OIError):
    """The server could not be started, died, or did not answer in time."""


def load_sdk() -> Any:
    """Import the SDK (and ``jsonschema``, which it would otherwise import on the event loop
    at the first structured result); OIError with the install line when it is missing."""
    try:
        import jsonschema  # noqa: F401
        import mcp
        import mcp.client.stdio  # noqa: F401
        import mcp.client.streamable_http  # noqa: F401
        import mcp.shared._httpx_utils  # noqa: F401
    except ImportError as exc:
        raise OIError(
            f"MCP servers need the official MCP Python SDK, which is not installed ({exc}). "
            "Install it with: pip install 'oi-kernel[mcp]'  (or pip install mcp), then "
            "restart the kernel.") from None
    return mcp


if sys.version_info >= (3, 11):
    _GROUP: Any = BaseExceptionGroup  # noqa: F821
else:  # anyio depends on the backport there
    from exceptiongroup import BaseExceptionGroup as _GROUP


def describe(exc: BaseException) -> str:
    """One line for an exception, unwrapping anyio's exception groups."""
    while isinstance(exc, _GROUP) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _pdeathsig_command(command: str, args: list[str]) -> tuple[str, list[str]]:
    """Run the server through a tiny launcher that asks Linux to SIGTERM it when this
    process dies (a server that ignores stdin EOF would outlive a killed kernel)."""
    if not sys.platform.startswith("linux"):
        return command, args
    return sys.executable, ["-m", "oi_kernel.execution.mcp.launch", command, *args]


class Connection:
    """The connection to one server (state: idle, starting, ready, dead, failed, closed)."""

    def __init__(self, spec: ServerSpec) -> None:
        self.spec = spec
        self.state = "idle"
        self.error = ""
        self.tools: list[Any] = []  # the SDK's Tool objects, in the server's order
        self.client: Any = None
        self._task: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._lock = asyncio.Lock()
        self._stderr_path = ""
        self.stderr = ""  # the tail of its stderr when it last failed to start
        self.listed_at = 0.0  # time.monotonic() of the last tools/list
        self.attempt = 0  # how many times it was started (a notice is said once per attempt)
        self._relisting: asyncio.Task[None] | None = None

    # ------------------------------------------------------------ start and stop
    async def start(self) -> None:
        """Connect and list the tools, bounded by the spec's connect timeout."""
        async with self._lock:
            if self.state == "ready" and self.client is not None:
                return
            await self._reap(cancel=True)
            spec = self.spec
            self.attempt += 1
            if spec.command and not (shutil.which(spec.command) or (
                    os.sep in spec.command and os.access(spec.command, os.X_OK))):
                self.state = "failed"
                self.error = (f"could not start: its command {spec.command!r} was not found "
                              "(not on PATH). Install it, or fix \"command\" in "
                              f"{spec.source or 'the MCP config'}.")
                raise ServerUnavailable(f"MCP server '{spec.name}' {self.error}")
            self.state, self.error, self.stderr = "starting", "", ""
            try:
                mcp = await asyncio.to_thread(load_sdk)
            except Exception:
                self.state = "failed"
                raise
            loop = asyncio.get_running_loop()
            ready: asyncio.Future[None] = loop.create_future()
            self._stop = asyncio.Event()
            self._task = loop.create_task(self._own(mcp, ready, self._stop),
                                          name=f"mcp:{self.spec.name}")
            try:
                await asyncio.wait_for(asyncio.shield(ready), self.spec.connect_timeout)
            except asyncio.TimeoutError:
                await self._reap(cancel=True)
                self._fail(f"did not answer within {self.spec.connect_timeout:g} s of starting "
                           f"(raise \"timeout\" for it in the MCP config if it is slow)")
            except asyncio.CancelledError:
                await self._reap(cancel=True)
                self.state = "idle"
                raise
            except Exception as exc:
                await self._reap(cancel=True)
                why = str(exc) if isinstance(exc, ServerUnavailable) else describe(exc)
                self._fail(f"failed to start: {why}")

    def _fail(self, why: str) -> None:
        tail = self.stderr_tail()
        self.state, self.error, self.stderr = "failed", why, tail
        raise ServerUnavailable(f"MCP server '{self.spec.name}' {why}"
                                + (f"\nIts last stderr lines:\n{tail}" if tail else ""))

    def _client(self, mcp: Any, stack: contextlib.AsyncExitStack) -> Any:
        spec = self.spec
        if spec.url:
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared._httpx_utils import create_mcp_http_client

            http = create_mcp_http_client(headers=spec.headers or None)
            stack.push_async_callback(http.aclose)
            transport = streamable_http_client(spec.url, http_client=http)
        else:
            from mcp.client.stdio import stdio_client

            env = {k: os.environ[k] for k in _BASE_ENV if k in os.environ}
            env.update(spec.env)
            command, args = _pdeathsig_command(spec.command, spec.args)
            params = mcp.StdioServerParameters(command=command, args=args, env=env,
                                               cwd=spec.cwd or None)
            fd, self._stderr_path = tempfile.mkstemp(prefix=f"oi-mcp-{spec.name}-",
                                                     suffix=".stderr")
            errlog = os.fdopen(fd, "w")  # a real file: the server writes to its descriptor
            stack.callback(errlog.close)
            transport = stdio_client(params, errlog=errlog)
        return mcp.Client(transport, read_timeout_seconds=spec.connect_timeout, mode="legacy",
                          message_handler=self._on_message)

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, Exception):  # e.g. a non-JSON line on stdout: not fatal
            log.warning("MCP server %s: %s", self.spec.name, describe(message)[:300])
        elif getattr(message, "method", "") == "notifications/tools/list_changed":
            # The server changed its tools: list them again (in a task of its own: the
            # handler runs inside the SDK's reader and must not wait on a request).
            if self._relisting is None or self._relisting.done():
                self._relisting = asyncio.get_running_loop().create_task(self.relist())

    async def _list(self, client: Any, cache_mode: str = "use") -> list[Any]:
        tools: list[Any] = []
        cursor = None
        for _ in range(100):  # pages, bounded
            page = await client.list_tools(cursor=cursor, cache_mode=cache_mode)
            tools += page.tools
            cursor = page.next_cursor
            if not cursor:
                break
        self.listed_at = time.monotonic()
        return tools

    async def relist(self, timeout: float = 2.0) -> None:
        """List the tools again (after ``tools/list_changed``, or before an instruction);
        a server that does not answer in time keeps the tools it had."""
        client = self.client
        if self.state != "ready" or client is None:
            return
        try:
            tools = await asyncio.wait_for(self._list(client, "refresh"), timeout)
        except Exception as exc:  # the next call finds out whether it is really gone
            log.warning("MCP server %s: listing its tools again failed: %s", self.spec.name,
                        describe(exc)[:300])
            return
        if self.client is client:
            self.tools = tools

    async def wait_relisted(self, timeout: float) -> None:
        """Wait (bounded) for a listing that a ``tools/list_changed`` started."""
        task = self._relisting
        if task is not None and not task.done():
            await asyncio.wait({task}, timeout=timeout)

    async def _own(self, mcp: Any, ready: asyncio.Future[None], stop: asyncio.Event) -> None:
        """The owner task: every SDK enter and exit happens here."""
        try:
            async with contextlib.AsyncExitStack() as stack:
                client = await stack.enter_async_context(self._client(mcp, stack))
                tools = await self._list(client)
                self.tools, self.client, self.state = tools, client, "ready"
                ready.set_result(None)
                await stop.wait()
        except BaseException as exc:  # an exception group must never leave this task
            if not ready.done():
                if isinstance(exc, asyncio.CancelledError):
                    ready.cancel()
                else:
                    ready.set_exception(ServerUnavailable(describe(exc)))
            elif not isinstance(exc, asyncio.CancelledError):
                self.error = f"stopped: {describe(exc)}"
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            self.client = None
            if self.state == "ready":
                self.state = "dead"

    async def _reap(self, timeout: float = 8.0, cancel: bool = False) -> None:
        """End the owner task (bounded); the SDK shields its own process shutdown."""
        task, self._task = self._task, None
        if task is None:
            return
        if self._stop is not None:
            self._stop.set()
        if cancel:
            task.cancel()
        done, _ = await asyncio.wait({task}, timeout=timeout)
        if not done:
            task.cancel()
            await asyncio.wait({task}, timeout=4)
        if task.done() and not task.cancelled():
            task.exception()

    async def close(self) -> None:
        async with self._lock:
            await self._reap()
            self.state, self.client = "closed", None

    def stderr_tail(self, lines: int = 6) -> str:
        """The end of a stdio server's stderr (usually why it failed)."""
        if not self._stderr_path:
            return ""
        try:
            with open(self._stderr_path, "rb") as f:
                f.seek(max(0, os.path.getsize(self._stderr_path) - 4000))
                text = f.read().decode(errors="replace").strip()
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    # ------------------------------------------------------------ calls
    async def call(self, tool: str, arguments: dict[str, Any], timeout: float) -> Any:
        """The SDK's CallToolResult. ServerUnavailable when the server is down (it is
        started again, once, first) or the call timed out (the session stays usable)."""
        if self.state != "ready" or self.client is None:
            await self.start()
        from mcp.shared.exceptions import MCPError

        client = self.client
        try:
            return await asyncio.wait_for(
                client.call_tool(tool, arguments, read_timeout_seconds=timeout), timeout + 5)
        except MCPError as exc:
            if exc.code == -32001:
                raise ServerUnavailable(
                    f"MCP tool '{self.spec.name} › {tool}' did not answer within {timeout:g} s; "
                    "the call was cancelled.") from None
            if exc.code == -32000:  # connection closed: the server exited or crashed
                self.state, self.error = "dead", "the server exited (it will be started again)"
                asyncio.get_running_loop().create_task(self._reap())
                tail = self.stderr_tail()
                raise ServerUnavailable(
                    f"MCP server '{self.spec.name}' closed the connection during the call (it "
                    "exited or crashed); it will be started again on the next call."
                    + (f"\nIts last stderr lines:\n{tail}" if tail else "")) from None
            raise
        except asyncio.TimeoutError:
            raise ServerUnavailable(
                f"MCP tool '{self.spec.name} › {tool}' did not answer within {timeout:g} s.") from None
