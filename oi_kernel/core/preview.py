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

import time
from collections.abc import Callable
from typing import Any

from oi_kernel.core import changes as change_text
from oi_kernel.core.preview_events import PreviewCompared, Previewed
from oi_kernel.core.preview_result import (  # noqa: F401  (re-exported)
    MAX_TEXT,
    NOT_CAUGHT,
    PreviewResult,
    output_text,
)
from oi_kernel.core.types import code_hash

MODES = ("off", "on-request", "flagged")
LANGUAGES = ("python", "shell")  # run in the forked Python kernel (shell: in the same overlay)


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
