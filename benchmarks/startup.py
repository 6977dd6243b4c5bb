"""Section 4: start-up.

- Time to ``kernel_info_reply``: from ``KernelManager.start_kernel()`` to the reply of one
  ``kernel_info_request`` sent as soon as the channels are up (ZeroMQ queues it until the
  kernel listens), for the Open Interpreter kernel and a plain python3 kernel, alternating.
- Time to the first LLM request on a cold kernel: right after that reply, an instruction
  is sent; the scripted server stamps the arrival of the chat request. litellm is imported
  in the background from start-up, so this shows how much of the import the user waits
  for. The same kernel's second instruction gives the warm reference.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from benchmarks.common import (
    OI_KERNEL,
    PLAIN_KERNEL,
    SectionResult,
    Summary,
    llm_server,
    oi_env,
    ratio,
    scratch_dir,
    verdict,
)

TITLE = "4. Start-up"
TARGET = 1.2


class _Started:
    """A kernel started without jupyter_client's wait_for_ready (which polls)."""

    def __init__(self, name: str, env: dict[str, str], cwd: str) -> None:
        import os

        from jupyter_client.manager import KernelManager

        self.km = KernelManager(kernel_name=name)
        self._null = open(os.devnull, "ab")  # noqa: SIM115
        t0 = time.perf_counter()
        self.km.start_kernel(
            env={**os.environ, **env}, cwd=cwd, stdout=self._null, stderr=self._null
        )
        self.kc = self.km.client()
        self.kc.start_channels()
        msg_id = self.kc.kernel_info()
        while True:
            reply = self.kc.get_shell_msg(timeout=120)
            if reply["parent_header"].get("msg_id") == msg_id:
                break
        self.to_info = time.perf_counter() - t0
        self._iopub_joined(msg_id)

    def _iopub_joined(self, msg_id: str, tries: int = 40) -> None:
        """Until IOPub is subscribed (the status of a kernel_info request arrives): a cell sent
        before that (python3's kernel does not wait for its subscriber) loses its ``idle``."""
        import queue

        for _ in range(tries):
            try:
                while True:
                    msg = self.kc.get_iopub_msg(timeout=0.25)
                    if msg["parent_header"].get("msg_id") == msg_id:
                        return
            except queue.Empty:
                msg_id = self.kc.kernel_info()

    def execute_until_idle(self, code: str, timeout: float = 120) -> None:
        msg_id = self.kc.execute(code)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = self.kc.get_iopub_msg(timeout=timeout)
            if (
                msg["parent_header"].get("msg_id") == msg_id
                and msg["header"]["msg_type"] == "status"
                and msg["content"]["execution_state"] == "idle"
            ):
                return
        raise TimeoutError(code)

    def close(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=False)
        self._null.close()


def litellm_import_seconds() -> float:
    """Wall time of ``import litellm`` in a fresh interpreter (what the cold turn waits on)."""
    import subprocess

    code = "import time; t = time.perf_counter(); import litellm; print(time.perf_counter() - t)"
    env = {**__import__("os").environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
        env=env,
    )
    return float(proc.stdout.strip().splitlines()[-1])


def measure(starts: int) -> dict[str, Any]:
    from tests import llm_server as S

    info: dict[str, list[float]] = {"ours": [], "base": []}
    cold: list[float] = []
    cold_from_start: list[float] = []
    warm: list[float] = []
    imports: list[float] = []
    with llm_server() as server, scratch_dir() as tmp:
        arrivals: list[float] = []

        def answer(body: dict) -> Any:
            arrivals.append(time.perf_counter())
            return S.text("Done.")

        server.set_fallback(answer)
        env = oi_env(server.url, str(tmp / "logs"))
        for i in range(starts):
            order = [("ours", OI_KERNEL, env), ("base", PLAIN_KERNEL, {})]
            if i % 2:
                order.reverse()
            for who, name, kenv in order:
                t0 = time.perf_counter()
                kernel = _Started(name, kenv, str(tmp))
                try:
                    info[who].append(kernel.to_info)
                    if who == "ours":
                        for bucket in (cold, warm):
                            sent = time.perf_counter()
                            before = len(arrivals)
                            kernel.execute_until_idle("say done")
                            if len(arrivals) > before:
                                bucket.append(arrivals[before] - sent)
                                if bucket is cold:
                                    cold_from_start.append(arrivals[before] - t0)
                finally:
                    kernel.close()
            imports.append(litellm_import_seconds())
    return {
        "info": info,
        "cold": cold,
        "cold_from_start": cold_from_start,
        "warm": warm,
        "litellm_import": imports,
    }


def run(quick: bool = False) -> SectionResult:
    starts = 1 if quick else 10
    result = SectionResult(TITLE)
    d = measure(starts)
    result.data = d
    ours, base = Summary.of(d["info"]["ours"]), Summary.of(d["info"]["base"])
    r = ratio(ours.median, base.median)
    result.add(
        f"start -> kernel_info_reply, median of {ours.n} starts (p90)",
        f"{ours.median:.2f} s ({ours.p90:.2f})",
        f"{base.median:.2f} s ({base.p90:.2f}) (python3)",
        f"{r:.2f}x",
        f"<= {TARGET}x",
        verdict(r, TARGET),
    )
    cold, warm, total = (
        Summary.of(d["cold"]),
        Summary.of(d["warm"]),
        Summary.of(d["cold_from_start"]),
    )
    result.add(
        "cold kernel: first instruction -> its first LLM request, median",
        f"{cold.median * 1000:.0f} ms (p90 {cold.p90 * 1000:.0f})",
        f"{warm.median * 1000:.0f} ms (second instruction, warm)",
        f"{ratio(cold.median, warm.median):.1f}x",
    )
    imp = Summary.of(d["litellm_import"])
    result.add(
        "cold kernel: process start -> first LLM request, median",
        f"{total.median:.2f} s (p90 {total.p90:.2f})",
        f"{imp.median:.2f} s (`import litellm` alone, fresh process)",
        f"{ratio(total.median, imp.median):.2f}x",
    )
    result.notes.append(
        "The first instruction is sent the moment kernel_info_reply arrives, while the "
        "wrapper is still importing litellm in a background thread and starting the child "
        "kernel; 'cold' is how long the user waits for the request to leave."
    )
    return result


if __name__ == "__main__":
    from benchmarks.run_all import print_section

    print_section(run(quick="--quick" in sys.argv))
