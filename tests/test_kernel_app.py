"""The kernel application's logging: ipykernel logs every request at DEBUG; a logger left
at DEBUG behind a WARNING handler made records nobody printed (OIKernelApp._configure_logging)."""

from __future__ import annotations

import logging
import time

import pytest

from oi_kernel.kernel.app import OIKernelApp

pytestmark = pytest.mark.unit


def test_the_app_logger_is_at_its_handlers_level_and_follows_log_level():
    app = OIKernelApp()
    try:
        assert [h.level for h in app.log.handlers] == [logging.WARNING]
        assert app.log.level == logging.WARNING
        assert not app.log.isEnabledFor(logging.DEBUG)
        app.log_level = logging.DEBUG  # --debug
        assert app.log.isEnabledFor(logging.DEBUG)
        app.log_level = logging.INFO
        assert app.log.level == logging.INFO
    finally:
        app.log_level = logging.WARNING
        OIKernelApp.clear_instance()


def test_iopub_subscribers_are_counted_and_only_the_first_reply_waits():
    import asyncio

    from oi_kernel.kernel.subscribers import IOPubSubscribers

    subs = IOPubSubscribers()
    subs.heard([b"\x01"])
    subs.heard([b"\x01topic", b"\x00"])
    assert subs.count == 1
    subs.heard([b"\x00", b"\x00"])
    assert subs.count == 0
    assert asyncio.run(subs.first_listener(timeout=0.05)) is True  # someone had joined

    alone = IOPubSubscribers()
    assert asyncio.run(alone.first_listener(timeout=0.05)) is False
    started = time.monotonic()
    assert asyncio.run(alone.first_listener(timeout=5)) is False  # no second wait
    assert time.monotonic() - started < 1


def test_without_an_xpub_socket_the_reply_never_waits():
    import asyncio

    from oi_kernel.kernel.subscribers import IOPubSubscribers

    subs = IOPubSubscribers()
    subs.watch(object())  # ipykernel < 7: a PUB socket, nothing to hear
    assert asyncio.run(subs.first_listener(timeout=5)) is True


def test_a_real_iopub_thread_has_the_private_parts_we_hook_and_a_subscriber_is_heard():
    """kernel.subscribers relies on ipykernel 7's IOPubThread._xpub_stream and
    _handle_subscription (private): an ipykernel that drops or renames them fails here, not
    as a client that hangs one start in four."""
    import asyncio

    import zmq
    from ipykernel.iostream import IOPubThread
    from jupyter_client.session import Session

    from oi_kernel.kernel.subscribers import IOPubSubscribers

    context = zmq.Context()
    xpub = context.socket(zmq.XPUB)
    port = xpub.bind_to_random_port("tcp://127.0.0.1")
    thread = IOPubThread(xpub, session=Session(key=b""))  # as IPKernelApp makes it
    sub = context.socket(zmq.SUB)
    try:
        assert getattr(thread, "_xpub_stream", None) is not None, "ipykernel moved _xpub_stream"
        assert callable(getattr(thread, "_handle_subscription", None)), \
            "ipykernel moved _handle_subscription"
        thread.start()
        subs = IOPubSubscribers()
        subs.watch(thread)
        sub.connect(f"tcp://127.0.0.1:{port}")
        sub.setsockopt(zmq.SUBSCRIBE, b"")
        assert asyncio.run(subs.first_listener(timeout=10)) is True
        assert subs.count == 1
        welcome = sub.recv_multipart(flags=0) if sub.poll(10_000) else []
        assert b"iopub_welcome" in b"".join(welcome)  # ipykernel's own handler still runs
    finally:
        thread.stop()
        thread.close()
        sub.close(linger=0)
        context.term()
