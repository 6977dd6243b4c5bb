"""Change tracking and checkpoints, on the engine's side (every front door gets them).

Executors that can look inside the namespace their code runs in offer ``probe(name,
*args)`` (see ``oi_kernel.execution.probe``, which does the work where the code runs).
Around each step the engine asks for ``begin``/``end`` and keeps the change summary on the
step; before an instruction runs its first code it asks for a ``checkpoint`` numbered by the
instruction. ``rollback_to`` restores one (namespace and files) and says in words what came
back and what did not. ``Rollback`` is a part the engine holds (``engine.rollback``), given
its settings (``c.Engine.*``, in ``core.settings``) and its seams, never the engine.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from oi_kernel.core import change_ignore
from oi_kernel.core.changes import restore_message
from oi_kernel.core.conversation import Conversation
from oi_kernel.core.events import CheckpointKept, EventSink, RolledBack
from oi_kernel.core.executor import Executor
from oi_kernel.core.types import Turn
from oi_kernel.errors import OIError

NO_PROBE = ("code here runs where this session cannot look inside it, so nothing is "
            "tracked or rolled back")


@dataclass
class _Early:
    """A checkpoint asked for while the model is asked (``Rollback.start_checkpoint``)."""

    number: int  # the instruction's
    generation: int  # the executor's then: any code run since makes it stale
    snapshot: bool  # it also kept the change summary's "before" (``track_changes``)
    call: asyncio.Future[dict[str, Any]]


@dataclass
class Checkpoint:
    """The state before instruction ``number`` ran its first code."""

    number: int
    instruction: str
    conversation_index: int  # the instruction's place in the conversation (turn_starts)
    created: float = field(default_factory=time.time)
    info: dict[str, Any] = field(default_factory=dict)


class RollbackSettings(Protocol):
    """The settings the rollback part reads (``c.Engine.*``, ``core.settings``), from the
    running turn's frozen ``TurnSettings``."""

    track_changes: bool
    checkpoints_enabled: bool
    max_checkpoints: int
    max_file_bytes: int
    max_checkpoint_bytes: int
    scan_budget_ms: float
    scan_max_files: int
    checkpoint_dir: str
    change_ignore: Sequence[str]
    change_ignore_gitignore: bool


class Rollback:
    """Change summaries per step and checkpoints per instruction. It is given what it uses:
    its settings, the executor (``probe``; ``generation`` and ``carry_end`` when it has
    them), ``record`` (what only the session log records), the conversation whose
    instructions undo and restore forget and ``undo`` (which forgets them, reported), and
    ``log_path`` (the session log's file, never scanned; None without one)."""

    def __init__(self, settings: Callable[[], RollbackSettings], executor: Executor, record: EventSink, *,
                 log: logging.Logger, conversation: Conversation,
                 undo: Callable[[int], list[str]],
                 log_path: Callable[[], str | None] = lambda: None) -> None:
        self._settings = settings  # the running turn's, frozen (``Engine.settings``)
        self.executor = executor
        self.record = record
        self.log = log
        self.conversation = conversation
        self.undo = undo
        self.log_path = log_path
        self.checkpoints: list[Checkpoint] = []
        self._store_id = uuid.uuid4().hex[:10]
        self._ignore_told = False
        # the executor's generation when this instruction's checkpoint also kept the state
        # before its first step (``snapshot``): that step, if Python and nothing ran since,
        # needs no ``begin``
        self._snapshot: int | None = None
        self._early: _Early | None = None  # this instruction's, taken while the model is asked
        # checkpoints let go of here and not yet in the child: the next call drops them
        # there first; and early calls let go of while still under way (awaited before it)
        self._drops: list[int] = []
        self._abandoned: list[asyncio.Future[dict[str, Any]]] = []


    @property
    def settings(self) -> RollbackSettings:
        """The settings of the running turn (resolved once when it started); outside a
        turn (``%undo``, ``%restore``), the settings now."""
        return self._settings()

    # ------------------------------------------------------------ probe calls
    def _probe_fn(self) -> Any:
        return self.executor.probe

    def _probe(self, name: str, *args: Any, **kwargs: Any) -> Awaitable[dict[str, Any]]:
        """The probe's answer to ``name``; what it carries (settings, the drops owed to the
        child, the early calls to wait for) is decided now, when it is asked for, not when
        it is sent (an early call is a task of its own)."""
        probe = self._probe_fn()
        if probe is None:
            raise OIError(NO_PROBE)
        if name in ("begin", "checkpoint", "restore") or name.startswith("state_"):
            # (a restarted child starts from defaults)
            settings = self.settings
            kwargs["settings"] = {
                "scan_budget_s": settings.scan_budget_ms / 1000,
                "max_files": settings.scan_max_files, "max_file_bytes": settings.max_file_bytes,
                "max_total_bytes": settings.max_checkpoint_bytes, **self._ignore_settings()}
        drops: list[int] = []
        waits: list[asyncio.Future[dict[str, Any]]] = []
        if name != "end":  # (``end`` may be answered without asking the child)
            drops, self._drops = self._drops, []
            waits, self._abandoned = self._abandoned, []
            if drops:
                kwargs["drop_first"] = drops
        return self._send(probe, name, args, kwargs, drops, waits)

    async def _send(self, probe: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any],
                    drops: list[int], waits: list[asyncio.Future[dict[str, Any]]]
                    ) -> dict[str, Any]:
        try:
            if waits:  # early calls let go of while under way: a drop of theirs sent now
                await asyncio.wait(waits)  # reaches the child after them (whatever they got)
            return await probe(name, *args, **kwargs)
        except BaseException:  # (an interrupt too) owed still: dropping twice does no harm
            self._drops = drops + self._drops
            self._abandoned = [w for w in waits if not w.done()] + self._abandoned
            raise

    def _ignore_settings(self) -> dict[str, Any]:
        """What the probe leaves out (``core.change_ignore``)."""
        try:
            cwd = self.executor.cwd
        except Exception:
            cwd = ""
        settings, problem = change_ignore.probe_settings(
            cwd, self.settings.change_ignore, self.settings.change_ignore_gitignore,
            self._not_scanned())
        if problem and not self._ignore_told:
            self._ignore_told = True
            self.log.warning("%s", problem)
        return settings

    def _not_scanned(self) -> list[str]:
        """The session log's folder: the session writes it, not the user's code."""
        path = self.log_path()
        return [os.path.dirname(os.path.abspath(path))] if path else []

    def store_dir(self) -> str:
        """Where the probe keeps saved files: relative paths are to the directory the code
        runs in (which for a remote kernel is not ours)."""
        return os.path.join(self.settings.checkpoint_dir or ".oi_checkpoints", self._store_id)

    def _generation(self) -> int | None:
        """How many times the executor ran code (or restarted) so far; None when it does
        not say (then every step asks for ``begin``)."""
        generation = getattr(self.executor, "generation", None)
        return generation if isinstance(generation, int) else None

    async def track_begin(self, language: str) -> bool:
        """Before a step: fingerprint the namespace and files; False when not tracked.
        No round trip when the checkpoint just kept for this step did it (a Python step,
        nothing run since). The executor may carry ``end`` in the step's own request."""
        if not self.settings.track_changes or self._probe_fn() is None:
            return False
        snapshot, self._snapshot = self._snapshot, None
        try:
            if not (language == "python" and snapshot is not None
                    and snapshot == self._generation()):
                await self._probe("begin", language)
            carry = getattr(self.executor, "carry_end", None)
            if carry is not None:
                carry()
            return True
        except Exception:  # tracking must never cost the user the step
            self.log.exception("change tracking failed before a step")
            return False

    async def track_end(self) -> dict[str, Any] | None:
        try:
            return await self._probe("end")
        except Exception:
            self.log.exception("change tracking failed after a step")
            return None

    def start_checkpoint(self, turn: Turn) -> None:
        """Ask for ``turn``'s checkpoint now, as the instruction starts: its round trip and
        fork overlap the wait for the model. Nothing runs code in between unless something
        else does, which the executor's ``generation`` tells: ``ensure_checkpoint`` keeps it
        when a step runs with nothing run since, else takes it again; ``settle_checkpoint``
        lets it go when no step used it. Only for an executor that runs (``ready``) and
        counts what it runs; the files are listed again when the step's cell starts."""
        generation = self._generation()
        if (self._early is not None or generation is None
                or not self.settings.checkpoints_enabled or self._probe_fn() is None
                or not getattr(self.executor, "ready", False)  # (a start is not for this)
                or any(c.number == turn.index for c in self.checkpoints)):
            return
        snapshot = self.settings.track_changes
        call = asyncio.ensure_future(self._probe(
            "checkpoint", turn.index, self.store_dir(), snapshot=snapshot, relist=True))
        self._early = _Early(turn.index, generation, snapshot, call)

    def settle_checkpoint(self) -> None:
        """The instruction ended: a checkpoint asked for early that no step used is let go
        of (dropped in the child by the next call, which first waits for this one; what it
        recorded meanwhile goes to the one before it, which records again)."""
        early, self._early = self._early, None
        if early is None:
            return
        self._drops.append(early.number)
        if not early.call.done():
            self._abandoned.append(early.call)
        early.call.add_done_callback(self._failed_early)

    def _failed_early(self, call: asyncio.Future[dict[str, Any]]) -> None:
        if not call.cancelled() and call.exception() is not None:
            self.log.warning("checkpoint failed (asked for while the model was asked): %s",
                             call.exception())

    async def _take_early(self, turn: Turn) -> tuple[bool, dict[str, Any]] | None:
        """The checkpoint ``start_checkpoint`` asked for, if nothing ran since: (whether it
        kept the summary's "before", what the probe said); None: take one now."""
        early = self._early
        if early is None:
            return None
        try:
            info = await asyncio.shield(early.call)  # (an interrupt here: settle lets it go)
        except Exception as exc:
            info = None
            self.log.warning("checkpoint failed (asked for while the model was asked): %s", exc)
        self._early = None
        if info is not None and early.number == turn.index and (
                early.generation == self._generation()):
            return early.snapshot, info
        self._drops.append(early.number)  # (before the one taken again: same number)
        return None

    async def ensure_checkpoint(self, turn: Turn) -> str:
        """Keep a checkpoint for ``turn`` before its first code; returns a problem or ""."""
        self._snapshot = None
        if (not self.settings.checkpoints_enabled or self._probe_fn() is None
                or any(c.number == turn.index for c in self.checkpoints)):
            return ""
        if (early := await self._take_early(turn)) is not None:
            snapshot, info = early
            if info.pop("relist", False) and snapshot:  # the files listed again: no begin
                self._snapshot = self._generation()
            # those beyond ``max_checkpoints``: dropped in the child by the next call
            excess = max(0, len(self.checkpoints) + 1 - max(1, self.settings.max_checkpoints))
            self._drops += [c.number for c in self.checkpoints[:excess]]
            self._keep(turn, info, excess)
            return ""
        # one round trip: the checkpoint, the state before the step (change summary), and
        # dropping the checkpoints beyond ``max_checkpoints`` once this one is kept
        excess = max(0, len(self.checkpoints) + 1 - max(1, self.settings.max_checkpoints))
        snapshot = self.settings.track_changes and self._generation() is not None
        try:
            info = await self._probe("checkpoint", turn.index, self.store_dir(),
                                     snapshot=snapshot,
                                     drop_ids=[c.number for c in self.checkpoints[:excess]])
        except Exception as exc:
            self.log.exception("checkpoint failed")
            return (f"No checkpoint could be kept before this instruction ({exc}); undo will "
                    "only forget the messages.")
        if snapshot:
            self._snapshot = self._generation()
        self._keep(turn, info, excess)
        return ""

    def _keep(self, turn: Turn, info: dict[str, Any], excess: int) -> None:
        self.checkpoints = self.checkpoints[excess:]
        self.checkpoints.append(Checkpoint(turn.index, turn.instruction, turn.conversation_index,
                                           info=info))
        self.record(CheckpointKept(turn.index, info))

    async def rollback_to(self, checkpoint: Checkpoint) -> str:
        """Restore ``checkpoint`` (and forget it and later ones); a message for the user."""
        self._snapshot = None
        report = await self._probe("restore", checkpoint.number, self.store_dir())
        self.checkpoints = [c for c in self.checkpoints if c.number < checkpoint.number]
        first = (checkpoint.instruction.splitlines() or [""])[0][:80]
        self.record(RolledBack(checkpoint.number, report))
        return restore_message(report, f"before instruction {checkpoint.number} (“{first}”)")

    async def restore_files_only(self, checkpoint: Checkpoint) -> dict[str, Any]:
        """The files as they were at ``checkpoint``, from the copies it saved on disk, for a
        child that did not keep it (the one that did was lost: ``%rebuild`` re-runs the code
        for the variables). It and later ones are used up. The probe's report; ``missing``:
        its copies are gone too."""
        self._snapshot = None
        report = await self._probe("restore", checkpoint.number, self.store_dir())
        self.checkpoints = [c for c in self.checkpoints if c.number < checkpoint.number]
        if not report.get("missing"):
            self.record(RolledBack(checkpoint.number, report))
        return report

    async def undo_and_roll_back(self, n: int = 1) -> tuple[list[str], str]:
        """Forget the last ``n`` instructions and roll the state back to before the first of
        them that ran code. Returns (the instructions, what the rollback did, "" if none)."""
        conversation = self.conversation
        starts = len(conversation.turn_starts)
        cut = max(0, starts - n)
        targets = [c for c in self.checkpoints if cut <= c.conversation_index < starts
                   and conversation.instruction(c.conversation_index).startswith(
                       c.instruction)]  # still the same conversation (not reset or loaded)
        removed = self.undo(n)
        if not targets:
            return removed, ""
        return removed, await self.rollback_to(min(targets, key=lambda c: c.number))

    async def restore(self, number: int) -> tuple[list[str], str]:
        """Go back to checkpoint ``number`` (before that instruction ran); the instructions
        from it on are forgotten too. Returns (the instructions, what the rollback did)."""
        checkpoint = self.checkpoint_named(number)
        conversation, at = self.conversation, checkpoint.conversation_index
        same = (at < len(conversation.turn_starts)
                and conversation.instruction(at).startswith(checkpoint.instruction))
        n = len(conversation.turn_starts) - at
        removed = self.undo(n) if same and n > 0 else []
        return removed, await self.rollback_to(checkpoint)

    async def probe_state(self, name: str, *args: Any) -> dict[str, Any]:
        """A call of the probe's named states (``session.states``), with the settings; the
        namespace may change under the change summary's "before", which is taken again."""
        self._snapshot = None
        return await self._probe(name, *args)

    def forget_saved_files(self) -> None:
        """Delete this session's saved file contents (the session ends; its checkpoints go
        with the process that held them)."""
        import shutil

        try:
            store = os.path.join(self.executor.cwd, self.store_dir())
        except Exception:  # no working directory to speak of: nothing was saved
            return
        shutil.rmtree(store, ignore_errors=True)
        try:
            base = os.path.dirname(store)
            if set(os.listdir(base)) <= {".gitignore"}:
                shutil.rmtree(base, ignore_errors=True)
        except OSError:
            pass
        self.checkpoints = []

    def checkpoint_named(self, number: int) -> Checkpoint:
        for cp in self.checkpoints:
            if cp.number == number:
                return cp
        known = ", ".join(str(c.number) for c in self.checkpoints) or "none"
        raise OIError(f"There is no checkpoint {number}. Checkpoints kept: {known} "
                      "(see the checkpoints command).")
