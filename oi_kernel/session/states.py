"""Named states: ``%state save NAME``, ``%state restore NAME``, ``%state drop NAME`` and
``%states`` (every front door: kernel, ``%%oi``, API, ACP).

A state is the namespace and the workspace files at one moment, kept until dropped; the
probe does the keeping (``execution.probe.states``). States form a tree: each one's parent
is the state the session was on (the last saved or restored) when it was saved, so
restoring an older state keeps the newer ones, and work after it starts a branch.

A state's variables outlive the child kernel when they are builtin data (written to disk
as well); others are held by a fork of the kernel and die with it. For those, the state's
``state`` record in the session log carries the recorded steps that built them (what
``%rebuild`` would re-run at that moment: ``session.rebuild.plan``), and restoring the
state in a new kernel re-runs them through the rebuild machinery, then puts the files back.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from oi_kernel.core.events import StateChanged
from oi_kernel.errors import OIError
from oi_kernel.session.commands import CommandContext, command
from oi_kernel.session.rebuild import REASK, Step, plan, step_dicts, steps_of
from oi_kernel.session.states_text import plural, restore_text, size_text, tree_markdown

if TYPE_CHECKING:
    from oi_kernel.session.assembly import Session

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$")
BUDGET = "c.Engine.max_checkpoint_bytes"


@dataclass
class State:
    """One named state, as the session knows it."""

    name: str
    sid: int  # the probe's number for it
    parent: str | None  # the state the session was on when this one was saved
    instruction: str  # "instruction 3 (“…”)", or "" before any
    info: dict[str, Any]  # what the probe said (variables, files, bytes, plain, fork)
    mark: int  # the last session-log record it includes
    created: float = field(default_factory=time.time)
    steps: list[dict[str, Any]] | None = None  # the recorded steps that rebuild it
    writing: asyncio.Task[None] | None = None  # computing ``steps`` and the record


class States:
    """The named states of a session (``states_of``)."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.states: dict[str, State] = {}
        self.current: str | None = None  # the one the session is on (last saved or restored)
        self._next = 1

    # ------------------------------------------------------------ helpers
    @property
    def engine(self) -> Any:
        return self.session.engine

    def store(self) -> str:
        import os

        return os.path.join(self.engine.rollback.store_dir(), "states")

    def _mark(self) -> int:
        log = self.session.log  # (None until the log is open: then nothing was recorded)
        return int(getattr(log, "_seq", 0) or 0)

    def get(self, name: str) -> State:
        state = self.states.get(name)
        if state is None:
            known = ", ".join(f"`{n}`" for n in self.states) or "none yet"
            raise OIError(f"There is no state named {name!r}. States kept: {known} "
                          f"(`{self.session.door.prefix}states` lists them as a tree).")
        return state

    def _instruction(self) -> str:
        turns = self.engine.turns
        if not turns:
            return ""
        first = (turns[-1].instruction.splitlines() or [""])[0]
        return f"instruction {turns[-1].index} (“{first[:50]}{'…' if len(first) > 50 else ''}”)"

    # ------------------------------------------------------------ save, drop
    async def save(self, name: str) -> str:
        p = self.session.door.prefix
        if not _NAME.match(name):
            raise OIError(f"A state's name is letters, digits, '.', '_' or '-' (up to 40, "
                          f"e.g. {p}state save before-log-scale); not {name!r}.")
        if name in self.states:
            raise OIError(f"A state named {name!r} exists already: {p}state drop {name} "
                          "first, or pick another name.")
        budget = self.engine.max_checkpoint_bytes
        sid, self._next = self._next, self._next + 1
        info = await self.engine.rollback.probe_state("state_save", sid, self.store(), budget)
        if "too_big" in info:
            raise OIError(
                f"State {name!r} was not saved: the workspace's {info['files']:,} files take "
                f"{size_text(info['too_big'])}, more than the budget of {size_text(budget)} "
                f"({BUDGET}). Raise it (e.g. `{BUDGET} = {2 * info['too_big']:_}` in the "
                "kernel's config), or leave big folders out with c.Engine.change_ignore.")
        state = State(name, sid, self.current, self._instruction(), info, self._mark())
        self.states[name] = state
        self.current = name
        state.writing = asyncio.ensure_future(self._write_save(state))
        _offer_tool(self.session)
        kept = ("kept on disk too (it outlives the kernel)" if info.get("plain") else
                "held by a fork of the kernel (if the kernel is lost, restoring re-runs "
                "the recorded steps that built them)")
        return (f"Saved state `{name}`: {plural(info['variables'], 'variable')}, {kept}; "
                f"{plural(info['files'], 'file')} ({size_text(info['bytes'])}). "
                f"`{p}state restore {name}` comes back to it; `{p}states` lists them.")

    async def _write_save(self, state: State) -> None:
        """The steps that rebuild ``state``, read from the log after the save returned (it
        never waits for this), then its ``state`` record."""
        state.steps = []
        log = self.session.log  # (None until the log is open: then nothing was recorded)
        if log is not None:
            from oi_kernel.record.session_log import read_records

            try:
                records = await asyncio.to_thread(read_records, log.path)
                upto = [r for r in records if r.seq <= state.mark]
                state.steps = step_dicts(plan(upto, self.session.door.prefix, True).steps)
            except Exception:  # (a log that cannot be read: the state has no steps)
                self.engine.log.exception("reading the steps of state %s", state.name)
        with contextlib.suppress(Exception):
            self.session.publish(StateChanged("save", state.name, _public(state.info),
                                              state.mark, state.steps))

    async def drop(self, name: str) -> str:
        state = self.get(name)
        await self.engine.rollback.probe_state("state_drop", state.sid, self.store())
        del self.states[name]
        for other in self.states.values():  # its children hang from its parent now
            if other.parent == name:
                other.parent = state.parent
        if self.current == name:
            self.current = state.parent
        self.session.publish(StateChanged("drop", name, mark=self._mark()))
        return f"Dropped state `{name}` (its saved copies are deleted)."

    # ------------------------------------------------------------ restore
    async def restore(self, name: str, ctx: CommandContext | None = None) -> str:
        """Go back to state ``name``; what came back in words. ``ctx``: where a rebuild may
        run steps and ask (None: the model's tool call, which does not rebuild)."""
        state = self.get(name)
        if state.writing is not None:
            await state.writing
        rollback = self.engine.rollback
        report = await rollback.probe_state("state_restore", state.sid, self.store())
        if report.get("missing"):
            raise OIError(f"The saved copies of state {name!r} are gone (deleted from "
                          f"{self.store()}): {self.session.door.prefix}state drop {name}.")
        text = restore_text(name, report, self.session.door.prefix)
        if report.get("namespace_lost"):
            text += "\n\n" + await self._rebuild(state, ctx)
        self.current = name
        self.session.publish(StateChanged("restore", name, _public(report),
                                          self._mark(), state.steps or []))
        return text

    async def _rebuild(self, state: State, ctx: CommandContext | None) -> str:
        """Variables a lost fork held: the state's recorded steps re-run, files put back."""
        p = self.session.door.prefix
        steps = steps_of(state.steps or [])
        if ctx is None:
            return (f"Its variables were held by a Python kernel that is gone: "
                    f"`{p}state restore {state.name}` re-runs the {len(steps)} recorded "
                    "steps that built them.")
        if not steps:
            return ("Its variables were held by a Python kernel that is gone, and no "
                    "recorded step built them: the namespace is empty.")
        ctx.say(_plan_text(state, steps, p))
        turn = await self.engine.run_code_steps(
            f"{p}state restore {state.name}", [s.block for s in steps], ctx.events(),
            reask=REASK, stop_on_failure=True, rebuild=f"state {state.name}")
        await self.engine.rollback.probe_state("state_restore", state.sid, self.store(),
                                               True)  # the files as the state has them
        return _rebuilt_text(steps, turn.steps)


def _plan_text(state: State, steps: list[Step], p: str) -> str:
    from oi_kernel.session.rebuild import _code, _risk

    lines = [f"**Rebuilding state `{state.name}`.** Its variables were held by a Python "
             f"kernel that is gone; re-running the {len(steps)} recorded steps that built "
             "them, in order, exactly as they ran:", ""]
    for i, step in enumerate(steps, 1):
        lines += [f"{i}. {step.where}: {_risk(step)}", _code(step.block)]
    return "\n".join(lines)


def _rebuilt_text(steps: list[Step], ran: list[Any]) -> str:
    from oi_kernel.session.rebuild import _defined, _failure

    ok = [s for s in ran if s.status == "ok"]
    failed = next((s for s in ran if s.status not in ("ok", "skipped")), None)
    names = _defined(ok)
    back = f" Defined again: {', '.join(f'`{n}`' for n in names)}." if names else ""
    if failed is not None:
        return (f"**Rebuild stopped at step {failed.index} of {len(steps)}** "
                f"({steps[failed.index - 1].where}: {_failure(failed)}); the steps before "
                f"it ran and what they built is kept.{back} Files are as the state has them.")
    return (f"**Rebuilt**: {len(ok)} of {len(steps)} steps ran again.{back} Files are as "
            "the state has them.")


def _public(info: dict[str, Any]) -> dict[str, Any]:
    """What the log keeps of a probe answer: counts, not every name."""
    return {k: (len(v) if isinstance(v, list) else v) for k, v in info.items()}


def states_of(session: Session) -> States:
    """The session's named states (made on first use)."""
    states = getattr(session, "states", None)
    if not isinstance(states, States):
        states = States(session)
        session.states = states  # type: ignore[attr-defined]
    return states


def _offer_tool(session: Session) -> None:
    from oi_kernel.session.states_tool import StatesTool

    providers = session.engine.toolbox.providers
    if not any(isinstance(p, StatesTool) for p in providers):
        providers.append(StatesTool(states_of(session)))


# ----------------------------------------------------------------------------- commands
USAGE = "state save|restore|drop NAME"


@command("state", "save|restore|drop NAME", "keep the variables and files as a named state, "
         "go back to one (newer ones stay: states form a tree), or drop one")
async def _state(ctx: CommandContext, arg: str) -> None:
    verb, _, name = arg.strip().partition(" ")
    name = name.strip()
    if verb not in ("save", "restore", "drop") or not name or " " in name:
        raise ctx.usage(USAGE)
    states = states_of(ctx.session)
    if verb == "save":
        ctx.say(await states.save(name))
    elif verb == "drop":
        ctx.say(await states.drop(name))
    else:
        ctx.say(await states.restore(name, ctx))


@command("states", "", "list the named states as a tree (name, when, instruction, size)")
def _states(ctx: CommandContext, arg: str) -> None:
    if arg.strip():
        raise ctx.usage("states")
    states = states_of(ctx.session)
    ctx.say(tree_markdown(list(states.states.values()), states.current, ctx.prefix))
