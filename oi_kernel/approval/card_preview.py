"""The card's Preview button and what it shows (``core.preview``).

Beside Run / Edit / Skip: a click only resolves a future with the code in the box (the
proposal, or the user's edit); the cell's coroutine runs the preview in a disposable copy
and shows its output, changes and blocked connections in the card, and the card stays
pending for the decision. Where no copy can be made the button is disabled and the card says
why. A step previewed before its card showed (``flagged``) shows its preview at once.
"""

from __future__ import annotations

import asyncio
import html
from typing import Any

from oi_kernel.core.types import Decision

TIP = "Run it in a disposable copy first: see its output and what it would change"


def initial_html(request: Any) -> str:
    preview = request.preview
    if preview is None:
        return ""
    if not preview.available:
        return ("<div class='oi-preview-unavailable' style='opacity:.75'>Preview is not "
                f"available: {html.escape(preview.why_not)}</div>")
    latest = preview.latest()
    return latest.html() if latest is not None else ""


class CardPreview:
    """The Preview part of one ``ApprovalCard``."""

    def __init__(self, card: Any, loop: asyncio.AbstractEventLoop) -> None:
        import ipywidgets as w

        self.card = card
        self.loop = loop
        self.asked: asyncio.Future[str] = loop.create_future()
        self.area = w.HTML(initial_html(card.request))
        self.area.add_class("oi-preview-area")
        self.button = None
        preview = card.request.preview
        if preview is not None:
            self.button = card._button("Preview", "oi-preview", "", TIP, self._click)
            if not preview.available:
                self.button.disabled = True
                self.button.tooltip = f"Preview is not available: {preview.why_not}"

    def _click(self, _: Any) -> None:
        self.ask(self.card.code.value)

    def ask(self, code: str) -> dict[str, Any]:
        """Preview ``code`` (a click here, or a shared card view's ``preview`` action)."""
        preview = self.card.request.preview
        if preview is None or not preview.available:
            why = preview.why_not if preview is not None else "previews are off"
            return {"ok": False, "error": f"Preview is not available: {why}."}

        def settle() -> None:
            if not self.asked.done():
                self.asked.set_result(code)

        self.loop.call_soon_threadsafe(settle)
        return {"ok": True, "error": ""}

    def state(self) -> dict[str, Any]:
        """The preview part of the card's ``state`` (a shared card view draws it)."""
        preview = self.card.request.preview
        offered = "" if preview is None else "available" if preview.available else "unavailable"
        return {"preview": offered, "preview_html": self.area.value,
                "preview_why": preview.why_not if preview is not None else ""}

    async def decision(self) -> Decision:
        """The card's decision; previews asked for meanwhile are run and shown."""
        card = self.card
        while True:
            await asyncio.wait({card.decision, self.asked},
                               return_when=asyncio.FIRST_COMPLETED)
            if card.decision.done():
                return card.decision.result()
            code, self.asked = self.asked.result(), self.loop.create_future()
            await self._show(code)

    async def _show(self, code: str) -> None:
        self.area.value = ("<div class='oi-preview'><i>Previewing in a disposable copy…"
                           "</i></div>")
        if self.button is not None:
            self.button.disabled = True
        self.card.updated()
        try:
            result = await self.card.request.preview.run(code)
            self.area.value = result.html()
        finally:
            if self.button is not None:
                self.button.disabled = False
            self.card.updated()
