"""The line commands of every front door, in one table.

The Open Interpreter kernel dispatches ``%NAME ARGS`` here and ``%%oi``'s line magic
``%oi NAME ARGS``: the same commands with the same words. A command sees a narrow
``CommandContext``: the session, a way to show markdown in the current cell, and the
cell's event sink. Commands that need a child kernel explain themselves where there is none.
"""

from __future__ import annotations

import inspect
import shlex
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from oi_kernel import config
from oi_kernel.core import approval_modes
from oi_kernel.core.events import EventSink
from oi_kernel.core.four_eyes import APPROVALS, describe
from oi_kernel.errors import OIError
from oi_kernel.session.assembly import RESTART_NOTICE, Session
from oi_kernel.session.resolved import model_description, resolve

ON, OFF = frozenset({"on", "1", "true", "yes"}), frozenset({"off", "0", "false", "no"})
LIMITS = ("step_timeout", "max_tokens_per_turn", "max_cost_per_turn",
          "max_tokens_per_session", "max_cost_per_session", "guard_time_limit")


@dataclass
class CommandContext:
    """What a command may use."""

    session: Session
    say: Callable[[str], None]  # show markdown in the current cell
    events: Callable[[], EventSink]  # the current cell's event sink, with its TurnContext
    path: Callable[[str], str] = str  # a PATH argument as a file's path (ACP: in the session's cwd)

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
        there = " here (code runs in this IPython kernel)" * (cmd is not None)
        extra = " Use %%python for Python code and !cmd for shell commands." * (ctx.prefix == "%")
        raise OIError(f"Unknown command {ctx.prefix}{name}{there}. Known: {known}.{extra}")
    with config.from_source(f"{ctx.prefix or '%'}{cmd.name}"):  # what it sets came from it
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
             "`-m NAME` model, `--max-steps N`, `--no-context`; `{In[3]}`/`{Out[3]}`/`{Err[3]}`."),
}
HELP_EXTRA = {
    "%": ("| `%%python` | run the rest of the cell as Python, without the model |\n"
          "| `%%bash`, `%%html`, ... | any other cell magic, run as IPython runs it |\n"
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


@command("status", "", "show where code runs, the model, approval, limits, the log and "
         "the administrator's policy")
def _status(ctx: CommandContext, arg: str) -> None:
    from oi_kernel.session.status import status_markdown

    ctx.say(status_markdown(ctx.session))


# ----------------------------------------------------------------------------- model and policy
@command("model", "[NAME]", "show the model and its small-model mode, or set the model "
         "(a litellm model name)")
async def _model(ctx: CommandContext, arg: str) -> None:
    llm = ctx.session.llm
    if arg:
        llm.model = arg
    where = f" at `{llm.api_base}`" if llm.api_base else ""
    if not llm.model.strip():
        ctx.say(f"Model: (none configured: set OI_MODEL, or {ctx.prefix}model NAME){where}")
        return
    head = f"Model set to `{llm.model}`{where}." if arg else f"Model: `{llm.model}`{where}."
    try:
        await llm.prepare()  # imports litellm off the event loop; asks the server once
    except Exception as exc:  # the description must not fail over a server that is down
        head += f" (Could not ask about it: {exc})"
    ctx.say(head + "\n\n" + model_description(llm, ctx.session.engine))


@command("auto_run", "on|off", "run code without asking (on), or ask for each block (off)")
def _auto_run(ctx: CommandContext, arg: str) -> None:
    engine = ctx.session.engine
    if arg.lower() in ON:
        engine.approval = approval_modes.AUTO_RUN
    elif arg.lower() in OFF:
        engine.approval = approval_modes.DEFAULT
    elif arg:
        raise ctx.usage("auto_run on|off")
    state = "on: code runs without asking" if engine.auto_run else "off: you approve each block"
    ctx.say(f"Auto-run is {state}.")


@command("approval", "|".join(APPROVALS), "when to ask before running code, and whether a "
         "second person must run it (four-eyes)")
def _approval(ctx: CommandContext, arg: str) -> None:
    engine = ctx.session.engine
    if arg:
        if arg not in APPROVALS:
            raise ctx.usage("approval " + "|".join(APPROVALS))
        engine.approval = arg
    ctx.say(f"Approval policy: `{engine.approval}`.{describe(engine.approval)}")


@command("config", "[NAME]", "every setting with its value and where it came from (env, "
         "config, profile, policy, a command); NAME: only those whose name contains it")
def _config(ctx: CommandContext, arg: str) -> None:
    ctx.say(resolve(ctx.session).markdown(arg.strip()))


@command("display", "auto|live|text", "how replies stream: updated in place (live), printed "
         "as text (text: terminals, papermill), or live where widgets render (auto)")
def _display(ctx: CommandContext, arg: str) -> None:
    from oi_kernel.session.view import DISPLAY_MODES

    if arg:
        if arg not in DISPLAY_MODES:
            raise ctx.usage("display auto|live|text")
        ctx.session.display = arg
    ctx.say(f"Display: `{ctx.session.display}`.")


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


@command("sandbox", "[on|off | allow PATH [--write] | revoke PATH]",
         "run Python in a sandbox (no network, sees only this directory and what you grant)",
         needs_child=True)
async def _sandbox(ctx: CommandContext, arg: str) -> None:
    import os

    from oi_kernel.execution import sandbox

    session, child = ctx.session, ctx.session.child
    if child.gateway_url:
        ctx.say(f"Python runs on the gateway `{child.gateway_url}`: sandboxing is **the "
                "gateway's job** there (the confinement its kernelspec sets up), so "
                f"`{ctx.prefix}sandbox` does not apply. `{ctx.prefix}status` shows where code "
                "runs.")
        return
    usage = "sandbox [on|off | allow PATH [--write] | revoke PATH]"
    words = shlex.split(arg)
    verb = words[0].lower() if words else ""
    where = child.cwd or os.getcwd()
    restart, said = False, ""
    if verb in ("allow", "revoke"):
        paths, flags = split_args(ctx, " ".join(shlex.quote(w) for w in words[1:]),
                                  {"--write"} if verb == "allow" else set(), usage)
        if not paths:
            raise ctx.usage(usage)
        if verb == "allow":
            real, changed = child.grants.allow(paths[0], "--write" in flags, cwd=where)
            kind = "read-write" if "--write" in flags else "read-only"
            said = f"Granted `{real}` {kind}."
        else:
            changed = child.grants.revoke(paths[0], cwd=where)
            said = "Grant revoked." if changed else f"`{paths[0]}` was not granted."
        restart = changed and child.sandbox
        if changed and not child.sandbox:
            said += f" It applies when the sandbox is on (`{ctx.prefix}sandbox on`)."
        fields = {"read_paths": list(child.grants.read_paths),
                  "write_paths": list(child.grants.write_paths)}
        reason = f"{ctx.prefix}sandbox {arg.strip()}"
    elif verb in ON | OFF or not verb:
        if len(words) > 1:
            raise ctx.usage(usage)
        want = verb in ON
        restart = bool(verb) and (want != child.sandbox or not child.is_running)
        if restart and want:
            sandbox.require_bwrap()  # refuse before touching the running child
        if restart:
            child.sandbox = want
        fields, reason = {"sandbox": want}, f"{ctx.prefix}sandbox {verb}"
    else:
        raise ctx.usage(usage)
    if restart:
        await session.restart_child(reason, wait=True, **fields)
    if said:  # allow / revoke: what changed and the grants now
        after = f" {RESTART_NOTICE}" if restart else ""
        ctx.say(f"{said}{after}\n\n{sandbox.grant_lines(child.grants)}")
        return
    text = sandbox.describe(child.sandbox, where, child.grants, ctx.prefix)
    ctx.say(text + (f"\n\n{RESTART_NOTICE}" if restart else ""))


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
        ctx.say(f"Conversation forgotten. {session.restart_notice()}")
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
    from oi_kernel.record.listing import history_markdown  # (log parsing: not at start-up)

    ctx.say(history_markdown(turns))


@command("undo", "[N]", "forget the last instruction (or N) and roll back what its code did")
async def _undo(ctx: CommandContext, arg: str) -> None:
    from oi_kernel.core.changes import undo_message

    try:
        n = int(arg) if arg else 1
    except ValueError as exc:
        raise ctx.usage("undo [N] (a whole number of instructions)") from exc
    engine = ctx.session.engine
    removed, rolled = await engine.rollback.undo_and_roll_back(n)
    ctx.say(undo_message(removed, rolled, engine.checkpoints_enabled))


@command("checkpoints", "", "list the checkpoints undo and restore can go back to")
def _checkpoints(ctx: CommandContext, arg: str) -> None:
    from oi_kernel.core.changes import checkpoints_markdown

    ctx.say(checkpoints_markdown(ctx.session.engine.rollback.checkpoints, ctx.prefix))


@command("restore", "K", "go back to checkpoint K (see checkpoints): variables and files")
async def _restore(ctx: CommandContext, arg: str) -> None:
    try:
        number = int(arg)
    except ValueError as exc:
        raise ctx.usage("restore K (a checkpoint number from the checkpoints command)") from exc
    removed, rolled = await ctx.session.engine.rollback.restore(number)
    forgot = (f" Forgot {len(removed)} instruction{'s' if len(removed) != 1 else ''} from the "
              "conversation.") if removed else ""
    ctx.say(rolled + forgot)


@command("save", "[PATH] [--force]", "save the conversation as JSON (secrets are removed)")
def _save(ctx: CommandContext, arg: str) -> None:
    from oi_kernel.record.saved import DEFAULT_PATH, save

    paths, flags = split_args(ctx, arg, {"--force"}, "save [PATH] [--force]")
    saved = save(ctx.session.engine, ctx.path((paths or [DEFAULT_PATH])[0]), "--force" in flags)
    s = "s" if saved.turns != 1 else ""
    ctx.say(f"Saved {saved.turns} instruction{s} ({len(saved.messages)} messages, "
            f"{len(saved.steps)} code steps) to `{saved.path}`. "
            f"`{ctx.prefix}load {saved.path}` restores it.")


@command("load", "[PATH] [--replay]", "restore a saved conversation (--replay re-runs its code)")
async def _load(ctx: CommandContext, arg: str) -> None:
    from oi_kernel.record import saved as cio

    paths, flags = split_args(ctx, arg, {"--replay"}, "load [PATH] [--replay]")
    engine = ctx.session.engine
    saved = cio.load(engine, ctx.path((paths or [cio.DEFAULT_PATH])[0]))
    replay = "--replay" in flags
    ctx.say(cio.load_message(saved, engine.llm.model, replay, ctx.prefix))
    blocks = cio.rebuild_blocks(saved)
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
    before = _sandbox_state(child)
    text = profile_command(session.engine, arg, child=child,
                           selected_by=f"{ctx.prefix}profile", cwd=ctx.path("."))
    after = _sandbox_state(child)
    if after and before and after != before and (after[0] or before[0]):  # applies at start
        await session.restart_child(f"{ctx.prefix}profile {arg}", wait=True,
                                    sandbox=child.sandbox, read_paths=after[1],
                                    write_paths=after[2])
        text += " The Python kernel was restarted for the sandbox: variables are gone."
    ctx.say(text)


def _sandbox_state(child: Any) -> tuple[bool, list[str], list[str]] | None:
    if child is None:
        return None
    return child.sandbox, list(child.grants.read_paths), list(child.grants.write_paths)


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


@command("log", "[N]", "show the session log's path and its last N events (10)")
def _log(ctx: CommandContext, arg: str) -> None:
    if arg and not (arg.isdigit() and 0 < int(arg) <= 1000):
        raise ctx.usage("log [N]  (N: how many of the last events to show, 1 to 1000)")
    log = ctx.session.open_log()
    from oi_kernel.record.listing import log_markdown  # (log parsing: not at start-up)

    ctx.say(log_markdown(log.path, int(arg or 10)) if log is not None
            else "This session keeps no log.")


@command("export", "[PATH] [--include-failed] [--force]",
         "write what ran as a python3 notebook")
def _export(ctx: CommandContext, arg: str) -> None:
    from oi_kernel.record.export import export_notebook

    paths, flags = split_args(ctx, arg, {"--include-failed", "--force"},
                              "export [PATH] [--include-failed] [--force]")
    log = ctx.session.open_log()
    if log is None:
        raise OIError("This session keeps no log, so there is nothing to export.")
    out = export_notebook(log.path, ctx.path((paths or ["oi-session-export.ipynb"])[0]),
                          include_failed="--include-failed" in flags, force="--force" in flags)
    ctx.say(f"Exported to `{out}`. Check it with `oi-kernel verify {out}`.")


# ----------------------------------------------------------------------------- tools
@command("mcp", "[reload]", "list the MCP servers, their state and tools; reload the config")
async def _mcp(ctx: CommandContext, arg: str) -> None:
    from oi_kernel.session import tools

    if arg not in ("", "reload"):
        raise ctx.usage("mcp [reload]")
    ctx.say(await (tools.reload_mcp(ctx.session) if arg else tools.show_mcp(ctx.session)))


@command("tool", "[NAME ...] [-d NAME]", "offer notebook functions to the model as tools; "
         "list them; -d removes one")
async def _tool(ctx: CommandContext, arg: str) -> None:
    from oi_kernel.session import tools

    ctx.say(await tools.tool_command(ctx.session, shlex.split(arg), ctx.events,
                                     ctx.usage("tool -d NAME")))

