"""The line commands of every front door, in one table.

The Open Interpreter kernel dispatches ``%NAME ARGS`` here and ``%%oi``'s line magic
``%oi NAME ARGS``; both get the same commands with the same words, so they cannot
disagree. A command sees a narrow ``CommandContext``: the session, a way to show
markdown in the current cell, and the cell's event sink (for steps a command runs).
Commands that need a child kernel say so and explain themselves where there is none.
"""

from __future__ import annotations

import inspect
import shlex
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from oi_kernel.core.events import EventSink
from oi_kernel.errors import OIError
from oi_kernel.session.assembly import RESTART_NOTICE, Session

ON = frozenset({"on", "1", "true", "yes"})
OFF = frozenset({"off", "0", "false", "no"})
LIMITS = ("step_timeout", "max_tokens_per_turn", "max_cost_per_turn",
          "max_tokens_per_session", "max_cost_per_session")


@dataclass
class CommandContext:
    """What a command may use."""

    session: Session
    say: Callable[[str], None]  # show markdown in the current cell
    events: Callable[[], EventSink]  # the current cell's event sink

    @property
    def prefix(self) -> str:
        return self.session.door.prefix

    def usage(self, text: str) -> OIError:
        return OIError(f"Usage: {self.prefix}{text}")


Handler = Callable[[CommandContext, str], "Awaitable[None] | None"]


@dataclass(frozen=True)
class Command:
    name: str
    usage: str  # arguments, e.g. "[NAME]"
    help: str  # one line for %help
    run: Handler
    needs_child: bool = False  # only where code runs in a child kernel of ours


COMMANDS: dict[str, Command] = {}


def command(name: str, usage: str, help: str, *, needs_child: bool = False
            ) -> Callable[[Handler], Handler]:
    def register(handler: Handler) -> Handler:
        COMMANDS[name] = Command(name, usage, help, handler, needs_child)
        return handler

    return register


def available(session: Session) -> list[Command]:
    """The commands of this front door, by name."""
    return [c for n, c in sorted(COMMANDS.items())
            if not c.needs_child or session.child is not None]


async def run_command(ctx: CommandContext, line: str) -> None:
    """Run one command line (without its ``%`` / ``%oi `` prefix)."""
    name, _, arg = line.strip().partition(" ")
    cmd = COMMANDS.get(name or "help")
    if cmd is None or cmd not in available(ctx.session):
        known = ", ".join(f"{ctx.prefix}{c.name}" for c in available(ctx.session))
        there = "" if cmd is None else " here (code runs in this IPython kernel)"
        extra = " Use %%python for Python code and !cmd for shell commands." \
            if ctx.prefix == "%" else ""
        raise OIError(f"Unknown command {ctx.prefix}{name}{there}. Known: {known}.{extra}")
    result = cmd.run(ctx, arg.strip())
    if inspect.isawaitable(result):
        await result


def complete(session: Session, word: str) -> list[str]:
    """Command names (with the prefix) starting with ``word``."""
    prefix = session.door.prefix
    return [f"{prefix}{c.name}" for c in available(session) if f"{prefix}{c.name}".startswith(word)]


def split_args(ctx: CommandContext, arg: str, known: set[str], usage: str
               ) -> tuple[list[str], set[str]]:
    """(positional arguments, flags) of a command line; at most one positional."""
    args = shlex.split(arg)
    flags = {a for a in args if a.startswith("--")}
    paths = [a for a in args if not a.startswith("--")]
    if flags - known or len(paths) > 1:
        raise ctx.usage(usage)
    return paths, flags


# ----------------------------------------------------------------------------- help
HELP_INTRO = {
    "%": ("**Open Interpreter kernel.** Write an instruction in plain words; the model proposes "
          "code and you approve each block before it runs in a Python kernel."),
    "%oi ": ("**%%oi**: write an instruction below `%%oi`; the model proposes code, you approve "
             "it, and it runs in this notebook's namespace. Options: `-y` run without asking, "
             "`-m NAME` model, `--max-steps N`."),
}
HELP_EXTRA = {
    "%": ("| `%%python` | run the rest of the cell as Python, without the model |\n"
          "| `!cmd` | run a shell command, without the model |\n"),
    "%oi ": "",
}


@command("help", "", "show this help")
def _help(ctx: CommandContext, arg: str) -> None:
    rows = "".join(
        f"| `{ctx.prefix}{c.name}` | {c.help}"
        + (f" (`{ctx.prefix}{c.name} {c.usage}`)".replace("|", "\\|") if c.usage else "")
        + " |\n"
        for c in available(ctx.session))
    ctx.say(f"{HELP_INTRO.get(ctx.prefix, '')}\n\n| command | what it does |\n|---|---|\n"
            f"{rows}{HELP_EXTRA.get(ctx.prefix, '')}")


# ----------------------------------------------------------------------------- model and policy
@command("model", "[NAME]", "show the model, or set it (a litellm model name)")
def _model(ctx: CommandContext, arg: str) -> None:
    llm = ctx.session.llm
    if arg:
        llm.model = arg
        ctx.say(f"Model set to `{arg}`.")
        return
    where = f" at `{llm.api_base}`" if llm.api_base else ""
    ctx.say(f"Model: `{llm.model or '(none configured: set OI_MODEL, or ' + ctx.prefix + 'model NAME)'}`"
            f"{where}")


@command("auto_run", "on|off", "run code without asking (on), or ask for each block (off)")
def _auto_run(ctx: CommandContext, arg: str) -> None:
    engine = ctx.session.engine
    if arg.lower() in ON:
        engine.approval = "never"
    elif arg.lower() in OFF:
        engine.approval = "always"
    elif arg:
        raise ctx.usage("auto_run on|off")
    state = "on: code runs without asking" if engine.auto_run else "off: you approve each block"
    ctx.say(f"Auto-run is {state}.")


@command("approval", "always|risky|never", "when to ask before running code")
def _approval(ctx: CommandContext, arg: str) -> None:
    engine = ctx.session.engine
    if arg:
        if arg not in {"always", "risky", "never"}:
            raise ctx.usage("approval always|risky|never")
        engine.approval = arg
    ctx.say(f"Approval policy: `{engine.approval}`.")


@command("max_steps", "[N]", "show or set the cap on LLM calls per instruction")
def _max_steps(ctx: CommandContext, arg: str) -> None:
    engine = ctx.session.engine
    if arg:
        try:
            engine.max_steps = int(arg)
        except ValueError as exc:
            raise ctx.usage("max_steps N (a whole number, at least 1)") from exc
    ctx.say(f"At most {engine.max_steps} LLM calls per instruction.")


@command("limits", "[NAME=VALUE ...]", "show or set limits (0 = off): step_timeout, "
         "max_tokens_per_turn, max_cost_per_turn, max_tokens_per_session, max_cost_per_session")
def _limits(ctx: CommandContext, arg: str) -> None:
    engine = ctx.session.engine
    for item in arg.split():
        name, _, value = item.partition("=")
        if name not in LIMITS or not value:
            raise ctx.usage(f"limits NAME=VALUE ... with NAME one of: {', '.join(LIMITS)}")
        try:
            number = float(value)
        except ValueError as exc:
            raise OIError(f"{ctx.prefix}limits {name}: {value!r} is not a number") from exc
        if number < 0:
            raise OIError(f"{ctx.prefix}limits {name}: use 0 to turn it off, not a negative number")
        setattr(engine, name, int(number) if name.startswith("max_tokens") else number)
    rows = [f"| `{n}` | {getattr(engine, n) or 'off'} |" for n in LIMITS]
    rows.append(f"| `max_steps` | {engine.max_steps} |")
    child = ctx.session.child
    if child is not None:
        rows.append(f"| memory (`c.ChildKernel.memory_limit`) | {child.memory_limit or 'off'} |")
    ctx.say("| limit | value |\n|---|---|\n" + "\n".join(rows))


@command("sandbox", "on|off", "run Python in a sandbox (no network, writes only here)",
         needs_child=True)
async def _sandbox(ctx: CommandContext, arg: str) -> None:
    import os

    session, child = ctx.session, ctx.session.child
    value = arg.lower()
    if value and value not in ON | OFF:
        raise ctx.usage("sandbox on|off")
    want = value in ON
    restart = bool(value) and (want != child.sandbox or not child.is_running)
    if restart:
        if want:
            from oi_kernel.execution.sandbox import require_bwrap

            require_bwrap()  # refuse before touching the running child
        child.sandbox = want
        await session.restart_child(f"{ctx.prefix}sandbox {'on' if want else 'off'}",
                                    wait=True, sandbox=want)
    where = child.cwd or os.getcwd()
    if child.sandbox:
        text = ("Sandbox is **on**: Python runs inside bubblewrap with no network, the file "
                f"system read-only except `{where}` and a private /tmp, and credentials in your "
                "home directory hidden.")
    else:
        text = "Sandbox is **off**: Python runs with your own permissions and network."
    if restart:
        text += f" {RESTART_NOTICE}"
    ctx.say(text)


# ----------------------------------------------------------------------------- conversation
@command("reset", "[--restart]", "forget the conversation; --restart also restarts Python")
async def _reset(ctx: CommandContext, arg: str) -> None:
    session = ctx.session
    if arg and arg != "--restart":
        raise ctx.usage("reset [--restart]")
    if arg == "--restart" and session.child is None:
        raise OIError("Code runs in this IPython kernel here: restart it with the notebook's "
                      "own restart (the conversation was not changed).")
    session.engine.reset()
    if arg == "--restart":
        await session.restart_child(f"{ctx.prefix}reset --restart")
        ctx.say(f"Conversation forgotten. {RESTART_NOTICE}")
    elif session.child is None:
        ctx.say("Conversation forgotten. Your variables are kept.")
    else:
        ctx.say("Conversation forgotten. Python variables are kept "
                f"(use `{ctx.prefix}reset --restart` to restart Python too).")


@command("history", "", "show this session's instructions and their steps")
def _history(ctx: CommandContext, arg: str) -> None:
    turns = ctx.session.engine.turns
    if not turns:
        ctx.say("No instructions yet.")
        return
    lines = []
    for turn in turns:
        first = (turn.instruction.splitlines() or [""])[0][:100]
        lines.append(f"{turn.index}. {first} — {turn.end_reason or 'running'}")
        for step in turn.steps:
            label = step.decision.label if step.decision else step.status
            lines.append(f"   - step {step.index} ({step.block.language}): {label}, {step.status}")
    ctx.say("```\n" + "\n".join(lines) + "\n```")


@command("undo", "[N]", "forget the last instruction (or N) and roll back what its code did")
async def _undo(ctx: CommandContext, arg: str) -> None:
    try:
        n = int(arg) if arg else 1
    except ValueError as exc:
        raise ctx.usage("undo [N] (a whole number of instructions)") from exc
    removed, rolled = await ctx.session.engine.undo_and_roll_back(n)
    if not removed:
        ctx.say("Nothing to undo: the conversation is empty.")
        return
    first = removed[-1].splitlines()[0][:80] if removed[-1].strip() else ""
    one = len(removed) == 1
    what = f"the last instruction (“{first}”)" if one else f"the last {len(removed)} instructions"
    text = (f"Removed {what} from the conversation: the model will not see "
            f"{'it' if one else 'them'}.")
    if rolled:
        text += f" {rolled}"
    else:
        its = "its" if one else "their"
        why = ("no code ran" if ctx.session.engine.checkpoints_enabled
               else "checkpoints are off (c.Engine.checkpoints_enabled)")
        text += f" Nothing to roll back: {why} for {'it' if one else 'them'}."
        if "no code ran" not in why:
            text += f" {its.title()} side effects stay as they are."
    ctx.say(text)


@command("checkpoints", "", "list the checkpoints undo and restore can go back to")
def _checkpoints(ctx: CommandContext, arg: str) -> None:
    import time

    kept = ctx.session.engine.checkpoints
    if not kept:
        ctx.say("No checkpoints yet: one is kept before each instruction that runs code.")
        return
    rows = []
    for cp in kept:
        first = (cp.instruction.splitlines() or [""])[0][:60].replace("|", "\\|")
        when = time.strftime("%H:%M:%S", time.localtime(cp.created))
        size = cp.info.get("variables", "?")
        rows.append(f"| {cp.number} | {when} | {first} | {size} |")
    ctx.say("| checkpoint | kept at | before instruction | variables |\n|---|---|---|---|\n"
            + "\n".join(rows)
            + f"\n\n`{ctx.prefix}restore K` goes back to checkpoint K; "
            f"`{ctx.prefix}undo [N]` to before the last N instructions.")


@command("restore", "K", "go back to checkpoint K (see checkpoints): variables and files")
async def _restore(ctx: CommandContext, arg: str) -> None:
    try:
        number = int(arg)
    except ValueError as exc:
        raise ctx.usage("restore K (a checkpoint number from the checkpoints command)") from exc
    removed, rolled = await ctx.session.engine.restore(number)
    forgot = (f" Forgot {len(removed)} instruction{'s' if len(removed) != 1 else ''} from the "
              "conversation.") if removed else ""
    ctx.say(rolled + forgot)


@command("save", "[PATH] [--force]", "save the conversation as JSON (secrets are removed)")
def _save(ctx: CommandContext, arg: str) -> None:
    from oi_kernel.record.saved import DEFAULT_PATH, save

    paths, flags = split_args(ctx, arg, {"--force"}, "save [PATH] [--force]")
    saved = save(ctx.session.engine, paths[0] if paths else DEFAULT_PATH, "--force" in flags)
    s = "s" if saved.turns != 1 else ""
    ctx.say(f"Saved {saved.turns} instruction{s} ({len(saved.messages)} messages, "
            f"{len(saved.steps)} code steps) to `{saved.path}`. "
            f"`{ctx.prefix}load {saved.path}` restores it.")


@command("load", "[PATH] [--replay]", "restore a saved conversation (--replay re-runs its code)")
async def _load(ctx: CommandContext, arg: str) -> None:
    from oi_kernel.record import saved as cio

    paths, flags = split_args(ctx, arg, {"--replay"}, "load [PATH] [--replay]")
    engine = ctx.session.engine
    saved = cio.load(engine, paths[0] if paths else cio.DEFAULT_PATH)
    replay = "--replay" in flags
    ctx.say(cio.load_message(saved, engine.llm.model, replay, ctx.prefix))
    blocks = cio.replay_blocks(saved)
    if replay and blocks:
        turn = await engine.run_code_steps(f"{ctx.prefix}load {saved.path} --replay", blocks,
                                           ctx.events(), replayed_from=str(saved.path))
        counts: dict[str, int] = {}
        for step in turn.steps:
            counts[step.status] = counts.get(step.status, 0) + 1
        summary = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
        ctx.say(f"Replay finished: {summary} (of {len(blocks)} steps).")


@command("instructions", "[TEXT | --clear]", "add instructions for this session, or show them")
def _instructions(ctx: CommandContext, arg: str) -> None:
    from oi_kernel.session.profile_state import instructions_command

    ctx.say(instructions_command(ctx.session.engine, arg))


@command("profile", "[NAME | --list | --clear]",
         "apply a profile, or show each setting and where it came from")
async def _profile(ctx: CommandContext, arg: str) -> None:
    from oi_kernel.session.profile_state import profile_command

    session, child = ctx.session, ctx.session.child
    before = child.sandbox if child is not None else None
    text = profile_command(session.engine, arg, child=child,
                           selected_by=f"{ctx.prefix}profile")
    if child is not None and child.sandbox != before:  # the sandbox applies when it starts
        await session.restart_child(f"{ctx.prefix}profile {arg}", wait=True,
                                    sandbox=child.sandbox)
        text += " The Python kernel was restarted for the sandbox: variables are gone."
    ctx.say(text)


# ----------------------------------------------------------------------------- the record
@command("tokens", "", "show the session's tokens and cost, and the next request's size")
def _tokens(ctx: CommandContext, arg: str) -> None:
    engine = ctx.session.engine
    u = engine.usage
    cost = f"${u.cost:.4f}" if u.cost is not None else "unknown"
    text = (f"Session: {u.prompt_tokens:,} prompt tokens, {u.completion_tokens:,} "
            f"completion tokens, cost {cost}.")
    if engine.llm.model and engine.messages:
        from oi_kernel.core.context import total_tokens

        request = engine.build_request(engine.llm.uses_tools())
        nxt = total_tokens(request, engine.llm.count_tokens)
        text += (f" The next request would be about {nxt:,} tokens "
                 f"(budget {engine.budget_tokens():,}).")
    ctx.say(text)


@command("log", "", "show the session log's path")
def _log(ctx: CommandContext, arg: str) -> None:
    log = ctx.session.log
    ctx.say(f"Session log: `{log.path}`" if log is not None else "This session keeps no log.")


@command("export", "[PATH] [--include-failed] [--force]",
         "write what ran as a python3 notebook")
def _export(ctx: CommandContext, arg: str) -> None:
    from oi_kernel.record.export import export_notebook

    paths, flags = split_args(ctx, arg, {"--include-failed", "--force"},
                              "export [PATH] [--include-failed] [--force]")
    log = ctx.session.log
    if log is None:
        raise OIError("This session keeps no log, so there is nothing to export.")
    out = export_notebook(log.path, paths[0] if paths else "oi-session-export.ipynb",
                          include_failed="--include-failed" in flags, force="--force" in flags)
    ctx.say(f"Exported to `{out}`. Check it with `oi-kernel verify {out}`.")


def say_text(markdown: str) -> dict[str, Any]:
    """A display bundle for a command's answer."""
    return {"text/markdown": markdown, "text/plain": markdown}
