"""OIKernel: the Jupyter protocol side of the Open Interpreter kernel.

Each cell is an instruction for the engine, a direct cell (``%%python`` body or ``!``
shell lines) for the child kernel, or line commands (``session.commands``). The session
(engine, LLM, child kernel, session log) is assembled by ``session.assembly``; the
child's messages are re-parented by ``kernel.child_proxy``. The kernel always replies:
on failure exactly one ``error`` message and ``status: error``.
"""

from __future__ import annotations

import asyncio
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
from oi_kernel.kernel.child_proxy import ChildProxy
from oi_kernel.kernel.comms import CommRouting
from oi_kernel.kernel.direct import DIRECT_KINDS, DirectCells
from oi_kernel.kernel.editing import EditingRequests
from oi_kernel.kernel.lifecycle import Lifecycle
from oi_kernel.session import commands, last_error, states, stdin  # noqa: F401 (registering)
from oi_kernel.session.assembly import Wiring, build_session, kernel_kind
from oi_kernel.session.frontend_comm import FrontendComms
from oi_kernel.session.status import status_fields
from oi_kernel.session.view import DISPLAY_MODES, TurnView, live_display, say_bundle


class OIKernel(DirectCells, EditingRequests, CommRouting, Lifecycle, Kernel):
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
        default_value="auto",
    ).tag(env="OI_APPROVAL_UI")

    display = Enum(
        list(DISPLAY_MODES),
        config=True,
        help="How the model's reply streams: 'live' (one display updated in place, as "
        "JupyterLab and Notebook 7 show it), 'text' (printed as a stream: for clients that "
        "do not update displays, such as jupyter console, nbclient and papermill), or "
        "'auto': live when the frontend renders widgets, else text. `%display` changes it "
        "for the session. Env: OI_DISPLAY.",
        default_value="auto",
    ).tag(env="OI_DISPLAY")

    def _load_config(self, cfg: Any, section_names: Any = None, traits: Any = None) -> None:
        """A bad value in the config is reported and ignored (see oi_kernel.config)."""
        config.load_config_tolerantly(self, super()._load_config, cfg, section_names, traits)

    @default("_execute_sleep")
    def _execute_sleep_default(self) -> float:
        """No sleep after each execute: it guards stdout of user code, which runs in the
        child (whose own kernel keeps it); here it only added latency (benchmarks/)."""
        return 0.0

    def __init__(self, **kwargs: Any) -> None:
        config.apply_environment(self)  # OI_APPROVAL_UI, OI_DISPLAY: before the config
        super().__init__(**kwargs)
        self._setup_comms()
        self._widget_frontend = False
        approver = WidgetApprover(
            self.send_iopub, self._use_widgets,
            fallback=StdinApprover(self.ask_stdin),
        )
        own = getattr(self.parent, "abs_connection_file", "")  # its key drives this kernel
        self.oi = build_session(kernel_kind(), Wiring(
            approver, notify=self._notify, display=self.display, forward=self._on_child_iopub,
            hold_errors=True,  # the view shows a step's error (compact first)
            on_input=self._on_child_input, protected_paths=(own,) if own else ()), parent=self)
        self.engine = self.oi.engine
        self.child = self.oi.child
        self.proxy = ChildProxy(self.session, lambda: self.iopub_socket, self.child,
                                self.comm_manager, lambda: self._parent_msg,
                                lambda: self.execution_count, self._on_widget_frontend)
        self.frontend = FrontendComms(self.engine, lambda: self.oi.log_path,
                                      details=lambda: status_fields(self.oi), child=self.child,
                                      send_iopub=self.send_iopub)
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

    def set_parent(self, ident: Any, parent: Any, channel: str = "shell") -> None:
        """Give ``print`` in the wrapper the request's parent (else frontends drop it),
        and start a direct cell in the child (``_start_early``)."""
        super().set_parent(ident, parent, channel)
        if channel == "shell":
            for stream in (sys.stdout, sys.stderr):
                if hasattr(stream, "set_parent"):
                    stream.set_parent(parent)
            self._request_read(parent)

    # ------------------------------------------------------------------ publishing
    def send_iopub(self, msg_type: str, content: dict[str, Any], **kw: Any) -> None:
        """Send an iopub message as part of the current cell."""
        self.session.send(self.iopub_socket, msg_type, content, parent=self._parent_msg, **kw)

    def send_error(self, ename: str, evalue: str, tb: list[str]) -> dict[str, Any]:
        content = {"ename": ename, "evalue": evalue, "traceback": tb}
        self.send_iopub("error", content)
        return {"status": "error", "execution_count": self.execution_count, **content}

    def _notify(self, text: str) -> None:
        self.send_iopub("stream", {"name": "stderr", "text": text + "\n"})

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
        self._show_config_problems()  # before any await: a cell started early comes after it
        result = await self._run_cell(code)
        return ok if result is None else result

    def _show_config_problems(self) -> None:
        try:
            if problems := self.oi.config_problems(self):
                self.send_iopub("stream", {"name": "stderr", "text": problems})
        except Exception:
            self.log.exception("could not show the configuration problems")

    async def _run_cell(self, code: str) -> dict[str, Any] | None:
        """Run the cell as an interruptible task; an error reply (and its one ``error``
        message) for an interrupt, an ``OIError`` or a bug of ours, else the cell's own
        reply or None."""
        self._task = asyncio.ensure_future(self._dispatch(code))
        try:
            return await self._task
        except asyncio.CancelledError:
            return self.send_error(
                "KeyboardInterrupt",
                "Interrupted by the user.",
                ["KeyboardInterrupt: interrupted by the user."],
            )
        except OIError as exc:
            return self.send_error(type(exc).__name__, str(exc), str(exc).splitlines())
        except Exception as exc:  # a bug of ours: say so, keep the kernel alive
            self.log.exception("unexpected error in a cell")
            return self.send_error(
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
        self.send_iopub("display_data", {"data": say_bundle(text), "metadata": {}})

    def _event_sink(self) -> Any:
        """Where a turn's events go in the current cell, with the cell's context and who sent
        it (looked up here, not for every cell: without a user name in the environment it
        is a password-database lookup, ~35 µs)."""
        self.oi.open_log()
        widgets = self._use_widgets()
        if widgets:
            self._ensure_widget_targets()
        context = replace(self._context, author=identity.from_message(self._parent_msg))
        # The card, or the stdin prompt, shows a block that needs approval.
        view = TurnView(self.send_iopub, shows_code=not (widgets or context.allow_stdin),
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

    def _on_child_iopub(self, msg: dict[str, Any]) -> None:
        """The child's output, as it comes: relayed to our frontend (``ChildProxy``)."""
        self.proxy.on_iopub(msg)

    async def _on_child_input(self, prompt: str, password: bool, parent_id: str) -> str:
        if not self._context.allow_stdin:  # the child was not told it may ask: refuse
            return ""
        return str(await self.ask_stdin(prompt, password))

