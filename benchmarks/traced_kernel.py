"""Launch the Open Interpreter kernel with measuring hooks, for the overhead benchmark.

Nothing in ``oi_kernel`` changes: this launcher wraps a few methods of the classes the
wrapper uses before the kernel app starts, then runs it as ``python -m oi_kernel`` would.

- ``OI_BENCH_TRACE=FILE``: record ``time.time()`` stamps at each hop of a request (the
  message reaching the main thread, ``do_execute``, the request leaving for the child,
  the child's reply and idle arriving, the reply and idle leaving), plus the header
  dates of the child's messages, and write them to FILE (JSON) at exit.
- ``OI_BENCH_PROFILE=FILE``: run the main thread (the event loop that handles every
  request) under cProfile from the ``OI_BENCH_PROFILE_AFTER``-th execute request on, and
  dump its stats to FILE at shutdown.

Used through a kernelspec made by ``overhead.traced_kernelspec()``.
"""

from __future__ import annotations

import atexit
import datetime
import functools
import json
import os
import time
from collections.abc import Callable
from typing import Any

Trace = list[tuple[float, str, str]]  # (time.time(), event, msg_id)


def _msg_id(msg: Any) -> str:
    try:
        return msg["header"]["msg_id"]
    except (KeyError, TypeError):
        return ""


def _at_shutdown(action: Callable[[], None]) -> None:
    """Run ``action`` once when the kernel is asked to shut down (or at exit): the
    kernel app may end the process without running ``atexit`` handlers."""
    from oi_kernel.kernel.kernel import OIKernel

    done: list[bool] = []

    def once() -> None:
        if not done:
            done.append(True)
            action()

    original = OIKernel.do_shutdown

    async def do_shutdown(self: Any, restart: bool) -> Any:
        try:
            return await original(self, restart)
        finally:
            once()

    OIKernel.do_shutdown = do_shutdown  # type: ignore[method-assign]
    atexit.register(once)


def _install_trace(path: str) -> None:
    from ipykernel.kernelbase import Kernel
    from jupyter_client.channels import AsyncZMQSocketChannel
    from jupyter_client.session import Session

    from oi_kernel.execution import child as child_module
    from oi_kernel.execution.child import ChildKernel
    from oi_kernel.kernel.kernel import OIKernel

    trace: Trace = []
    dates: list[tuple[str, str, str, float]] = []  # (parent msg_id, msg_type, state, date)
    stamp = trace.append

    original_set_parent = OIKernel.set_parent

    def set_parent(self: Any, ident: Any, parent: Any, channel: str = "shell") -> None:
        if channel == "shell" and parent.get("header", {}).get("msg_type") == "execute_request":
            stamp((time.time(), "main_thread_has_request", _msg_id(parent)))
        original_set_parent(self, ident, parent, channel)

    OIKernel.set_parent = set_parent  # type: ignore[method-assign]

    original_do_execute = OIKernel.do_execute

    @functools.wraps(original_do_execute)
    async def do_execute(self: Any, *args: Any, **kwargs: Any) -> Any:
        mid = _msg_id(self.get_parent("shell"))
        stamp((time.time(), "do_execute_start", mid))
        try:
            return await original_do_execute(self, *args, **kwargs)
        finally:
            stamp((time.time(), "do_execute_end", mid))

    OIKernel.do_execute = do_execute  # type: ignore[method-assign]

    from oi_kernel.execution.runner import ChildRunner

    original_finish = ChildRunner.finish

    async def finish(self: Any, run: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return await original_finish(self, run, *args, **kwargs)
        finally:
            stamp((time.time(), "child_result_ready", run.msg_id))

    ChildRunner.finish = finish  # type: ignore[method-assign]

    original_send = ChildKernel.send

    def child_send(self: Any, msg_type: str, content: Any, msg_id: Any = None, **kw: Any) -> str:
        result = original_send(self, msg_type, content, msg_id, **kw)
        if msg_type == "execute_request":
            stamp((time.time(), "sent_to_child", result))
        return result

    ChildKernel.send = child_send  # type: ignore[method-assign]

    def record(msg: dict[str, Any]) -> dict[str, Any]:
        now = time.time()
        kind = msg["header"]["msg_type"]
        parent = msg["parent_header"].get("msg_id", "")
        state = msg["content"].get("execution_state", "") if kind == "status" else ""
        date = msg["header"].get("date")
        if isinstance(date, str):  # the child link leaves header dates unparsed
            date = datetime.datetime.fromisoformat(date)
        if date is not None:
            dates.append((parent, kind, state, date.timestamp()))
        stamp((now, f"child_{kind}{'_' + state if state else ''}_arrived", parent))
        return msg

    # the child's messages come in through child.next_msg (or get_msg in older code)
    original_get_msg = AsyncZMQSocketChannel.get_msg

    async def get_msg(self: Any, timeout: Any = None) -> dict[str, Any]:
        return record(await original_get_msg(self, timeout))

    AsyncZMQSocketChannel.get_msg = get_msg  # type: ignore[method-assign]
    name = "next_msg" if hasattr(child_module, "next_msg") else "_next_msg"
    original_next = getattr(child_module, name, None)
    if original_next is not None:

        async def next_msg(channel: Any, *args: Any) -> dict[str, Any]:
            return record(await original_next(channel, *args))

        setattr(child_module, name, next_msg)

    original_session_send = Session.send

    def session_send(self: Any, stream: Any, msg_or_type: Any, *args: Any, **kw: Any) -> Any:
        msg = original_session_send(self, stream, msg_or_type, *args, **kw)
        kind = msg["header"]["msg_type"] if isinstance(msg, dict) else str(msg_or_type)
        if kind in ("execute_reply", "status", "execute_result", "execute_input"):
            parent = msg.get("parent_header", {}).get("msg_id", "") if isinstance(msg, dict) else ""
            state = msg["content"].get("execution_state", "") if kind == "status" else ""
            stamp((time.time(), f"wrapper_sent_{kind}{'_' + state if state else ''}", parent))
        return msg

    Session.send = session_send  # type: ignore[method-assign]
    _ = Kernel  # the base class is left alone: its hops show between our stamps

    def dump() -> None:
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"trace": trace, "child_dates": dates}, f)

    _at_shutdown(dump)


def _install_profile(path: str, after: int) -> Callable[[], None]:
    """Profile the main thread from the ``after``-th execute request on (skipping the
    start-up and warm-up), until shutdown."""
    import cProfile

    from oi_kernel.kernel.kernel import OIKernel

    profiler = cProfile.Profile()
    seen = [0]
    original = OIKernel.do_execute

    async def do_execute(self: Any, *args: Any, **kwargs: Any) -> Any:
        seen[0] += 1
        if seen[0] == after + 1:
            profiler.enable()
        return await original(self, *args, **kwargs)

    OIKernel.do_execute = do_execute  # type: ignore[method-assign]

    def dump() -> None:
        profiler.disable()
        profiler.dump_stats(path)

    _at_shutdown(dump)
    return dump


def main() -> None:
    if os.environ.get("OI_BENCH_EXPERIMENT"):  # a patch module to try an optimisation
        import runpy

        runpy.run_path(os.environ["OI_BENCH_EXPERIMENT"])
    if os.environ.get("OI_BENCH_TRACE"):
        _install_trace(os.environ["OI_BENCH_TRACE"])
    if os.environ.get("OI_BENCH_PROFILE"):
        after = int(os.environ.get("OI_BENCH_PROFILE_AFTER", "0"))
        _install_profile(os.environ["OI_BENCH_PROFILE"], after)
    from oi_kernel.kernel.app import main as kernel_main

    kernel_main()


if __name__ == "__main__":
    main()
