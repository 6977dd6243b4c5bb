"""The kernel application's logging: ipykernel logs every request at DEBUG; a logger left
at DEBUG behind a WARNING handler made records nobody printed (OIKernelApp._configure_logging)."""

from __future__ import annotations

import logging

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
