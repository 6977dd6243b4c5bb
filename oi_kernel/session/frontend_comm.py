"""The kernel side of the ``oi_kernel`` comm that the JupyterLab extension opens.

The extension (``labextension/src/protocol.ts`` is the reference) opens one comm
of target ``oi_kernel`` per notebook. Frontend -> kernel: ``hello``,
``get_status``, ``set_model``, ``export``, ``verify``, ``card_state`` and ``decide`` (the
shared approval card, see below). Kernel -> frontend:
``status`` (pushed on open, after each turn and whenever the model or approval
policy changes; with ``error`` when a ``set_model`` was refused; ``last_decision`` names who
decided the last step), ``export_result`` / ``verify_result`` / ``card_state`` /
``decide_result`` (answers, matched by ``request_id``), ``code_ran`` (each executed step, for
"insert as cells") and ``card`` (a card was decided: every view turns it into the record).

The shared card: the card's display carries ``approval.card.CARD_MIME`` with its id; every
view of the notebook (each collaborator's, a reloaded one) asks ``card_state`` and shows what
the kernel answers; a button sends ``decide`` and the first decision wins. Who decided is the
comm message's header ``username`` (the extension sets it to JupyterLab's user), else the
``user`` the message names, with ``core.identity``'s fallbacks.

``FrontendComms`` knows an engine, how to find the session log, and nothing of
the kernel class, so the Open Interpreter kernel and the ``%%oi`` magic share it::

    comms = FrontendComms(engine, lambda: log.path, kind="ipython-magic")
    comms.register_target(kernel.comm_manager)
    await engine.run_turn(text, comms.watch(view, cell_id))

With ``send_iopub`` (an iopub sender for the running cell) it also offers the model the
``edit_cell`` tool (``session.cell_edits``): the extension shows those edits as diffs.

Every handler replies, also on failure (``ok: false`` with a message that says
what to do); nothing raises into ipykernel's comm dispatch.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from oi_kernel.approval import card as cards
from oi_kernel.core import identity
from oi_kernel.errors import OIError
from oi_kernel.session.comm_extras import CommExtras

TARGET = "oi_kernel"
PROTOCOL_VERSION = 1
KernelKind = Literal["open-interpreter", "ipython-magic"]
LogPathGetter = Callable[[], "str | os.PathLike[str] | None"]
EventSink = Callable[[Any], None]

log = logging.getLogger(__name__)


class FrontendComms:
    """Every open ``oi_kernel`` comm of one engine: status pushes and requests."""

    def __init__(
        self,
        engine: Any,
        log_path: LogPathGetter,
        *,
        kind: KernelKind = "open-interpreter",
        cwd: Callable[[], str] = os.getcwd,
        verify_timeout: int = 120,
        details: Callable[[], dict[str, Any]] | None = None,
        child: Any = None,
        send_iopub: Callable[[str, dict[str, Any]], None] | None = None,
    ) -> None:
        self.engine = engine
        self.child = child  # the child kernel code runs in (None: the user's own shell)
        self.kind = kind
        self._details = details  # more status fields (session.status.status_fields)
        self.verify_timeout = verify_timeout
        self._log_path = log_path
        self._cwd = cwd
        self._comms: dict[str, Any] = {}
        self.extras = CommExtras(self._comms, self._send)  # features, more message types
        self._tasks: set[asyncio.Task[Any]] = set()
        self._manager: Any = None
        self._last_decision = ""  # "step 2 · approved by alice" (the status tooltip)
        cards.on_decided(self._card_decided)
        engine.observe(self._on_setting, names=["approval"])
        engine.llm.observe(self._on_setting, names=["model"])
        self._watched = self._sandbox_traits()
        for obj, names in self._watched:
            obj.observe(self._on_setting, names=names)
        if send_iopub is not None:  # iopub for the running cell: the edit_cell tool's diffs
            from oi_kernel.session.cell_edits import CellEdits

            CellEdits(engine, self.extras, send_iopub).attach()

    # ------------------------------------------------------------ lifecycle
    def register_target(self, comm_manager: Any = None) -> None:
        """Answer comm opens of target ``oi_kernel`` (default: the process's comm manager)."""
        if comm_manager is None:
            import comm

            comm_manager = comm.get_comm_manager()
        comm_manager.register_target(TARGET, self._on_open)
        self._manager = comm_manager

    def close(self) -> None:
        """Close every comm and stop answering opens (``%unload_ext``)."""
        if self._manager is not None:
            self._manager.unregister_target(TARGET, self._on_open)
            self._manager = None
        for comm in list(self._comms.values()):
            try:
                comm.close()
            except Exception:
                log.debug("closing an oi_kernel comm failed", exc_info=True)
        self._comms.clear()
        self.extras.features.clear()
        for task in list(self._tasks):
            task.cancel()
        cards.off_decided(self._card_decided)
        self.engine.unobserve(self._on_setting, names=["approval"])
        self.engine.llm.unobserve(self._on_setting, names=["model"])
        for obj, names in self._watched:
            obj.unobserve(self._on_setting, names=names)

    @property
    def open_comms(self) -> int:
        return len(self._comms)

    def _on_open(self, comm: Any, msg: dict[str, Any]) -> None:
        comm_id = comm.comm_id
        self._comms[comm_id] = comm
        comm.on_msg(lambda m: self._on_msg(comm, m))
        comm.on_close(lambda m: self.extras.comm_closed(comm_id))
        self.extras.hello(comm_id, (msg.get("content") or {}).get("data"))
        self._send(comm, self.status())

    # ------------------------------------------------------------ kernel -> frontend
    def status(self) -> dict[str, Any]:
        """The ``status`` message: model, session tokens and cost, approval, sandbox and its
        grants, and (from ``details``) where code runs and the administrator's policy."""
        usage = self.engine.usage
        grants = getattr(self.child, "grants", None)  # (a gateway child has no sandbox)
        details = self._details() if self._details is not None else {}
        return {**details,
            "type": "status",
            "model": self.engine.llm.model or "",
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "cost": usage.cost,
            "approval": self.engine.approval,
            "sandbox": bool(self.engine.executor.sandboxed),
            "sandbox_read": list(grants.read_paths) if grants is not None else [],
            "sandbox_write": list(grants.write_paths) if grants is not None else [],
            "turns": len(self.engine.turns),
            "kernel": self.kind,
            "last_decision": self._last_decision,
        }

    def broadcast_status(self) -> None:
        """Push the status to every open comm (cheap: nothing is sent when none is open)."""
        if self._comms:
            self._broadcast(self.status())

    def code_ran(
        self,
        language: str,
        code: str,
        cell_id: str | None,
        turn: int,
        step: int,
        status: str = "ok",
    ) -> None:
        """Tell every frontend that a step ran (it may insert the code as a cell)."""
        self._broadcast(
            {
                "type": "code_ran",
                "language": language,
                "code": code,
                "cell_id": cell_id or None,
                "turn": turn,
                "step": step,
                "status": status,
            }
        )

    def watch(self, sink: EventSink, cell_id: str | None = None) -> EventSink:
        """Wrap a turn's event sink: forward each event, and push ``code_ran`` for every
        executed step and the status when the turn ends."""

        def emit(event: Any) -> None:
            sink(event)
            kind = type(event).__name__
            if kind == "StepDone":
                self._step_done(event.record, cell_id)
                self._note_decision(event.record)
            elif kind == "TurnDone":
                self.broadcast_status()

        return emit

    def _step_done(self, record: Any, cell_id: str | None) -> None:
        decision = record.decision
        if decision is None or decision.action != "run":
            return
        from oi_kernel.languages import normalize_language

        language = normalize_language(record.block.language) or record.block.language
        turn = self.engine.turns[-1].index if self.engine.turns else 0
        self.code_ran(language, decision.code, cell_id, turn, record.index, record.status)

    def _note_decision(self, record: Any) -> None:
        """Remember who decided the step (card, stdin, policy): the status pushed when the turn
        ends names it."""
        decision = record.decision
        if decision is None:
            return
        by = "" if decision.by == "auto" else f" by {decision.by}"
        self._last_decision = f"step {record.index} · {decision.label}{by}"

    def _card_decided(self, event: dict[str, Any]) -> None:
        """A card was decided (in any view): every view turns it into the record."""
        if self._comms:
            self._broadcast({"type": "card", **event})

    def _sandbox_traits(self) -> list[tuple[Any, list[str]]]:
        """The child kernel's sandbox switch and grants, when code runs in one."""
        child = self.child
        if child is None or not hasattr(child, "grants"):
            return []
        return [(child, ["sandboxed"]), (child.grants, ["read_paths", "write_paths"])]

    def _on_setting(self, change: Any) -> None:
        self.broadcast_status()

    def _broadcast(self, data: dict[str, Any]) -> None:
        for comm in list(self._comms.values()):
            self._send(comm, data)

    def _send(self, comm: Any, data: dict[str, Any]) -> None:
        if getattr(comm, "_closed", False):
            self._comms.pop(comm.comm_id, None)
            return
        try:
            comm.send(data)
        except Exception:  # a frontend that went away must not break a turn
            log.warning("sending on the oi_kernel comm failed", exc_info=True)

    # ------------------------------------------------------------ frontend -> kernel
    def _on_msg(self, comm: Any, msg: dict[str, Any]) -> None:
        data = msg.get("content", {}).get("data") or {}
        kind = data.get("type") if isinstance(data, dict) else None
        if kind in ("hello", "get_status"):
            self.extras.hello(comm.comm_id, data)
            self._send(comm, self.status())
        elif kind in self.extras.handlers:
            self.extras.handlers[kind](comm, msg, data)
        elif kind == "set_model":
            self._set_model(comm, data)
        elif kind == "export":
            self._send(comm, self.export(data))
        elif kind == "verify":
            self._start(self._verify_and_reply(comm, data))
        elif kind == "card_state":
            self._send(comm, {**cards.card_state(data.get("card")), "type": "card_state",
                              "request_id": _request_id(data)})
        elif kind == "decide":
            self._decide(comm, msg, data)
        else:
            log.warning("unknown oi_kernel comm message %r", kind)

    def _decide(self, comm: Any, msg: dict[str, Any], data: dict[str, Any]) -> None:
        """A shared card's button; the reply says whether this decision counted."""
        header = msg.get("header") or {}
        by = identity.person(identity.clean(header.get("username")) or data.get("user"))
        reply = cards.decide_card(data.get("card"), data.get("action"), by,
                                  code=data.get("code"), reason=data.get("reason") or "")
        # ``sender``: who clicked; a card decided earlier names its decider in ``by``
        self._send(comm, {**reply, "type": "decide_result", "request_id": _request_id(data),
                          "sender": by})

    def _set_model(self, comm: Any, data: dict[str, Any]) -> None:
        model = data.get("model")
        if isinstance(model, str) and model.strip():
            if model.strip() != self.engine.llm.model:
                try:
                    self.engine.llm.model = model.strip()  # the observer pushes the status
                    return
                except OIError as exc:  # e.g. the administrator's policy refuses the model
                    self._send(comm, {**self.status(), "error": str(exc)})
                    return
        self._send(comm, self.status())

    def _start(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ------------------------------------------------------------ export
    def _resolve(self, path: Any) -> Path:
        if not isinstance(path, str) or not path.strip():
            raise OIError("No path given: name the notebook to write, e.g. session-export.ipynb.")
        return Path(self._cwd()) / Path(path.strip()).expanduser()

    def _shown_path(self, requested: str, out: Path) -> str:
        """Relative to the kernel's directory (the notebook's) when the request was."""
        absolute = os.path.abspath(out)
        if os.path.isabs(os.path.expanduser(requested)):
            return absolute
        try:
            return os.path.relpath(absolute, os.path.abspath(self._cwd()))
        except ValueError:  # another drive on Windows
            return absolute

    def export(self, data: dict[str, Any]) -> dict[str, Any]:
        """Answer an ``export`` request: write the session's notebook (never overwriting)."""
        reply = {
            "type": "export_result",
            "request_id": _request_id(data),
            "ok": False,
            "path": "",
            "error": "",
        }
        try:
            from oi_kernel.record.export import export_notebook

            requested = data.get("path")
            target = self._resolve(requested)
            log_path = self._log_path()
            if log_path is None:
                raise OIError("No session log yet: run an instruction first, then export.")
            out = export_notebook(
                log_path, target, include_failed=bool(data.get("include_failed")), force=False
            )
            reply.update(ok=True, path=self._shown_path(requested, out))
        except OIError as exc:
            reply["error"] = str(exc)
        except Exception as exc:
            log.exception("export through the oi_kernel comm failed")
            reply["error"] = f"Internal error in oi_kernel export (please report it): {exc!r}"
        return reply

    # ------------------------------------------------------------ verify
    async def verify(self, data: dict[str, Any]) -> dict[str, Any]:
        """Answer a ``verify`` request. The notebook re-runs in a fresh kernel started by
        nbclient in a worker thread, so this kernel keeps answering meanwhile."""
        reply: dict[str, Any] = {
            "type": "verify_result",
            "request_id": _request_id(data),
            "ok": False,
            "report": "",
            "cells": [],
            "error": "",
        }
        try:
            from oi_kernel.record.verify import verify_notebook

            target = self._resolve(data.get("path"))
            report = await asyncio.to_thread(verify_notebook, target, timeout=self.verify_timeout)
            reply.update(
                ok=report.ok,
                report=report.format(),
                cells=[
                    {"index": c.index, "status": c.status, "detail": c.detail} for c in report.cells
                ],
            )
        except OIError as exc:
            reply["error"] = str(exc)
        except Exception as exc:
            log.exception("verify through the oi_kernel comm failed")
            reply["error"] = f"Internal error in oi_kernel verify (please report it): {exc!r}"
        return reply

    async def _verify_and_reply(self, comm: Any, data: dict[str, Any]) -> None:
        self._send(comm, await self.verify(data))


def _request_id(data: dict[str, Any]) -> str:
    value = data.get("request_id")
    return value if isinstance(value, str) else ""
