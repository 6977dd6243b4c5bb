"""Shared fixtures. The scripted LLM server runs once per session; each test gets it with
an empty script, no recorded requests and the default fallback."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator

import pytest

# Before anything imports litellm: never download the model cost map.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# MCP tool pins (the user's approvals of tool descriptions) never go to the real home: one
# file for this run (kernels shared by a module), a fresh one for each test (below).
os.environ.setdefault("OI_MCP_PINS", os.path.join(tempfile.mkdtemp(prefix="oi-pins-"), "pins.json"))

from tests.llm_server import ScriptedLLMServer  # noqa: E402

NO_SKIP = os.environ.get("OI_TEST_NO_SKIP") == "1"  # scripts/test: every test must run


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """Under scripts/test a skipped test is a failure that says what is missing."""
    outcome = yield
    report = outcome.get_result()
    if NO_SKIP and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = (f"{reason}\n(scripts/test runs every test: a skipped test fails "
                           "the run; install what it needs)")


@pytest.fixture(scope="session")
def _llm_server_session() -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer() as server:
        yield server


@pytest.fixture
def llm_server(_llm_server_session: ScriptedLLMServer) -> Iterator[ScriptedLLMServer]:
    """The scripted OpenAI-compatible server (``server.url`` is the api_base), reset."""
    _llm_server_session.reset()
    yield _llm_server_session
    _llm_server_session.reset()


@pytest.fixture(scope="module")
def _server() -> Iterator[ScriptedLLMServer]:
    """A scripted server per test module, for modules that share one kernel across tests
    (a module may override it, e.g. to turn on request validation)."""
    with ScriptedLLMServer() as server:
        yield server


@pytest.fixture(autouse=True)
def _own_mcp_pins(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with no pinned MCP tools (what it approves is pinned in its own file)."""
    monkeypatch.setenv("OI_MCP_PINS", str(tmp_path_factory.mktemp("pins") / "pins.json"))
