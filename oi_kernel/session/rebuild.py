"""``%rebuild``: a lost child kernel's namespace built again from the session log.

When the child kernel dies (``os._exit``, the OOM killer, a culled gateway kernel) or is
restarted on purpose (``%reset --restart``), its variables are gone, but the session log
holds every step that built them. ``plan`` reads the log (``record.replay.parse_session``)
for the lost kernel's generation: the records between the restart before it and the one
that replaced it. It keeps the code that ran and ended "ok" after a person (or the
approval policy) let it run, byte for byte as it ran (an edit as edited), instruction
steps and direct cells (``%%python``, ``!cmd``, other cell magics) in their order, and
says why it leaves out the rest. ``rebuild`` restores the workspace files from the
checkpoint kept before the first of those steps when its copies survived on disk, then
re-runs the steps through the engine's usual review and execution (``run_code_steps``):
approved once, they run without asking, except those the risk review flags for the
network, deletion or installs, which ask again through the front door's approver. The
first step that does not end "ok" stops it; what ran before is kept. Every rebuild is
recorded (a ``rebuild`` record, after the turn of its steps).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from oi_kernel.core.events import Rebuilt
from oi_kernel.core.steps import review_or_flag
from oi_kernel.core.types import CodeBlock
from oi_kernel.errors import OIError
from oi_kernel.safety.risk import Flag
from oi_kernel.session.commands import CommandContext, command, split_args

if TYPE_CHECKING:  # (the log's readers load when a rebuild is asked for, not at start-up)
    from oi_kernel.record.records import DirectRecord, Record
    from oi_kernel.record.replay import RecordedTurn

# what the risk review may flag that asks again before a rebuild re-runs it
REASK = frozenset({"network", "delete-files", "package-install", "pipe-to-shell"})
_RAN_ONCE = frozenset({"approved", "edited", "auto"})
_WHY_NOT = {
    "error": "it ended with an error when it ran",
    "died": "the kernel died while it ran (running it again would lose the kernel again)",
    "interrupted": "it was interrupted when it ran",
    "refused": "it was refused (its language was not available)",
}
_SHOWN_LINES = 8


@dataclass(frozen=True)
class Step:
    """One piece of recorded code to run again."""

    where: str  # "instruction 2 (“…”), step 1" or "`%%python` cell"
    block: CodeBlock
    flags: list[Flag]
    turn: int | None = None  # the instruction's number (its checkpoint's); None: a direct cell

    @property
    def asks(self) -> bool:
        return any(f.category in REASK for f in self.flags)


@dataclass
class Plan:
    """What a rebuild would do."""

    lost: str  # why the kernel was lost, in words
    steps: list[Step] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "where: why"
    done: int = 0  # steps handled by an earlier rebuild of this kernel that stopped

    def step(self, index: int) -> Step:
        """The plan's step of a rebuild turn's step ``index`` (from 1)."""
        return self.steps[self.done + index - 1]


# ----------------------------------------------------------------------------- the plan
def plan(records: list[Record], prefix: str = "%", dead_now: bool = False) -> Plan:
    """The rebuild of the generation before the newest child kernel (see the module
    docstring); ``dead_now``: the current child died and was not replaced yet, so it is
    the lost one. Raises OIError when there is nothing to rebuild."""
    from oi_kernel.record.records import ChildRestartRecord, DirectRecord, RebuildRecord
    from oi_kernel.record.replay import RecordedTurn, parse_session

    restarts = [i for i, r in enumerate(records) if isinstance(r, ChildRestartRecord)]
    if dead_now:  # (as if the restart the next cell makes were recorded)
        records = [*records, ChildRestartRecord(reason="the previous child kernel died")]
        restarts.append(len(records) - 1)
    if not restarts:
        raise OIError("The Python kernel has not been restarted or lost in this session: "
                      "there is nothing to rebuild.")
    end = restarts[-1]
    earlier = [r for r in records[end + 1:] if isinstance(r, RebuildRecord)]
    done = earlier[-1].done if earlier else 0
    if earlier and (done is None or earlier[-1].planned is None
                    or done >= earlier[-1].planned):
        raise OIError(f"This kernel was rebuilt already ({prefix}log shows the rebuild). "
                      f"To start again from a clean kernel: {prefix}reset --restart, then "
                      f"{prefix}rebuild.")
    start = restarts[-2] + 1 if len(restarts) > 1 else 0
    restart = records[end]
    assert isinstance(restart, ChildRestartRecord)
    lost = "it died" if "died" in restart.reason else f"it was restarted ({restart.reason})"
    result = Plan(lost, done=done or 0)
    for action in parse_session(records[start:end]).timeline:
        if isinstance(action, RecordedTurn):
            _add_turn(result, action)
        elif isinstance(action, DirectRecord):
            _add_direct(result, action)
    return result


def _add_turn(result: Plan, turn: RecordedTurn) -> None:
    first = (turn.instruction.splitlines() or [""])[0]
    title = f"instruction {turn.index} (“{first[:60]}{'…' if len(first) > 60 else ''}”)"
    for n in sorted(set(turn.proposals) | set(turn.decisions) | set(turn.executions)):
        where = f"{title}, step {n}"
        decision, ran = turn.decisions.get(n), turn.executions.get(n)
        if decision is not None and decision.action not in _RAN_ONCE:
            result.skipped.append(f"{where}: it was {decision.action or 'not run'}, not run")
        elif ran is None:
            result.skipped.append(f"{where}: it did not run")
        elif ran.tool:
            result.skipped.append(f"{where}: a call of the tool `{ran.tool}` (what it did is "
                                  "its server's, not the kernel's)")
        elif ran.status != "ok":
            result.skipped.append(f"{where}: {_WHY_NOT.get(ran.status, ran.status)}")
        elif decision is None:
            result.skipped.append(f"{where}: no decision to run it was recorded")
        else:
            block = CodeBlock(ran.language or "python", ran.code)
            result.steps.append(Step(where, block, review_or_flag(block.language, ran.code),
                                     turn.index))


def _add_direct(result: Plan, cell: DirectRecord) -> None:
    code = cell.code
    if cell.kind == "shell" and not code.lstrip().startswith("!"):  # (older logs)
        code = "\n".join(f"!{line}" for line in code.splitlines())
    label = {"python": "`%%python` cell", "shell": "`!` shell cell"}.get(
        cell.kind, f"`{(code.splitlines() or [''])[0][:30]}` cell")
    where = f"{label} ({cell.time[11:19] or 'direct'})" if cell.time else label
    if cell.status != "ok":
        result.skipped.append(f"{where}: {_WHY_NOT.get(cell.status, cell.status)}")
        return
    result.steps.append(Step(where, CodeBlock("python", code), review_or_flag("python", code)))


# ----------------------------------------------------------------------------- in words
def plan_markdown(p: Plan, prefix: str, dry_run: bool) -> str:
    n = len(p.steps) - p.done
    verb = "would re-run" if dry_run else "re-runs"
    head = (f"**Rebuild.** The previous Python kernel was lost ({p.lost}). `{prefix}rebuild` "
            f"{verb} {n} recorded step{'s' if n != 1 else ''} in the new kernel, in order, "
            "exactly as they ran:")
    if p.done:
        head += (f" (it goes on from step {p.done + 1}: the rebuild before stopped there, "
                 f"after steps 1–{p.done})")
    lines = [head, ""]
    for i, step in enumerate(p.steps, 1):
        if i > p.done:
            lines.append(f"{i}. {step.where}: {_risk(step)}")
            lines.append(_code(step.block))
    if not p.steps:
        lines.append("*(no step that ran to the end was recorded for that kernel)*")
    if p.skipped:
        lines += ["", "Not re-run:", *(f"- {s}" for s in p.skipped)]
    if dry_run:
        lines += ["", f"Nothing was run. `{prefix}rebuild` runs them."]
    return "\n".join(lines)


def _risk(step: Step) -> str:
    if not step.flags:
        return "no risk flags"
    names = ", ".join(sorted({f.category for f in step.flags}))
    return f"flagged: {names}" + (" — **asks again**" if step.asks else "")


def _code(block: CodeBlock) -> str:
    lines = block.code.splitlines() or [""]
    shown = lines[:_SHOWN_LINES]
    if len(lines) > _SHOWN_LINES:
        shown.append(f"# … {len(lines) - _SHOWN_LINES} more lines")
    fence = "````" if "```" in block.code else "```"
    body = "\n".join(f"   {line}" for line in shown)
    return f"   {fence}{block.language}\n{body}\n   {fence}"


def _failure(step: Any) -> str:
    for out in step.outputs:
        if out.get("output_type") == "error":
            return f"{out.get('ename', 'Error')}: {out.get('evalue', '')}"
    if step.status in ("skipped", "stopped"):
        return f"you {step.status} it"
    return (step.feedback.splitlines() or [step.status])[0][:200]


def _defined(steps: list[Any]) -> list[str]:
    names: list[str] = []
    for step in steps:
        for var in ((step.changes or {}).get("variables") or []):
            if var.get("change") in ("new", "changed") and var.get("name") not in names:
                names.append(var["name"])
    return names


def files_markdown(report: dict[str, Any] | None, number: int | None) -> str:
    if number is None:
        return ("Files were left as they are: no checkpoint from before the first step was "
                "kept.")
    if report is None or report.get("missing"):
        return (f"Files were left as they are: the copies checkpoint {number} saved did not "
                "survive.")
    restored, removed = report.get("restored") or [], report.get("removed") or []
    said = f"Files put back as they were before instruction {number}"
    if restored or removed:
        said += ": " + "; ".join(filter(None, [
            f"restored {', '.join(f'`{f}`' for f in restored)}" if restored else "",
            f"removed {', '.join(f'`{f}`' for f in removed)}" if removed else ""]))
    else:
        said += " (none had changed)"
    if report.get("not_restored"):
        said += f"; not restored: {', '.join(report['not_restored'])}"
    return said + "."


# ----------------------------------------------------------------------------- running it
async def rebuild(ctx: CommandContext, dry_run: bool) -> None:
    from oi_kernel.record.session_log import read_records

    session = ctx.session
    log = session.open_log()
    if log is None:
        raise OIError("This session keeps no log, so there is nothing to rebuild from.")
    if not dry_run and session.runner is not None:
        session.rebuilding = True  # the restart notice need not offer what is under way
        try:
            await session.runner.prepare()  # a dead child is replaced (and recorded) now
        finally:
            session.rebuilding = False
    child = session.child
    dead_now = child is not None and child.km is not None and not child.is_running
    p = plan(read_records(log.path), ctx.prefix, dead_now)
    ctx.say(plan_markdown(p, ctx.prefix, dry_run))
    if dry_run or len(p.steps) <= p.done:
        return
    engine = session.engine
    first = p.steps[0].turn
    checkpoint = next((c for c in engine.rollback.checkpoints if c.number == first), None)
    report = None
    if checkpoint is not None and not p.done:  # (going on: restored by the rebuild before)
        try:
            report = await engine.rollback.restore_files_only(checkpoint)
        except Exception as exc:  # the files are as they were: say so, rebuild anyway
            report = {"missing": True}
            ctx.say(f"The files could not be restored ({exc}).")
    files = files_markdown(report, first if checkpoint is not None else None)
    steps: list[Any] = []
    before = len(engine.turns)
    try:
        turn = await engine.run_code_steps(
            f"{ctx.prefix}rebuild", [s.block for s in p.steps[p.done:]], ctx.events(),
            reask=REASK,
            stop_on_failure=True, rebuild=p.lost)
        steps = turn.steps
    except BaseException as exc:  # interrupted, or no way to ask: recorded all the same
        steps = engine.turns[before].steps if len(engine.turns) > before else []
        why = str(exc) or type(exc).__name__
        with contextlib.suppress(Exception):  # (the error the user sees is this one)
            _record(ctx, p, steps, report, f"the rebuild ended early: {why}")
        raise
    ctx.say(_report(p, steps, *_record(ctx, p, steps, report), files))


def _record(ctx: CommandContext, p: Plan, steps: list[Any], report: dict[str, Any] | None,
            ended: str = "") -> tuple[list[Any], Any, str, list[str]]:
    """Write the ``rebuild`` record; (the steps that ran, the one that failed, why, the
    steps the user skipped)."""
    if ended and steps and steps[-1].status != "ok":  # the step it ended at did not run
        steps = steps[:-1]
    ran = [s for s in steps if s.status == "ok"]
    failed = next((s for s in steps if s.status not in ("ok", "skipped")), None)
    said_skip = [f"{p.step(s.index).where}: you skipped it"
                 for s in steps if s.status == "skipped"]
    failed_text = ended
    if failed is not None:
        failed_text = f"{p.step(failed.index).where}: {_failure(failed)}"
    handled = failed.index - 1 if failed is not None else len(steps)
    ctx.session.publish(Rebuilt(p.lost, len(p.steps), len(ran), failed_text,
                                p.skipped + said_skip, report or {}, p.done + handled))
    return ran, failed, failed_text, said_skip


def _report(p: Plan, steps: list[Any], ran: list[Any], failed: Any, failed_text: str,
            said_skip: list[str], files: str) -> str:
    names = _defined(ran)
    back = f" Defined again: {', '.join(f'`{n}`' for n in names)}." if names else ""
    if failed is not None:
        head = (f"**Rebuild stopped at step {p.done + failed.index} of {len(p.steps)}** "
                f"({failed_text}). The {len(ran)} step{'s' if len(ran) != 1 else ''} before "
                "it ran and what they built is kept; the later ones were not run. Once the "
                "cause is fixed, the rebuild command again goes on from that step.")
    else:
        head = f"**Rebuilt**: {len(ran)} of {len(p.steps) - p.done} steps ran again."
    parts = [head + back, files]
    skipped = p.skipped + said_skip
    if skipped:
        parts.append("Not re-run: " + "; ".join(skipped) + ".")
    parts.append("What a rebuild cannot bring back: the state of outside systems, random "
                 "numbers drawn without a seed, and files changed outside this session.")
    return "\n\n".join(parts)


@command("rebuild", "[--dry-run]", "after the Python kernel was lost or restarted, re-run the "
         "recorded code that built its variables (--dry-run lists it)", needs_child=True)
async def _rebuild(ctx: CommandContext, arg: str) -> None:
    words, flags = split_args(ctx, arg, {"--dry-run"}, "rebuild [--dry-run]")
    if words:
        raise ctx.usage("rebuild [--dry-run]")
    await rebuild(ctx, "--dry-run" in flags)
