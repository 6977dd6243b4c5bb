"""OIKernel: the Jupyter protocol side of the Open Interpreter kernel.

Each cell is an instruction for the engine, a direct cell (``%%python`` body or
``!`` shell lines) for the child kernel, or line magics. Everything the child
prints is re-parented to the cell that caused it. The kernel always replies:
on failure exactly one ``error`` message and ``status: error``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
import traceback
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import zmq
from ipykernel.kernelbase import Kernel
from traitlets import Enum, Instance, default

from . import __version__, config
from .approval import StdinApprover
from .card import WidgetApprover
from .child import ChildKernel
from .engine import Engine, ExecResult
from .errors import ChildDiedError, OIError
from .frontend_comm import FrontendComms
from .llm import LLM, warm_up
from .magics_kernel import KernelMagics
from .runner import ChildRunner, Execution
from .view import TurnView
from .widget_state import StateMerger

_OUTPUT_TYPES = {
    "stream",
    "display_data",
    "update_display_data",
    "execute_result",
    "error",
    "clear_output",
}
_COMM_TYPES = {"comm_open", "comm_msg", "comm_close"}
LOG_DELAY_S = 0.01  # see OIKernel._log_later


def _skip_empty_flushes(*streams: Any) -> None:
    """ipykernel flushes stdout and stderr around every request, each a round trip to its
    IOPub thread (~0.3 ms). The wrapper seldom prints: flush only when something was
    written since the last flush (the IOPub thread sends in order, so nothing overtakes)."""
    for stream in streams:
        if not hasattr(stream, "_flush_pending"):
            continue  # not ipykernel's OutStream (e.g. under a test runner)
        flush = stream.flush

        def flush_if_pending(stream: Any = stream, flush: Any = flush) -> None:
            if stream._flush_pending or getattr(stream, "_subprocess_flush_pending", False):
                flush()

        stream.flush = flush_if_pending


class OIKernel(Kernel):
    """A kernel whose cells are natural-language instructions."""

    implementation = "oi_kernel"
    implementation_version = __version__
    banner = (
        "Open Interpreter: write what you want done; the model writes code, you approve it, "
        "it runs in a Python kernel. %help lists the magics."
    )
    language_info = {
        "name": "markdown",
        "mimetype": "text/markdown",
        "file_extension": ".md",
        "codemirror_mode": "markdown",
        "pygments_lexer": "markdown",
    }
    help_links = [{"text": "oi_kernel README", "url": "https://pypi.org/project/oi-kernel/"}]

    child = Instance(ChildKernel)
    engine = Instance(Engine)

    approval_ui = Enum(
        ["auto", "widget", "stdin"],
        config=True,
        help="How approval is asked: 'widget' (the approval card), 'stdin' (a y/N prompt), or "
        "'auto': the card when the frontend renders widgets (it opened the widget control "
        "comm, as JupyterLab and VS Code do), else stdin. Env: OI_APPROVAL_UI.",
    )

    @default("approval_ui")
    def _approval_ui_default(self) -> str:
        help_text = self.traits()["approval_ui"].help
        choices = ["auto", "widget", "stdin"]
        return config.env_choice("OI_APPROVAL_UI", choices, "auto", help=help_text)

    def _load_config(self, cfg: Any, section_names: Any = None, traits: Any = None) -> None:
        """A bad value in the config is reported and ignored (see oi_kernel.config)."""
        config.load_config_tolerantly(self, super()._load_config, cfg, section_names, traits)

    def _show_config_warnings(self) -> None:
        """Settings that were ignored (bad environment or config values): say so, once."""
        if not getattr(self, "_config_checked", False):
            self._config_checked = True
            for obj in (self, self.engine, self.engine.llm, self.child):
                with contextlib.suppress(Exception):
                    obj.trait_values(config=True)  # evaluates the env defaults now
        problems = config.take_warnings()
        if problems:
            text = "".join(f"- {p}\n" for p in problems)
            self.publish("stream", {"name": "stderr", "text": "Configuration problems "
                                    f"(the defaults are used instead):\n{text}"})

    @default("_execute_sleep")
    def _execute_sleep_default(self) -> float:
        """No sleep after each execute: it guards stdout of user code, which runs in the
        child (whose own kernel keeps it); here it only added latency (benchmarks/)."""
        return 0.0

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._setup_comms()
        self.child = ChildKernel(parent=self, log=self.log)
        self.runner = ChildRunner(
            self.child, on_restart=self._on_child_restart, forward=self._on_child_iopub,
            request=self._child_request_id,
        )
        self.child.on_input = self._on_child_input
        self._widget_frontend = False
        self.approver = WidgetApprover(
            self.publish, self._use_widgets,
            fallback=StdinApprover(self.ask_stdin, lambda: self._allow_stdin),
        )
        self.engine = Engine(
            executor=self.runner,
            approver=self.approver,
            parent=self,
            log=self.log,
            llm=LLM(parent=self),
        )
        from .profiles import apply_startup

        apply_startup(self.engine, child=self.child)  # OI_PROFILE / c.Profile.name
        self.magics = KernelMagics(self)
        self.frontend = FrontendComms(self.engine, lambda: self.session_log.path)
        self.frontend.register_target(self.comm_manager)  # before any frontend opens it
        self._parent_msg: dict[str, Any] = {}
        self._parent_ident: Any = None
        self._allow_stdin = False
        self._routes: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._child_comms: set[str] = set()
        self._states = StateMerger(self._send_comm_msg)
        self._task: asyncio.Task[Any] | None = None
        self._instructions: list[tuple[int, str]] = []
        self._session_log: Any = None
        self._log_queue: list[tuple[str, Callable[[], dict[str, Any]]]] = []
        self._log_failure = ""
        self._early: Execution | None = None  # a direct cell started by set_parent
        self._early_seen: str | None = None  # the msg_id of the latest execute_request
        self._last_payload: list[dict[str, Any]] = []
        self._llm_warming = False

    # ------------------------------------------------------------------ set-up
    def _setup_comms(self) -> None:
        import comm
        import ipykernel.ipkernel  # noqa: F401  (makes comm.create_comm real, see ARCHITECTURE)

        self.comm_manager = comm.get_comm_manager()
        for msg_type in _COMM_TYPES:
            self.shell_handlers[msg_type] = getattr(self, f"_{msg_type}")

    def _use_widgets(self) -> bool:
        if self.approval_ui == "auto":
            return self._widget_frontend
        return self.approval_ui == "widget"

    def _ensure_widget_targets(self) -> None:
        """Register ipywidgets' comm targets (imported lazily: it is not cheap)."""
        if "jupyter.widget" not in self.comm_manager.targets:
            import ipywidgets

            ipywidgets.register_comm_target()

    def start(self) -> None:
        super().start()
        _skip_empty_flushes(sys.stdout, sys.stderr)
        signal.signal(signal.SIGINT, self._on_sigint)
        self.io_loop.add_callback(self._start_background)

    def _start_background(self) -> None:
        self._loop = asyncio.get_running_loop()
        task = self.child.start_soon()
        task.add_done_callback(lambda t: t.cancelled() or t.exception())  # reported on use
        self.io_loop.call_later(1.0, self._warm_up_llm)  # if no kernel_info_request came

    def _warm_up_llm(self) -> None:
        """Start importing litellm in the background, once: ``warm_up()`` waits for the
        import to finish if called again while it runs."""
        if not self._llm_warming:
            self._llm_warming = True
            warm_up()

    async def kernel_info_request(self, stream: Any, ident: Any, parent: dict[str, Any]) -> None:
        """Reply first, then import litellm in the background: the import holds the GIL for
        seconds, and the first cell would wait on it (benchmarks/startup.py)."""
        await super().kernel_info_request(stream, ident, parent)
        self._warm_up_llm()

    @property
    def kernel_info(self) -> dict[str, Any]:
        """The base class's reply without the "debugger" feature: the wrapper has no
        debugger (its kernelspec says so), and checking for debugpy imports it, ~0.16 s
        of every start-up (benchmarks/startup.py)."""
        from ipykernel import kernel_protocol_version

        return {
            "protocol_version": kernel_protocol_version,
            "implementation": self.implementation,
            "implementation_version": self.implementation_version,
            "language_info": self.language_info,
            "banner": self.banner,
            "help_links": self.help_links,
            "supported_features": ["kernel subshells"] if self._supports_kernel_subshells else [],
        }

    def set_parent(self, ident: Any, parent: Any, channel: str = "shell") -> None:
        """Give ``print`` in the wrapper the request's parent (else frontends drop it),
        and start a direct cell in the child (``_start_early``)."""
        super().set_parent(ident, parent, channel)
        if channel == "shell":
            for stream in (sys.stdout, sys.stderr):
                if hasattr(stream, "set_parent"):
                    stream.set_parent(parent)
            header = parent.get("header") or {}
            msg_id = header.get("msg_id")
            if header.get("msg_type") == "execute_request" and msg_id != self._early_seen:
                self._early_seen = msg_id  # set_parent also restores a running cell's parent
                if self._early is not None:  # started, but its request was never handled
                    self.runner.discard(self._early)
                self._early = None
                with contextlib.suppress(Exception):  # anything odd: run_direct starts it
                    self._early = self._start_early(parent)

    def _start_early(self, parent: dict[str, Any]) -> Execution | None:
        """Send a ``%%python`` cell to the child as soon as its request is read, before
        ipykernel publishes busy and execute_input and calls ``do_execute``: the child
        starts while we do that bookkeeping (0.3–0.4 ms of a round trip,
        benchmarks/overhead.py). Its output cannot overtake busy and execute_input: it
        is only forwarded once the request's handler awaits, inside ``do_execute``.

        None when the request is not such a cell, will not run (silent, aborted after an
        error, a subshell's) or a restart is due: ``run_direct`` then starts it."""
        content = parent.get("content") or {}
        header = parent.get("header") or {}
        if content.get("silent") or header.get("subshell_id") or getattr(self, "_aborting", 0):
            return None
        code = str(content.get("code", "")).lstrip()
        if not code.startswith("%%python") or not header.get("msg_id") or not self.runner.ready:
            return None
        self._route(header["msg_id"], parent)
        body = code.split("\n", 1)[1] if "\n" in code else ""
        allow_stdin = bool(content.get("allow_stdin"))
        return self.runner.start(body, msg_id=header["msg_id"], allow_stdin=allow_stdin)

    def pre_handler_hook(self) -> None:
        """Keep our own SIGINT handler (the base one would raise inside the event loop)."""

    def post_handler_hook(self) -> None:
        pass

    # ------------------------------------------------------------------ session log
    @property
    def session_log(self) -> Any:
        if self._session_log is None:
            from .redact import secret_values_from_env
            from .session_log import SessionLog

            self._session_log = SessionLog(
                secrets=[*self.engine.llm.secrets(), *secret_values_from_env()]
            )
            self._session_log.write(
                "session_start",
                kernel="open-interpreter",
                model=self.engine.llm.model,
                child_kernel=self.child.kernel_name,
                cwd=os.getcwd(),
                oi_version=__version__,
                python=sys.version.split()[0],
            )
            self.engine.log_sink = self._session_log
        return self._session_log

    def _log_later(self, event: str, fields: Callable[[], dict[str, Any]]) -> None:
        """Write a session-log event ``LOG_DELAY_S`` after the cell has replied: decoding,
        redacting and encoding a large output took tens of ms before the reply, and
        started at once it held the GIL that the threads sending the reply and idle
        need. ``fields`` is called then. The next request or the shutdown first writes
        what is still queued, so the log keeps its order."""
        self._log_queue.append((event, fields))

    def _flush_log(self) -> None:
        queue, self._log_queue = self._log_queue, []
        for event, fields in queue:
            try:
                self.session_log.write(event, **fields())
            except Exception as exc:  # the cell has replied: say so in the next one
                self.log.error("session log write failed: %s", exc)
                self._log_failure = str(exc)

    def _report_log_failure(self) -> None:
        if self._log_failure:
            text, self._log_failure = self._log_failure, ""
            self.publish("stream", {"name": "stderr", "text": f"Session log: {text}\n"})

    # ------------------------------------------------------------------ publishing
    def publish(self, msg_type: str, content: dict[str, Any], **kw: Any) -> None:
        """Send an iopub message as part of the current cell."""
        self.session.send(self.iopub_socket, msg_type, content, parent=self._parent_msg, **kw)

    def publish_error(self, ename: str, evalue: str, tb: list[str]) -> dict[str, Any]:
        content = {"ename": ename, "evalue": evalue, "traceback": tb}
        self.publish("error", content)
        return {"status": "error", "execution_count": self.execution_count, **content}

    # ------------------------------------------------------------------ execute
    async def do_execute(
        self,
        code: str,
        silent: bool,
        store_history: bool = True,
        user_expressions: dict[str, Any] | None = None,
        allow_stdin: bool = False,
        *,
        cell_meta: dict[str, Any] | None = None,
        cell_id: str | None = None,
    ) -> dict[str, Any]:
        self._parent_msg = self.get_parent("shell")
        self._parent_ident = self._get_shell_context_var(self._shell_parent_ident)
        self._allow_stdin = allow_stdin
        ok = {
            "status": "ok",
            "execution_count": self.execution_count,
            "payload": [],
            "user_expressions": {},
        }
        self._flush_log()
        self._report_log_failure()
        if not code.strip():
            return ok
        if store_history:
            self._instructions.append((self.execution_count, code))
        try:  # before any await: the output of a cell started early comes after it
            self._show_config_warnings()
        except Exception:
            self.log.exception("could not show the configuration problems")
        self._task = asyncio.ensure_future(self._dispatch(code))
        try:
            result = await self._task
        except asyncio.CancelledError:
            return self.publish_error(
                "KeyboardInterrupt",
                "Interrupted by the user.",
                ["KeyboardInterrupt: interrupted by the user."],
            )
        except OIError as exc:
            return self.publish_error(type(exc).__name__, str(exc), str(exc).splitlines())
        except Exception as exc:  # a bug of ours: say so, keep the kernel alive
            self.log.exception("unexpected error in a cell")
            return self.publish_error(
                type(exc).__name__,
                str(exc),
                [
                    "Internal error in oi_kernel (please report it):",
                    *traceback.format_exc().splitlines(),
                ],
            )
        finally:
            self._task = None
            if self._early is not None:  # started but not awaited (a bug): stop collecting
                self.runner.discard(self._early)
                self._early = None
            if self._log_queue:
                asyncio.get_running_loop().call_later(LOG_DELAY_S, self._flush_log)
        if result is not None:
            return result
        return ok

    async def _dispatch(self, code: str) -> dict[str, Any] | None:
        stripped = code.lstrip()
        if stripped.startswith("%%python"):
            body = stripped.split("\n", 1)[1] if "\n" in stripped else ""
            return await self.run_direct("python", body)
        lines = [ln for ln in code.strip().splitlines() if ln.strip()]
        if all(ln.lstrip().startswith("!") for ln in lines):
            return await self.run_direct("shell", "\n".join(ln.lstrip() for ln in lines))
        if all(ln.lstrip().startswith("%") for ln in lines):
            for line in lines:
                await self.magics.run(line.strip())
            return None
        await self.run_instruction(code.strip())
        return None

    async def run_instruction(self, instruction: str) -> None:
        _ = self.session_log
        if self._use_widgets():
            self._ensure_widget_targets()
        view = TurnView(self.publish, shows_code=not self._use_widgets())
        cell_id = self._parent_msg.get("metadata", {}).get("cellId")
        await self.engine.run_turn(instruction, self.frontend.watch(view, cell_id))

    async def run_direct(self, kind: str, code: str) -> dict[str, Any] | None:
        """A cell that bypasses the LLM: run it in the child as is. Its record, outputs
        included, is logged after the reply: decoding a large output first delayed it."""
        started = time.monotonic()
        run: Execution | None = None
        self._last_payload = []
        try:
            run = await self._start_in_child(code)
        except ChildDiedError as exc:
            result = ExecResult("died", [], str(exc))
        else:
            result = await self.runner.finish(run, collect=False)
            self._last_payload = self.runner.last_payload
        _ = self.session_log  # opened now: a log that cannot be opened fails this cell
        duration = round(time.monotonic() - started, 4)
        self._log_later("direct", lambda: {
            "kind": kind,
            "code": code,
            "status": result.status,
            "outputs": run.collector.outputs if run is not None else [],
            "duration_s": duration,
        })
        if result.status == "died":
            raise ChildDiedError(result.message)
        if result.status == "ok" and self._last_payload:  # e.g. the pager for `print?`
            return {"status": "ok", "execution_count": self.execution_count,
                    "payload": self._last_payload, "user_expressions": {}}
        if result.status == "error":
            err = run.content if run is not None else {}  # the child's execute_reply
            return {
                "status": "error",
                "execution_count": self.execution_count,
                "ename": err.get("ename", "Error"),
                "evalue": err.get("evalue", ""),
                "traceback": err.get("traceback", []),
            }
        return None

    async def _start_in_child(self, code: str) -> Execution:
        """The cell's execution in the child: the one ``set_parent`` started, or a new
        one. Its request reuses the cell's msg_id, so widgets' Output capture and
        echo_update work for widgets that user code creates in the child."""
        msg_id, _ = self._child_request_id()
        early, self._early = self._early, None
        if early is not None and early.msg_id == msg_id:
            return early
        if early is not None:
            self.runner.discard(early)
        await self.runner.prepare()
        return self.runner.start(code, msg_id=msg_id, allow_stdin=self._allow_stdin)

    def _child_request_id(self) -> tuple[str | None, bool]:
        """The cell's msg_id (routed back to the cell) and whether stdin may be asked."""
        msg_id = self._parent_msg.get("header", {}).get("msg_id") or None
        if msg_id:
            self._route(msg_id, self._parent_msg)
        return msg_id, self._allow_stdin

    def _on_child_restart(self) -> None:
        self.session_log.write("child_restart", reason="the previous child kernel died")
        self.publish("stream", {
            "name": "stderr",
            "text": "The Python kernel was restarted: variables from before are gone.\n"})

    # ------------------------------------------------------------------ child iopub
    def _route(self, child_msg_id: str, parent: dict[str, Any]) -> None:
        self._routes[child_msg_id] = parent
        self._routes.move_to_end(child_msg_id)
        while len(self._routes) > 512:
            self._routes.popitem(last=False)

    def _on_child_iopub(self, msg: dict[str, Any]) -> None:
        """Re-parent a child iopub message to the cell that caused it. Output content is
        still packed (``child.PACKED_TYPES``) and is sent on as it came."""
        msg_type = msg["header"]["msg_type"]
        parent_id = msg["parent_header"].get("msg_id")
        parent = self._routes.get(parent_id) if parent_id else None
        content = msg["content"]
        if msg_type in _COMM_TYPES:
            if msg_type == "comm_msg" and self._states.child_reply(msg):
                return  # merged into one answer for the frontend
            if msg_type == "comm_open":
                self._child_comms.add(content["comm_id"])
            elif msg_type == "comm_close":
                self._child_comms.discard(content.get("comm_id"))
            target = parent or self._parent_msg
        elif msg_type in _OUTPUT_TYPES and parent is not None:
            if msg_type == "execute_result":
                content = {**content, "execution_count": self.execution_count}
            target = parent
        else:
            return  # a stray from no request we know: never leak it into another cell
        if not isinstance(content, dict):
            self._relay(msg_type, content, target, msg.get("metadata"), msg.get("buffers"))
            return
        self.session.send(
            self.iopub_socket,
            msg_type,
            content,
            parent=target,
            metadata=msg.get("metadata"),
            buffers=msg.get("buffers"),
        )

    def _relay(self, msg_type: str, packed: Any, parent: dict[str, Any],
               metadata: dict[str, Any] | None, buffers: list[Any] | None) -> None:
        """Publish a message whose content is already packed (bytes or a zmq.Frame) with a
        new header and parent: the content is signed and sent as it is, not copied."""
        session = self.session
        msg = session.msg(msg_type, {}, parent=parent, metadata=metadata or {})
        frames = [
            session.pack(msg["header"]),
            session.pack(msg["parent_header"]),
            session.pack(msg["metadata"]),
            packed,
            *(buffers or []),
        ]
        longest = max(f.nbytes if isinstance(f, memoryview) else len(f) for f in frames)
        session.send_raw(self.iopub_socket, frames, copy=longest < session.copy_threshold)

    # ------------------------------------------------------------------ stdin
    async def ask_stdin(self, prompt: str, password: bool = False) -> str:
        """An input_request to the frontend, awaited without blocking the event loop."""
        sock = self.stdin_socket
        with contextlib.suppress(zmq.ZMQError):
            while sock.recv_multipart(zmq.NOBLOCK):
                pass
        self.session.send(
            sock,
            "input_request",
            {"prompt": prompt, "password": password},
            parent=self._parent_msg,
            ident=self._parent_ident,
        )
        while True:
            try:
                _ident, reply = self.session.recv(sock, zmq.NOBLOCK)
            except zmq.ZMQError:
                reply = None
            if reply is not None:
                value = reply["content"].get("value", "")
                if value == "\x04":
                    raise EOFError
                return value
            await asyncio.sleep(0.02)

    async def _on_child_input(self, prompt: str, password: bool, parent_id: str) -> str:
        if not self._allow_stdin:
            return ""
        return await self.ask_stdin(prompt, password)

    # ------------------------------------------------------------------ comms
    async def _comm_open(self, stream: Any, ident: Any, msg: dict[str, Any]) -> None:
        content = msg["content"]
        if content.get("target_name") in ("jupyter.widget.control", "jupyter.widget"):
            self._widget_frontend = True  # this frontend renders widgets
            self._ensure_widget_targets()
        if content.get("target_name") == "jupyter.widget.control":
            self._states.control_comms.add(content["comm_id"])
            await self._to_child(msg)  # the child answers for its own widgets
        if content.get("target_name") in self.comm_manager.targets:
            self.comm_manager.comm_open(stream, ident, msg)
            return
        self._child_comms.add(content["comm_id"])
        await self._to_child(msg)

    async def _comm_msg(self, stream: Any, ident: Any, msg: dict[str, Any]) -> None:
        comm_id = msg["content"].get("comm_id")
        if comm_id in self._states.control_comms:
            if (msg["content"].get("data") or {}).get("method") == "request_states":
                self._ensure_widget_targets()
                if self._states.request(comm_id, msg, self.child.is_running):
                    await self._to_child(msg)
            return
        if comm_id in self._child_comms:
            await self._to_child(msg)
        else:
            self.comm_manager.comm_msg(stream, ident, msg)

    async def _comm_close(self, stream: Any, ident: Any, msg: dict[str, Any]) -> None:
        comm_id = msg["content"].get("comm_id")
        if comm_id in self._child_comms:
            self._child_comms.discard(comm_id)
            await self._to_child(msg)
        else:
            self.comm_manager.comm_close(stream, ident, msg)

    def _send_comm_msg(self, content: dict[str, Any], buffers: list[Any],
                       parent: dict[str, Any]) -> None:
        self.session.send(self.iopub_socket, "comm_msg", content, parent=parent, buffers=buffers)

    async def _to_child(self, msg: dict[str, Any]) -> None:
        """Forward a frontend comm message with the same msg_id, remembering its parent."""
        if not self.child.is_running:
            return
        msg_id = msg["header"]["msg_id"]
        self._route(msg_id, msg)
        self.child.send(
            msg["header"]["msg_type"],
            msg["content"],
            msg_id,
            metadata=msg.get("metadata"),
            buffers=msg.get("buffers"),
        )

    async def comm_info_request(self, stream: Any, ident: Any, parent: dict[str, Any]) -> None:
        target = parent["content"].get("target_name")
        comms = {
            k: {"target_name": v.target_name}
            for k, v in self.comm_manager.comms.items()
            if target is None or v.target_name == target
        }
        if self.child.is_running:
            with contextlib.suppress(Exception):
                reply = await self.child.request("comm_info_request", parent["content"], timeout=5)
                comms.update(reply.get("comms", {}))
        self.session.send(
            stream, "comm_info_reply", {"status": "ok", "comms": comms}, parent, ident
        )

    # ------------------------------------------------------------------ interrupts
    def _on_sigint(self, signum: int, frame: Any) -> None:
        loop = getattr(self, "_loop", None)
        if loop is not None:
            loop.call_soon_threadsafe(self._interrupt)

    def _interrupt(self) -> None:
        task = self._task
        if task is not None and not task.done():
            task.cancel()
        else:  # nothing of ours running: maybe a direct request still in the child
            asyncio.ensure_future(self.child.interrupt())

    async def interrupt_request(self, stream: Any, ident: Any, parent: dict[str, Any]) -> None:
        self._loop.call_soon_threadsafe(self._interrupt)
        self.session.send(stream, "interrupt_reply", {"status": "ok"}, parent, ident=ident)

    # ------------------------------------------------------------------ other requests
    def _child_code(self, code: str, cursor_pos: int) -> tuple[str, int] | None:
        """The part of a cell that is code for the child, with the cursor mapped into it."""
        if code.lstrip().startswith("%%python"):
            offset = len(code) - len(code.lstrip())
            first_nl = code.find("\n", offset)
            if first_nl == -1 or cursor_pos <= first_nl:
                return None
            return code[first_nl + 1 :], cursor_pos - first_nl - 1
        return None

    async def do_complete(self, code: str, cursor_pos: int) -> dict[str, Any]:
        mapped = self._child_code(code, cursor_pos)
        empty = {
            "status": "ok",
            "matches": [],
            "cursor_start": cursor_pos,
            "cursor_end": cursor_pos,
            "metadata": {},
        }
        if mapped is None:
            if code.lstrip().startswith("%") and "\n" not in code.strip():
                return self.magics.complete(code, cursor_pos) or empty
            return empty
        body, pos = mapped
        reply = await self._child_request("complete_request", {"code": body, "cursor_pos": pos})
        if not reply:
            return empty
        shift = cursor_pos - pos
        reply["cursor_start"] += shift
        reply["cursor_end"] += shift
        return reply

    async def do_inspect(
        self, code: str, cursor_pos: int, detail_level: int = 0, omit_sections: Any = ()
    ) -> dict[str, Any]:
        mapped = self._child_code(code, cursor_pos)
        if mapped is None:
            return {"status": "ok", "found": False, "data": {}, "metadata": {}}
        body, pos = mapped
        reply = await self._child_request(
            "inspect_request", {"code": body, "cursor_pos": pos, "detail_level": detail_level}
        )
        return reply or {"status": "ok", "found": False, "data": {}, "metadata": {}}

    async def _child_request(self, msg_type: str, content: dict[str, Any]) -> dict[str, Any] | None:
        try:
            await asyncio.wait_for(self.child.ensure_running(), 30)
            return await self.child.request(msg_type, content, timeout=10)
        except Exception:
            return None

    async def do_is_complete(self, code: str) -> dict[str, Any]:
        return {"status": "complete"}

    async def do_history(
        self,
        hist_access_type: str,
        output: bool,
        raw: bool,
        session: int = 0,
        start: int = 0,
        stop: int | None = None,
        n: int | None = None,
        pattern: str | None = None,
        unique: bool = False,
    ) -> dict[str, Any]:
        items = [(0, count, code) for count, code in self._instructions]
        if hist_access_type == "tail":
            items = items[-(n or 10) :]
        elif hist_access_type == "range":
            items = [i for i in items if start <= i[1] and (stop is None or i[1] < stop)]
        elif hist_access_type == "search" and pattern:
            import fnmatch

            items = [i for i in items if fnmatch.fnmatch(i[2], pattern)]
            if unique:
                last = {code: item for item in items for code in [item[2]]}
                items = sorted(last.values(), key=lambda i: i[1])
            if n:
                items = items[-n:]
        if output:
            items = [(s, c, (code, None)) for s, c, code in items]
        return {"status": "ok", "history": items}

    async def do_shutdown(self, restart: bool) -> dict[str, Any]:
        self._flush_log()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.child.shutdown(), 10)
        if self._session_log is not None:
            with contextlib.suppress(Exception):
                self._session_log.write("session_end")
                self._session_log.close()
        return {"status": "ok", "restart": restart}
