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
