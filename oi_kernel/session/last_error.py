"""``%last_error``: the full traceback of the latest step that failed (the cell shows a
recovered step's error compactly, ``session.error_view``). Imported by the kernel, the front
door that shows errors compactly; importing it registers the command."""

from __future__ import annotations

from oi_kernel.session.commands import CommandContext, command
from oi_kernel.session.error_view import last_error_markdown


@command("last_error", "", "show the full traceback of the latest step that failed")
def _last_error(ctx: CommandContext, arg: str) -> None:
    ctx.say(last_error_markdown(ctx.session.engine.turns))
