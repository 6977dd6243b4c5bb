"""Library log lines go to the kernel's log, never into the user's cell.

In the Open Interpreter kernel ``sys.stderr`` is ipykernel's stream to the notebook. A
library's ``logging.StreamHandler`` made after the kernel started (litellm makes three when
it is imported) writes there, and so does Python's last-resort handler for loggers that
have none (httpx, the openai and MCP SDKs, our own), and Python's ``warnings`` (pydantic's
about litellm's types): they showed up in the cell,
e.g. litellm's ``register_model: ... has custom pricing but not in built-in cost map``.
``route()`` sends them to the kernel application's log instead (the process's real
stderr: the terminal Jupyter runs in, or the server's log), where ipykernel's own lines go.
A warning that matters to the user is said by oi_kernel, once, in its own words.

Asking for debugging keeps litellm's lines where litellm puts them: with ``LITELLM_LOG``
set (litellm's own switch, e.g. ``LITELLM_LOG=DEBUG``) its loggers are left alone.
Only a process that is ours routes anything (``boundary.own_process``); in a user's IPython
(``%%oi``) or script (the API) logging stays as the user set it up. litellm's banner printed
on every failed request ("Give Feedback / Get Help", not a log line: a ``print`` into the
``%%oi`` cell) is turned off wherever oi_kernel imports litellm, unless debugging was asked.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

DEBUG_ENV = "LITELLM_LOG"
LITELLM_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")
LLAMA_LOGGER = "llama_cpp"

_llama_callback: Any = None  # kept alive: llama.cpp holds a pointer to it


class KernelLog(logging.Handler):
    """Hands each record to the handlers of the kernel application's logger."""

    def __init__(self, target: logging.Logger) -> None:
        super().__init__()
        self.target = target

    def emit(self, record: logging.LogRecord) -> None:
        for handler in self.target.handlers:
            if record.levelno >= handler.level:
                handler.handle(record)


def kernel_log() -> logging.Logger | None:
    """The running kernel application's logger, or None outside a kernel (ACP, scripts)."""
    from traitlets.config import Application

    if not Application.initialized():
        return None
    log = Application.instance().log
    return log if log.handlers else None


def _to_cell(handler: logging.Handler) -> bool:
    """Whether ``handler`` writes to the notebook (ipykernel's stdout/stderr streams)."""
    stream = getattr(handler, "stream", None)
    return isinstance(handler, logging.StreamHandler) and stream is not None and (
        stream is sys.stderr or stream is sys.stdout) and stream is not sys.__stderr__


def debugging_asked() -> bool:
    """Whether the user asked for litellm's debugging output (``LITELLM_LOG`` set)."""
    return bool(os.environ.get(DEBUG_ENV, "").strip())


def route() -> bool:
    """Send library log lines to the kernel's log (again after an import added handlers).
    Returns whether there was a kernel log to send them to."""
    target = kernel_log()
    if target is None or sys.stderr is sys.__stderr__:
        return False  # not inside a kernel that forwards stderr to the notebook
    root = logging.getLogger()
    if not any(isinstance(h, KernelLog) for h in root.handlers):
        root.addHandler(KernelLog(target))  # instead of the last resort, which is the cell
        logging.captureWarnings(True)  # Python warnings (pydantic's about litellm's types)
    debugging = debugging_asked()
    for name, logger in list(logging.Logger.manager.loggerDict.items()):
        if not isinstance(logger, logging.Logger) or logger is target:
            continue
        if debugging and name in LITELLM_LOGGERS:
            continue
        for handler in [h for h in logger.handlers if _to_cell(h)]:
            logger.removeHandler(handler)
            if not any(isinstance(h, KernelLog) for h in logger.handlers):
                logger.addHandler(KernelLog(target))
    return True


def route_llama(bindings: Any) -> None:
    """llama.cpp's own messages (llama-cpp-python prints them to ``sys.stderr``, the cell)
    go to the ``llama_cpp`` logger instead, warnings and errors only. ``bindings``:
    ``llama_cpp.llama_cpp``. Does nothing outside a kernel or when the bindings moved."""
    global _llama_callback
    import ctypes

    if _llama_callback is not None or kernel_log() is None or sys.stderr is sys.__stderr__:
        return
    make = getattr(bindings, "llama_log_callback", None)
    install = getattr(bindings, "llama_log_set", None)
    if make is None or install is None:
        logging.getLogger(__name__).info("llama.cpp's log callback was not found: not routed")
        return
    log = logging.getLogger(LLAMA_LOGGER)
    levels = {3: logging.WARNING, 4: logging.ERROR}  # ggml's: 1 debug, 2 info, 5 continued

    def forward(level: int, text: bytes, _user: Any) -> None:
        if level in levels:
            log.log(levels[level], "%s", text.decode("utf-8", "replace").rstrip())

    _llama_callback = make(forward)
    install(_llama_callback, ctypes.c_void_p(0))
