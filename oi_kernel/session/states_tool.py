"""The model's way back to a named state: a ``restore_state`` tool, offered once the session
has a state (``session.states``). A call is a tool step like any other (a card that asks,
the approval policy, the log); run, it restores the state as ``%state restore`` does."""

from __future__ import annotations

from typing import Any

from oi_kernel.core.executor import ExecResult
from oi_kernel.core.tools import ToolSpec, error_output
from oi_kernel.errors import OIError

NAME = "restore_state"
DESCRIPTION = ("Go back to a named state the user saved (%state save NAME): the Python "
               "variables and the workspace files as they were then. Later states stay "
               "reachable. Use it when the user asks to go back to a state by name.")


class StatesTool:
    """A tool provider (``core.tools.ToolProvider``) for the session's named states."""

    def __init__(self, states: Any) -> None:
        self.states = states

    async def prepare(self) -> list[str]:
        return []

    def specs(self) -> list[ToolSpec]:
        names = list(self.states.states)
        if not names:
            return []
        parameters = {"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string", "enum": names, "description": "the state's name"}}}
        return [ToolSpec(NAME, DESCRIPTION, parameters, kind="state", server="oi_kernel",
                         tool=NAME, read_only=True, tokens=90 + 4 * len(names),
                         trust=[("medium", "state-restore", "goes back to a named state: "
                                 "variables and files newer than it are replaced")])]

    async def call(self, spec: ToolSpec, arguments: dict[str, Any], timeout: float
                   ) -> ExecResult:
        name = str(arguments.get("name", ""))
        try:
            text = await self.states.restore(name)
        except OIError as exc:
            return ExecResult("error", [error_output(str(exc))])
        return ExecResult("ok", [{"output_type": "display_data",
                                  "data": {"text/plain": text}, "metadata": {}}])
