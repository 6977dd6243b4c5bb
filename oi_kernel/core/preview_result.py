"""A preview's answer (``core.preview``), typed: a frozen value, so the ``preview`` event
(``core.preview_events.Previewed``) can hold it and read it back from its record.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from oi_kernel.core import changes as change_text
from oi_kernel.core.types import code_hash
from oi_kernel.core.values import FrozenDict, freeze

__all__ = ["NOT_CAUGHT", "MAX_TEXT", "PreviewResult", "output_text"]

NOT_CAUGHT = ("A preview shows what the code does now, in a copy: code that behaves "
              "differently when watched, later, or on the real network is not caught.")
MAX_TEXT = 2000  # characters of output shown per stream


@dataclass(frozen=True)
class PreviewResult:
    """One preview's answer (the probe's JSON, typed)."""

    code: str
    status: str  # ok, error, timeout, unavailable
    outputs: tuple[Mapping[str, Any], ...] = ()
    changes: Mapping[str, Any] = field(default_factory=FrozenDict)
    network: tuple[str, ...] = ()
    why: str = ""
    duration_s: float = 0.0
    timeout_s: float = 0.0
    copy: str = ""  # how the copy was made: "overlay" (namespaces) or "scratch copy"

    def __post_init__(self) -> None:
        object.__setattr__(self, "outputs", freeze(self.outputs))
        object.__setattr__(self, "changes", freeze(self.changes))
        object.__setattr__(self, "network", freeze(self.network))

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


def output_text(outputs: Iterable[Mapping[str, Any]]) -> str:
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
