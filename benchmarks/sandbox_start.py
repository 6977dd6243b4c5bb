"""Section 8: sandboxed child start-up, the deny-by-default sandbox against the previous one.

Each run starts a sandboxed child exactly as the wrapper does (``ChildKernel._start``:
``AsyncKernelManager.start_kernel`` -> ``wait_for_ready``), then checks it answers
``print(6*7)``:

- ``new``: the current sandbox (deny-by-default root, the launcher's Landlock + seccomp,
  socket pinning, the planted-socket check);
- ``previous``: the sandbox before issue 24 (``--ro-bind / /`` minus a list, ``python -m
  ipykernel_launcher`` inside), rebuilt here from that version's code so both run in the
  same process on the same machine;
- ``plain``: no sandbox, for reference.

Modes are interleaved (the order rotates each round) after one warm-up each; the ratio is
of medians. The one-off costs (cached per wrapper process: asking the child's Python where
it lives, the /etc scan, the bwrap probe) are timed separately.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import SectionResult, Summary, ratio, scratch_dir, verdict  # noqa: E402

TITLE = "8. Sandboxed child start-up"
TARGET = 1.10
_HIDDEN_IN_HOME = (".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".config/gh", ".kube",
                   ".docker", ".netrc", ".git-credentials", ".pypirc", ".npmrc")


def previous_argv(bwrap: str, workspace: str, private_dir: str, home: str, empty: str,
                  resource_dir: str) -> list[str]:
    """The bwrap argv of the sandbox before issue 24 (oi_kernel/execution/sandbox.py at
    28c14f0: ``bwrap_argv`` with the inputs ``write_child_spec`` gave it)."""
    from jupyter_core.paths import jupyter_runtime_dir

    import oi_kernel

    candidates = [sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable)),
                  os.path.dirname(os.path.dirname(os.path.abspath(oi_kernel.__file__))),
                  *sys.path, resource_dir]
    readonly: list[str] = []
    for path in sorted({os.path.realpath(p) for p in candidates if p}, key=len):
        if os.path.isdir(path) and any(path.startswith(m + "/") for m in ("/tmp", "/run")):
            if not any(path == f or path.startswith(f + "/") for f in readonly):
                readonly.append(path)
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--tmpfs", "/tmp", "--tmpfs", "/run"]
    for path in readonly:
        argv += ["--ro-bind", path, path]
    argv += ["--bind", workspace, workspace, "--bind", private_dir, private_dir]
    runtime = jupyter_runtime_dir()
    if os.path.isdir(runtime):
        argv += ["--tmpfs", runtime]
    for rel in _HIDDEN_IN_HOME:
        path = os.path.join(home, rel)
        if os.path.lexists(path):
            argv += ["--tmpfs", path] if os.path.isdir(path) else ["--ro-bind", empty, path]
    argv += ["--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
             "--die-with-parent", "--new-session", "--unsetenv", "JPY_PARENT_PID",
             "--chdir", workspace, "--"]
    return argv


def _child_class() -> Any:
    from oi_kernel.execution.child import ChildKernel

    class PreviousSandbox(ChildKernel):
        """A child started with the previous sandbox's kernelspec."""

        def _launch_options(self, cwd: str) -> tuple[dict[str, Any], dict[str, Any]]:
            import json

            from jupyter_client.kernelspec import KernelSpecManager

            from oi_kernel.execution.childspec import _base_spec, resolve_python
            from oi_kernel.execution.sandbox import child_env, require_bwrap

            assert self._dir is not None
            base = _base_spec(self.kernel_name)
            root = Path(self._dir, "spec")
            (root / "oi-child").mkdir(parents=True)
            empty = root / "empty"
            empty.write_bytes(b"")
            argv = previous_argv(require_bwrap(), os.path.realpath(cwd), self._dir,
                                 os.path.expanduser("~"), str(empty), base.resource_dir)
            spec = {"argv": argv + resolve_python(base.argv), "display_name": "previous",
                    "language": "python", "interrupt_mode": "message", "env": {},
                    "metadata": {}}
            (root / "oi-child" / "kernel.json").write_text(json.dumps(spec))
            self.sandboxed = True
            return ({"kernel_name": "oi-child",
                     "kernel_spec_manager": KernelSpecManager(kernel_dirs=[str(root)])},
                    {"env": child_env(os.environ)})

    return ChildKernel, PreviousSandbox


async def _one(cls: Any, sandbox: bool, workspace: str) -> float:
    child = cls(sandbox=sandbox, cwd=workspace)
    outputs: list[str] = []
    child.on_iopub = lambda msg: outputs.append(str(child.unpack(msg["content"]).get("text")))
    started = time.perf_counter()
    try:
        await child.start_soon()
        took = time.perf_counter() - started
        await child.execute("print(6*7)")
        if "42\n" not in outputs:
            raise RuntimeError(f"the child did not answer: {outputs}")
        return took
    finally:
        await child.shutdown()


def one_offs() -> dict[str, float]:
    """Seconds of the parts cached per wrapper process, measured cold."""
    from oi_kernel.execution import sandbox, sandbox_root

    for cached in (sandbox.unavailable, sandbox_root.python_dirs, sandbox_root.sensitive_etc):
        cached.cache_clear()
    timings = {}
    for name, call in (
        ("bwrap check", lambda: sandbox.unavailable()),
        ("ask the child's Python where it lives", lambda: sandbox_root.python_dirs(
            sys.executable, "", os.path.expanduser("~"))),
        ("scan /etc for sensitive files", sandbox_root.sensitive_etc),
    ):
        started = time.perf_counter()
        call()
        timings[name] = time.perf_counter() - started
    return timings


def measure(runs: int) -> dict[str, Any]:
    new_cls, previous_cls = _child_class()
    modes = {"new": (new_cls, True), "previous": (previous_cls, True), "plain": (new_cls, False)}
    times: dict[str, list[float]] = {m: [] for m in modes}
    first = one_offs()

    async def go(workspace: str) -> None:
        for cls, sandbox in modes.values():  # warm-up: page cache, caches, bytecode
            await _one(cls, sandbox, workspace)
        order = list(modes)
        for i in range(runs):
            for name in order[i % 3:] + order[:i % 3]:
                cls, sandbox = modes[name]
                times[name].append(await _one(cls, sandbox, workspace))

    with scratch_dir("oi-bench-ws-") as tmp:
        asyncio.run(go(str(tmp)))
    return {"times": times, "one_offs": first}


def run(quick: bool = False) -> SectionResult:
    from oi_kernel.execution import sandbox

    result = SectionResult(TITLE)
    if sandbox.unavailable():
        result.skipped = f"no sandbox here: {sandbox.unavailable()}"
        return result
    d = measure(1 if quick else 20)
    result.data = d
    new, old, plain = (Summary.of(d["times"][m]) for m in ("new", "previous", "plain"))
    r = ratio(new.median, old.median)
    result.add(
        f"start -> ready, median of {new.n} interleaved starts (p90)",
        f"{new.median * 1000:.0f} ms ({new.p90 * 1000:.0f})",
        f"{old.median * 1000:.0f} ms ({old.p90 * 1000:.0f}) (previous sandbox)",
        f"{r:.3f}x", f"<= {TARGET}x", verdict(r, TARGET),
    )
    result.add("the same, no sandbox (reference)", f"{plain.median * 1000:.0f} ms",
               "", f"{ratio(new.median, plain.median):.3f}x (new / none)")
    result.notes.append("One-off, cached per wrapper process (cold): " + ", ".join(
        f"{name} {secs * 1000:.0f} ms" for name, secs in d["one_offs"].items()) + ".")
    return result


if __name__ == "__main__":
    from benchmarks.run_all import print_section

    print_section(run(quick="--quick" in sys.argv))
