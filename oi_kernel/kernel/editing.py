"""What a frontend asks while the user types, answered without the model: completion and
inspection of a ``%%python`` cell's code (by the child kernel, the cursor mapped into the
body), command names after ``%``, whether a cell is complete (jupyter console), and the
history of the instructions."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from oi_kernel.kernel import cells
from oi_kernel.session import commands


class EditingRequests:
    """Mixed into ``OIKernel``: the complete, inspect, is_complete and history requests."""

    oi: Any
    log: logging.Logger
    _instructions: list[tuple[int, str]]

    def _child_code(self, code: str, cursor_pos: int) -> tuple[str, int] | None:
        """The part of a cell that is code for the child, with the cursor mapped into it."""
        if code.lstrip().startswith("%%python"):
            offset = len(code) - len(code.lstrip())
            first_nl = code.find("\n", offset)
            if first_nl == -1 or cursor_pos <= first_nl:
                return None
            return code[first_nl + 1 :], cursor_pos - first_nl - 1
        return None

    async def do_complete(self, code: str, cursor_pos: int) -> dict[str, Any]:
        mapped = self._child_code(code, cursor_pos)
        empty = {
            "status": "ok",
            "matches": [],
            "cursor_start": cursor_pos,
            "cursor_end": cursor_pos,
            "metadata": {},
        }
        if mapped is None:
            if code.lstrip().startswith("%") and "\n" not in code.strip():
                word = code[:cursor_pos].lstrip()
                if " " not in word:
                    return {**empty, "matches": commands.complete(self.oi, word),
                            "cursor_start": cursor_pos - len(word)}
            return empty
        body, pos = mapped
        reply = await self._child_request("complete_request", {"code": body, "cursor_pos": pos})
        if not reply:
            return empty
        shift = cursor_pos - pos
        reply["cursor_start"] += shift
        reply["cursor_end"] += shift
        return reply

    async def do_inspect(
        self, code: str, cursor_pos: int, detail_level: int = 0, omit_sections: Any = ()
    ) -> dict[str, Any]:
        mapped = self._child_code(code, cursor_pos)
        if mapped is None:
            return {"status": "ok", "found": False, "data": {}, "metadata": {}}
        body, pos = mapped
        content = {"code": body, "cursor_pos": pos, "detail_level": detail_level}
        reply = await self._child_request("inspect_request", content)
        return reply or {"status": "ok", "found": False, "data": {}, "metadata": {}}

    async def _child_request(self, msg_type: str, content: dict[str, Any]) -> dict[str, Any] | None:
        try:
            await asyncio.wait_for(self.oi.child.ensure_running(), 30)
            return await self.oi.child.request(msg_type, content, timeout=10)
        except Exception as e:  # the frontend gets an empty answer; the log says why
            self.log.warning("%s to the child kernel failed: %r", msg_type, e)
            return None

    async def do_is_complete(self, code: str) -> dict[str, Any]:
        return cells.is_complete(code)

    def _publish_status(self, status: str, channel: str, parent: Any = None) -> None:
        """No busy/idle for ``is_complete``: jupyter console runs a cell right after that
        reply and takes any idle from its session, this late one too, as the cell's end;
        it then stops answering stdin and the approval question waits forever."""
        msg = parent or self.get_parent(channel) or {}
        if msg.get("header", {}).get("msg_type") != "is_complete_request":
            super()._publish_status(status, channel, parent)

    async def do_history(
        self,
        hist_access_type: str,
        output: bool,
        raw: bool,
        session: int = 0,
        start: int = 0,
        stop: int | None = None,
        n: int | None = None,
        pattern: str | None = None,
        unique: bool = False,
    ) -> dict[str, Any]:
        items = [(0, count, code) for count, code in self._instructions]
        if hist_access_type == "tail":
            items = items[-(n or 10) :]
        elif hist_access_type == "range":
            items = [i for i in items if start <= i[1] and (stop is None or i[1] < stop)]
        elif hist_access_type == "search" and pattern:
            import fnmatch

            items = [i for i in items if fnmatch.fnmatch(i[2], pattern)]
            if unique:
                last = {code: item for item in items for code in [item[2]]}
                items = sorted(last.values(), key=lambda i: i[1])
            if n:
                items = items[-n:]
        if output:
            items = [(s, c, (code, None)) for s, c, code in items]
        return {"status": "ok", "history": items}
