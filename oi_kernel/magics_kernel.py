"""Line magics of the Open Interpreter kernel (``%model``, ``%auto_run``, ``%reset`` ...).

Each magic is a method ``m_<name>(self, arg)``; its docstring's first line is
the ``%help`` entry, so the list the user sees cannot drift from the code.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

from .errors import OIError

if TYPE_CHECKING:
    from .kernel import OIKernel


class KernelMagics:
    """The magics; output goes to the current cell as markdown."""

    def __init__(self, kernel: OIKernel) -> None:
        self.kernel = kernel

    @property
    def names(self) -> list[str]:
        return sorted(n[2:] for n in dir(self) if n.startswith("m_"))

    def say(self, text: str) -> None:
        self.kernel.publish(
            "display_data", {"data": {"text/markdown": text, "text/plain": text}, "metadata": {}}
        )

    async def run(self, line: str) -> None:
        name, _, arg = line.lstrip("%").partition(" ")
        method = getattr(self, f"m_{name}", None)
        if method is None:
            known = ", ".join(f"%{n}" for n in self.names)
            raise OIError(
                f"Unknown magic %{name}. Known magics: {known}. "
                "Use %%python for Python code and !cmd for shell commands."
            )
        result = method(arg.strip())
        if hasattr(result, "__await__"):
            await result

    def complete(self, code: str, cursor_pos: int) -> dict[str, Any] | None:
        word = code[:cursor_pos].lstrip()
        if " " in word:
            return None
        matches = [f"%{n}" for n in self.names if f"%{n}".startswith(word)]
        return {
            "status": "ok",
            "matches": matches,
            "cursor_start": cursor_pos - len(word),
            "cursor_end": cursor_pos,
            "metadata": {},
        }

    # ------------------------------------------------------------------ magics
    def m_help(self, arg: str) -> None:
        """show this help"""
        rows = "\n".join(
            f"| `%{n}` | {(getattr(self, 'm_' + n).__doc__ or '').strip().splitlines()[0]} |"
            for n in self.names
        )
        self.say(
            "**Open Interpreter kernel.** Write an instruction in plain words; the model "
            "proposes code and you approve each block before it runs in a Python kernel.\n\n"
            "| magic | what it does |\n|---|---|\n" + rows + "\n"
            "| `%%python` | run the rest of the cell as Python, without the model |\n"
            "| `!cmd` | run a shell command, without the model |\n"
        )

    def m_model(self, arg: str) -> None:
        """show the model, or set it: %model gpt-4o-mini"""
        llm = self.kernel.engine.llm
        if arg:
            llm.model = arg
            self.say(f"Model set to `{arg}`.")
        else:
            self.say(
                f"Model: `{llm.model or '(none configured)'}`"
                + (f" at `{llm.api_base}`" if llm.api_base else "")
            )

    def m_auto_run(self, arg: str) -> None:
        """run code without asking: %auto_run on|off"""
        engine = self.kernel.engine
        if arg.lower() in {"on", "1", "true", "yes"}:
            engine.approval = "never"
        elif arg.lower() in {"off", "0", "false", "no"}:
            engine.approval = "always"
        elif arg:
            raise OIError("Usage: %auto_run on|off")
        state = "on: code runs without asking" if engine.auto_run else "off: you approve each block"
        self.say(f"Auto-run is {state}.")

    def m_approval(self, arg: str) -> None:
        """when to ask: %approval always|risky|never"""
        engine = self.kernel.engine
        if arg:
            if arg not in {"always", "risky", "never"}:
                raise OIError("Usage: %approval always|risky|never")
            engine.approval = arg
        self.say(f"Approval policy: `{engine.approval}`.")

    def m_max_steps(self, arg: str) -> None:
        """show or set the cap on LLM calls per instruction: %max_steps 10"""
        engine = self.kernel.engine
        if arg:
            try:
                engine.max_steps = int(arg)
            except ValueError as exc:
                raise OIError("Usage: %max_steps N (a whole number, at least 1)") from exc
        self.say(f"At most {engine.max_steps} LLM calls per instruction.")

    async def m_reset(self, arg: str) -> None:
        """forget the conversation; --restart also restarts Python (variables are lost)"""
        self.kernel.engine.reset()
        if "--restart" in arg:
            self.kernel.session_log.write("child_restart", reason="%reset --restart")
            await self.kernel.child.shutdown()
            self.kernel.child.start_soon()
            self.say("Conversation forgotten and the Python kernel restarted (variables are gone).")
        else:
            self.say(
                "Conversation forgotten. Python variables are kept "
                "(use `%reset --restart` to restart Python too)."
            )

    async def m_sandbox(self, arg: str) -> None:
        """run Python in a sandbox (no network, writes only here): %sandbox on|off"""
        import os

        child = self.kernel.child
        value = arg.lower()
        if value not in {"", "on", "off", "1", "0", "true", "false", "yes", "no"}:
            raise OIError("Usage: %sandbox on|off")
        where = child.cwd or os.getcwd()
        want = value in {"on", "1", "true", "yes"}
        restart = bool(value) and (want != child.sandbox or not child.is_running)
        if restart:
            if want:
                from .sandbox import require_bwrap

                require_bwrap()  # refuse before touching the running child
            child.sandbox = want
            await child.shutdown()
            self.kernel.session_log.write(
                "child_restart", reason=f"%sandbox {'on' if want else 'off'}", sandbox=want
            )
            await child.start_soon()
        if child.sandbox:
            text = (
                "Sandbox is **on**: Python runs inside bubblewrap with no network, the file "
                f"system read-only except `{where}` and a private /tmp, and credentials in your "
                "home directory hidden."
            )
        else:
            text = "Sandbox is **off**: Python runs with your own permissions and network."
        if restart:
            text += " The Python kernel was restarted: variables from before are gone."
        self.say(text)

    def m_limits(self, arg: str) -> None:
        """show or set limits: %limits step_timeout=60 max_tokens_per_turn=50000 (0 = off)"""
        engine = self.kernel.engine
        names = (
            "step_timeout",
            "max_tokens_per_turn",
            "max_cost_per_turn",
            "max_tokens_per_session",
            "max_cost_per_session",
        )
        for item in arg.split():
            name, _, value = item.partition("=")
            if name not in names or not value:
                raise OIError(f"Usage: %limits NAME=VALUE ... with NAME one of: {', '.join(names)}")
            try:
                number = float(value)
            except ValueError as exc:
                raise OIError(f"%limits {name}: {value!r} is not a number") from exc
            if number < 0:
                raise OIError(f"%limits {name}: use 0 to turn it off, not a negative number")
            setattr(engine, name, int(number) if name.startswith("max_tokens") else number)
        rows = [f"| `{n}` | {getattr(engine, n) or 'off'} |" for n in names]
        rows.append(f"| `max_steps` | {engine.max_steps} |")
        memory = self.kernel.child.memory_limit
        rows.append(f"| memory (`c.ChildKernel.memory_limit`) | {memory or 'off'} |")
        self.say("| limit | value |\n|---|---|\n" + "\n".join(rows))

    def m_history(self, arg: str) -> None:
        """show this session's instructions and steps"""
        turns = self.kernel.engine.turns
        if not turns:
            self.say("No instructions yet.")
            return
        lines = []
        for turn in turns:
            lines.append(
                f"{turn.index}. {turn.instruction.splitlines()[0][:100]} "
                f"— {turn.end_reason or 'running'}"
            )
            for step in turn.steps:
                label = step.decision.label if step.decision else step.status
                lines.append(
                    f"   - step {step.index} ({step.block.language}): {label}, {step.status}"
                )
        self.say("```\n" + "\n".join(lines) + "\n```")

    def m_log(self, arg: str) -> None:
        """print the session log's path"""
        self.say(f"Session log: `{self.kernel.session_log.path}`")

    def m_tokens(self, arg: str) -> None:
        """show the session's token and cost totals"""
        u = self.kernel.engine.usage
        cost = f"${u.cost:.4f}" if u.cost is not None else "unknown"
        text = (f"Session: {u.prompt_tokens:,} prompt tokens, {u.completion_tokens:,} "
                f"completion tokens, cost {cost}.")
        engine = self.kernel.engine
        if engine.llm.model and engine.messages:
            from .context import total_tokens

            request = engine.build_request(engine.llm.uses_tools())
            nxt = total_tokens(request, engine.llm.count_tokens)
            text += (f" The next request would be about {nxt:,} tokens "
                     f"(budget {engine.budget_tokens():,}).")
        self.say(text)

    def m_export(self, arg: str) -> None:
        """write what ran as a python3 notebook: %export [PATH] [--include-failed] [--force]"""
        from .export import export_notebook

        args = shlex.split(arg)
        flags = {a for a in args if a.startswith("--")}
        unknown = flags - {"--include-failed", "--force"}
        if unknown:
            raise OIError(
                f"Unknown option {sorted(unknown)[0]}. "
                "Usage: %export [PATH] [--include-failed] [--force]"
            )
        paths = [a for a in args if not a.startswith("--")]
        log = self.kernel.session_log
        path = paths[0] if paths else "oi-session-export.ipynb"
        out = export_notebook(
            log.path, path, include_failed="--include-failed" in flags, force="--force" in flags
        )
        self.say(f"Exported to `{out}`. Check it with `oi-kernel verify {out}`.")

    # ------------------------------------------------------------ profiles and conversation
    async def m_profile(self, arg: str) -> None:
        """apply a profile, or show each setting and its source: %profile [NAME, --list, --clear]"""
        from .profiles import profile_command

        child = self.kernel.child
        before = child.sandbox
        text = profile_command(self.kernel.engine, arg, child=child)
        if child.sandbox != before:  # the sandbox applies when the child starts
            await child.shutdown()
            self.kernel.session_log.write(
                "child_restart", reason=f"%profile {arg}", sandbox=child.sandbox
            )
            await child.start_soon()
            text += " The Python kernel was restarted for the sandbox: variables are gone."
        self.say(text)

    def m_instructions(self, arg: str) -> None:
        """add custom instructions for this session, or show them: %instructions [TEXT, --clear]"""
        from .profiles import instructions_command

        self.say(instructions_command(self.kernel.engine, arg))

    def m_undo(self, arg: str) -> None:
        """remove the last instruction (or N) from the conversation: %undo [N]"""
        from .conversation_io import undo

        try:
            n = int(arg) if arg else 1
        except ValueError as exc:
            raise OIError("Usage: %undo [N] (a whole number of instructions)") from exc
        removed = undo(self.kernel.engine, n)
        if not removed:
            self.say("Nothing to undo: the conversation is empty.")
            return
        first = removed[-1].splitlines()[0][:80] if removed[-1].strip() else ""
        what = f"the last instruction (“{first}”)" if len(removed) == 1 else (
            f"the last {len(removed)} instructions")
        its = "its" if len(removed) == 1 else "their"
        self.say(
            f"Removed {what} from the conversation: the model will not see "
            f"{'it' if len(removed) == 1 else 'them'}. **{its.title()} side effects are not "
            f"undone**: variables, files and anything else {its} code did in the Python kernel "
            "stay as they are."
        )

    def m_save(self, arg: str) -> None:
        """save the conversation as JSON: %save [PATH] [--force] (secrets are removed)"""
        from .conversation_io import DEFAULT_PATH, save

        paths, flags = _split_args(arg, {"--force"}, "%save [PATH] [--force]")
        saved = save(self.kernel.engine, paths[0] if paths else DEFAULT_PATH, "--force" in flags)
        self.say(
            f"Saved {saved.turns} instruction{'s' if saved.turns != 1 else ''} "
            f"({len(saved.messages)} messages, {len(saved.steps)} code steps) to `{saved.path}`. "
            f"`%load {saved.path}` restores it."
        )

    async def m_load(self, arg: str) -> None:
        """restore a saved conversation: %load [PATH] [--replay] (--replay re-runs its code)"""
        from . import conversation_io as cio

        paths, flags = _split_args(arg, {"--replay"}, "%load [PATH] [--replay]")
        engine = self.kernel.engine
        saved = cio.load(engine, paths[0] if paths else cio.DEFAULT_PATH)
        replay = "--replay" in flags
        self.say(cio.load_message(saved, engine.llm.model, replay))
        blocks = cio.replay_blocks(saved)
        if replay and blocks:
            turn = await engine.run_code_steps(
                f"%load {saved.path} --replay", blocks, self._event_sink(),
                replayed_from=str(saved.path),
            )
            counts: dict[str, int] = {}
            for step in turn.steps:
                counts[step.status] = counts.get(step.status, 0) + 1
            summary = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
            self.say(f"Replay finished: {summary} (of {len(blocks)} steps).")

    def _event_sink(self) -> Any:
        """Where a turn's events go in the current cell (as for an instruction)."""
        from .view import TurnView

        kernel = self.kernel
        _ = kernel.session_log
        widgets = kernel._use_widgets()
        if widgets:
            kernel._ensure_widget_targets()
        view = TurnView(kernel.publish, shows_code=not widgets)
        cell_id = kernel._parent_msg.get("metadata", {}).get("cellId")
        return kernel.frontend.watch(view, cell_id)


def _split_args(arg: str, known: set[str], usage: str) -> tuple[list[str], set[str]]:
    """(positional arguments, flags) of a magic's line; at most one path."""
    args = shlex.split(arg)
    flags = {a for a in args if a.startswith("--")}
    paths = [a for a in args if not a.startswith("--")]
    if flags - known or len(paths) > 1:
        raise OIError(f"Usage: {usage}")
    return paths, flags
