"""How Jupyter AI's chat shows our steps, as pure functions on ACP tool calls (no Jupyter AI
import, so they are unit-tested without it; ``jupyter_ai.py`` uses them).

Jupyter AI's chat shows an ``execute`` tool call from fields other ACP clients treat as raw
data: ``raw_input["command"]`` while it waits for a decision and ``raw_output`` once it
finished; the tool call's text content, where the agent puts the code (hidden characters
marked), the risk flags, the output, changes and status, it does not show.
"""

from __future__ import annotations

from typing import Any


def plain_text(content: Any) -> str:
    """The text blocks of a tool call's content as plain text: a block that is one fenced
    code block loses only its opening and closing fence lines."""
    texts = []
    for item in content or ():
        text = getattr(getattr(item, "content", None), "text", None)
        if not isinstance(text, str):
            continue
        lines = text.split("\n")
        if len(lines) >= 2 and lines[0].startswith("```") and lines[-1] == "```":
            text = "\n".join(lines[1:-1])
        texts.append(text)
    return "\n\n".join(texts)


def as_shown(call: Any) -> Any:
    """``call`` (a tool call, its update or a permission request's) with its text content
    also where Jupyter AI's chat shows it; other calls as they are."""
    if getattr(call, "kind", None) not in ("execute", None) or not call.content:
        return call
    text = plain_text(call.content)
    if not text:
        return call
    if call.status in ("completed", "failed"):
        return call.model_copy(update={"raw_output": text})
    if isinstance(call.raw_input, dict):
        return call.model_copy(update={"raw_input": {**call.raw_input, "command": text}})
    return call


def mcp_sdk_problem() -> str | None:
    """Why our MCP client cannot work in this environment, or None. It needs the MCP SDK 2.x
    (``oi-kernel[mcp]``), while Jupyter AI 3.2 installs 1.x (its fastmcp needs ``mcp<2``)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("mcp")
    except PackageNotFoundError:
        return "the MCP SDK is not installed"
    major = found.split(".")[0]
    if major.isdigit() and int(major) >= 2:
        return None
    return f"this environment has the MCP SDK {found}, and Open Interpreter's MCP client needs 2.x"
