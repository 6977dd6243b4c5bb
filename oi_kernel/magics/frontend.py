"""Where a ``%%oi`` cell shows its output and asks its questions.

In an ipykernel, ``KernelFrontend`` sends iopub and stdin messages with the
cell's own parent header (captured when the cell starts, so a widget click
handled meanwhile cannot re-parent them). In terminal IPython,
``TerminalFrontend`` prints the ``text/plain`` of each display (a display
updated in place, like a streaming reply, prints only what was added) and asks
with ``input()``.
``WidgetClients`` tells which clients of an ipykernel render widgets, so a cell
from a client that can show neither the card nor a stdin prompt (nbclient,
papermill) is refused at once instead of waiting for a card nobody sees.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from oi_kernel.core import identity
from oi_kernel.core.turn_context import TurnContext
from oi_kernel.execution.shell import InterruptGuard
from oi_kernel.session import stdin

# A client that renders widgets opens one of these comms: JupyterLab's and Notebook 7's widget
# manager open the control comm when they connect (and ask comm_info for the widget target).
WIDGET_TARGETS = frozenset({"jupyter.widget.control", "jupyter.widget"})
WATCHED = ("comm_open", "comm_info_request")


class WidgetClients:
    """Which clients of an ipykernel announced a widget manager (by the session id in their
    messages' headers): watches the kernel's comm_open and comm_info_request handlers."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self.sessions: set[str] = set()
        comms = getattr(getattr(kernel, "comm_manager", None), "comms", {}) or {}
        # A widget comm already open (ipywidgets was imported before us): some client renders.
        self.before = any(getattr(c, "target_name", None) in WIDGET_TARGETS
                          for c in list(comms.values()))
        self._handlers: dict[str, Any] = {}
        for msg_type in WATCHED:
            handler = kernel.shell_handlers.get(msg_type)
            if handler is not None:
                self._handlers[msg_type] = handler
                kernel.shell_handlers[msg_type] = self._watching(handler)

    def _watching(self, handler: Any) -> Any:
        def watched(stream: Any, ident: Any, msg: dict[str, Any]) -> Any:
            if (msg.get("content") or {}).get("target_name") in WIDGET_TARGETS:
                self.sessions.add(msg.get("header", {}).get("session", ""))
            return handler(stream, ident, msg)

        return watched

    def render(self, parent: dict[str, Any]) -> bool:
        """Whether the client that sent ``parent`` renders widgets, as far as we saw."""
        return self.before or parent.get("header", {}).get("session", "") in self.sessions

    def close(self) -> None:
        """Give the kernel its own handlers back (the extension is unloaded)."""
        self.kernel.shell_handlers.update(self._handlers)
        self._handlers = {}


class KernelFrontend:
    """One ``%%oi`` cell in an ipykernel: iopub messages and stdin with the cell's parent."""

    def __init__(self, kernel: Any, approval_ui: str, clients: WidgetClients) -> None:
        self.kernel = kernel
        self.parent = kernel.get_parent("shell")
        self.author = identity.from_message(self.parent)  # who sent this cell
        self.allow_stdin = bool((self.parent.get("content") or {}).get("allow_stdin"))
        # 'auto': the card, unless the client can show neither it nor a prompt: a request
        # without stdin from a client that announced no widget manager has nobody to ask.
        self.widgets = approval_ui == "widget" or (
            approval_ui == "auto" and (self.allow_stdin or clients.render(self.parent)))
        try:
            self.ident = kernel._get_shell_context_var(kernel._shell_parent_ident)
        except Exception:  # an ipykernel without per-request identities
            self.ident = None

    @property
    def parent_id(self) -> str | None:
        return self.parent.get("header", {}).get("msg_id")

    @property
    def cell_id(self) -> str | None:
        """The notebook cell's id, as JupyterLab puts it in the request's metadata."""
        return (self.parent.get("metadata") or {}).get("cellId")

    @property
    def context(self) -> TurnContext:
        """The cell's request, as its turn carries it (``core.turn_context``)."""
        return TurnContext(self.parent_id, self.allow_stdin, self.author)

    def send_iopub(self, msg_type: str, content: dict[str, Any]) -> None:
        self.kernel.session.send(self.kernel.iopub_socket, msg_type, content, parent=self.parent)

    async def ask(self, prompt: str) -> str:
        """An input_request awaited without blocking the event loop (so it can be cancelled)."""
        return await stdin.ask(self.kernel, prompt, parent=self.parent, ident=self.ident)


class TerminalFrontend:
    """One ``%%oi`` cell in terminal IPython: plain text on stdout, ``input()`` to ask."""

    widgets = False
    parent_id = None
    allow_stdin = True  # input() on the terminal

    def __init__(self, guard: InterruptGuard) -> None:
        self.guard = guard
        self.author = identity.person()  # the terminal's user
        self.context = TurnContext(None, self.allow_stdin, self.author)
        self._shown: dict[str, str] = {}  # display_id -> text printed so far
        self._open: str | None = None  # display_id whose last line is still being written

    def send_iopub(self, msg_type: str, content: dict[str, Any]) -> None:
        if msg_type == "stream":  # a reply printed as it streams (text display)
            sys.stdout.write(content.get("text", ""))
            sys.stdout.flush()
            self._open = None
            return
        text = (content.get("data") or {}).get("text/plain", "")
        display_id = (content.get("transient") or {}).get("display_id")
        before = self._shown.get(display_id, "") if display_id else ""
        if msg_type == "update_display_data" and text.startswith(before):
            sys.stdout.write(text[len(before) :])  # a stream growing in place: the new part
        else:
            if self._open is not None:
                sys.stdout.write("\n")
            sys.stdout.write(text)
        self._open = display_id
        if display_id:
            self._shown[display_id] = text
        if not display_id:
            sys.stdout.write("\n")
            self._open = None
        sys.stdout.flush()

    async def ask(self, prompt: str) -> str:
        """``input()`` (blocking: nothing else runs meanwhile); Ctrl-C cancels the turn."""
        if self._open is not None:
            sys.stdout.write("\n")
            self._open = None
        self.guard.blocking_input = True
        try:
            return input(prompt)  # noqa: ASYNC250  (on purpose: the terminal has nothing else to do)
        except (KeyboardInterrupt, EOFError):
            raise asyncio.CancelledError from None
        finally:
            self.guard.blocking_input = False
