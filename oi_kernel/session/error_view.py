"""A step's error, as the person reads it: compact while the model may still recover.

A step's error is shown when the step ends, before anyone knows whether the model fixes it
one step later, so it is shown compactly at once: the error line and the user-code frames
(not the libraries' internals), with the full traceback collapsed under it (HTML) or named
by a hint (plain text: ``%last_error`` shows it). When the instruction ends on that error
(the model gave up, a cap, an interrupt), the full form is shown: in a live display the
compact one is replaced in place (``update_display_data``); for text frontends, which never
render updates (jupyter console) or keep each message as an output (nbclient), the error is
published once more in full as an ordinary ``error`` message. The model's view and the
session log keep the full traceback either way (``core.output_text``).
"""

from __future__ import annotations

import html
import uuid
from typing import Any

from oi_kernel.core.output_text import compact_error, full_error_text
from oi_kernel.core.types import SendIOPub, StepRecord, Turn

HINT_COMMAND = "%last_error"
_ERROR_STYLE = "margin:2px 0;color:var(--jp-error-color1,#b71c1c);white-space:pre-wrap"
_FRAME_STYLE = "margin:2px 0;white-space:pre-wrap"


def step_error(record: StepRecord) -> dict[str, Any] | None:
    """The step's (last) error output, if it has one."""
    errors = [o for o in record.outputs if o.get("output_type") == "error"]
    return errors[-1] if errors else None


def compact_bundle(output: dict[str, Any], step: int) -> dict[str, Any]:
    """The compact form: the error line, the user's frames, the rest one click away."""
    line, frames, hidden = compact_error(output)
    full = full_error_text(output)
    left_out = f"{hidden} library frame{'s' if hidden != 1 else ''} left out · " if hidden else ""
    plain = "\n".join([line, *frames,
                       f"[step {step}: {left_out}full traceback: {HINT_COMMAND}]"])
    shown = "".join(f"<pre style='{_FRAME_STYLE}'>{html.escape(f)}</pre>" for f in frames)
    markup = (
        f"<div class='oi-error'><pre style='{_ERROR_STYLE}'><b>{html.escape(line)}</b></pre>"
        f"{shown}<details><summary style='cursor:pointer;color:#777'>full traceback"
        f"{f' ({left_out[:-3]})' if left_out else ''}</summary>"
        f"<pre style='{_FRAME_STYLE}'>{html.escape(full)}</pre></details></div>"
    )
    return {"text/html": markup, "text/plain": plain}


def full_bundle(output: dict[str, Any]) -> dict[str, Any]:
    """The whole traceback, open."""
    full = full_error_text(output)
    return {"text/html": f"<div class='oi-error'><pre style='{_ERROR_STYLE}'>"
                         f"{html.escape(full)}</pre></div>",
            "text/plain": full}


class StepErrors:
    """The compact errors shown in one cell, expanded when the instruction ends on one."""

    def __init__(self, send_iopub: SendIOPub, live: bool) -> None:
        self.send_iopub = send_iopub
        self.live = live
        self._shown: dict[int, tuple[str, dict[str, Any]]] = {}  # step -> (display id, output)

    def show(self, record: StepRecord) -> None:
        output = step_error(record)
        if output is None:
            return
        display_id = uuid.uuid4().hex
        self._shown[record.index] = (display_id, output)
        self.send_iopub("display_data", {
            "data": compact_bundle(output, record.index),
            "metadata": {"oi": {"error": "compact"}},
            "transient": {"display_id": display_id}})

    def finish(self, turn: Turn) -> None:
        """The instruction ended: its last step's error, if any, is shown in full."""
        last = turn.steps[-1] if turn.steps else None
        shown = self._shown.get(last.index) if last is not None else None
        self._shown = {}
        if shown is None:
            return
        display_id, output = shown
        if self.live:
            self.send_iopub("update_display_data", {
                "data": full_bundle(output), "metadata": {"oi": {"error": "full"}},
                "transient": {"display_id": display_id}})
        else:
            self.send_iopub("error", {"ename": output.get("ename", "Error"),
                                   "evalue": output.get("evalue", ""),
                                   "traceback": output.get("traceback", [])})


def last_error_markdown(turns: list[Turn]) -> str:
    """``%last_error``: the full traceback of the latest step that failed."""
    for turn in reversed(turns):
        for record in reversed(turn.steps):
            output = step_error(record)
            if output is not None:
                first = (turn.instruction.splitlines() or [""])[0][:80]
                return (f"Step {record.index} of instruction {turn.index} (“{first}”):\n\n"
                        f"```\n{full_error_text(output)}\n```")
    return "No step has failed in this session."
