"""The events of a session around its instructions: its start and end, checkpoints and
rollbacks, the conversation forgotten, saved or loaded, a profile applied, tools offered,
a new child kernel, a cell run without the model, ``%rebuild``, a named state. Each names its record
(``core.recorded.Recorded``); ``core.events`` re-exports them with the turn's events.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from oi_kernel.core.recorded import TURN, Reads, Recorded, rest
from oi_kernel.core.values import FrozenDict

__all__ = [
    "SessionStarted", "SessionEnded", "CheckpointKept", "RolledBack", "ConversationReset",
    "ConversationUndone", "ConversationSaved", "ConversationLoaded", "ProfileApplied",
    "ToolsOffered", "ChildRestarted", "DirectRun", "Rebuilt", "StateChanged",
]


@dataclass(frozen=True)
class SessionStarted(Recorded):
    """A session log was opened: who writes it (``kernel``: the front door), with which
    model, child kernel, working directory and versions; ``headless``: ``oi-kernel run``."""

    record_kind: ClassVar[str] = "session_start"
    reads: ClassVar[Reads] = {"kernel": "str", "model": "str", "child_kernel": "str", "cwd": "str",
                                 "oi_version": "str", "python": "str", "headless": "bool"}
    doc: ClassVar[str] = ("`kernel` (`\"open-interpreter\"`, `\"ipython-magic\"` or "
                          "`\"api\"`), `model`, `child_kernel` (kernelspec name), "
                          "`cwd`, `oi_version`, `python`, `headless` (true only for "
                          "`oi-kernel run`)")
    kernel: str
    model: str
    cwd: str
    oi_version: str
    python: str
    child_kernel: str | None = None
    headless: bool = False

    def to_record(self) -> dict[str, Any]:
        fields = {"kernel": self.kernel, "model": self.model, "cwd": self.cwd,
                  "oi_version": self.oi_version, "python": self.python}
        if self.child_kernel is not None:
            fields["child_kernel"] = self.child_kernel
        return {**fields, **({"headless": True} if self.headless else {})}


@dataclass(frozen=True)
class SessionEnded(Recorded):
    """The session closed its log (the last record)."""

    record_kind: ClassVar[str] = "session_end"
    reads: ClassVar[Reads] = {}
    doc: ClassVar[str] = "(none)"


@dataclass(frozen=True)
class CheckpointKept(Recorded):
    """A checkpoint was kept before an instruction's first code (``info``: the probe's)."""

    record_kind: ClassVar[str] = "checkpoint"
    reads: ClassVar[Reads] = {**TURN, "id": "int | None", "fork": "bool", "copy": "bool",
                                 "variables": "int | None", "files": "int | None", "cost_s": "float | None"}
    doc: ClassVar[str] = ("`turn` (the checkpoint's number), `id`, `fork` (bool: a "
                          "fork of the process keeps the namespace), `copy` (bool, "
                          "since 0.1.0: the namespace was builtin data, kept as an "
                          "in-memory copy instead; older logs lack it), "
                          "`variables`, `files`, `cost_s`: kept before the "
                          "instruction's first code step")
    FIELDS: ClassVar[tuple[str, ...]] = ("id", "fork", "copy", "variables", "files", "cost_s")
    turn: int
    info: Mapping[str, Any]

    def to_record(self) -> dict[str, Any]:
        return {"turn": self.turn, **{k: self.info[k] for k in self.FIELDS if k in self.info}}

    @classmethod
    def from_record(cls, fields: Mapping[str, Any], kind: str = "") -> CheckpointKept:
        return cls(fields["turn"], {k: fields[k] for k in cls.FIELDS if k in fields})


@dataclass(frozen=True)
class RolledBack(Recorded):
    """The state went back to before instruction ``turn`` (``report``: what was restored)."""

    record_kind: ClassVar[str] = "rollback"
    reads: ClassVar[Reads] = {**TURN, **dict.fromkeys(("variables", "removed_variables", "problems",
                                 "restored", "removed", "not_restored"), "tuple[Any, ...]"),
                                 "namespace_lost": "bool"}
    doc: ClassVar[str] = ("`turn` (the checkpoint gone back to), `variables`, "
                          "`removed_variables`, `problems` `[{name, type, why}]` "
                          "(not restorable), `restored`, `removed`, `not_restored` "
                          "(files), `namespace_lost` (after a kernel restart)")
    turn: int
    report: Mapping[str, Any]

    def to_record(self) -> dict[str, Any]:
        return {"turn": self.turn, **self.report}

    @classmethod
    def from_record(cls, fields: Mapping[str, Any], kind: str = "") -> RolledBack:
        return cls(fields["turn"], rest(fields, "turn"))


@dataclass(frozen=True)
class ConversationReset(Recorded):
    """The conversation was forgotten."""

    record_kind: ClassVar[str] = "conversation_reset"
    reads: ClassVar[Reads] = {}
    doc: ClassVar[str] = "(none): `%reset` forgot the conversation"


@dataclass(frozen=True)
class ConversationUndone(Recorded):
    """The last ``turns`` instructions were forgotten; ``messages`` remain."""

    record_kind: ClassVar[str] = "conversation_undo"
    reads: ClassVar[Reads] = {"turns": "int | None", "messages": "int | None"}
    doc: ClassVar[str] = ("`turns` (the instructions forgotten), `messages` (the messages "
                          "that remain)")
    turns: int
    messages: int


@dataclass(frozen=True)
class ConversationSaved(Recorded):
    """The conversation was saved to ``path``."""

    record_kind: ClassVar[str] = "conversation_saved"
    reads: ClassVar[Reads] = {"path": "str", "turns": "int | None"}
    doc: ClassVar[str] = "`path`, `turns`: the conversation saved (`%save`)"
    path: str
    turns: int


@dataclass(frozen=True)
class ConversationLoaded(Recorded):
    """A saved conversation was loaded from ``path``."""

    record_kind: ClassVar[str] = "conversation_loaded"
    reads: ClassVar[Reads] = {"path": "str", "turns": "int | None", "messages": "int | None"}
    doc: ClassVar[str] = "`path`, `turns`, `messages`: a saved conversation loaded (`%load`)"
    path: str
    turns: int
    messages: int


@dataclass(frozen=True)
class ProfileApplied(Recorded):
    """A profile (or none) was applied with these settings."""

    record_kind: ClassVar[str] = "profile"
    reads: ClassVar[Reads] = {"name": "str | None", "path": "str | None", "selected_by": "str",
                                 "settings": "dict | None"}
    doc: ClassVar[str] = ("`name`, `path` (null: no profile), `selected_by` (what chose it), "
                          "`settings` (what it set)")
    name: str | None
    path: str | None
    selected_by: str
    settings: Mapping[str, Any]


@dataclass(frozen=True)
class ToolsOffered(Recorded):
    """The notebook functions offered to the model changed."""

    record_kind: ClassVar[str] = "tools_offered"
    reads: ClassVar[Reads] = {"functions": "tuple[Any, ...]"}
    doc: ClassVar[str] = "`functions`: the notebook functions offered to the model (`%tool`)"
    functions: tuple[str, ...]


@dataclass(frozen=True)
class ChildRestarted(Recorded):
    """A new child kernel replaced the previous one (its variables are gone)."""

    record_kind: ClassVar[str] = "child_restart"
    reads: ClassVar[Reads] = {"reason": "str"}
    doc: ClassVar[str] = "`reason`"
    reason: str
    fields: Mapping[str, Any] = field(default_factory=FrozenDict)

    def to_record(self) -> dict[str, Any]:
        return {"reason": self.reason, **self.fields}

    @classmethod
    def from_record(cls, fields: Mapping[str, Any], kind: str = "") -> ChildRestarted:
        return cls(fields["reason"], rest(fields, "reason"))


@dataclass(frozen=True)
class DirectRun(Recorded):
    """A cell ran as is, without the model (``%%python``, a shell line, the API's
    ``run_code``)."""

    record_kind: ClassVar[str] = "direct"
    reads: ClassVar[Reads] = {"kind": "str", "code": "str", "status": "str", "outputs": "tuple[Any, ...]",
                                 "duration_s": "float | None"}
    doc: ClassVar[str] = ("`kind` (`\"python\"` or `\"shell\"`), `code`, `status`, "
                          "`outputs`, `duration_s`: a cell the user ran in the "
                          "child without the LLM. `code` is the IPython source sent"
                          " to the child: the body of a `%%python` cell, or the "
                          "`!cmd` line (a shell `code` without a leading `!` is "
                          "exported with one).")
    kind: str  # python or shell
    code: str
    status: str
    outputs: tuple[Mapping[str, Any], ...]
    duration_s: float | None = None

    def to_record(self) -> dict[str, Any]:
        return {"kind": self.kind, "code": self.code, "status": self.status,
                "outputs": self.outputs,
                **({"duration_s": self.duration_s} if self.duration_s is not None else {})}


@dataclass(frozen=True)
class Rebuilt(Recorded):
    """``%rebuild`` re-ran the recorded code of a lost child kernel in a new one: why the
    old one was lost, how many steps were planned and ran, the one that failed (its place
    and why; "" when none), what was skipped and why, the files restored, and how far
    through the plan it got."""

    record_kind: ClassVar[str] = "rebuild"
    reads: ClassVar[Reads] = {"lost": "str", "planned": "int | None", "ran": "int | None", "failed": "str",
                                 "skipped": "tuple[Any, ...]", "files": "dict | None", "done": "int | None"}
    doc: ClassVar[str] = ("`lost` (why the previous child kernel was lost: `\"it "
                          "died\"` or `\"it was restarted (REASON)\"`), `planned` "
                          "(steps to re-run), `ran`, `failed` (the step that "
                          "stopped it and why; `\"\"` when none), `skipped` (`\"where:"
                          " why\"` for each step not re-run), `files` (the file "
                          "restore's report, `{}` when none), `done` (the plan's "
                          "steps handled, ran or skipped; below `planned` when it "
                          "stopped, and the next `%rebuild` goes on from there): "
                          "`%rebuild` re-ran a lost kernel's steps, recorded as a "
                          "turn titled `%rebuild` whose `turn_start` has `rebuild` "
                          "(the same as `lost`); see [rollback.md](rollback.md)")
    lost: str
    planned: int
    ran: int
    failed: str = ""
    skipped: tuple[str, ...] = ()
    files: Mapping[str, Any] = field(default_factory=FrozenDict)
    done: int = 0  # the plan's steps handled (ran or skipped) so far: a next rebuild goes on


@dataclass(frozen=True)
class StateChanged(Recorded):
    """A named state (``%state``) was saved, restored or dropped: its name, what the probe
    said (sizes, how the namespace is kept, what came back), where in the log it stands
    (``mark``: the sequence number of the last record it includes) and the recorded steps
    that rebuild its variables in a new kernel (``session.states``)."""

    record_kind: ClassVar[str] = "state"
    reads: ClassVar[Reads] = {"action": "str", "name": "str", "info": "dict | None", "mark": "int | None",
                                 "steps": "tuple[Any, ...]"}
    doc: ClassVar[str] = ("`action` (`\"save\"`, `\"restore\"`, `\"drop\"`), `name`, "
                          "`info` (the probe's answer: `variables`, `files`, `bytes`, "
                          "`plain` (the namespace kept on disk), `fork`, `copied`, "
                          "`cost_s`; for a restore the counts of what came back), `mark` "
                          "(the `seq` of the last record the state includes), `steps` "
                          "(`[{where, language, code, turn}]`: the recorded steps that "
                          "rebuild its variables in a new kernel; a save's record is "
                          "written once they are read from the log, just after the "
                          "save): a named state; see [rollback.md](rollback.md)")
    action: str  # "save", "restore", "drop"
    name: str
    info: Mapping[str, Any] = field(default_factory=FrozenDict)
    mark: int = 0
    steps: tuple[Mapping[str, Any], ...] = ()
