"""Change tracking and checkpoints, on the engine's side (every front door gets them).

Executors that can look inside the namespace their code runs in offer ``probe(name,
*args)`` (see ``oi_kernel.execution.probe``, which does the work where the code runs).
Around each step the engine asks for ``begin``/``end`` and keeps the change summary on the
step; before an instruction runs its first code it asks for a ``checkpoint`` numbered by the
instruction. ``rollback_to`` restores one (namespace and files) and says in words what came
back and what did not. ``Rollback`` is a part the engine holds (``engine.rollback``); its
settings are the engine's (``c.Engine.*``, in ``core.settings``).
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Protocol

from oi_kernel.core import change_ignore
from oi_kernel.core.changes import restore_message
from oi_kernel.core.conversation import Conversation
from oi_kernel.core.events import CheckpointKept, Event, RolledBack
from oi_kernel.core.executor import Executor
from oi_kernel.core.types import Turn
from oi_kernel.errors import OIError

NO_PROBE = ("code here runs where this session cannot look inside it, so nothing is "
            "tracked or rolled back")


@dataclass
class Checkpoint:
    """The state before instruction ``number`` ran its first code."""

    number: int
    instruction: str
    conversation_index: int  # the instruction's place in the conversation (turn_starts)
    created: float = field(default_factory=time.time)
    info: dict[str, Any] = field(default_factory=dict)


class RollbackHost(Protocol):
    """What the rollback part reads from the engine that holds it: where code runs, the
    recorder (its log file is never scanned), where events go, and the settings
    (``c.Engine.*``, ``core.settings``)."""

    executor: Executor  # (``generation`` and ``carry_end``, when it has them, are used)
    recorder: Any
    log: logging.Logger
    track_changes: bool
    checkpoints_enabled: bool
    max_checkpoints: int
    max_file_bytes: int
    max_checkpoint_bytes: int
    scan_budget_ms: float
    scan_max_files: int
    checkpoint_dir: str
    change_ignore: list[str]
    change_ignore_gitignore: bool

    conversation: Conversation  # whose instructions undo and restore forget

    def publish(self, event: Event) -> None: ...

    def undo(self, n: int) -> list[str]: ...


class Rollback:
    """Change summaries per step and checkpoints per instruction: a part the engine holds
    (``engine.rollback``); its settings stay the engine's."""

    def __init__(self, host: RollbackHost) -> None:
        self.host = host
        self.checkpoints: list[Checkpoint] = []
        self._store_id = uuid.uuid4().hex[:10]
        self._ignore_told = False
        # the executor's generation when this instruction's checkpoint also kept the state
        # before its first step (``snapshot``): that step, if Python and nothing ran since,
        # needs no ``begin``
        self._snapshot: int | None = None

    @property
    def log(self) -> logging.Logger:
        return self.host.log

    # ------------------------------------------------------------ probe calls
    def _probe_fn(self) -> Any:
        return self.host.executor.probe

    async def _probe(self, name: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        probe = self._probe_fn()
        if probe is None:
            raise OIError(NO_PROBE)
        if name in ("begin", "checkpoint", "restore"):  # a restarted child starts from defaults
            host = self.host
            settings = {"scan_budget_s": host.scan_budget_ms / 1000,
                        "max_files": host.scan_max_files, "max_file_bytes": host.max_file_bytes,
                        "max_total_bytes": host.max_checkpoint_bytes,
                        **self._ignore_settings()}
            return await probe(name, *args, settings=settings, **kwargs)
        return await probe(name, *args, **kwargs)

    def _ignore_settings(self) -> dict[str, Any]:
        """What the probe leaves out (``core.change_ignore``)."""
        try:
            cwd = self.host.executor.cwd
        except Exception:
            cwd = ""
        settings, problem = change_ignore.probe_settings(
            cwd, self.host.change_ignore, self.host.change_ignore_gitignore,
            self._not_scanned())
        if problem and not self._ignore_told:
            self._ignore_told = True
            self.log.warning("%s", problem)
        return settings

    def _not_scanned(self) -> list[str]:
        """The session log's folder: the session writes it, not the user's code."""
        path = getattr(self.host.recorder, "path", None)
        return [os.path.dirname(os.path.abspath(path))] if path else []

    def store_dir(self) -> str:
        """Where the probe keeps saved files: relative paths are to the directory the code
        runs in (which for a remote kernel is not ours)."""
        return os.path.join(self.host.checkpoint_dir or ".oi_checkpoints", self._store_id)

    def _generation(self) -> int | None:
        """How many times the executor ran code (or restarted) so far; None when it does
        not say (then every step asks for ``begin``)."""
        generation = getattr(self.host.executor, "generation", None)
        return generation if isinstance(generation, int) else None

    async def track_begin(self, language: str) -> bool:
        """Before a step: fingerprint the namespace and files; False when not tracked.
        No round trip when the checkpoint just kept for this step did it (a Python step,
        nothing run since). The executor may carry ``end`` in the step's own request."""
        if not self.host.track_changes or self._probe_fn() is None:
            return False
        snapshot, self._snapshot = self._snapshot, None
        try:
            if not (language == "python" and snapshot is not None
                    and snapshot == self._generation()):
                await self._probe("begin", language)
            carry = getattr(self.host.executor, "carry_end", None)
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

    async def ensure_checkpoint(self, turn: Turn) -> str:
        """Keep a checkpoint for ``turn`` before its first code; returns a problem or ""."""
        self._snapshot = None
        if (not self.host.checkpoints_enabled or self._probe_fn() is None
                or any(c.number == turn.index for c in self.checkpoints)):
            return ""
        # one round trip: the checkpoint, the state before the step (change summary), and
        # dropping the checkpoints beyond ``max_checkpoints`` once this one is kept
        excess = max(0, len(self.checkpoints) + 1 - max(1, self.host.max_checkpoints))
        snapshot = self.host.track_changes and self._generation() is not None
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
        self.checkpoints = self.checkpoints[excess:]
        self.checkpoints.append(Checkpoint(turn.index, turn.instruction, turn.conversation_index,
                                           info=info))
        self.host.publish(CheckpointKept(turn.index, info))
        return ""

    async def rollback_to(self, checkpoint: Checkpoint) -> str:
        """Restore ``checkpoint`` (and forget it and later ones); a message for the user."""
        self._snapshot = None
        report = await self._probe("restore", checkpoint.number, self.store_dir())
        self.checkpoints = [c for c in self.checkpoints if c.number < checkpoint.number]
        first = (checkpoint.instruction.splitlines() or [""])[0][:80]
        self.host.publish(RolledBack(checkpoint.number, report))
        return restore_message(report, f"before instruction {checkpoint.number} (“{first}”)")

    async def undo_and_roll_back(self, n: int = 1) -> tuple[list[str], str]:
        """Forget the last ``n`` instructions and roll the state back to before the first of
        them that ran code. Returns (the instructions, what the rollback did, "" if none)."""
        conversation = self.host.conversation
        starts = len(conversation.turn_starts)
        cut = max(0, starts - n)
        targets = [c for c in self.checkpoints if cut <= c.conversation_index < starts
                   and conversation.instruction(c.conversation_index).startswith(
                       c.instruction)]  # still the same conversation (not reset or loaded)
        removed = self.host.undo(n)
        if not targets:
            return removed, ""
        return removed, await self.rollback_to(min(targets, key=lambda c: c.number))

    async def restore(self, number: int) -> tuple[list[str], str]:
        """Go back to checkpoint ``number`` (before that instruction ran); the instructions
        from it on are forgotten too. Returns (the instructions, what the rollback did)."""
        checkpoint = self.checkpoint_named(number)
        conversation, at = self.host.conversation, checkpoint.conversation_index
        same = (at < len(conversation.turn_starts)
                and conversation.instruction(at).startswith(checkpoint.instruction))
        n = len(conversation.turn_starts) - at
        removed = self.host.undo(n) if same and n > 0 else []
        return removed, await self.rollback_to(checkpoint)

    def forget_saved_files(self) -> None:
        """Delete this session's saved file contents (the session ends; its checkpoints go
        with the process that held them)."""
        import shutil

        try:
            store = os.path.join(self.host.executor.cwd, self.store_dir())
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
