"""``%%oi`` and ``%oi``: the oi_kernel engine inside an ordinary IPython kernel.

``%load_ext oi_kernel`` registers the magics and an input transformer. A cell

    %%oi -y
    load sales.csv and plot revenue by month

is rewritten to ``await <run_cell(line, body)>``, so it runs as a top-level-await
cell: while it waits for an approval click, ipykernel (>= 7.4) keeps dispatching
the widget messages. The turn loop is ``engine.Engine``, as in the Open
Interpreter kernel; only the executor differs (``ShellExecutor`` runs approved
code in the user's own namespace). The conversation carries over from one
``%%oi`` cell to the next until ``%oi reset``.

Configuration: ``c.OIMagics.approval_ui``, ``c.Engine.*`` and ``c.LLM.*`` in the
IPython config (the engine is a child of the magics, which are a child of the
shell), with the environment variables of the kernel as defaults (OI_MODEL,
OI_API_BASE, OI_API_KEY, OI_AUTO_RUN, OI_MAX_STEPS, OI_APPROVAL_UI).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import sys
from collections.abc import Callable, Iterator
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from traitlets import Enum

from oi_kernel import config
from oi_kernel.approval.approvers import StdinApprover
from oi_kernel.approval.card import WidgetApprover
from oi_kernel.core import four_eyes
from oi_kernel.core.turn_context import with_context
from oi_kernel.errors import ApprovalUnavailableError, NotConfiguredError, OIError, PolicyError
from oi_kernel.execution.shell import InterruptGuard, ShellExecutor
from oi_kernel.magics import notebook_context
from oi_kernel.magics.frontend import KernelFrontend, TerminalFrontend, WidgetClients
from oi_kernel.session import commands
from oi_kernel.session import states as _states  # noqa: F401 (registers %oi state)
from oi_kernel.session.assembly import Wiring, build_session
from oi_kernel.session.view import DISPLAY_MODES, TurnView, live_display, say_bundle

_CELL_RE = re.compile(r"%%oi(?=\s|$)")
_LINE_RE = re.compile(r"%oi(?=\s|$)")
# The kernel's messages name its own magics; in a notebook the fixes are these.
_MAGIC_MESSAGES = {
    NotConfiguredError: (
        "No language model is configured.\n"
        "Set one with `%oi model NAME` (for example `%oi model gpt-4o-mini` or\n"
        "`%oi model ollama_chat/qwen2.5-coder:1.5b`), or for one cell with `%%oi -m NAME`.\n"
        "Or before starting Jupyter set OI_MODEL (and OI_API_KEY, or the provider's own\n"
        "variable such as OPENAI_API_KEY; OI_API_BASE for a local OpenAI-compatible server),\n"
        "or c.LLM.model in the IPython config.\n"
        "Model names are litellm's: https://docs.litellm.ai/docs/providers"
    ),
    ApprovalUnavailableError: (
        "This code was not run: it needs your approval, and nobody can give it here: this\n"
        "client shows no approval card and offers no stdin prompt (nbclient, papermill and\n"
        "`jupyter nbconvert --execute` run notebooks unattended). To let the model run code\n"
        "without asking: `%oi auto_run on` in a cell before this one, `%%oi -y` on this cell,\n"
        "or OI_AUTO_RUN=1 in the environment that starts the kernel."
    ),
}
_active: OIMagics | None = None  # the loaded extension (one IPython shell per process)


# ---------------------------------------------------------------------- the magics
@magics_class
class OIMagics(Magics):
    """The ``%%oi`` cell magic and the ``%oi`` line magic."""

    approval_ui = Enum(
        ["auto", "widget", "stdin"],
        config=True,
        help="How %%oi asks before running code: 'widget' (the approval card), 'stdin' (a "
        "y/N prompt), or 'auto': the card in a Jupyter kernel, the prompt in terminal "
        "IPython; a cell from a client that renders no widgets and offers no stdin "
        "(nbclient, papermill) is refused at once, saying how to allow code. "
        "Env: OI_APPROVAL_UI.",
        default_value="auto",
    ).tag(env="OI_APPROVAL_UI")

    display = Enum(
        list(DISPLAY_MODES),
        config=True,
        help="How the model's reply streams: 'live' (one display updated in place), 'text' "
        "(printed as a stream, for clients that do not update displays: jupyter console, "
        "nbclient, papermill), or 'auto': live when the approval card is used, else text. "
        "`%oi display` changes it for the session. Env: OI_DISPLAY.",
        default_value="auto",
    ).tag(env="OI_DISPLAY")

    def __init__(self, shell: Any) -> None:
        config.apply_environment(self)  # OI_APPROVAL_UI, OI_DISPLAY: before the config
        super().__init__(shell=shell)
        self.guard = InterruptGuard(_run_code_codes(shell))
        self.frontend: KernelFrontend | TerminalFrontend | None = None
        approver = WidgetApprover(
            self._send_iopub,
            lambda: self.frontend is not None and self.frontend.widgets,
            fallback=StdinApprover(self._ask),
        )
        executor = ShellExecutor(shell, self.guard)
        self.oi = build_session("magic", Wiring(approver, notify=_say, display=self.display),
                                executor=executor, parent=self)
        self.engine = self.oi.engine
        self.transformer = _cell_transformer(shell)
        self._running = False
        self.comms = self._frontend_comms()
        self.cell_errors = notebook_context.CellErrors(shell)
        self.notebook = notebook_context.NotebookContext(shell, self.cell_errors,
                                                         self.engine.secrets.redact)
        kernel = getattr(shell, "kernel", None)
        self.clients = (WidgetClients(kernel) if hasattr(kernel, "shell_handlers")
                        and hasattr(kernel, "iopub_socket") else None)

    def _frontend_comms(self) -> Any:
        """The JupyterLab extension's ``oi_kernel`` comm (status, export, inserted cells)."""
        kernel = getattr(self.shell, "kernel", None)
        if kernel is None or not hasattr(kernel, "iopub_socket"):
            return None
        from oi_kernel.session.frontend_comm import FrontendComms
        from oi_kernel.session.status import status_fields

        comms = FrontendComms(self.engine, lambda: self.oi.log_path, kind="ipython-magic",
                              details=lambda: status_fields(self.oi), send_iopub=self._send_iopub)
        comms.register_target(getattr(kernel, "comm_manager", None))
        return comms

    # ------------------------------------------------------------------ plumbing
    def _send_iopub(self, msg_type: str, content: dict[str, Any]) -> None:
        if self.frontend is not None:
            self.frontend.send_iopub(msg_type, content)

    async def _ask(self, prompt: str) -> str:
        assert self.frontend is not None
        return await self.frontend.ask(prompt)

    def _new_frontend(self) -> KernelFrontend | TerminalFrontend:
        kernel = getattr(self.shell, "kernel", None)
        if kernel is None or self.clients is None:
            return TerminalFrontend(self.guard)
        return KernelFrontend(kernel, self.approval_ui, self.clients)

    def _view(self, frontend: KernelFrontend | TerminalFrontend) -> Any:
        """Where a turn's events go in the current cell (carrying its request, whose output
        the executor captures)."""
        context = frontend.context
        # The card, or the stdin prompt, shows a block that needs approval.
        view: Any = TurnView(frontend.send_iopub,
                             shows_code=not (frontend.widgets or context.allow_stdin),
                             live=live_display(self.oi.display, frontend.widgets),
                             pieces=context.allow_stdin)
        if self.comms is not None and isinstance(frontend, KernelFrontend):
            view = self.comms.watch(view, frontend.cell_id)
        return with_context(view, context)

    def close(self) -> None:
        """Forget the session (the extension is being unloaded)."""
        self.guard.uninstall()
        self.cell_errors.uninstall()
        if self.clients is not None:
            self.clients.close()
        if self.comms is not None:
            self.comms.close()
            self.comms = None
        with contextlib.suppress(Exception):
            self.oi.close()

    # ------------------------------------------------------------------ %%oi
    @magic_arguments()
    @argument("-y", "--yes", action="store_true",
              help="run the code without asking (this cell; not under four-eyes approval)")
    @argument("-m", "--model", help="the litellm model name for this cell")
    @argument("--max-steps", type=int, help="most LLM calls for this instruction")
    @argument("--no-context", action="store_true",
              help="do not show the model the notebook's recent cells (c.Engine."
              "notebook_context_cells); {In[n]}, {Out[n]}, {Err[n]} are still replaced")
    @cell_magic("oi")
    def oi_cell(self, line: str, cell: str) -> None:
        """Give the model an instruction; it writes code, you approve it, it runs here.

        The code runs in this notebook's namespace, so it can use your variables
        and leaves its own behind. `%oi help` lists the line commands.
        """
        run_cell_sync(line, cell)

    async def run_instruction(self, line: str, body: str) -> None:
        """Carry out one ``%%oi`` cell."""
        args = parse_argstring(self.oi_cell, line)
        instruction = body.strip()
        if not instruction:
            raise UsageError("Write the instruction on the lines below %%oi.")
        if args.max_steps is not None and args.max_steps < 1:
            raise UsageError("--max-steps must be at least 1 (it counts LLM calls).")
        if self._running:
            raise UsageError("%%oi cannot run inside another %%oi instruction.")
        if problems := self.oi.config_problems(self):
            print(problems, file=sys.stderr)
        try:
            self.oi.open_log()
        except OIError as exc:  # e.g. the log directory is not writable
            raise UsageError(str(exc)) from None
        try:
            instruction, context = notebook_context.prepare(
                self.notebook, instruction, use=not args.no_context,
                cells=self.engine.notebook_context_cells, budget_tokens=self.engine.context_budget)
        except notebook_context.MissingCellError as exc:
            raise UsageError(str(exc)) from None
        self._running = True
        self.frontend = frontend = self._new_frontend()
        try:
            with self._cell_options(args):
                task = asyncio.ensure_future(
                    self.engine.run_turn(instruction, self._view(frontend), context=context))
                with self.guard.watching(task):
                    await _finish(task)
        finally:
            self._running = False

    @contextlib.contextmanager
    def _cell_options(self, args: Any) -> Iterator[None]:
        engine = self.engine
        saved = (engine.approval, engine.max_steps, engine.llm.model)
        try:
            try:
                if args.yes and (engine.approval in four_eyes.MODES
                                 and engine.approval_floor not in four_eyes.MODES):
                    _say(four_eyes.yes_kept_text(engine.approval))  # -y never skips a person
                elif args.yes:  # under a policy's floor the setter refuses (PolicyError)
                    engine.approval = "never"
                if args.model:
                    engine.llm.model = args.model
                if args.max_steps is not None:
                    engine.max_steps = args.max_steps
            except PolicyError as exc:  # the administrator's policy refuses the option
                raise UsageError(str(exc)) from None
            yield
        finally:
            engine.approval, engine.max_steps, engine.llm.model = saved

    # ------------------------------------------------------------------ %oi
    @line_magic("oi")
    def oi_line(self, line: str) -> None:
        """%oi COMMAND [ARGS]: the session's commands (%oi help lists them)."""
        context = commands.CommandContext(self.oi, _say, self._line_events)
        try:
            _run_now(commands.run_command(context, line))
        except OIError as exc:
            raise UsageError(str(exc)) from None

    def _line_events(self) -> Any:
        """The event sink of a command that runs steps (``%oi load --replay``)."""
        self.frontend = self._new_frontend()
        return self._view(self.frontend)


def _run_now(coro: Any) -> None:
    """Run a command's coroutine from a (synchronous) line magic. A cell of ``%oi`` lines is
    awaited at the top level instead (see ``_cell_transformer``); this path is for IPython
    without autoawait, where a command that has to wait cannot run inside a running loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(coro)
        return
    try:
        coro.send(None)
    except StopIteration:
        return
    coro.close()
    raise UsageError("This command has to wait (it runs code): put it alone in a cell, with "
                     "`%autoawait on`.")


# ---------------------------------------------------------------------- running a cell
async def run_line(line: str) -> None:
    """What a cell of ``%oi`` command lines becomes (awaited at the top level of the cell)."""
    if _active is None:
        raise UsageError("The oi_kernel extension is not loaded: run `%load_ext oi_kernel`.")
    context = commands.CommandContext(_active.oi, _say, _active._line_events)
    try:
        await commands.run_command(context, line)
    except OIError as exc:
        raise _short(UsageError(str(exc)), f"UsageError: {exc}") from None


async def run_cell(line: str, body: str) -> None:
    """What a ``%%oi`` cell becomes (awaited at the top level of the cell)."""
    if _active is None:
        raise UsageError("The oi_kernel extension is not loaded: run `%load_ext oi_kernel`.")
    await _active.run_instruction(line, body)


def run_cell_sync(line: str, body: str) -> None:
    """``%%oi`` without top-level await: fine without a running loop (terminal IPython)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(run_cell(line, body))
        return
    raise UsageError(
        "%%oi runs as top-level await: use it as the first line of a cell, with `%autoawait on`."
    )


async def _finish(task: asyncio.Future[Any]) -> None:
    """Await the turn; show an interrupt or an OIError as a short message, not a traceback."""
    try:
        await task
    except asyncio.CancelledError:
        raise _short(
            KeyboardInterrupt("Interrupted by the user."),
            "KeyboardInterrupt: the instruction was interrupted (the conversation is kept).",
        ) from None
    except OIError as exc:
        if type(exc) in _MAGIC_MESSAGES:
            exc.args = (_MAGIC_MESSAGES[type(exc)],)
        raise _short(exc, f"{type(exc).__name__}: {exc}") from None
    finally:
        if not task.done():  # our own cell was cancelled: never leave the turn running
            task.cancel()


def _short(exc: BaseException, text: str) -> BaseException:
    """``exc``, rendered by IPython as ``text`` instead of a traceback through our code."""
    exc._render_traceback_ = lambda: text.splitlines()  # type: ignore[attr-defined]
    return exc


def _say(markdown: str) -> None:
    from IPython.display import display

    display(say_bundle(markdown), raw=True)  # plain text for a console, markdown for a notebook


def _run_code_codes(shell: Any) -> set[Any]:
    from IPython.core.interactiveshell import InteractiveShell

    return {InteractiveShell.run_code.__code__, type(shell).run_code.__code__}


# ---------------------------------------------------------------------- the input transformer
def _cell_transformer(shell: Any) -> Callable[[list[str]], list[str]]:
    """An ``input_transformers_cleanup`` entry turning a ``%%oi`` cell into one awaited call."""

    def transform_oi_cell(lines: list[str]) -> list[str]:
        start = next((i for i, ln in enumerate(lines) if ln.strip()), None)
        if start is None:
            return lines
        target = "__import__('oi_kernel.magics', fromlist=['run_cell'])"
        if not getattr(shell, "autoawait", True):
            if _CELL_RE.match(lines[start].lstrip()):
                options = lines[start].lstrip()[4:].strip()
                body = "".join(lines[start + 1 :])
                return [f"{target}.run_cell_sync({options!r}, {body!r})\n"]
            return lines
        if _CELL_RE.match(lines[start].lstrip()):
            options = lines[start].lstrip()[4:].strip()
            body = "".join(lines[start + 1 :])
            return [f"await {target}.run_cell({options!r}, {body!r})\n"]
        commands_only = [ln.strip() for ln in lines if ln.strip()]
        if all(_LINE_RE.match(ln) for ln in commands_only):
            return [f"await {target}.run_line({ln[3:].strip()!r})\n" for ln in commands_only]
        return lines

    # check_complete skips it, so a terminal keeps reading the cell after `%%oi` + Enter
    transform_oi_cell.has_side_effects = True  # type: ignore[attr-defined]
    return transform_oi_cell


# ---------------------------------------------------------------------- load / unload
def load(shell: Any) -> None:
    """Register ``%%oi``/``%oi`` and the transformer (``%load_ext oi_kernel``)."""
    global _active
    if _active is not None and _active.shell is shell:
        return
    magics = OIMagics(shell)
    shell.register_magics(magics)
    shell.input_transformers_cleanup.insert(0, magics.transformer)
    shell.configurables.extend([magics.engine, magics.engine.llm])  # for %config Engine...
    magics.cell_errors.install()  # each failing cell's error, for the notebook context
    _active = magics
    magics.oi.warm_up()  # import litellm in the background: the first %%oi does not wait


def unload(shell: Any) -> None:
    """Remove everything ``load`` added (``%unload_ext oi_kernel``)."""
    global _active
    magics = _active
    if magics is None or magics.shell is not shell:
        return
    with contextlib.suppress(ValueError):
        shell.input_transformers_cleanup.remove(magics.transformer)
    manager = shell.magics_manager
    for kind in ("line", "cell"):
        table = manager.magics[kind]
        if getattr(table.get("oi"), "__self__", None) is magics:
            del table["oi"]
    if manager.registry.get(type(magics).__name__) is magics:
        del manager.registry[type(magics).__name__]
    for configurable in (magics, magics.engine, magics.engine.llm):
        with contextlib.suppress(ValueError):
            shell.configurables.remove(configurable)
    magics.close()
    _active = None
