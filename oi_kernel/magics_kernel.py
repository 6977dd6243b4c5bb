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
        self.say(
            f"Session: {u.prompt_tokens:,} prompt tokens, {u.completion_tokens:,} "
            f"completion tokens, cost {cost}."
        )

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
