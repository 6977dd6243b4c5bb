"""Preview: what a step would do, seen before it runs, from a disposable copy.

The executor's probe (``execution.probe.preview``) runs the block in a fork of the process
that runs the code, in private user, mount and network namespaces whose workspace is a
copy-on-write overlay; this module is the engine's side of it. Each approval request carries
a ``StepPreview``: whether a preview is possible here (and why not), ``run(code)`` for the
approver (a card's Preview button, ``p`` at the stdin question, ACP's Preview option, an
API callback's ``preview=True``), the previews made so far by code hash (Run after Preview
compares the real run's changes with them), and the text and HTML a front door shows.
"""

from __future__ import annotations

import html
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from oi_kernel.core import changes as change_text
from oi_kernel.core.preview_events import PreviewCompared, Previewed
from oi_kernel.core.types import code_hash

MODES = ("off", "on-request", "flagged")
LANGUAGES = ("python", "shell")  # run in the forked Python kernel (shell: in the same overlay)
NOT_CAUGHT = ("A preview shows what the code does now, in a copy: code that behaves "
              "differently when watched, later, or on the real network is not caught.")
MAX_TEXT = 2000  # characters of output shown per stream


@dataclass
class PreviewResult:
    """One preview's answer (the probe's JSON, typed)."""

    code: str
    status: str  # ok, error, timeout, unavailable
    outputs: list[dict[str, Any]] = field(default_factory=list)
    changes: dict[str, Any] = field(default_factory=dict)
    network: list[str] = field(default_factory=list)
    why: str = ""
    duration_s: float = 0.0
    timeout_s: float = 0.0
    copy: str = ""  # how the copy was made: "overlay" (namespaces) or "scratch copy"

    @classmethod
    def of(cls, code: str, answer: dict[str, Any]) -> PreviewResult:
        return cls(code, str(answer.get("status", "unavailable")),
                   list(answer.get("outputs") or []), dict(answer.get("changes") or {}),
                   [str(n) for n in answer.get("network") or []], str(answer.get("why", "")),
                   float(answer.get("duration_s") or 0.0), float(answer.get("timeout_s") or 0),
                   str(answer.get("copy", "")))

    @property
    def sha256(self) -> str:
        return code_hash(self.code)

    def network_lines(self) -> list[str]:
        return [f"network: {n} (blocked in preview)" for n in self.network]

    def headline(self) -> str:
        if self.status == "unavailable":
            return f"Preview not available: {self.why}"
        if self.status == "timeout":
            return (f"Preview stopped after {self.timeout_s:g} s (Engine.preview_timeout): "
                    "the step was still running; what it did by then is not known")
        what = "raised an error" if self.status == "error" else "ran"
        return (f"Preview ({self.duration_s:.2f} s, in a disposable copy: nothing real "
                f"changed): the step {what}")

    def lines(self) -> list[str]:
        """The preview as text (a terminal, ACP, the log)."""
        lines = [self.headline()]
        if self.status in ("unavailable", "timeout"):
            return lines
        text = output_text(self.outputs)
        if text:
            lines += ["  output:", *("    " + ln for ln in text.split("\n"))]
        found = change_text.change_lines(self.changes)
        lines += ["  would change:", *("    " + ln for ln in found)] if found else [
            "  would change: nothing"]
        lines += ["  " + ln for ln in self.network_lines()]
        return lines

    def text(self) -> str:
        return "\n".join(self.lines())

    def html(self) -> str:
        """The preview for the card."""
        esc = html.escape
        parts = [f"<div class='oi-preview'><b>{esc(self.headline())}</b>"]
        if self.status not in ("unavailable", "timeout"):
            text = output_text(self.outputs)
            if text:
                parts.append(f"<pre class='oi-preview-output'>{esc(text)}</pre>")
            parts += [f"<img src='data:image/png;base64,{o['data']['image/png']}' "
                      "style='max-width:320px'/>" for o in self.outputs
                      if "image/png" in (o.get("data") or {})]
            found = change_text.change_lines(self.changes) or ["nothing"]
            parts.append("<div>Would change:</div><ul>"
                         + "".join(f"<li>{esc(ln)}</li>" for ln in found) + "</ul>")
            parts += [f"<div class='oi-preview-network'>{esc(ln)}</div>"
                      for ln in self.network_lines()]
        parts.append(f"<div style='opacity:.7;font-size:90%'>{esc(NOT_CAUGHT)}</div></div>")
        return "".join(parts)

    def record(self) -> dict[str, Any]:
        """The session log's ``preview`` record fields."""
        return {"sha256": self.sha256, "status": self.status, "outputs": self.outputs,
                "changes": self.changes, "network": self.network, "why": self.why,
                "copy": self.copy,
                "duration_s": round(self.duration_s, 4)}


def output_text(outputs: list[dict[str, Any]]) -> str:
    """Streams, results and errors as text (images named)."""
    parts = []
    for out in outputs:
        kind = out.get("output_type")
        if kind == "stream":
            parts.append(str(out.get("text", ""))[:MAX_TEXT].rstrip("\n"))
        elif kind == "error":
            parts.append(f"{out.get('ename')}: {out.get('evalue')}")
        elif "image/png" in (out.get("data") or {}):
            parts.append("[image]")
        else:
            parts.append(str((out.get("data") or {}).get("text/plain", ""))[:MAX_TEXT])
    return "\n".join(p for p in parts if p)


def differences(preview: dict[str, Any], real: dict[str, Any] | None) -> list[str]:
    """What the real run changed that the preview did not say, and the other way round."""
    seen = set(change_text.change_lines(preview))
    done = set(change_text.change_lines(real or {}))
    return ([f"only in the real run: {ln}" for ln in sorted(done - seen)]
            + [f"only in the preview: {ln}" for ln in sorted(seen - done)])


def unavailable_reason(executor: Any, language: str, tool: str = "") -> str:
    """Why a step cannot be previewed here ("" when it can)."""
    if tool:
        return "a tool step runs on its MCP server, where no copy can be made"
    if getattr(executor, "probe", None) is None:
        return "the code runs where no copy of it can be made"
    child = getattr(executor, "child", None)
    if child is not None and getattr(child, "kernel_id", None) is not None:
        return "the child kernel runs on a gateway, where no copy of it can be made"
    if language not in LANGUAGES:
        return f"a {language} step runs in a process that is not copied (Python and shell are)"
    return getattr(executor, "preview_unavailable", "")


class StepPreview:
    """Previews of one proposed step (see the module docstring). ``publish`` receives a
    ``Previewed`` event per preview (the session log's ``preview`` record)."""

    def __init__(self, executor: Any, language: str, *, timeout: float, why_not: str = "",
                 publish: Callable[[Any], None] | None = None, turn: int = 0,
                 step: int = 0) -> None:
        self.executor = executor
        self.language = language
        self.timeout = timeout
        self.why_not = why_not
        self.publish = publish
        self.turn, self.step = turn, step
        self.results: dict[str, PreviewResult] = {}  # by code hash

    @property
    def available(self) -> bool:
        return not self.why_not

    async def run(self, code: str) -> PreviewResult:
        """Preview ``code`` (the proposal or an edit); never raises for the copy's failures."""
        if not self.available:
            return PreviewResult(code, "unavailable", why=self.why_not)
        started = time.monotonic()
        try:
            answer = await self.executor.probe("preview", code, self.language, self.timeout)
        except Exception as exc:  # the probe failed: said on the card, nothing else breaks
            answer = {"status": "unavailable", "why": f"{type(exc).__name__}: {exc}",
                      "duration_s": time.monotonic() - started}
        result = PreviewResult.of(code, answer)
        if result.status == "unavailable":
            self.executor.preview_unavailable = result.why  # not tried again this session
        self.results[result.sha256] = result
        if self.publish is not None:
            self.publish(Previewed(self.turn, self.step, self.language, result))
        return result

    def latest(self) -> PreviewResult | None:
        return next(reversed(self.results.values()), None)

    def of_code(self, code: str) -> PreviewResult | None:
        """The preview of exactly this code (byte-identical), if one was made."""
        return self.results.get(code_hash(code))


# ----------------------------------------------------------------------------- the steps' hooks
def for_request(settings: Any, executor: Any, request: Any, language: str,
                emit: Callable[[Any], None]) -> StepPreview | None:
    """The ``StepPreview`` of a proposed step run by ``executor`` (None when previews are
    off); ``settings``: the step's settings (``preview``, ``preview_floor``,
    ``preview_timeout``)."""
    mode = effective_mode(settings)
    if mode == "off":
        return None
    why = unavailable_reason(executor, language, request.tool)
    return StepPreview(executor, language, timeout=settings.preview_timeout, why_not=why,
                       publish=emit, turn=request.turn, step=request.step)


def effective_mode(settings: Any) -> str:
    """The session's mode, raised to the administrator's floor (``preview_floor``)."""
    mode = getattr(settings, "preview", "on-request")
    floor = getattr(settings, "preview_floor", "")
    return max(mode, floor or "off", key=MODES.index)


async def before_card(settings: Any, request: Any, asks: bool) -> None:
    """``flagged``: preview a step with a risk flag before its card shows."""
    preview = request.preview
    if (asks and preview is not None and preview.available and request.flags
            and effective_mode(settings) == "flagged"):
        await preview.run(request.block.code)


def comparing(request: Any, emit: Callable[[Any], None]) -> Callable[[Any], None]:
    """``emit``, which after a previewed step's real run (its ``StepDone``) also says
    whether it ran the previewed code and which changes differed (``PreviewCompared``);
    ``emit`` itself when the step has no previews. The turn's context is kept."""
    if request.preview is None:
        return emit
    from oi_kernel.core.events import StepDone
    from oi_kernel.core.turn_context import context_of, with_context

    def out(event: Any) -> None:
        emit(event)
        if isinstance(event, StepDone) and event.record.index == request.step and event.block:
            compare(request, event.block.code, event.record.changes, emit)

    return with_context(out, context_of(emit))


def compare(request: Any, code: str, changed: dict[str, Any] | None,
            emit: Callable[[Any], None]) -> None:
    """After a previewed step ran ``code`` for real: whether it ran the previewed code and
    which changes differed (the ``preview_compared`` record)."""
    preview = request.preview
    if preview is None or not preview.results:
        return
    same = preview.of_code(code)
    shown = same or preview.latest()
    if shown is None or shown.status in ("unavailable", "timeout"):
        return
    emit(PreviewCompared(request.turn, request.step, code_hash(code), same is not None,
                         differences(shown.changes, changed)))
