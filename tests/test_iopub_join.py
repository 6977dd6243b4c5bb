"""A client that sends its first cell the moment ``kernel_info`` is answered must still see
that cell's ``busy`` and ``idle``: ``jupyter console`` with piped input does exactly this,
and hung in about one start in four when the cell's status went out before its IOPub
subscription took effect (kernel.subscribers).

The race is made certain here: the client connects its IOPub socket 1.2 s after it asks
for ``kernel_info``, and sends a cell as soon as the reply comes.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from queue import Empty

import pytest
from jupyter_client.manager import KernelManager

pytestmark = pytest.mark.kernel
LATE = 1.2  # seconds between asking for kernel_info and subscribing to IOPub


def wait_for_port(port: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.02)
    raise AssertionError(f"the kernel never bound its shell port {port}")


def statuses_of(kc, msg_id: str, timeout: float = 10) -> list[str]:
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while "idle" not in seen and time.monotonic() < deadline:
        try:
            msg = kc.get_iopub_msg(timeout=0.2)
        except Empty:
            continue
        if msg["msg_type"] == "status" and msg["parent_header"].get("msg_id") == msg_id:
            seen.append(msg["content"]["execution_state"])
    return seen


def test_the_first_cell_of_a_client_that_subscribes_late_is_seen_to_end(tmp_path):
    km = KernelManager(kernel_name="open-interpreter")
    km.start_kernel(env={**os.environ, "OI_LOG_DIR": str(tmp_path / "logs"),
                         "OI_MODEL": "openai/unused"}, cwd=str(tmp_path))
    kc = km.client()
    try:
        kc.shell_channel.start()
        wait_for_port(km.shell_port)  # the kernel is up: it would answer at once
        # (touching kc.iopub_channel creates and subscribes its socket: only in the timer)
        late = threading.Timer(LATE, lambda: kc.iopub_channel.start())
        asked = time.monotonic()
        late.start()
        kc.kernel_info()
        reply = kc.get_shell_msg(timeout=30)
        answered = time.monotonic() - asked
        assert reply["msg_type"] == "kernel_info_reply"
        msg_id = kc.execute("exit")  # what jupyter console sent; answered in milliseconds
        late.join()  # IOPub is subscribed by the timer only
        assert statuses_of(kc, msg_id) == ["busy", "idle"], (
            f"kernel_info answered after {answered:.2f} s, before IOPub was subscribed")
        assert answered >= LATE  # it waited for the subscriber, no longer than needed
        assert answered < LATE + 1.5
        # later replies do not wait
        kc.kernel_info()
        again = time.monotonic()
        while kc.get_shell_msg(timeout=30)["msg_type"] != "kernel_info_reply":
            pass
        assert time.monotonic() - again < 0.5
    finally:
        late.cancel()
        kc.stop_channels()
        km.shutdown_kernel(now=True)
