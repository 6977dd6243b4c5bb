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
        if value:
            want = value in {"on", "1", "true", "yes"}
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
        if value:
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
