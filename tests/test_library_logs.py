"""Library log lines go to the kernel's log, not into the user's cell (issue 42).

The kernel test plants, through the kernel's config file, warnings of litellm's, httpx's
and the MCP SDK's loggers that are logged right after litellm is imported, on the first
instruction's path: the way litellm's ``register_model`` warning reached the quickstart's
first cell. They must be in the kernel's stderr (its log) and in no iopub message.
"""

from __future__ import annotations

import logging
import sys

import pytest

from oi_kernel.llm import library_logs
from tests import llm_server as S
from tests.kernel_client import KernelSession
from tests.test_kernel import kernel_env
from tests.test_magic_unattended import magic_notebook, oi_cell_text, run_batch
from tests.test_reliability import config_dir

CANARY = """\
import logging
import warnings
import oi_kernel.llm.boundary as boundary

_load_async = boundary.load_async

async def load_async(*args, **kwargs):
    litellm = await _load_async(*args, **kwargs)
    litellm.verbose_logger.warning("canary-litellm: a library warning")
    logging.getLogger("httpx").warning("canary-httpx: a library warning")
    logging.getLogger("mcp.client.session").warning("canary-mcp: a library warning")
    warnings.warn("canary-warnings: a library warning", UserWarning, stacklevel=1)
    return litellm

boundary.load_async = load_async
"""


def test_library_warnings_go_to_the_kernel_log_not_the_cell(llm_server, tmp_path):
    llm_server.enqueue(S.text("Done."))
    stderr_path = tmp_path / "kernel-stderr.log"
    env = kernel_env(llm_server, tmp_path, JUPYTER_CONFIG_DIR=config_dir(tmp_path, CANARY))
    with stderr_path.open("wb") as stderr, KernelSession(env=env, cwd=str(tmp_path),
                                                          stderr=stderr) as ks:
        result = ks.execute("say done", timeout=120)
        later = ks.execute("%%python\nprint(1)", timeout=60)
    assert result.status == "ok", result.text
    assert "Done." in result.text
    shown = "".join(str(m["content"]) for m in result.messages + later.messages)
    assert "canary" not in shown
    kernel_log = stderr_path.read_text()
    for name in ("litellm", "httpx", "mcp", "warnings"):
        assert f"canary-{name}: a library warning" in kernel_log, kernel_log[-3000:]


def test_free_models_are_registered_without_a_litellm_warning():
    """litellm >= 1.110 warns on ``register_model`` for a model with prices but no cache
    prices (the quickstart's embedded model showed it); our entries give them."""
    from oi_kernel.llm import boundary
    from oi_kernel.llm.providers import FREE_CACHE

    litellm = boundary.load()
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    litellm.verbose_logger.addHandler(handler)
    try:
        litellm.register_model({"oi-test-free/model": {
            "input_cost_per_token": 0.0, "output_cost_per_token": 0.0, **FREE_CACHE,
            "litellm_provider": "openai", "mode": "chat"}})
    finally:
        litellm.verbose_logger.removeHandler(handler)
    assert [r.getMessage() for r in records if r.levelno >= logging.WARNING] == []


@pytest.fixture
def fake_kernel_app():
    """A kernel-like process: a traitlets app whose log has a handler, and a sys.stderr that
    is not the process's own (ipykernel's stream to the notebook: each test sets it, since
    pytest's capture sets sys.stderr between a fixture and the test)."""
    from traitlets.config import Application

    app = Application.instance()
    seen: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = seen.append  # type: ignore[method-assign]
    app.log.addHandler(handler)
    yield seen
    app.log.removeHandler(handler)
    Application.clear_instance()
    root = logging.getLogger()
    for h in [h for h in root.handlers if isinstance(h, library_logs.KernelLog)]:
        root.removeHandler(h)
    logging.captureWarnings(False)


class _CellStream:
    def __init__(self) -> None:
        self.text = ""

    def write(self, text: str) -> int:
        self.text += text
        return len(text)

    def flush(self) -> None:
        pass


@pytest.mark.parametrize("debugging", [False, True])
def test_route_moves_handlers_that_write_into_the_cell(fake_kernel_app, monkeypatch, debugging):
    monkeypatch.setenv(library_logs.DEBUG_ENV, "DEBUG" if debugging else "")
    monkeypatch.setattr(sys, "stderr", _CellStream())
    lite = logging.getLogger("LiteLLM")
    old = list(lite.handlers)
    in_cell = logging.StreamHandler(sys.stderr)
    lite.handlers = [in_cell]
    try:
        assert library_logs.route()
        lite.warning("from litellm")
        logging.getLogger("oi-test-library").warning("from a library with no handler")
        assert (in_cell in lite.handlers) is debugging
        assert ("from litellm" in sys.stderr.text) is debugging
        assert "from a library" not in sys.stderr.text
        said = [r.getMessage() for r in fake_kernel_app]
        assert "from a library with no handler" in said
        assert debugging or "from litellm" in said
    finally:
        lite.handlers = old


def test_route_does_nothing_outside_a_kernel():
    from traitlets.config import Application

    assert not Application.initialized()
    assert library_logs.route() is False
    assert not any(isinstance(h, library_logs.KernelLog) for h in logging.getLogger().handlers)


def test_llama_messages_are_logged_not_printed(fake_kernel_app, monkeypatch):
    installed: list = []

    class Bindings:
        @staticmethod
        def llama_log_callback(func):
            return func

        @staticmethod
        def llama_log_set(callback, user):
            installed.append(callback)

    monkeypatch.setattr(library_logs, "_llama_callback", None)
    monkeypatch.setattr(sys, "stderr", _CellStream())
    library_logs.route()  # what the kernel does first (boundary.own_process)
    library_logs.route_llama(Bindings)
    assert len(installed) == 1
    installed[0](4, b"llama_model_load: error loading model\n", None)
    installed[0](2, b"an info line\n", None)
    said = [r.getMessage() for r in fake_kernel_app]
    assert said == ["llama_model_load: error loading model"]
    assert sys.stderr.text == ""


def test_a_model_error_in_an_oi_cell_shows_our_message_not_litellms_banner(llm_server,
                                                                          tmp_path):
    """In a user's own kernel (``%%oi``, where nothing of the process is ours) litellm's
    exception mapping prints "Give Feedback / Get Help" and "LiteLLM.Info: ..." to stdout,
    which is the cell, on every failed request. Only our message is shown there."""
    llm_server.set_fallback(S.error(400, "the scripted model refuses"))
    source = magic_notebook(tmp_path / "in.ipynb", auto_run=True)
    done = run_batch("nbconvert", llm_server, tmp_path, source, allow_errors=True)
    assert done.returncode == 0, done.stderr[-3000:]
    shown = oi_cell_text(tmp_path / "out.ipynb")
    assert "the scripted model refuses" in shown, shown
    assert "Give Feedback" not in shown and "LiteLLM.Info" not in shown, shown
