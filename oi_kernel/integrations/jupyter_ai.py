"""Open Interpreter as a persona in Jupyter AI 3.x's chat.

Jupyter AI's persona manager loads this module through the ``jupyter_ai.personas`` entry
point (pyproject.toml) when its server extension starts; nothing of ours imports it, so
Jupyter AI stays an optional extra (``pip install 'oi-kernel[jupyter-ai]'``).

The persona is an ACP persona: Jupyter AI's ACP client starts ``oi-kernel acp`` with the
Python that runs the Jupyter server, one agent process for every chat, and each chat gets a
session of its own whose working directory is the chat file's folder. A chat message is one
instruction; each step the model writes comes back as a permission request, shown as buttons
in the chat, and the button decides the step (allow once = Run, allow always = Run all,
reject once = Skip, reject always = Stop). The agent's slash commands (``/export``, ...) are
offered in the chat's command menu.

Jupyter AI's chat shows a step from fields other ACP clients treat as raw data: the command
line of an ``execute`` call (``raw_input["command"]``) while it waits for a decision, and its
``raw_output`` once it finished; our text content it does not show. ``ChatClient`` copies
that text (the code with hidden characters marked, its risk flags, then the output, changes
and status) into those two fields, so what the chat shows is what the agent says.
"""

from __future__ import annotations

import sys
from typing import Any

from jupyter_ai_persona_manager import PersonaDefaults, PersonaRequirementsUnmet

try:
    from acp.schema import ToolCallProgress, ToolCallStart
    from jupyter_ai_acp_client.base_acp_persona import BaseAcpPersona
    from jupyter_ai_acp_client.default_acp_client import JaiAcpClient
except ImportError as exc:  # the persona manager without Jupyter AI's ACP client
    raise PersonaRequirementsUnmet(
        "The Open Interpreter persona needs Jupyter AI's ACP client (jupyter-ai-acp-client): "
        "`pip install 'oi-kernel[jupyter-ai]'`, then restart the Jupyter server."
    ) from exc

from oi_kernel.cli.install import logo_dir
from oi_kernel.integrations.jupyter_ai_view import as_shown, mcp_sdk_problem

NAME = "Open Interpreter"
AGENT_COMMAND = [sys.executable, "-m", "oi_kernel.cli", "acp"]


class ChatClient(JaiAcpClient):
    """Jupyter AI's ACP client, showing our steps' text (``as_shown``), and passing MCP
    servers only where our MCP client can use them."""

    async def _get_mcp_servers(self, persona: Any) -> list[Any]:
        servers = await super()._get_mcp_servers(persona)
        problem = mcp_sdk_problem() if servers else None
        if problem:
            persona.log.warning(
                "Jupyter AI's MCP servers (%s) are not passed to Open Interpreter: %s. Its own "
                "code and tools work without them.", ", ".join(s.name for s in servers), problem)
            return []
        return servers

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if isinstance(update, ToolCallStart | ToolCallProgress):
            update = as_shown(update)
        await super().session_update(session_id, update, **kwargs)

    async def request_permission(self, options: Any, session_id: str, tool_call: Any,
                                 **kwargs: Any) -> Any:
        return await super().request_permission(options, session_id, as_shown(tool_call),
                                                **kwargs)


class OpenInterpreterPersona(BaseAcpPersona):
    """``@Open Interpreter`` in a chat: our engine behind Jupyter AI's ACP client."""

    acp_client_class = ChatClient

    def __init__(self, *args, **kwargs):
        super().__init__(*args, executable=list(AGENT_COMMAND), **kwargs)
        # The ACP client puts a note about its notebook tools before a session's first
        # prompt; here that prompt is the user's instruction, recorded and exported as
        # they wrote it, so the note stays out.
        self._notebook_guidance_sent = True

    @property
    def defaults(self) -> PersonaDefaults:
        return PersonaDefaults(
            name=NAME,
            description=("Open Interpreter: the model writes code, you approve each step "
                         "in the chat; it runs in a kernel in the chat's folder."),
            avatar_path=str(logo_dir() / "logo-svg.svg"),
            system_prompt="unused (oi-kernel acp has its own)",
        )
