"""The warm host: a per-user process holding litellm imported, serving kernels' LLM
requests over a Unix socket (``python -m oi_kernel.llm.warm_host SOCKET IDLE_S``; started by
``host_link``). It imports litellm at a lower CPU priority (``OI_WARM_HOST_NICE``, 10),
answers ``attach`` once the import and prewarm are done, and exits when no kernel has been
attached for IDLE_S seconds. One lock file per socket keeps it to one host per environment.

Requests (one JSON line each, one connection per request): ``attach`` (held open for the
kernel's lifetime), ``call`` (a model question: ``host_link``), ``stream`` (``LLM.stream``
with the kernel's settings; events ``text``/``reasoning``/``retry`` as they come, then
``reply`` or ``error``). A connection closed mid-stream cancels that request (the kernel's
interrupt). Model questions are answered in worker threads: counting a very large text for
one kernel does not stall the others' streams.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fcntl
import json
import logging
import os
import socket
import struct
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from oi_kernel.llm import boundary, host_link

log = logging.getLogger("oi_kernel.warm_host")
CALLS = frozenset({"provider_list", "supports_function_calling", "supports_vision",
                   "get_model_info", "count_tokens"})


class Host:
    def __init__(self, path: str, idle_s: float) -> None:
        self.path = path
        self.idle_s = idle_s
        self.ready = asyncio.Event()
        self.failure = ""
        self.attached = 0
        self.busy = 0
        self.last_seen = time.monotonic()
        self.clients: dict[tuple[int, str], Any] = {}  # (kernel, settings) -> LLM
        self.questions = ThreadPoolExecutor(4, thread_name_prefix="oi-host-call")

    async def serve(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        server = await asyncio.start_unix_server(self.handle, self.path, limit=1 << 26)
        os.chmod(self.path, 0o600)
        asyncio.get_running_loop().create_task(self.load())
        async with server:
            while self.attached or self.busy or time.monotonic() - self.last_seen < self.idle_s:
                if self.failure:
                    break
                await asyncio.sleep(min(1.0, self.idle_s / 4))
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        self.questions.shutdown(wait=False, cancel_futures=True)

    async def load(self) -> None:
        """Import litellm in a daemon thread (an import that hangs cannot keep the process:
        after ``READY_TIMEOUT_S`` it is a failure, and the host exits)."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future = loop.create_future()

        def work() -> None:
            try:
                _import_and_prewarm()
                failure = ""
            except Exception as exc:  # noqa: BLE001 - said to every kernel
                log.exception("litellm import failed")
                failure = repr(exc)
            loop.call_soon_threadsafe(lambda: done.done() or done.set_result(failure))

        threading.Thread(target=work, name="oi-host-import", daemon=True).start()
        try:
            self.failure = await asyncio.wait_for(done, host_link.READY_TIMEOUT_S)
        except asyncio.TimeoutError:
            self.failure = "litellm's import did not finish"
        self.ready.set()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.busy += 1
        try:
            if not _same_user(writer):
                return
            request = json.loads(await reader.readline() or b"{}")
            if request.get("op") == "attach":  # at once: the kernel knows the host lives
                await _send(writer, {"hello": os.getpid()})
            await self.ready.wait()
            if self.failure:
                await _send(writer, {"ok": False, "error": self.failure})
            elif request.get("op") == "attach":
                await self.attach(request, reader, writer)
            elif request.get("op") == "call":  # off the loop: a long count holds no stream
                answer = await asyncio.get_running_loop().run_in_executor(
                    self.questions, _call, request["name"], request.get("args") or [])
                await _send(writer, answer)
            elif request.get("op") == "stream":
                await self.stream(request, reader, writer)
        except (OSError, ValueError, asyncio.IncompleteReadError):
            pass
        finally:
            self.busy -= 1
            self.last_seen = time.monotonic()
            writer.close()

    async def attach(self, request: dict, reader: asyncio.StreamReader,
                     writer: asyncio.StreamWriter) -> None:
        """A kernel's lifetime connection: counted until the kernel closes it (or dies)."""
        self.attached += 1
        log.info("attached: %s %s (%d attached)", request.get("who", "kernel"),
                 request.get("kernel"), self.attached)
        try:
            await _send(writer, {"ok": True, "pid": os.getpid()})
            while await reader.read(4096):
                pass
        finally:
            self.attached -= 1
            kernel = request.get("kernel")
            for key in [k for k in self.clients if k[0] == kernel]:
                del self.clients[key]  # what that kernel's client learned goes with it

    async def stream(self, request: dict, reader: asyncio.StreamReader,
                     writer: asyncio.StreamWriter) -> None:
        """Run the request; stop it when the kernel closes the connection (interrupt)."""
        work = asyncio.ensure_future(self.run_stream(request, writer))
        closed = asyncio.ensure_future(reader.read(1))
        await asyncio.wait({work, closed}, return_when=asyncio.FIRST_COMPLETED)
        if not work.done():
            work.cancel()
        closed.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await work

    async def run_stream(self, request: dict, writer: asyncio.StreamWriter) -> None:
        from oi_kernel import errors

        llm = self.client(request.get("kernel", 0), request["config"])

        def emit(kind: str) -> Any:
            return lambda text: writer.write(_line({"kind": kind, "text": text}))

        try:
            from oi_kernel.llm import model_info

            model_info.take_data(request.get("server"))  # what the kernel learnt: not asked again
            await llm.prepare()
            reply = await llm.stream(request["messages"], request["tools"],
                                     on_text=emit("text"), on_retry=emit("retry"),
                                     sampling=request["sampling"],
                                     on_reasoning=emit("reasoning"))
            event: dict[str, Any] = {"kind": "reply", "reply": dataclasses.asdict(reply)}
        except errors.LLMToolsUnsupportedError as exc:
            event = _error_event(exc, said=llm.tools_refused())
        except Exception as exc:  # noqa: BLE001 - raised in the kernel as it would be there
            event = _error_event(exc)
        await _send(writer, event)

    def client(self, kernel: int, settings: dict[str, Any]) -> Any:
        """One LLM per kernel and settings, kept while that kernel is attached: what it
        learned (no tools, no repeat_penalty) stays, as in the kernel's own client."""
        from oi_kernel.llm.client import LLM

        key = (kernel, json.dumps(settings, sort_keys=True))
        if key not in self.clients:
            self.clients[key] = LLM(**settings)
        return self.clients[key]


def _import_and_prewarm() -> None:
    litellm = boundary.load()
    boundary.prewarm(litellm)


def _call(name: str, args: list) -> dict[str, Any]:
    if name not in CALLS:
        return {"error": f"not a host call: {name}"}
    try:
        if name == "count_tokens":
            return {"value": boundary.count_tokens(*args)}
        value = getattr(boundary.load(), name)
        return {"value": json.loads(json.dumps(value(*args) if callable(value) else value,
                                               default=str))}
    except Exception as exc:  # noqa: BLE001 - the kernel raises it where litellm would
        return {"error": f"{type(exc).__name__}: {exc}"}


def _error_event(exc: BaseException, said: str = "") -> dict[str, Any]:
    return {"kind": "error", "class": type(exc).__name__, "message": str(exc),
            "partial": getattr(exc, "partial_text", ""), "said": said}


def _line(data: dict[str, Any]) -> bytes:
    return json.dumps(data, default=str).encode() + b"\n"


async def _send(writer: asyncio.StreamWriter, data: dict[str, Any]) -> None:
    writer.write(_line(data))
    await writer.drain()


def _same_user(writer: asyncio.StreamWriter) -> bool:
    """Whether the peer runs as this user (the directory is owner-only; this checks again)."""
    sock = writer.get_extra_info("socket")
    try:
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except (OSError, AttributeError):
        return True  # no SO_PEERCRED here: the directory's mode is the guard
    return struct.unpack("3i", creds)[2] == os.getuid()


def _lower_priority() -> None:
    """Below the kernels' CPU priority (``OI_WARM_HOST_NICE``, 10). With Linux autogroup
    scheduling a session of its own is a scheduling group of its own, and a process's nice
    only ranks it within its group; the group's nice (``/proc/self/autogroup``) ranks it
    against the kernel's. That one is lowered only when the variable is set: at load 10 on
    2 CPUs it made the host's import ~3x slower (benchmarks/FIRST_INSTRUCTION.md)."""
    with contextlib.suppress(OSError, ValueError):
        nice = int(os.environ.get(host_link.NICE_ENV, host_link.DEFAULT_NICE))
        os.nice(nice)
        if host_link.NICE_ENV in os.environ and os.getsid(0) == os.getpid():
            with open("/proc/self/autogroup", "w") as group:  # the group is the host alone
                group.write(str(nice))


def _take(lock: Any, tries: int = 40) -> bool:
    """The host's lock; a host that is exiting (idle) lets go of it within moments."""
    for _ in range(tries):
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError:
            time.sleep(0.05)
    return False


def main(argv: list[str]) -> int:
    path, idle_s = argv[0], float(argv[1]) if len(argv) > 1 else host_link.idle_seconds()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    _lower_priority()
    lock = open(path + ".lock", "w")  # noqa: SIM115 - held for the process's lifetime
    if not _take(lock):
        return 0  # another host serves this socket
    boundary.own_process()
    log.info("warm host %s serving %s (idle %.0f s)", os.getpid(), path, idle_s)
    asyncio.run(Host(path, idle_s).serve())
    log.info("warm host %s idle: exiting", os.getpid())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
