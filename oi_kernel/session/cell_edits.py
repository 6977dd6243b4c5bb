"""Edits to existing notebook cells: the model proposes them (the ``edit_cell`` tool), the
user reviews each as a diff and accepts or rejects it, in the notebook.

The review happens in the JupyterLab / Notebook 7 extension (``labextension/src/
celledits.ts``), which announces the ``cell_edits`` feature in its ``hello``. The kernel
publishes one display of ``CELL_EDIT_MIME`` per proposal (all ``edit_cell`` calls of one
reply); the extension finds each cell in the notebook it renders in (``cell``: the number
of its ``In [n]`` prompt, or its id), shows the diff with Accept / Reject (Accept all /
Reject all, Accept and run), and writes an accepted source through the cell's shared model
(an undoable edit: the kernel never touches the ``.ipynb``). It tells the kernel each
decision (comm message ``cell_edit_decision``); the kernel records it (``CellEditDecided``),
tells every view (``cell_edit_state``) and, once every edit is decided, answers each tool call.

A frontend without the extension (jupyter console, papermill) cannot show a diff: each
edit becomes ordinary code proposed to run (approved as any step), with a notice saying so.
A notebook closed while a proposal waits leaves it recorded and not applied.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from oi_kernel.core import identity
from oi_kernel.core.codeblocks import ToolArgumentsError
from oi_kernel.core.events import CellEditDecided, CellEditProposed, Notice
from oi_kernel.core.tools import ToolSpec, parse_arguments
from oi_kernel.core.types import CodeBlock

EDIT_CELL = "edit_cell"
CELL_EDIT_MIME = "application/vnd.oi.cell-edit+json"
FEATURE = "cell_edits"
FINAL = frozenset({"accepted", "rejected", "missing", "not_applied"})
ACTIONS = FINAL | {"refused"}
KEPT_PROPOSALS = 50  # ended proposals whose decisions a reloaded view can still show
_IN_REF = re.compile(r"^\s*(?:In\s*\[\s*(\d+)\s*\]|(\d+))\s*$")

Answer = Callable[[str | None, str], None]


def edit_spec() -> ToolSpec:
    """The ``edit_cell`` tool as the model sees it."""
    spec = ToolSpec(
        EDIT_CELL,
        "Propose a new source for an existing cell of the user's notebook. The user sees a "
        "diff and accepts or rejects it; nothing runs unless they choose to run it. Call it "
        "once per cell to change (several calls in one reply are reviewed together).",
        {"type": "object", "properties": {
            "cell": {"anyOf": [{"type": "integer"}, {"type": "string"}],
                     "description": "the cell: the number n of its In [n] prompt (3 or "
                     "\"In[3]\"), or the cell's id"},
            "new_source": {"type": "string", "description": "the cell's whole new source"}},
         "required": ["cell", "new_source"]},
        kind="edit", read_only=True)
    spec.tokens = len(str(spec.definition())) // 3 + 8
    return spec


def cell_ref(value: Any) -> str:
    """``3``, ``"3"``, ``"In[3]"`` -> ``"3"``; any other text is a cell id."""
    if isinstance(value, bool) or value is None:
        raise ToolArgumentsError("`cell` must name a cell: the number of its In [n] prompt, "
                                 "or its id.")
    if isinstance(value, int):
        return str(value)
    found = _IN_REF.match(str(value))
    if found:
        return found.group(1) or found.group(2)
    text = str(value).strip()
    if not text:
        raise ToolArgumentsError("`cell` is empty: give the number of the cell's In [n] "
                                 "prompt, or its id.")
    return text


def label(ref: str) -> str:
    return f"In[{ref}]" if ref.isdigit() else f"with id {ref!r}"


@dataclass
class Edit:
    key: str
    cell: str
    new_source: str
    call_id: str | None = None

    def shown(self) -> dict[str, Any]:
        return {"key": self.key, "cell": self.cell, "new_source": self.new_source}


def parse_edits(blocks: list[CodeBlock]) -> tuple[list[Edit], list[tuple[str | None, str]]]:
    """The edits of ``edit_cell`` calls, and (call id, problem) for calls that are wrong."""
    edits: list[Edit] = []
    problems: list[tuple[str | None, str]] = []
    for block in blocks:
        try:
            args = parse_arguments(block.code)
            ref = cell_ref(args.get("cell", args.get("index", args.get("id"))))
            source = args.get("new_source")
            if not isinstance(source, str):
                raise ToolArgumentsError("`new_source` must be the cell's whole new source "
                                         "as a string.")
        except ToolArgumentsError as exc:
            problems.append((block.tool_call_id, f"{EDIT_CELL} was not proposed: {exc}"))
            continue
        edits.append(Edit(str(len(edits)), ref, source, block.tool_call_id))
    return edits, problems


def feedback(edit: Edit, decision: dict[str, Any]) -> str:
    """What the model is told of one edit."""
    action, reason = decision.get("action"), decision.get("reason") or ""
    name = label(edit.cell)
    if action == "accepted":
        text = f"The user accepted your edit: cell {name} now holds the new source."
        if decision.get("ran"):
            return text + (" They chose to run it: it runs after this instruction ends "
                           "(its output is not part of this conversation).")
        return text + " It has not run (it runs when the user runs it)."
    if action == "rejected":
        return f"The user rejected your edit to cell {name}; the cell is unchanged." + (
            f" Their reason: {reason}" if reason else "")
    if action == "missing":
        return (f"There is no cell {name} in this notebook{f' ({reason})' if reason else ''}. "
                "Name a cell by the number of its In [n] prompt or by its id.")
    return f"The edit to cell {name} was not applied: {reason or 'nobody answered'}."


@dataclass
class Proposal:
    """One reply's edits while they wait for the user."""

    id: str
    turn: int
    edits: list[Edit]
    decided: dict[str, dict[str, Any]] = field(default_factory=dict)
    queue: asyncio.Queue[tuple[str, dict[str, Any]]] = field(default_factory=asyncio.Queue)

    @property
    def open(self) -> list[str]:
        return [e.key for e in self.edits if e.key not in self.decided]

    def display(self) -> dict[str, Any]:
        names = ", ".join(label(e.cell) for e in self.edits)
        return {"data": {
            CELL_EDIT_MIME: {"proposal": self.id, "turn": self.turn,
                             "edits": [e.shown() for e in self.edits]},
            "text/plain": f"Proposed edits to cell{'s' if len(self.edits) > 1 else ''} "
                          f"{names}: review each diff in the notebook (Accept / Reject)."},
            "metadata": {}}


class CellEdits:
    """The ``edit_cell`` tool of one session: offered to the model, its calls reviewed in the
    notebook through the extension (``comms``: the ``CommExtras`` of the session's
    ``FrontendComms``), or proposed as code where no extension shows them. ``send_iopub(msg_type,
    content)`` sends an iopub message for the running cell."""

    def __init__(self, engine: Any, comms: Any, send_iopub: Callable[[str, dict[str, Any]], None]
                 ) -> None:
        self.engine = engine
        self.comms = comms
        self.send_iopub = send_iopub
        self.pending: dict[str, Proposal] = {}
        self.done: dict[str, dict[str, dict[str, Any]]] = {}  # decisions of ended proposals
        self._loop: asyncio.AbstractEventLoop | None = None

    def attach(self) -> CellEdits:
        """Offer ``edit_cell`` and listen to the extension's decisions."""
        self.engine.toolbox.builtin[EDIT_CELL] = edit_spec()
        self.engine.cell_edits = self
        if self.comms is not None:
            self.comms.handlers["cell_edit_decision"] = self._on_decision
            self.comms.handlers["cell_edit_state"] = self._on_state_request
            self.comms.closed.append(self._on_closed)
        return self

    def shows(self) -> bool:
        """Whether a frontend that can show the diffs is connected."""
        return self.comms is not None and self.comms.supports(FEATURE)

    # ------------------------------------------------------------ the engine's hook
    async def review(self, turn: Any, blocks: list[CodeBlock], emit: Any,
                     answer: Answer) -> list[CodeBlock]:
        """Take the ``edit_cell`` calls out of ``blocks`` and have them reviewed (answering
        each call through ``answer``); returns the blocks left to run as steps."""
        calls = [b for b in blocks if b.tool == EDIT_CELL]
        if not calls:
            return blocks
        rest = [b for b in blocks if b.tool != EDIT_CELL]
        edits, problems = parse_edits(calls)
        for call_id, problem in problems:
            answer(call_id, problem)
        if not edits:
            return rest
        if not self.shows():
            return self._as_code(edits, emit) + rest
        await self._propose(turn.index, edits, emit, answer)
        return rest

    def _as_code(self, edits: list[Edit], emit: Any) -> list[CodeBlock]:
        names = ", ".join(label(e.cell) for e in edits)
        emit(Notice(
            f"This frontend cannot show edits to notebook cells (it has no Open Interpreter "
            f"extension: jupyter console, papermill, nbclient). The new source of cell "
            f"{'s ' if len(edits) > 1 else ''}{names} is proposed as code to run instead.",
            "warning"))
        return [CodeBlock("python", e.new_source, e.call_id) for e in edits]

    async def _propose(self, turn: int, edits: list[Edit], emit: Any, answer: Answer) -> None:
        proposal = Proposal(uuid.uuid4().hex[:12], turn, edits)
        self._loop = asyncio.get_running_loop()
        emit(CellEditProposed(turn, proposal.id, [e.shown() for e in edits]))
        self.pending[proposal.id] = proposal
        try:
            self.send_iopub("display_data", proposal.display())
            while proposal.open:
                key, decision = await proposal.queue.get()
                self._record(proposal, key, decision, emit)
        except asyncio.CancelledError:
            for key in proposal.open:
                self._record(proposal, key, {"action": "not_applied",
                                             "reason": "the instruction was interrupted"}, emit)
            raise
        finally:
            self.pending.pop(proposal.id, None)
            self.done[proposal.id] = proposal.decided
            while len(self.done) > KEPT_PROPOSALS:
                self.done.pop(next(iter(self.done)))
        for edit in edits:
            answer(edit.call_id, feedback(edit, proposal.decided[edit.key]))

    def _record(self, proposal: Proposal, key: str, decision: dict[str, Any], emit: Any) -> None:
        """One decision from a view (first final one wins), in the log and in every view."""
        edit = next((e for e in proposal.edits if e.key == key), None)
        if edit is None or key in proposal.decided:
            return
        action = decision["action"]
        emit(CellEditDecided(proposal.turn, proposal.id, key, edit.cell, action,
                             decision.get("by", ""), decision.get("reason", ""),
                             bool(decision.get("ran"))))
        if action in FINAL:
            proposal.decided[key] = decision
            if self.comms is not None:
                self.comms.broadcast(self.state(proposal.id))

    def state(self, proposal_id: str) -> dict[str, Any]:
        proposal = self.pending.get(proposal_id)
        decided = proposal.decided if proposal is not None else self.done.get(proposal_id, {})
        return {"type": "cell_edit_state", "proposal": proposal_id,
                "open": proposal is not None,
                "decided": {k: {"action": d["action"], "by": d.get("by", "")}
                            for k, d in decided.items()}}

    # ------------------------------------------------------------ from the extension
    def _on_decision(self, comm: Any, msg: dict[str, Any], data: dict[str, Any]) -> None:
        """A view decided an edit (only queued here: the cell's coroutine records it)."""
        proposal = self.pending.get(str(data.get("proposal")))
        action = data.get("action")
        if proposal is None or action not in ACTIONS:
            self.comms.send(comm, self.state(str(data.get("proposal"))))
            return
        header = msg.get("header") or {}
        decision = {"action": action, "ran": bool(data.get("ran")) and action == "accepted",
                    "reason": str(data.get("reason") or "")[:2000],
                    "by": identity.person(identity.clean(header.get("username"))
                                          or data.get("user"))}
        self._put(proposal, str(data.get("key")), decision)

    def _on_state_request(self, comm: Any, msg: dict[str, Any], data: dict[str, Any]) -> None:
        self.comms.send(comm, self.state(str(data.get("proposal"))))

    def _on_closed(self) -> None:
        """A comm closed: with no view left to answer, the waiting edits are not applied."""
        if self.shows():
            return
        for proposal in list(self.pending.values()):
            for key in proposal.open:
                self._put(proposal, key, {"action": "not_applied", "reason": "the notebook "
                                          "was closed before the edit was decided"})

    def _put(self, proposal: Proposal, key: str, decision: dict[str, Any]) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(proposal.queue.put_nowait, (key, decision))
