"""The child IPython kernel: its lifecycle, and the message pump between it and us.

The child is started through jupyter_client's ``AsyncKernelManager`` with a
kernelspec (so its provisioner decides how and where it runs), over ``ipc``
sockets in a private 0700 directory, with unsigned messages (see ``_start``). One
persistent task reads each of the child's iopub, shell and stdin channels and
dispatches by parent ``msg_id``; a single watchdog notices when the child dies.
The owner (the wrapper kernel) receives every iopub message through ``on_iopub``
and re-parents it; output messages arrive with their content still packed
(``PACKED_TYPES``), so relaying them costs no JSON decoding or encoding.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
from typing import Any

from traitlets import Bool, Float, Unicode, validate

from oi_kernel import config
from oi_kernel.errors import ChildDiedError, ChildKernelError
from oi_kernel.execution.exchange import Exchange, InputHandler, IopubHandler
from oi_kernel.execution.gateway_options import GatewayOptions
from oi_kernel.execution.wire import PACKED_TYPES, Pending, next_msg

HISTORY_BATCH = 20  # cells per write to the child's IPython history.sqlite (see _start)


def _runs_locally(km: Any) -> bool:
    """Whether the kernel manager starts its kernel here, on our ipc sockets (the local
    provisioner), rather than through a provisioner that may run it elsewhere."""
    from jupyter_client.provisioning import KernelProvisionerFactory

    try:
        metadata = km.kernel_spec.metadata or {}
    except Exception:  # no such kernelspec: start_kernel reports it
        return False
    name = (metadata.get("kernel_provisioner") or {}).get("provisioner_name")
    name = name or KernelProvisionerFactory.instance().default_provisioner_name
    return km.transport == "ipc" and name == "local-provisioner"


def _kernel_manager(ipc: str, spec_kw: dict[str, Any], start_kw: dict[str, Any]) -> Any:
    """The child's kernel manager, on ipc sockets in ``ipc``; a local child gets an unsigned
    link and no sleep after each execution (its start options in ``start_kw``)."""
    from jupyter_client.manager import AsyncKernelManager

    km = AsyncKernelManager(
        **spec_kw,
        transport="ipc",
        ip=os.path.join(ipc, "k"),
        connection_file=os.path.join(ipc, "kernel.json"),
    )
    if _runs_locally(km):
        # An unsigned link: the sockets are ipc files in our private 0700 directory, so
        # whoever can reach them is our user and can read the key in kernel.json too;
        # signing would protect nothing. It cost an HMAC of every message on both
        # sides (18 ms for a 20 MB output; benchmarks/throughput.py). ipykernel
        # accepts unsigned messages when its key is empty.
        km.session.key = b""
        # No sleep after each execution: ipykernel sleeps 0.5 ms before replying in
        # case late output would otherwise reach a client after the reply. We wait
        # for the child's idle status instead, which follows all of its output on
        # the same socket, so the sleep only delayed every cell and step.
        # IPython's history.sqlite gets the code in batches (HISTORY_BATCH), the rest at
        # shutdown: a transaction per cell cost the child ~1.5 ms of CPU per cell.
        start_kw["extra_arguments"] = [
            "--Kernel._execute_sleep=0", f"--HistoryManager.db_cache_size={HISTORY_BATCH}"]
    return km


class ChildKernel(config.Remembered, Exchange, GatewayOptions):
    """A child kernel that runs the approved code, so variables persist across turns.

    This one runs on this machine; ``execution.placement.new_child_kernel`` picks the
    gateway's instead when ``gateway_url`` is set. Its environment variables (each trait's
    ``env`` tag, the gateway's too) are read by the resolver's environment step
    (``config.apply_environment``).
    """

    kernel_name = Unicode(
        "python3",
        config=True,
        help="Kernelspec name of the child kernel that runs approved code. It must be an "
        "IPython kernel (cell magics run the other languages). Env: OI_CHILD_KERNEL.",
    ).tag(env="OI_CHILD_KERNEL")

    startup_timeout = Float(
        60.0,
        config=True,
        help="Seconds to wait for the child kernel to answer after starting. "
        "Env: OI_CHILD_STARTUP_TIMEOUT.",
    ).tag(env="OI_CHILD_STARTUP_TIMEOUT", env_min=0.1)

    @validate("sandbox")
    def _within_policy(self, proposal: Any) -> Any:
        return config.check_floor(self, "sandbox", proposal["value"])

    watchdog_interval = Float(
        0.25, config=True, help="Seconds between checks that the child kernel is still alive."
    )
    cwd = Unicode("", config=True, help="Working directory of the child kernel; empty means ours.")
    sandboxed = Bool(False, help="Whether the running child is confined (set when it starts).")
    sandbox = Bool(
        config=True,
        help="Run the child kernel inside bubblewrap with a deny-by-default view: system and "
        "Python directories read-only, the working directory writable, a private /tmp and an "
        "empty $HOME, nothing else unless granted (c.Sandbox.read_paths / write_paths); no "
        "network, no unix socket outside its own, secret environment variables removed. "
        "Refuses to start (never runs unconfined) where bwrap, user namespaces or seccomp are "
        "missing. Env: OI_SANDBOX=1. Magic: %sandbox on|off|allow PATH [--write].",
    ).tag(env="OI_SANDBOX")

    memory_limit = Unicode(
        config=True,
        help="Cap on the child kernel's address space (RLIMIT_AS), e.g. '2G', '512M' or bytes; "
        "empty or 0: no cap. A runaway allocation then raises MemoryError and the kernel lives. "
        "Libraries that reserve much virtual memory (many BLAS threads) need a higher cap. "
        "Env: OI_MEMORY_LIMIT.",
    ).tag(env="OI_MEMORY_LIMIT")

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.on_iopub: IopubHandler = lambda msg: None
        self.on_input: InputHandler | None = None
        self.km: Any = None
        self.kc: Any = None
        self._dir: str | None = None
        self._spec: Any = None  # the derived kernelspec of the running child (childspec)
        from oi_kernel.execution.sandbox import Sandbox

        self.grants = Sandbox(parent=self)
        # Never visible to the sandboxed child, even in the workspace or a grant (the
        # session log's directory, the wrapper's connection file): set by the front door.
        self.protected_paths: list[str] = []
        self._pending: dict[str, Pending] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._starting: asyncio.Task[None] | None = None
        self._dead_reason = ""
        self.restarts = 0

    # ----------------------------------------------------------------- lifecycle
    @property
    def where(self) -> str:
        """Where the code runs, in words (``%status``)."""
        return "in a sandbox on this machine" if self.sandbox else "on this machine"

    @property
    def workdir(self) -> str:
        """The working directory the code runs in (for the system prompt)."""
        return self.cwd or os.getcwd()

    def start_soon(self) -> asyncio.Task[None]:
        """Start the child in the background (idempotent); await the task to wait for it."""
        if self._starting is None or (self._starting.done() and not self.is_running):
            self._starting = asyncio.ensure_future(self._start())
        return self._starting

    async def ensure_running(self) -> bool:
        """Wait for a running child, starting a new one if it died. True when restarted."""
        if self._starting is not None and not self._starting.done():
            await asyncio.shield(self._starting)  # an interrupted cell must not kill the start
        if self.is_running:
            return False
        restarted = self.km is not None
        if restarted:
            await self._cleanup()
            self.restarts += 1
        await asyncio.shield(self.start_soon())
        return restarted

    async def _start(self) -> None:
        self._dead_reason = ""
        self._dir = tempfile.mkdtemp(prefix="oi-")  # 0700; short path for ipc sockets
        ipc = os.path.join(self._dir, "ipc")
        os.mkdir(ipc, 0o700)
        try:
            spec_kw, start_kw = self._launch_options(self.cwd or os.getcwd())
        except Exception:
            await self._cleanup()
            raise
        self.km = km = _kernel_manager(ipc, spec_kw, start_kw)
        spec = self._spec
        try:
            await km.start_kernel(cwd=self.cwd or os.getcwd(), **start_kw)
            if spec is not None and spec.sandboxed:
                await spec.pin(km, self.startup_timeout)  # before any code runs
            kc = km.client()
            kc.start_channels()
            await kc.wait_for_ready(timeout=self.startup_timeout)
            if spec is not None:
                spec.verify()
        except Exception as exc:
            refused = spec.failed(str(exc)) if spec is not None and spec.refusal() else None
            await self._cleanup()
            if isinstance(exc, ChildKernelError) or refused is not None:
                raise (refused or exc) from exc
            raise ChildKernelError(
                f"The child kernel '{self.kernel_name}' did not start: {exc}\n"
                "Check that the kernelspec exists (`jupyter kernelspec list`) and starts on its "
                "own, or choose another with OI_CHILD_KERNEL / c.ChildKernel.kernel_name. "
                f"If it is only slow to start, wait longer than {self.startup_timeout:g} s with "
                "OI_CHILD_STARTUP_TIMEOUT / c.ChildKernel.startup_timeout."
            ) from exc
        self.kc = kc
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._read_iopub()),
            loop.create_task(self._read_shell()),
            loop.create_task(self._read_stdin()),
            loop.create_task(self._watchdog()),
        ]
        self.log.info("child kernel %s started in %s", self.kernel_name, self._dir)

    def _launch_options(self, cwd: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """Kernel-manager and start_kernel options: the configured kernelspec as is, or one
        derived from it in our private directory (sandbox and/or memory limit)."""
        self.sandboxed = False
        try:
            from oi_kernel.execution.limits import parse_size

            memory = parse_size(self.memory_limit)
        except ValueError as exc:
            raise ChildKernelError(f"c.ChildKernel.memory_limit / OI_MEMORY_LIMIT: {exc}") from exc
        if not (self.sandbox or memory):
            return {"kernel_name": self.kernel_name}, {}
        from jupyter_client.kernelspec import KernelSpecManager

        from oi_kernel.execution.childspec import write_child_spec
        from oi_kernel.execution.sandbox import child_env

        assert self._dir is not None
        self._spec = spec = write_child_spec(
            self._dir, self.kernel_name, workspace=cwd, sandbox=self.sandbox,
            memory_limit=memory, grants=self.grants, protected=self.protected_paths)
        for note in spec.notes:
            self.log.warning("sandbox: %s", note)
        spec_kw = {"kernel_name": spec.name,
                   "kernel_spec_manager": KernelSpecManager(kernel_dirs=[spec.spec_root])}
        self.sandboxed = spec.sandboxed
        return spec_kw, ({"env": child_env(os.environ)} if self.sandbox else {})

    async def shutdown(self) -> None:
        """Stop the child and remove its private directory."""
        if self._starting is not None and not self._starting.done():
            self._starting.cancel()
            with contextlib.suppress(BaseException):
                await self._starting
        await self._cleanup(graceful=True)

    async def _cleanup(self, graceful: bool = False) -> None:
        for task in self._tasks:
            task.cancel()
        self._tasks = []
        self._fail_pending(ChildDiedError("The child kernel was shut down."))
        kc, km, self.kc, self.km = self.kc, self.km, None, None
        if kc is not None:
            kc.stop_channels()
        if km is not None and kc is None:
            # Never ready (`exit` typed at once): a SIGINT from jupyter_client's shutdown would
            # print a KeyboardInterrupt traceback of its imports; it has nothing to save.
            with contextlib.suppress(Exception):
                if await km.is_alive() and _runs_locally(km):
                    await km.signal_kernel(9)  # SIGKILL
        if km is not None:
            with contextlib.suppress(Exception):
                if graceful and await km.is_alive():
                    await asyncio.wait_for(km.shutdown_kernel(now=False), 5)
            with contextlib.suppress(Exception):
                if await km.is_alive():
                    await km.shutdown_kernel(now=True)
            with contextlib.suppress(Exception):
                await km.cleanup_resources()
        if self._spec is not None:
            self._spec.close()
            self._spec = None
        if self._dir:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    async def interrupt(self) -> None:
        """Forward an interrupt (signal or message, as the kernelspec says)."""
        if self.km is not None and self.is_running:
            with contextlib.suppress(Exception):
                await self.km.interrupt_kernel()

    # ----------------------------------------------------------------- pumps
    # Each reader only reads; what a message means is decided by ``Exchange``'s ``_iopub``,
    # ``_reply`` and ``_input_value``, which a transport with one stream of messages (the
    # gateway's websocket, ``execution.gateway``) calls the same way.
    async def _read_iopub(self) -> None:
        channel = self.kc.iopub_channel
        while True:
            self._iopub(await next_msg(channel, PACKED_TYPES))

    async def _read_shell(self) -> None:
        channel = self.kc.shell_channel
        while True:
            self._reply(await next_msg(channel))

    async def _read_stdin(self) -> None:
        channel = self.kc.stdin_channel
        while True:
            msg = await next_msg(channel)
            if msg["header"]["msg_type"] != "input_request":
                continue
            value = await self._input_value(msg)
            if self.kc is not None:
                self.send("input_reply", {"value": value}, channel="stdin")

    async def _watchdog(self) -> None:
        while True:
            await asyncio.sleep(self.watchdog_interval)
            km = self.km
            if km is None:
                return
            if not await km.is_alive():
                code = None
                with contextlib.suppress(Exception):
                    code = km.provisioner.process.returncode  # type: ignore[union-attr]
                self._died(
                    "The child kernel died"
                    + (f" (exit code {code})" if code is not None else "")
                    + ". Its variables were lost; it restarts on the next cell."
                )
                return

