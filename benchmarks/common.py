"""Shared pieces of the benchmarks: statistics, a kernel driven through jupyter_client,
process measurements, and the environment that points the Open Interpreter kernel at
the scripted LLM server.

Every benchmark reports ratios against a baseline measured in the same run, and medians
(with p90) over many runs; absolute times are printed only as context.
"""

from __future__ import annotations

import json
import os
import queue
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

OI_KERNEL = "open-interpreter"
PLAIN_KERNEL = "python3"


# ----------------------------------------------------------------------------- statistics
def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0..100) by linear interpolation between closest ranks."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    lo, hi = int(pos), min(int(pos) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


@dataclass
class Summary:
    """Median and p90 of one series of measurements (seconds, bytes, ...)."""

    n: int
    median: float
    p90: float
    mean: float

    @classmethod
    def of(cls, values: list[float]) -> Summary:
        if not values:
            return cls(0, float("nan"), float("nan"), float("nan"))
        return cls(
            len(values), statistics.median(values), percentile(values, 90), statistics.fmean(values)
        )


def litellm_version(python: str = sys.executable) -> str:
    """litellm's version as ``python`` (a venv's interpreter) imports it; "?" when it
    cannot say."""
    import subprocess

    try:
        return subprocess.run(
            [python, "-c", "import importlib.metadata as m; print(m.version('litellm'))"],
            capture_output=True, text=True, timeout=60, check=True).stdout.strip() or "?"
    except (OSError, subprocess.SubprocessError):
        return "?"


def ratio(a: float, b: float) -> float:
    return a / b if b else float("nan")


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} / {five:.2f} / {fifteen:.2f} (1/5/15 min, {os.cpu_count()} CPUs)"


# ----------------------------------------------------------------------------- results
@dataclass
class Row:
    """One line of the results table."""

    section: str
    metric: str
    ours: str
    baseline: str
    ratio: str
    target: str = ""
    verdict: str = ""


@dataclass
class SectionResult:
    """What one benchmark section measured: table rows plus free-text findings."""

    title: str
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: str = ""
    data: dict[str, Any] = field(default_factory=dict)

    def add(
        self,
        metric: str,
        ours: str,
        baseline: str = "",
        ratio_: str = "",
        target: str = "",
        verdict: str = "",
    ) -> None:
        self.rows.append(Row(self.title, metric, ours, baseline, ratio_, target, verdict))


def verdict(value: float, limit: float) -> str:
    return "ok" if value <= limit else "over"


# ----------------------------------------------------------------------------- kernels
def oi_env(server_url: str, log_dir: str, **extra: str) -> dict[str, str]:
    """Environment for an Open Interpreter kernel talking to the scripted server. The kernel
    runs this checkout's code (``PYTHONPATH``), not whatever copy is installed in the venv
    (a non-editable install goes stale as the checkout moves on); ``extra`` may name
    another tree."""
    env = {
        "PYTHONPATH": str(REPO),
        "OI_MODEL": "openai/scripted",
        "OI_API_BASE": server_url,
        "OI_API_KEY": "sk-bench-not-a-real-key-000000",
        "OI_LOG_DIR": log_dir,
        "OI_AUTO_RUN": "1",
        "OI_APPROVAL_UI": "stdin",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    env.update(extra)
    return env


@dataclass
class Run:
    """One execute request: wall time until both the reply and idle arrived."""

    elapsed: float
    reply: dict[str, Any]
    messages: list[dict[str, Any]]
    sent_at: float  # time.time() when the request left


class BenchKernel:
    """A kernel started by jupyter_client, driven by its blocking client as a frontend."""

    def __init__(
        self,
        kernel_name: str,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        kernel_spec_manager: Any = None,
        startup_timeout: float = 120,
    ) -> None:
        from jupyter_client.manager import KernelManager

        kw = {"kernel_spec_manager": kernel_spec_manager} if kernel_spec_manager else {}
        self.name = kernel_name
        self.km = KernelManager(kernel_name=kernel_name, **kw)
        self.started = time.perf_counter()
        # the kernel's own stderr (warnings, logs) would drown the report: keep it aside
        self._stderr = open(os.environ.get("OI_BENCH_KERNEL_STDERR", os.devnull), "ab")  # noqa: SIM115
        self.km.start_kernel(
            env={**os.environ, **(env or {})}, cwd=cwd, stdout=self._stderr, stderr=self._stderr
        )
        self.kc = self.km.client()
        self.kc.start_channels()
        try:
            self.kc.wait_for_ready(timeout=startup_timeout)
        except BaseException:
            self.close()
            raise

    @property
    def pid(self) -> int:
        return self.km.provisioner.process.pid

    def close(self) -> None:
        self.kc.stop_channels()
        if self.km.is_alive():
            self.km.shutdown_kernel(now=False)
        self._stderr.close()

    def __enter__(self) -> BenchKernel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run(
        self,
        code: str,
        timeout: float = 120,
        keep: bool = False,
        on_message: Callable[[dict[str, Any], float], None] | None = None,
    ) -> Run:
        """Execute ``code``; time until the execute_reply and the idle status both arrived.

        ``keep`` keeps every iopub message of the request; ``on_message(msg, arrival)``
        sees each as it arrives (``arrival`` is ``time.time()``).
        """
        kc = self.kc
        sent_at = time.time()
        start = time.perf_counter()
        msg_id = kc.execute(code, store_history=True)
        deadline = start + timeout
        reply: dict[str, Any] = {}
        messages: list[dict[str, Any]] = []
        idle = False
        while not idle:
            msg = self._get(kc.get_iopub_msg, deadline, code)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            if on_message is not None:
                on_message(msg, time.time())
            if msg["header"]["msg_type"] == "status":
                idle = msg["content"]["execution_state"] == "idle"
            elif keep:
                messages.append(msg)
        while not reply:
            msg = self._get(kc.get_shell_msg, deadline, code)
            if msg["parent_header"].get("msg_id") == msg_id:
                reply = msg
        return Run(time.perf_counter() - start, reply, messages, sent_at)

    @staticmethod
    def _get(getter: Callable[..., dict[str, Any]], deadline: float, code: str) -> dict[str, Any]:
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            raise TimeoutError(f"no answer in time for {code[:60]!r}")
        try:
            return getter(timeout=remaining)
        except queue.Empty:
            raise TimeoutError(f"no answer in time for {code[:60]!r}") from None

    def run_ok(self, code: str, timeout: float = 120, **kw: Any) -> Run:
        result = self.run(code, timeout=timeout, **kw)
        status = result.reply["content"]["status"]
        if status != "ok":
            raise RuntimeError(f"{self.name}: {code[:60]!r} failed: {result.reply['content']}")
        return result


# ----------------------------------------------------------------------------- processes
def rss(pid: int) -> int:
    """Resident set size of one process (children excluded), in bytes."""
    import psutil

    return psutil.Process(pid).memory_info().rss


def cpu_seconds(pid: int, children: bool = True) -> float:
    import psutil

    proc = psutil.Process(pid)
    total = sum(proc.cpu_times()[:2])
    if children:
        for child in proc.children(recursive=True):
            try:
                total += sum(child.cpu_times()[:2])
            except psutil.Error:
                pass
    return total


def settle(pid: int, quiet: float = 0.05, window: float = 0.5, timeout: float = 60) -> float:
    """Wait until a process tree uses less than ``quiet`` CPU-seconds per ``window``
    (background imports such as litellm's have finished); returns seconds waited."""
    start = time.perf_counter()
    last = cpu_seconds(pid)
    while time.perf_counter() - start < timeout:
        time.sleep(window)
        now = cpu_seconds(pid)
        if now - last < quiet:
            break
        last = now
    return time.perf_counter() - start


def quiet(pid: int) -> float:
    """Wait (0.05 s at least, 5 s at most) until a kernel's process tree has stopped working
    after a run: what a kernel does after its idle status must not slow down the next run
    of the other kernel in an interleaved comparison."""
    return settle(pid, quiet=0.005, window=0.05, timeout=5)


def mb(n: float) -> str:
    return f"{n / 1e6:.1f} MB"


@contextmanager
def scratch_dir(prefix: str = "oi-bench-") -> Iterator[Path]:
    import shutil

    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@contextmanager
def llm_server() -> Iterator[Any]:
    """The scripted server; a client hanging up (Open Interpreter at exit) is not news."""
    from tests.llm_server import ScriptedLLMServer

    with ScriptedLLMServer() as server:
        httpd = getattr(server, "_httpd", None)
        if httpd is not None:
            httpd.handle_error = lambda request, client_address: None
        yield server


def dump_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2, default=str), encoding="utf-8")


class PeakRSS:
    """Samples a process's RSS in a thread (every ``interval`` s) and keeps the peak."""

    def __init__(self, pid: int, interval: float = 0.01) -> None:
        import threading

        self.pid = pid
        self.interval = interval
        self.start_rss = rss(pid)
        self.peak = self.start_rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.peak = max(self.peak, rss(self.pid))
            except Exception:
                return

    def __enter__(self) -> PeakRSS:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss(self.pid))
        self.end_rss = rss(self.pid)
