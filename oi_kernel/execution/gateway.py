"""The child kernel on a Jupyter gateway (Kernel Gateway or Enterprise Gateway).

jupyter_server's gateway client classes do the REST side: ``GatewayClient`` holds the
connection settings (URL, token and headers, TLS, timeouts) and ``GatewayKernelManager``
starts, interrupts and deletes the kernel and reads its model. Its ``GatewayKernelClient``
is not used: its websocket sends no auth header (a gateway with a token answers 401), the
messages it sends carry no channel (the gateway takes an ``input_reply`` for a shell
message, so ``input()`` hangs) and it busy-polls its queues. Instead one task reads the
kernel's websocket (tornado's client, which jupyter_server's own gateway handlers use)
and hands each message to the same ``_iopub`` / ``_reply`` / ``_input_value`` as the
local child's pumps. With the v1 websocket protocol output content stays packed (the
kernel's JSON bytes), as on the local link.

How the kernel's fate shows up here:

- it dies: the gateway restarts it under the same id, empty, and iopub says
  ``restarting`` with no parent. That is reported like a local death; the next cell uses
  the restarted kernel and says the variables were lost.
- the websocket closes (gateway gone, network cut): the waiting cell fails with that
  reason; the next cell reconnects to the same kernel (variables kept; the gateway
  replays what the kernel sent meanwhile) or, when the gateway no longer has it (it was
  restarted), starts a new one and says the variables were lost.
- it disappears (deleted, culled) or the gateway hangs: the periodic model check
  (``gateway_check_interval``) notices.

A reaper process (``gateway_reaper``) deletes the kernel if this process dies without
shutting it down; the gateway's culling is the last resort.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import json
import socket
from typing import Any

from oi_kernel.errors import ChildDiedError, ChildKernelError
from oi_kernel.execution.child import ChildKernel
from oi_kernel.execution.gateway_options import GATEWAY_EXTRA_HINT, gateway_said, refusal_hint
from oi_kernel.execution.wire import parse_legacy_frame, parse_v1_frame

V1_PROTOCOL = "v1.kernel.websocket.jupyter.org"
MAX_MESSAGE_BYTES = 1 << 30  # tornado's client closes the socket above 10 MiB by default
_QUICKACK = getattr(socket, "TCP_QUICKACK", None)  # Linux only
_CWD_EXPRESSION = "__import__('os').getcwd()"


def _client_classes() -> tuple[Any, Any]:
    """jupyter_server's ``GatewayClient`` and ``GatewayKernelManager`` (seconds to import:
    callers do it off the event loop)."""
    try:
        from jupyter_server.gateway.gateway_client import GatewayClient
        from jupyter_server.gateway.managers import GatewayKernelManager
    except ImportError as exc:
        raise ChildKernelError(
            f"c.ChildKernel.gateway_url / OI_CHILD_GATEWAY_URL is set, but the gateway client "
            f"is not installed ({exc}). Install it with {GATEWAY_EXTRA_HINT}, or unset the "
            "gateway to run the child kernel on this machine."
        ) from exc
    return GatewayClient, GatewayKernelManager


class _Link:
    """The open websocket to one kernel on the gateway, and the message ``Session`` that
    builds what we send (unsigned: the gateway signs for the kernel). Reconnecting with
    the same session id makes the gateway replay what the kernel sent meanwhile."""

    def __init__(self, ws: Any, session: Any) -> None:
        self.ws = ws
        self.session = session
        self.v1 = ws.selected_subprotocol == V1_PROTOCOL
        stream = getattr(getattr(ws, "protocol", None), "stream", None)
        self.sock = getattr(stream, "socket", None) if _QUICKACK is not None else None

    def write(self, msg: dict[str, Any], channel: str, buffers: list[Any] | None) -> None:
        from jupyter_client.jsonutil import json_default
        from jupyter_server.services.kernels.connection.base import (
            serialize_binary_message,
            serialize_msg_to_ws_v1,
        )

        if self.v1:
            pack = self.session.pack
            parts = [pack(msg["header"]), pack(msg["parent_header"]), pack(msg["metadata"]),
                     pack(msg["content"]), *(bytes(b) for b in buffers or [])]
            self.ws.write_message(serialize_msg_to_ws_v1(parts, channel), binary=True)
            return
        msg = {k: msg[k] for k in ("header", "parent_header", "metadata", "content")}
        msg["channel"] = channel  # without it the gateway takes every message for shell
        if buffers:
            msg["buffers"] = [bytes(b) for b in buffers]
            self.ws.write_message(serialize_binary_message(msg), binary=True)
        else:
            self.ws.write_message(json.dumps(msg, default=json_default))

    async def read(self) -> tuple[str, dict[str, Any]] | None:
        """The next (channel, message); None when the socket closed."""
        if self.sock is not None:
            # Our delayed ACKs meet the gateway's Nagle algorithm: every round trip would
            # wait 40 ms for the ACK timer. Quick ACKs must be re-armed after each read.
            with contextlib.suppress(OSError):
                self.sock.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)
        data = await self.ws.read_message()
        if data is None:
            return None
        return parse_v1_frame(data) if self.v1 else parse_legacy_frame(data)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.ws.close()


class GatewayChildKernel(ChildKernel):
    """A ``ChildKernel`` whose kernel runs on a gateway (see the module docstring)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.notify = lambda text: None  # the session shows these (a reconnect, say)
        self.kernel_id = ""
        self.remote_cwd = ""
        self._link: _Link | None = None
        self._lost = ""  # the connection broke: the kernel may still be there
        self._restarted_empty = False  # the gateway restarted the kernel after it died
        self._answering: set[asyncio.Task[None]] = set()
        self._reaper: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # ----------------------------------------------------------------- what the user sees
    @property
    def where(self) -> str:
        kernel = f" (kernel {self.kernel_id})" if self.kernel_id else ""
        return f"on the gateway {self.gateway_url}{kernel}"

    @property
    def workdir(self) -> str:
        return self.remote_cwd or self.cwd or "(the gateway kernel's working directory)"

    # ----------------------------------------------------------------- lifecycle
    async def ensure_running(self) -> bool:
        """As ``ChildKernel.ensure_running``; after a lost connection the same kernel is
        reconnected when the gateway still has it (variables kept, returns False)."""
        if self._starting is not None and not self._starting.done():
            await asyncio.shield(self._starting)
        if self.is_running:
            return False
        if self._restarted_empty and await self._reuse_restarted():
            self.restarts += 1
            return True
        if self._lost and await self._reconnect():
            return False
        gone = self.kernel_id if self._dead_reason and not self._lost else ""
        started = await super().ensure_running()
        if started and gone and gone != self.kernel_id:  # (deleted or culled there)
            self.notify(f"The child kernel {gone} is gone from the gateway {self.gateway_url} "
                        f"(deleted or culled there): a new one was started there "
                        f"({self.kernel_id}).")
        return started

    async def shutdown(self) -> None:
        """As ``ChildKernel.shutdown``, on the event loop the kernel was started on: the
        websocket and HTTP client belong to it (a kernel's ``shutdown_request`` arrives on
        its control thread, and a tornado stream written from two threads breaks)."""
        loop = self._loop
        if loop is None or loop is _running_loop() or loop.is_closed() or not loop.is_running():
            await super().shutdown()
            return
        await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(super().shutdown(), loop))

    async def _start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._dead_reason = self._lost = ""
        self._restarted_empty = False
        if self.sandbox:
            raise ChildKernelError(
                f"The sandbox confines a child kernel on this machine; this one runs on the "
                f"gateway {self.gateway_url}, where confinement is the gateway's job (its "
                f"kernelspec '{self.kernel_name}'). Turn the sandbox off (%sandbox off, "
                "OI_SANDBOX=0) or unset the gateway to run the child here, sandboxed."
            )
        if self.memory_limit:
            self.log.warning("c.ChildKernel.memory_limit does not apply on a gateway; ignored")
        client, manager = await asyncio.to_thread(_client_classes)
        self._configure(client.instance())
        km = manager()
        self.km = km
        try:
            env = self.start_env()
            await asyncio.wait_for(km.start_kernel(kernel_name=self.kernel_name, env=env),
                                   self.startup_timeout)
            self.kernel_id = km.kernel_id
            self._start_reaper(client.instance(), km.kernel_url)
            await self._connect()
            await self.request("kernel_info_request", {}, timeout=self.startup_timeout)
            self.remote_cwd = await self._ask_cwd()
        except Exception as exc:
            await self._cleanup()
            raise ChildKernelError(
                f"The child kernel '{self.kernel_name}' did not start on the gateway "
                f"{self.gateway_url}: {_reason(exc)}\n{await self._start_hint(exc)}"
            ) from exc
        self.log.info("child kernel %s started on the gateway %s as %s",
                      self.kernel_name, self.gateway_url, self.kernel_id)

    def start_env(self) -> dict[str, str]:
        """The ``env`` of the kernel start request (jupyter_server's client adds the
        ``KERNEL_*`` variables of this process's environment; these take precedence)."""
        env = {"KERNEL_WORKING_DIR": self.cwd} if self.cwd else {}
        if self.gateway_username:
            env["KERNEL_USERNAME"] = self.gateway_username
        return env

    async def _start_hint(self, exc: BaseException) -> str:
        """How to fix a failed start, from what the gateway answered."""
        code = getattr(exc, "status_code", None) or getattr(exc, "code", None)
        if code in (401, 403):
            return refusal_hint(code, gateway_said(exc), self.gateway_username)
        if code in (404, 500):
            names = await self._kernelspec_names()
            if names and self.kernel_name not in names:
                return (f"The gateway has no kernelspec '{self.kernel_name}' (it has: "
                        f"{', '.join(names)}). Choose one with OI_CHILD_KERNEL / "
                        "c.ChildKernel.kernel_name.")
        if code in (502, 503, 504, 599) or isinstance(exc, (OSError, asyncio.TimeoutError)):
            return ("Check that the gateway runs and answers at that URL "
                    "(OI_CHILD_GATEWAY_URL / c.ChildKernel.gateway_url); if it is only slow to "
                    "start kernels, wait longer with OI_CHILD_STARTUP_TIMEOUT.")
        return ("Check the gateway's log; the gateway is set by OI_CHILD_GATEWAY_URL / "
                "c.ChildKernel.gateway_url and the kernelspec by OI_CHILD_KERNEL.")

    async def _kernelspec_names(self) -> list[str]:
        try:
            from jupyter_server.gateway.gateway_client import GatewayClient, gateway_request

            client = GatewayClient.instance()
            response = await asyncio.wait_for(gateway_request(
                self.gateway_url + client.kernelspecs_endpoint, method="GET"), 10)
            return sorted(json.loads(response.body).get("kernelspecs", {}))
        except Exception:
            return []

    def _configure(self, client: Any) -> None:
        """Point the process's ``GatewayClient`` (a singleton: one gateway per process) at
        our gateway. Its headers are cached on first use: reset after a change."""
        settings = {
            "url": self.gateway_url,
            "ws_url": "ws" + self.gateway_url[4:],
            "auth_token": self.gateway_token,
            "headers": self.gateway_headers or "{}",
            "validate_cert": self.gateway_validate_cert,
            "connect_timeout": self.gateway_connect_timeout,
            "request_timeout": self.gateway_request_timeout,
        }
        if any(getattr(client, k) != v for k, v in settings.items()):
            for key, value in settings.items():
                setattr(client, key, value)
            client._connection_args = {}

    async def _connect(self) -> None:
        from jupyter_client.session import Session
        from jupyter_server.gateway.gateway_client import GatewayClient
        from tornado.escape import url_escape
        from tornado.httpclient import HTTPRequest
        from tornado.websocket import websocket_connect

        client = GatewayClient.instance()
        session = self._link.session if self._link is not None else Session(key=b"")
        url = (f"{client.ws_url.rstrip('/')}{client.kernels_endpoint}/"
               f"{url_escape(self.kernel_id)}/channels?session_id={url_escape(session.session)}")
        request = HTTPRequest(url, **client.load_connection_args())
        ws = await asyncio.wait_for(
            websocket_connect(request, subprotocols=[V1_PROTOCOL],
                              max_message_size=MAX_MESSAGE_BYTES),
            self.gateway_connect_timeout + 5)
        self._link = _Link(ws, session)
        self.kc = self._link  # is_running, submit: the link stands where the local client does
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._read(self._link)),
                       loop.create_task(self._watchdog())]

    async def _ask_cwd(self) -> str:
        reply = await self.request("execute_request", {
            "code": "", "silent": True, "store_history": False, "allow_stdin": False,
            "user_expressions": {"cwd": _CWD_EXPRESSION}, "stop_on_error": False,
        }, timeout=self.gateway_request_timeout)
        text = (((reply.get("user_expressions") or {}).get("cwd") or {}).get("data") or {})
        with contextlib.suppress(Exception):
            return str(ast.literal_eval(text.get("text/plain", "")))
        return ""

    async def _cleanup(self, graceful: bool = False) -> None:
        for task in [*self._tasks, *self._answering]:
            task.cancel()
        self._tasks = []
        self._fail_pending(ChildDiedError("The child kernel was shut down."))
        link, km, self._link, self.kc, self.km = self._link, self.km, None, None, None
        self._lost = ""
        self._restarted_empty = False
        if link is not None:
            link.close()
        if km is not None and km.kernel_id:
            try:  # DELETE /api/kernels/{id}; a 404 (already gone) is fine
                await asyncio.wait_for(km.shutdown_kernel(), self.gateway_request_timeout)
            except Exception as exc:
                self.log.warning("could not delete the child kernel %s on the gateway: %s "
                                 "(the reaper tries again; the gateway's culling is the last "
                                 "resort)", km.kernel_id, _reason(exc))
            else:
                self._stop_reaper(delete=False)
        self._stop_reaper(delete=True)
        self.kernel_id = ""

    async def interrupt(self) -> None:
        """POST .../interrupt: the gateway signals the kernel or sends it an
        ``interrupt_request``, as its kernelspec's interrupt_mode says."""
        if self.km is not None and self.is_running:
            try:
                await asyncio.wait_for(self.km.interrupt_kernel(), self.gateway_request_timeout)
            except Exception as exc:
                self.log.warning("interrupting the child kernel on the gateway failed: %s",
                                 _reason(exc))

    # ----------------------------------------------------------------- reconnecting
    async def _reconnect(self) -> bool:
        """Re-attach to the kernel after a lost connection; False when the gateway no longer
        has it (a new kernel is then started by the caller). Raises when it is unreachable."""
        km = self.km
        assert km is not None
        for task in self._tasks:
            task.cancel()
        try:
            model = await asyncio.wait_for(km.refresh_model(), self.gateway_request_timeout)
        except Exception as exc:
            raise ChildKernelError(
                f"The gateway {self.gateway_url} still does not answer ({_reason(exc)}). The "
                "child kernel and its variables may be lost; the next cell tries again."
            ) from exc
        if model is None:
            self.notify(f"The gateway {self.gateway_url} no longer has the child kernel "
                        f"{self.kernel_id} (the gateway was restarted, or the kernel was "
                        "culled): a new one is started.")
            return False
        self._dead_reason = self._lost = ""
        await self._connect()
        self.notify(f"Reconnected to the child kernel on the gateway {self.gateway_url}: its "
                    "variables are kept. Output sent while the connection was down went to "
                    "the cell that was running.")
        return True

    async def _reuse_restarted(self) -> bool:
        """The gateway restarted the dead kernel (empty, same id, same socket): use it once
        it answers; False (start a new one) when it does not."""
        self._restarted_empty = False
        self._dead_reason = ""
        try:
            await self.request("kernel_info_request", {}, timeout=self.startup_timeout)
            self.remote_cwd = await self._ask_cwd()
        except Exception as exc:
            self._died(f"The restarted kernel on the gateway does not answer: {_reason(exc)}")
            return False
        self._tasks = [t for t in self._tasks if not t.done()]
        self._tasks.append(asyncio.get_running_loop().create_task(self._watchdog()))
        return True

    # ----------------------------------------------------------------- sending
    def send(self, msg_type: str, content: dict[str, Any], msg_id: str | None = None, *,
             metadata: dict[str, Any] | None = None, buffers: list[Any] | None = None,
             channel: str = "shell", parent: dict[str, Any] | None = None) -> str:
        """Send a message to the child without waiting; returns its msg_id."""
        link = self._link
        if link is None:
            raise ChildDiedError("The child kernel is not running.")
        msg = link.session.msg(msg_type, content, parent=parent, metadata=metadata)
        if msg_id:
            msg["header"]["msg_id"] = msg["msg_id"] = msg_id
        link.write(msg, channel, buffers)
        return msg["header"]["msg_id"]

    # ----------------------------------------------------------------- receiving
    async def _read(self, link: _Link) -> None:
        try:
            while True:
                got = await link.read()
                if got is None:
                    ws = link.ws
                    why = f"close code {ws.close_code}" if ws.close_code else "no close frame"
                    self._connection_lost(f"the websocket closed, {why}")
                    return
                self._dispatch(*got)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a frame we cannot read: the link is unusable
            self.log.exception("reading the gateway websocket failed")
            link.close()
            self._connection_lost(f"reading failed: {_reason(exc)}")

    def _dispatch(self, channel: str, msg: dict[str, Any]) -> None:
        if channel == "iopub":
            if msg["header"].get("msg_type") != "status" or not self._kernel_status(msg):
                self._iopub(msg)
        elif channel in ("shell", "control"):
            self._reply(msg)
        elif channel == "stdin" and msg["header"].get("msg_type") == "input_request":
            task = asyncio.ensure_future(self._answer_input(msg))
            self._answering.add(task)
            task.add_done_callback(self._answering.discard)

    def _kernel_status(self, msg: dict[str, Any]) -> bool:
        """True for a status with no parent: the gateway restarting a dead kernel."""
        if msg["parent_header"]:
            return False
        state = msg["content"].get("execution_state")
        if state in ("restarting", "dead") and self.is_running:
            self._restarted_empty = state == "restarting"
            self._died(f"The child kernel on the gateway {self.gateway_url} died (the gateway "
                       f"reports '{state}'). Its variables were lost; "
                       + ("the gateway restarted it empty and the next cell uses that one."
                          if state == "restarting" else "it restarts on the next cell."))
        return True

    async def _answer_input(self, msg: dict[str, Any]) -> None:
        value = await self._input_value(msg)
        with contextlib.suppress(ChildDiedError):
            self.send("input_reply", {"value": value}, channel="stdin", parent=msg["header"])

    def _connection_lost(self, why: str) -> None:
        if self._dead_reason:
            return
        self._lost = why
        self._died(f"Lost the connection to the gateway {self.gateway_url} ({why}). The next "
                   "cell reconnects to the child kernel, or starts a new one (its variables "
                   "then lost) if the gateway no longer has it.")

    async def _watchdog(self) -> None:
        """Finds a kernel deleted or culled on the gateway, and a gateway that hangs.
        (``is_alive()`` would answer True once more after a 404: read the model.)"""
        while not self._dead_reason:
            await asyncio.sleep(self.gateway_check_interval)
            km = self.km
            if km is None:
                return
            try:
                model = await asyncio.wait_for(km.refresh_model(), self.gateway_request_timeout)
            except Exception as exc:
                if self._link is not None:
                    self._link.close()
                self._connection_lost(f"it does not answer: {_reason(exc)}")
                return
            if model is None and not self._dead_reason:
                self._died(f"The child kernel is gone from the gateway {self.gateway_url} "
                           "(deleted or culled there). Its variables were lost; a new one "
                           "starts on the next cell.")
                return

    # ----------------------------------------------------------------- the reaper
    def _start_reaper(self, client: Any, kernel_url: str) -> None:
        """A process that deletes the kernel if we die without doing it (see
        ``gateway_reaper``): it outlives a SIGKILL of this process."""
        from oi_kernel.execution.gateway_reaper import start_reaper

        self._stop_reaper(delete=False)
        args = client.load_connection_args()
        try:
            self._reaper = start_reaper(kernel_url, args.get("headers") or {},
                                        validate_cert=bool(args.get("validate_cert", True)),
                                        timeout=self.gateway_request_timeout)
        except OSError as exc:
            self.log.warning("no reaper for the gateway kernel (%s): if this process is "
                             "killed, only the gateway's culling removes it", exc)

    def _stop_reaper(self, delete: bool) -> None:
        reaper, self._reaper = self._reaper, None
        if reaper is not None:
            reaper.stop(delete=delete)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _reason(exc: BaseException) -> str:
    if isinstance(exc, asyncio.TimeoutError):
        return "no answer in time"
    text = " ".join(str(exc).split())
    if isinstance(exc, ChildKernelError):
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
