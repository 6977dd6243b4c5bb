"""Change tracking and checkpoints, on the engine's side (every front door gets them).

Executors that can look inside the namespace their code runs in offer ``probe(name,
*args)`` (see ``oi_kernel.execution.probe``, which does the work where the code runs).
Around each step the engine asks for ``begin``/``end`` and keeps the change summary on the
step; before an instruction runs its first code it asks for a ``checkpoint`` numbered by the
instruction. ``rollback_to`` restores one (namespace and files) and says in words what came
back and what did not. Settings are ``c.Engine.*`` (or ``c.Rollback.*``).
"""

from __future__ import annotations

import os
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from traitlets import Bool, Float, Integer, List, Unicode, default

from oi_kernel.core import change_ignore
from oi_kernel.core.changes import restore_message
from oi_kernel.core.events import CheckpointKept, RolledBack
from oi_kernel.core.settings import EngineSettings
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


class Rollback(EngineSettings):
    """Change summaries per step and checkpoints per instruction."""

    track_changes = Bool(
        True, config=True,
        help="After each step, list the variables and files it created, changed or deleted "
        "(in the cell, for the model, in the log).")
    checkpoints_enabled = Bool(
        True, config=True,
        help="Before an instruction runs code, keep a checkpoint so %undo / %restore can roll "
        "the namespace and the working directory back (see docs/rollback.md).")
    max_checkpoints = Integer(
        10, config=True, help="Checkpoints kept; older ones are dropped (undo reaches back "
        "this many instructions).")
    max_file_bytes = Integer(
        10_000_000, config=True,
        help="Largest file whose content is saved before a step changes it (bytes); larger "
        "files are named as not restorable.")
    max_checkpoint_bytes = Integer(
        100_000_000, config=True,
        help="Most bytes of saved file contents per checkpoint; beyond it files are named as "
        "not restorable.")
    scan_budget_ms = Float(
        50.0, config=True,
        help="Time for one scan of the working directory (before and after a step); a scan cut "
        "short is said so.")
    scan_max_files = Integer(20_000, config=True, help="Most files one scan looks at.")
    checkpoint_dir = Unicode(
        "", config=True,
        help="Where saved file contents are kept; empty: .oi_checkpoints/<session> in the "
        "working directory (inside the sandbox's writable workspace).")

    change_ignore = List(
        Unicode(), config=True,
        help="Files and folders the change summaries and checkpoints leave out, in gitignore "
        "syntax (e.g. ['*.tmp', 'scratch/', '!.config/']), besides tools' folders (.ipython, "
        ".jupyter, .cache, .git, ...; see docs/rollback.md). Env: OI_CHANGE_IGNORE "
        "(comma-separated).")

    @default("change_ignore")
    def _change_ignore_default(self) -> list[str]:
        return change_ignore.env_patterns()

    change_ignore_gitignore = Bool(
        True, config=True,
        help="Also leave out what the project's .gitignore ignores (the working directory's, "
        "and the git repository root's).")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.checkpoints: list[Checkpoint] = []
        self._store_id = uuid.uuid4().hex[:10]
        self._ignore_told = False
        # the executor's generation when this instruction's checkpoint also kept the state
        # before its first step (``snapshot``): that step, if Python and nothing ran since,
        # needs no ``begin``
        self._snapshot: int | None = None

    # ------------------------------------------------------------ probe calls
    def _probe_fn(self) -> Any:
        return self.executor.probe

    async def _probe(self, name: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        probe = self._probe_fn()
        if probe is None:
            raise OIError(NO_PROBE)
        if name in ("begin", "checkpoint", "restore"):  # a restarted child starts from defaults
            settings = {"scan_budget_s": self.scan_budget_ms / 1000,
                        "max_files": self.scan_max_files, "max_file_bytes": self.max_file_bytes,
                        "max_total_bytes": self.max_checkpoint_bytes,
                        **self._ignore_settings()}
            return await probe(name, *args, settings=settings, **kwargs)
        return await probe(name, *args, **kwargs)

    def _ignore_settings(self) -> dict[str, Any]:
        """What the probe leaves out (``core.change_ignore``)."""
        try:
            cwd = self.executor.cwd  # type: ignore[attr-defined]
        except Exception:
            cwd = ""
        settings, problem = change_ignore.probe_settings(
            cwd, self.change_ignore, self.change_ignore_gitignore, self._not_scanned())
        if problem and not self._ignore_told:
            self._ignore_told = True
            self.log.warning("%s", problem)
        return settings

    def _not_scanned(self) -> list[str]:
        """The session log's folder: the session writes it, not the user's code."""
        path = getattr(self.recorder, "path", None)  # type: ignore[attr-defined]
        return [os.path.dirname(os.path.abspath(path))] if path else []

    def store_dir(self) -> str:
        """Where the probe keeps saved files: relative paths are to the directory the code
        runs in (which for a remote kernel is not ours)."""
        return os.path.join(self.checkpoint_dir or ".oi_checkpoints", self._store_id)

    def _generation(self) -> int | None:
        """How many times the executor ran code (or restarted) so far; None when it does
        not say (then every step asks for ``begin``)."""
        generation = getattr(self.executor, "generation", None)
        return generation if isinstance(generation, int) else None

    async def track_begin(self, language: str) -> bool:
        """Before a step: fingerprint the namespace and files; False when not tracked.
        No round trip when the checkpoint just kept for this step did it (a Python step,
        nothing run since). The executor may carry ``end`` in the step's own request."""
        if not self.track_changes or self._probe_fn() is None:
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

    async def ensure_checkpoint(self, turn: Turn) -> str:
        """Keep a checkpoint for ``turn`` before its first code; returns a problem or ""."""
        self._snapshot = None
        if (not self.checkpoints_enabled or self._probe_fn() is None
                or any(c.number == turn.index for c in self.checkpoints)):
            return ""
        # one round trip: the checkpoint, the state before the step (change summary), and
        # dropping the checkpoints beyond ``max_checkpoints`` once this one is kept
        excess = max(0, len(self.checkpoints) + 1 - max(1, self.max_checkpoints))
        snapshot = self.track_changes and self._generation() is not None
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
        self.publish(CheckpointKept(turn.index, info))  # type: ignore[attr-defined]
        return ""

    async def rollback_to(self, checkpoint: Checkpoint) -> str:
        """Restore ``checkpoint`` (and forget it and later ones); a message for the user."""
        self._snapshot = None
        report = await self._probe("restore", checkpoint.number, self.store_dir())
        self.checkpoints = [c for c in self.checkpoints if c.number < checkpoint.number]
        first = (checkpoint.instruction.splitlines() or [""])[0][:80]
        self.publish(RolledBack(checkpoint.number, report))  # type: ignore[attr-defined]
        return restore_message(report, f"before instruction {checkpoint.number} (“{first}”)")

    def forget_saved_files(self) -> None:
        """Delete this session's saved file contents (the session ends; its checkpoints go
        with the process that held them)."""
        import shutil

        try:
            store = os.path.join(self.executor.cwd, self.store_dir())  # type: ignore[attr-defined]
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
