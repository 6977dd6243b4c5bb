"""The approval card: an ipywidgets box that shows a proposed block and waits for a decision.

Buttons only resolve a future (thread-safely); the cell's coroutine does the
work, so every output keeps the cell's parent header. Once decided, the card is
replaced in place by a static HTML record (so a saved notebook shows what was
decided, even without widget state) and its widgets are closed.

DOM contract with the JupyterLab extension: the pending card root has classes
``oi-card oi-card-pending``; its buttons ``oi-run``, ``oi-edit``, ``oi-skip``,
``oi-run-all``, ``oi-stop``; a decided record is ``oi-card oi-card-decided``
holding ``<pre class="oi-code-ran" data-language=...>`` with the code that ran.

What you see is what runs: a browser reorders text around bidi controls and shows
zero-width characters as nothing, so code holding such characters is shown as a read-only
``<pre class="oi-code-visible">`` with each one marked (``safety.visible``), beside the
findings; the real code stays in the (hidden until Edit) textarea, which is what Run runs,
and in a hidden ``pre.oi-code-ran`` of the record.
"""

from __future__ import annotations

import asyncio
import html
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from oi_kernel.approval.card_preview import CardPreview
from oi_kernel.core import four_eyes, identity
from oi_kernel.core.types import ApprovalRequest, Decision, SendIOPub
from oi_kernel.safety.visible import has_hidden, hidden_findings, needs_marking, visible

Listener = Callable[[dict[str, Any]], None]

# The card's own mime type, next to the widget view: the JupyterLab extension renders it in
# every view of the notebook (a collaborator's, a reloaded one), asking the kernel for the card
# by its id. It carries no code: what a view shows comes from the kernel, never from the
# (shared, editable) notebook document.
CARD_MIME = "application/vnd.oi-kernel.card+json"

_ICONS = {"approved": "✅", "edited": "✏️", "skipped": "⏭️", "stopped": "⏹️", "auto": "▶️"}


def _flags_html(flags: list[Any]) -> str:
    if not flags:
        return ""
    items = "".join(
        f"<li><b>{html.escape(f.severity)}</b> · {html.escape(f.category)} — "
        f"{html.escape(visible(f.reason))}</li>"
        for f in flags
    )
    # pre-wrap: a flag may hold several lines (a changed MCP tool's diff)
    return (f'<ul class="oi-flags" style="margin:2px 0 4px 0;color:#a15c00;'
            f'white-space:pre-wrap">{items}</ul>')


VISIBLE_NOTE = ("This code holds characters that show differently from what runs. Below is "
                "exactly what runs, each one marked ⟦…⟧.")
LONG_NOTE = "This code has a line too long to see whole: it is marked ⟦long line⟧ below."


def visible_code_html(code: str, language: str, findings: bool = False) -> str:
    """A read-only view of ``code`` with its hidden characters marked ("" when it has none);
    ``findings``: with the list of where they are (the record, which has no flags)."""
    if not needs_marking(code):
        return ""
    listed = ""
    if findings:
        items = "".join(f"<li>{html.escape(str(f))}</li>"
                        for f in hidden_findings(code, language))
        listed = f'<ul style="margin:2px 0">{items}</ul>'
    note = VISIBLE_NOTE if has_hidden(code) else LONG_NOTE
    return (f'<div class="oi-hidden-note" style="color:#b00020;margin:2px 0">⚠️ '
            f"{html.escape(note)}</div>{listed}"
            f'<pre class="oi-code-visible" style="margin:4px 0;max-height:24em;overflow:auto;'
            f'white-space:pre-wrap;border:1px solid #b00020;padding:4px">'
            f"{html.escape(visible(code))}</pre>")


RECOGNISED_HTML = (
    '<span class="oi-recognised" title="The model answered with nothing but this code, '
    'without a code fence or a tool call; small-model mode recognised it as code.">'
    "🔎 recognised as code (the reply had no code fence)</span>"
)


def header_html(request: ApprovalRequest) -> str:
    """The card's title line: step, language (or the tool), how the code was found, risk,
    sandbox."""
    what = (f"🔧 tool <b class=\"oi-tool\">{html.escape(request.tool)}</b> · arguments (JSON)"
            if request.tool else html.escape(visible(request.block.language)))
    parts = [f"<b>Step {request.step}</b>", what]
    if request.block.bare:
        parts.append(RECOGNISED_HTML)
    if request.flags:
        highs = sum(1 for f in request.flags if f.severity == "high")
        parts.append(f"⚠️ {len(request.flags)} risk flag{'s' if len(request.flags) > 1 else ''}"
                     + (f" ({highs} high)" if highs else ""))
    if request.tool:
        parts.append("runs on its MCP server")
    else:
        parts.append("🔒 runs sandboxed" if request.sandboxed else "runs on this machine")
    return " · ".join(parts) + _flags_html(request.flags)


def record_html(request: ApprovalRequest, decision: Decision) -> str:
    """The static record a decided card turns into."""
    label = decision.label
    when = time.strftime("%H:%M:%S", time.localtime(decision.at))
    reason = f" — {html.escape(decision.reason)}" if decision.reason else ""
    lang = html.escape(request.block.language, quote=True)
    found = " · recognised as code" if request.block.bare else ""
    what = f"🔧 {html.escape(request.tool)}" if request.tool else html.escape(
        visible(request.block.language))
    head = (f"{_ICONS.get(label, '')} <b>Step {request.step}</b> · {what}{found} · {label} "
            f"by {html.escape(decision.by)} at {when}{reason}")
    body = ""
    if decision.action == "run":
        marked = visible_code_html(decision.code, request.block.language, findings=True)
        # With hidden characters the real code is kept (for the lab extension and a saved
        # notebook) but not displayed: a browser would show it reordered.
        hide = "display:none;" if marked else ""
        body = (marked + f'<pre class="oi-code-ran" data-language="{lang}" '
                f'style="{hide}margin:4px 0;max-height:16em;overflow:auto">'
                f"{html.escape(decision.code)}</pre>")
    return f'<div class="oi-card oi-card-decided">{head}{body}</div>'


def record_plain(request: ApprovalRequest, decision: Decision) -> str:
    """The record as plain text (a terminal, a text-only reader): hidden characters marked."""
    by = "" if decision.by == "auto" else f" by {visible(decision.by)}"
    plain = f"[step {request.step}: {decision.label}{by}]"
    return plain + "\n" + visible(decision.code) if decision.action == "run" else plain


class ApprovalCard:
    """One pending card; ``await card.decision`` gives the user's choice."""

    def __init__(self, request: ApprovalRequest, loop: asyncio.AbstractEventLoop) -> None:
        import ipywidgets as w

        self.request = request
        self.loop = loop
        self.decision: asyncio.Future[Decision] = loop.create_future()
        code = request.block.code
        self.code = w.Textarea(value=code, disabled=True,
                               layout=w.Layout(width="100%", height=f"{min(code.count(chr(10)) + 2, 24) * 1.35 + 0.6:.1f}em"))
        self.code.add_class("oi-code")
        marked = visible_code_html(code, request.block.language)
        if marked:  # the textarea would show it reordered: it appears on Edit only
            self.code.layout.display = "none"
        self.reason = w.Text(placeholder="why skip? (optional, told to the model)",
                             layout=w.Layout(width="18em"))
        buttons = [
            self._button("Run", "oi-run", "success", "Run this code", self._run),
            self._button("Edit", "oi-edit", "", "Edit the code, then Run", self._edit),
            self._button("Skip", "oi-skip", "warning", "Do not run; tell the model", self._skip),
            self._button("Run all", "oi-run-all", "info",
                         "Run this and the rest of this instruction's steps", self._run_all),
            self._button("Stop", "oi-stop", "danger", "Stop this instruction", self._stop),
        ]
        if not request.run_all_allowed:  # an administrator's policy asks about every block
            buttons = [b for b in buttons if "oi-run-all" not in b._dom_classes]
        self.preview = CardPreview(self, loop)
        if self.preview.button is not None:
            buttons.insert(2, self.preview.button)
        self.buttons = buttons
        shown = [w.HTML(marked)] if marked else []
        # four-eyes: whom the card waits for; an author's refused Run is said here too
        self.note = w.HTML(_four_eyes_html(request))
        self.note.add_class("oi-four-eyes")
        self.root = w.VBox([
            w.HTML(header_html(request)),
            *shown,
            self.code,
            self.preview.area,
            w.HBox([*buttons, self.reason]),
            self.note,
        ])
        self.root.add_class("oi-card")
        self.root.add_class("oi-card-pending")
        self.display_id = uuid.uuid4().hex
        self._lock = threading.Lock()
        self._claimed: Decision | None = None

    def _button(self, text: str, cls: str, style: str, tip: str,
                handler: Callable[[Any], None]) -> Any:
        import ipywidgets as w

        button = _signed_button(w)(description=text, button_style=style, tooltip=tip,
                                   layout=w.Layout(width="auto"))
        button.add_class(cls)
        button.on_click(handler)
        return button

    # Callbacks run while the cell awaits; they only resolve the future.
    def _resolve(self, decision: Decision) -> Decision:
        """Claim the card for ``decision``; the first claim wins (two people clicking at once,
        a widget click and a shared-card click): returns the decision that won."""
        with self._lock:
            if self._claimed is not None:
                return self._claimed
            self._claimed = decision

        def settle() -> None:
            if not self.decision.done():
                self.decision.set_result(decision)

        self.loop.call_soon_threadsafe(settle)
        return decision

    def _current_code(self) -> tuple[str, bool]:
        text = self.code.value
        return text, text != self.request.block.code

    def _run(self, button: Any, run_all: bool = False) -> None:
        by = _clicker(button)
        request = self.request
        if request.four_eyes and identity.same_person(by, request.author):
            # refused: the card stays pending for someone else, and says why
            self.note.value = _four_eyes_html(request, refused=True)
            return
        code, edited = self._current_code()
        self._resolve(Decision("run", code, edited=edited, run_all=run_all, by=by))

    def _run_all(self, button: Any) -> None:
        self._run(button, run_all=True)

    def _edit(self, _: Any) -> None:
        self.code.disabled = False
        self.code.layout.display = None  # (shown now when hidden characters kept it hidden)

    def _skip(self, button: Any) -> None:
        self._resolve(Decision("skip", reason=self.reason.value.strip(), by=_clicker(button)))

    def _stop(self, button: Any) -> None:
        self._resolve(Decision("stop", reason=self.reason.value.strip(), by=_clicker(button)))

    def decide(self, action: str, by: str, code: str | None = None,
               reason: str = "") -> dict[str, Any]:
        """A decision from the shared card (any view, any collaborator): the reply to send
        back (``ok``, else ``error``: a four-eyes refusal, or who decided first)."""
        request = self.request
        if action == "preview":
            return self.preview.ask(request.block.code if code is None else code)
        if action not in ("run", "run_all", "skip", "stop"):
            return {"ok": False, "error": f"Unknown card action {action!r}."}
        if action in ("run", "run_all"):
            if request.four_eyes and identity.same_person(by, request.author):
                refusal = four_eyes.refusal_text(visible(request.author), request.four_eyes,
                                                 request.four_eyes_source)
                return {"ok": False, "refused": True, "error": refusal}
            if action == "run_all" and not request.run_all_allowed:
                return {"ok": False, "error": "Run all is not allowed here (the "
                                              "administrator's policy asks about every block)."}
            ran = request.block.code if code is None else code
            decision = Decision("run", ran, edited=ran != request.block.code,
                                run_all=action == "run_all", by=by)
        else:
            decision = Decision(action, reason=reason.strip()[:500], by=by)
        won = self._resolve(decision)
        if won is not decision:
            return {"ok": False, "error": f"Already decided: {won.label} by {won.by}."}
        return {"ok": True, "error": ""}

    def state(self) -> dict[str, Any]:
        """What a view shows for this pending card (from the kernel, never the notebook)."""
        request = self.request
        return {
            "state": "pending",
            "step": request.step,
            "language": request.block.language,
            "tool": request.tool or "",
            "header_html": header_html(request),
            "visible_html": visible_code_html(request.block.code, request.block.language),
            "code": request.block.code,
            "run_all": bool(request.run_all_allowed),
            "four_eyes_html": _four_eyes_html(request),
            **self.preview.state(),
        }

    def updated(self) -> None:
        """Tell every view what this pending card shows now (a preview arrived)."""
        for listener in list(_LISTENERS):
            try:
                listener({"card": self.display_id, **self.state()})
            except Exception:  # a frontend that went away must not break the turn
                pass

    # ------------------------------------------------------------------ display
    def show(self, send_iopub: SendIOPub) -> None:
        _PENDING[self.display_id] = self
        data = {
            "application/vnd.jupyter.widget-view+json": {
                "version_major": 2, "version_minor": 0, "model_id": self.root.model_id},
            CARD_MIME: {"card": self.display_id, "step": self.request.step,
                        "language": self.request.tool or self.request.block.language},
            "text/plain": f"[approval card: step {self.request.step}, "
                          f"{self.request.tool or visible(self.request.block.language)}"
                          + (", recognised as code]" if self.request.block.bare else "]"),
        }
        send_iopub("display_data", {"data": data, "metadata": {},
                                 "transient": {"display_id": self.display_id}})

    def finish(self, send_iopub: SendIOPub, decision: Decision) -> Decision:
        """Replace the card by its static record and release the widgets; the decision,
        with where it is shown (``Decision.shown``)."""
        record = record_html(self.request, decision)
        plain = record_plain(self.request, decision)
        send_iopub("update_display_data", {
            "data": {"text/html": record, "text/plain": plain}, "metadata": {},
            "transient": {"display_id": self.display_id}})
        shown = {"display_id": self.display_id, "html": record, "plain": plain}
        _PENDING.pop(self.display_id, None)
        outcome = {"state": "decided", "label": decision.label, "by": decision.by,
                   "html": record, "step": self.request.step}
        _DECIDED[self.display_id] = outcome
        while len(_DECIDED) > MAX_DECIDED:
            _DECIDED.popitem(last=False)
        for listener in list(_LISTENERS):
            try:
                listener({"card": self.display_id, **outcome})
            except Exception:  # a frontend that went away must not break the turn
                pass
        _close_tree(self.root)
        return replace(decision, shown=shown)


# ---------------------------------------------------------------------------- shared cards
# Pending cards of this process by id, the outcome of recent ones, and who wants to know
# (the frontend comms). A decision may arrive on a comm while the cell awaits the card:
# ``ApprovalCard._resolve`` takes a lock, so the first decision wins and is counted once.
_PENDING: dict[str, ApprovalCard] = {}
_DECIDED: OrderedDict[str, dict[str, Any]] = OrderedDict()
_LISTENERS: list[Listener] = []
MAX_DECIDED = 500


def on_decided(listener: Listener) -> None:
    """Call ``listener`` with ``{"card", "state", "label", "by", "html", "step"}`` each time a
    card is decided."""
    _LISTENERS.append(listener)


def off_decided(listener: Listener) -> None:
    if listener in _LISTENERS:
        _LISTENERS.remove(listener)


def card_state(card_id: Any) -> dict[str, Any]:
    """What the kernel knows of card ``card_id``: pending (with what to show), decided (with
    its record), or unknown (the kernel restarted, or the card is not this kernel's)."""
    if isinstance(card_id, str):
        if card := _PENDING.get(card_id):
            return {"card": card_id, **card.state()}
        if outcome := _DECIDED.get(card_id):
            return {"card": card_id, **outcome}
    return {"card": card_id if isinstance(card_id, str) else "", "state": "unknown"}


def decide_card(card_id: Any, action: Any, by: str, code: Any = None,
                reason: Any = "") -> dict[str, Any]:
    """A shared card's button: decide pending card ``card_id`` as ``by``."""
    card = _PENDING.get(card_id) if isinstance(card_id, str) else None
    if card is None:
        known = card_state(card_id)
        if known["state"] == "decided":
            return {"ok": False, "error": f"Already decided: {known['label']} by {known['by']}.",
                    **known}
        return {"ok": False, "error": "This card is no longer pending (the step ended or the "
                                      "kernel restarted).", **known}
    code = code if isinstance(code, str) else None
    reply = card.decide(str(action), by, code, reason if isinstance(reason, str) else "")
    return {"card": card_id, **reply}


_SIGNED: list[Any] = []


def _signed_button(w: Any) -> Any:
    """A Button that keeps the ``username`` of the comm message that clicked it (``sender``,
    read by the click handler, which runs inside that message's handling): each click names
    its own sender, whichever front door (kernel, ``%%oi``) and whichever collaborator."""
    if not _SIGNED:
        class SignedButton(w.Button):
            sender = None

            def _handle_msg(self, msg: dict[str, Any]) -> None:
                self.sender = (msg.get("header") or {}).get("username")
                try:
                    super()._handle_msg(msg)
                finally:
                    self.sender = None

        _SIGNED.append(SignedButton)
    return _SIGNED[0]


def _clicker(button: Any) -> str:
    """Who clicked ``button``: the click's own header username, with ``core.identity``'s
    fallbacks (the Hub user, the OS user)."""
    return identity.person(getattr(button, "sender", None))


def _four_eyes_html(request: ApprovalRequest, refused: bool = False) -> str:
    """The card's four-eyes line ("" when the step does not need a second person)."""
    if not request.four_eyes:
        return ""
    author = visible(request.author)
    text = four_eyes.waiting_text(author, request.four_eyes, request.four_eyes_source)
    html_text = f'<div class="oi-four-eyes-wait" style="color:#5a3e9b">{html.escape(text)}</div>'
    if refused:
        refusal = four_eyes.refusal_text(author, request.four_eyes, request.four_eyes_source)
        html_text += (f'<div class="oi-four-eyes-refused" style="color:#b00020">'
                      f"{html.escape(refusal)}</div>")
    return html_text


def _close_tree(widget: Any) -> None:
    """Close a widget and everything inside it (a box left open would point at closed ones)."""
    for child in getattr(widget, "children", ()):
        _close_tree(child)
    widget.close()


class WidgetApprover:
    """Asks with an approval card; ``fallback`` (stdin) when the frontend has no widgets."""

    shows_code = True

    def __init__(self, send_iopub: SendIOPub, widgets_available: Callable[[], bool],
                 fallback: Any) -> None:
        self.send_iopub = send_iopub
        self.widgets_available = widgets_available
        self.fallback = fallback

    @property
    def active(self) -> bool:
        return self.widgets_available()

    async def decide(self, request: ApprovalRequest) -> Decision:
        if not self.widgets_available():
            return await self.fallback.decide(request)
        card = ApprovalCard(request, asyncio.get_running_loop())
        card.show(self.send_iopub)
        try:
            decision = await card.preview.decision()
        except asyncio.CancelledError:
            card.finish(self.send_iopub, Decision("stop", reason="interrupted", by="interrupt"))
            raise
        return card.finish(self.send_iopub, decision)
