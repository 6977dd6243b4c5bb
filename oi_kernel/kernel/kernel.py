"""OIKernel: the Jupyter protocol side of the Open Interpreter kernel.

Each cell is an instruction for the engine, a direct cell (``%%python`` body or ``!``
shell lines) for the child kernel, or line commands (``session.commands``). The session
(engine, LLM, child kernel, session log) is assembled by ``session.assembly``; the
child's messages are re-parented by ``kernel.child_proxy``. The kernel always replies:
on failure exactly one ``error`` message and ``status: error``.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import traceback
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ipykernel.kernelbase import Kernel
from traitlets import Enum, default

from oi_kernel import _version, config
from oi_kernel.approval.approvers import StdinApprover
from oi_kernel.approval.card import WidgetApprover
from oi_kernel.core import identity
from oi_kernel.core.turn_context import NO_CONTEXT, TurnContext, with_context
from oi_kernel.errors import OIError
from oi_kernel.execution.runner import Execution
from oi_kernel.kernel import cells
from oi_kernel.kernel.child_proxy import COMM_TYPES, ChildProxy
from oi_kernel.kernel.direct import DIRECT_KINDS, DirectCells
from oi_kernel.session import commands, last_error, states, stdin  # noqa: F401 (registering)
from oi_kernel.session.assembly import build_session, kernel_kind
from oi_kernel.session.frontend_comm import FrontendComms
from oi_kernel.session.status import status_fields
from oi_kernel.session.view import DISPLAY_MODES, TurnView, live_display, say_bundle


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


class OIKernel(DirectCells, Kernel):
    """A kernel whose cells are natural-language instructions."""

    implementation = "oi_kernel"
    implementation_version = _version.__version__
    banner = (
        "Open Interpreter: write what you want done; the model writes code, you approve it, "
        "it runs in a Python kernel. %help lists the magics; exit (or Ctrl-D) leaves."
    )
    language_info = {
        "name": "markdown",
        "mimetype": "text/markdown",
        "file_extension": ".md",
        "codemirror_mode": "markdown",
        "pygments_lexer": "markdown",
    }
    help_links = [{"text": "oi_kernel README", "url": "https://pypi.org/project/oi-kernel/"}]

    approval_ui = Enum(
        ["auto", "widget", "stdin"],
        config=True,
        help="How approval is asked: 'widget' (the approval card), 'stdin' (a y/N prompt), or "
        "'auto': the card when the frontend renders widgets (it opened the widget control "
        "comm, as JupyterLab and VS Code do), else stdin. Env: OI_APPROVAL_UI.",
    ).tag(env="OI_APPROVAL_UI")

    @default("approval_ui")
    def _approval_ui_default(self) -> str:
        help_text = self.traits()["approval_ui"].help
        choices = ["auto", "widget", "stdin"]
        return config.env_choice(self.trait_metadata("approval_ui", "env"), choices, "auto",
                                 help=help_text)

    display = Enum(
        list(DISPLAY_MODES),
        config=True,
        help="How the model's reply streams: 'live' (one display updated in place, as "
        "JupyterLab and Notebook 7 show it), 'text' (printed as a stream: for clients that "
        "do not update displays, such as jupyter console, nbclient and papermill), or "
        "'auto': live when the frontend renders widgets, else text. `%display` changes it "
        "for the session. Env: OI_DISPLAY.",
    ).tag(env="OI_DISPLAY")

    @default("display")
    def _display_default(self) -> str:
        help_text = self.traits()["display"].help
        return config.env_choice(self.trait_metadata("display", "env"), DISPLAY_MODES, "auto",
                                 help=help_text)

    def _load_config(self, cfg: Any, section_names: Any = None, traits: Any = None) -> None:
        """A bad value in the config is reported and ignored (see oi_kernel.config)."""
        config.load_config_tolerantly(self, super()._load_config, cfg, section_names, traits)

    @default("_execute_sleep")
    def _execute_sleep_default(self) -> float:
        """No sleep after each execute: it guards stdout of user code, which runs in the
        child (whose own kernel keeps it); here it only added latency (benchmarks/)."""
        return 0.0

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._setup_comms()
        self._widget_frontend = False
        approver = WidgetApprover(
            self.publish, self._use_widgets,
            fallback=StdinApprover(self.ask_stdin),
        )
        self.oi = build_session(kernel_kind(), approver=approver, parent=self)
        self.oi.notify = self._notify
        self.oi.display = self.display
        self.engine = self.oi.engine
        self.child = self.oi.child
        own = getattr(self.parent, "abs_connection_file", "")  # its key drives this kernel
        if own:
            self.child.protected_paths.append(own)
        self.proxy = ChildProxy(self.session, lambda: self.iopub_socket, self.child,
                                self.comm_manager, lambda: self._parent_msg,
                                lambda: self.execution_count, self._on_widget_frontend)
        self.oi.runner.forward = self.proxy.on_iopub
        self.oi.runner.hold_errors = True  # the view shows a step's error (compact first)
        self.child.on_input = self._on_child_input
        self.frontend = FrontendComms(self.engine, lambda: self.oi.log_path,
                                      details=lambda: status_fields(self.oi), child=self.child)
        self.frontend.register_target(self.comm_manager)  # before any frontend opens it
        self._parent_msg: dict[str, Any] = {}
        self._parent_ident: Any = None
        self._context: TurnContext = NO_CONTEXT  # the cell's request (``_cell_context``)
        self._task: asyncio.Task[Any] | None = None
        self._instructions: list[tuple[int, str]] = []
        self._log_queue: list[Callable[[], Any]] = []
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
        for msg_type in COMM_TYPES:
            self.shell_handlers[msg_type] = getattr(self, f"_{msg_type}")

    def _on_widget_frontend(self) -> None:
        """The frontend opened a widget comm: it renders widgets."""
        self._widget_frontend = True
        self._ensure_widget_targets()

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
            self.oi.warm_up()

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
            self._request_read(parent)

    def pre_handler_hook(self) -> None:
        """Keep our own SIGINT handler (the base one would raise inside the event loop)."""

    def post_handler_hook(self) -> None:
        pass

    # ------------------------------------------------------------------ publishing
    def publish(self, msg_type: str, content: dict[str, Any], **kw: Any) -> None:
        """Send an iopub message as part of the current cell."""
        self.session.send(self.iopub_socket, msg_type, content, parent=self._parent_msg, **kw)

    def publish_error(self, ename: str, evalue: str, tb: list[str]) -> dict[str, Any]:
        content = {"ename": ename, "evalue": evalue, "traceback": tb}
        self.publish("error", content)
        return {"status": "error", "execution_count": self.execution_count, **content}

    def _notify(self, text: str) -> None:
        self.publish("stream", {"name": "stderr", "text": text + "\n"})

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
        self._context = self._cell_context(self._parent_msg)  # + its author in _event_sink
        ok = {
            "status": "ok",
            "execution_count": self.execution_count,
            "payload": [],
            "user_expressions": {},
        }
        if cells.classify(code)[0] not in DIRECT_KINDS:  # it writes the log itself: in order
            self._flush_log()
        self._report_log_failure()
        if not code.strip():
            return ok
        if cells.is_exit(code):  # as in IPython: a terminal leaves, nothing asks the model
            return {**ok, "payload": [cells.EXIT_PAYLOAD]}
        if store_history:
            self._instructions.append((self.execution_count, code))
        try:  # before any await: the output of a cell started early comes after it
            if problems := self.oi.config_problems(self):
                self.publish("stream", {"name": "stderr", "text": problems})
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
                self.oi.runner.discard(self._early)
                self._early = None
            self._log_when_idle()
        if result is not None:
            return result
        return ok

    async def _dispatch(self, code: str) -> dict[str, Any] | None:
        kind, text = cells.classify(code)
        if kind in ("python", "magic", "shell"):
            return await self.run_direct("shell" if kind == "shell" else "python", text)
        if kind == "commands":
            context = commands.CommandContext(self.oi, self._say, self._event_sink)
            for line in text.splitlines():
                await commands.run_command(context, line.lstrip("%"))
            return None
        await self.run_instruction(text)
        return None

    def _say(self, text: str) -> None:
        self.publish("display_data", {"data": say_bundle(text), "metadata": {}})

    def _event_sink(self) -> Any:
        """Where a turn's events go in the current cell, with the cell's context and who sent
        it (looked up here, not for every cell: without a user name in the environment it
        is a password-database lookup, ~35 µs)."""
        _ = self.oi.log
        widgets = self._use_widgets()
        if widgets:
            self._ensure_widget_targets()
        context = replace(self._context, author=identity.from_message(self._parent_msg))
        # The card, or the stdin prompt, shows a block that needs approval.
        view = TurnView(self.publish, shows_code=not (widgets or context.allow_stdin),
                        live=live_display(self.oi.display, self._widget_frontend or widgets),
                        pieces=context.allow_stdin, compact_errors=True)
        cell_id = self._parent_msg.get("metadata", {}).get("cellId")
        return with_context(self.frontend.watch(view, cell_id), context)

    async def run_instruction(self, instruction: str) -> None:
        await self.engine.run_turn(instruction, self._event_sink())

    # ------------------------------------------------------------------ stdin
    async def ask_stdin(self, prompt: str, password: bool = False) -> str:
        """An input_request to the frontend, awaited without blocking the event loop."""
        return await stdin.ask(self, prompt, parent=self._parent_msg, ident=self._parent_ident,
                               password=password)

    async def _on_child_input(self, prompt: str, password: bool, parent_id: str) -> str:
        if not self._context.allow_stdin:  # the child was not told it may ask: refuse
            return ""
        return str(await self.ask_stdin(prompt, password))

    # ------------------------------------------------------------------ comms
    async def _comm_open(self, stream: Any, ident: Any, msg: dict[str, Any]) -> None:
        if self.proxy.comm_open(msg):
            self.comm_manager.comm_open(stream, ident, msg)

    async def _comm_msg(self, stream: Any, ident: Any, msg: dict[str, Any]) -> None:
        if self.proxy.comm_msg(msg):
            self.comm_manager.comm_msg(stream, ident, msg)

    async def _comm_close(self, stream: Any, ident: Any, msg: dict[str, Any]) -> None:
        if self.proxy.comm_close(msg):
            self.comm_manager.comm_close(stream, ident, msg)

    async def comm_info_request(self, stream: Any, ident: Any, parent: dict[str, Any]) -> None:
        content = await self.proxy.comm_info(parent["content"])
        self.session.send(stream, "comm_info_reply", content, parent, ident)

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
            asyncio.ensure_future(self.oi.child.interrupt())

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
                word = code[:cursor_pos].lstrip()
                if " " not in word:
                    return {**empty, "matches": commands.complete(self.oi, word),
                            "cursor_start": cursor_pos - len(word)}
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
        content = {"code": body, "cursor_pos": pos, "detail_level": detail_level}
        reply = await self._child_request("inspect_request", content)
        return reply or {"status": "ok", "found": False, "data": {}, "metadata": {}}

    async def _child_request(self, msg_type: str, content: dict[str, Any]) -> dict[str, Any] | None:
        try:
            await asyncio.wait_for(self.oi.child.ensure_running(), 30)
            return await self.oi.child.request(msg_type, content, timeout=10)
        except Exception as e:  # the frontend gets an empty answer; the log says why
            self.log.warning("%s to the child kernel failed: %r", msg_type, e)
            return None

    async def do_is_complete(self, code: str) -> dict[str, Any]:
        return cells.is_complete(code)

    def _publish_status(self, status: str, channel: str, parent: Any = None) -> None:
        """No busy/idle for ``is_complete``: jupyter console runs a cell right after that
        reply and takes any idle from its session, this late one too, as the cell's end;
        it then stops answering stdin and the approval question waits forever."""
        msg = parent or self.get_parent(channel) or {}
        if msg.get("header", {}).get("msg_type") != "is_complete_request":
            super()._publish_status(status, channel, parent)

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
        """The log is closed first (a manager kills us 5 s after asking), then the child and
        the MCP servers are stopped side by side."""
        self._flush_log()
        with contextlib.suppress(Exception):
            self.oi.close()
        await asyncio.gather(asyncio.wait_for(self.child.shutdown(), 10), self.oi.close_tools(),
                             return_exceptions=True)
        return {"status": "ok", "restart": restart}
