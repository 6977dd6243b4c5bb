"""An MCP ``CallToolResult`` as Jupyter outputs (what the cell shows and the model reads).

Text parts become ``text/plain`` displays, images stay images (the cell shows them and
vision models see them), resources are shown by their text or described, structured
content without a text part is shown as JSON. Attribute names are the SDK 2.x ones.
"""

from __future__ import annotations

import base64
import json
from typing import Any

_SHOWN_IMAGES = ("image/png", "image/jpeg", "image/gif", "image/svg+xml")


def _display(data: dict[str, Any]) -> dict[str, Any]:
    return {"output_type": "display_data", "data": data, "metadata": {}}


def _size(b64: str) -> str:
    try:
        n = len(base64.b64decode(b64, validate=False))
    except ValueError:
        n = len(b64) * 3 // 4
    return f"{n:,} bytes"


def content_outputs(part: Any) -> list[dict[str, Any]]:
    """The outputs for one content part."""
    kind = getattr(part, "type", "")
    if kind == "text":
        return [_display({"text/plain": part.text})]
    if kind == "image":
        mime = getattr(part, "mime_type", "") or "image/png"
        plain = f"[image {mime}, {_size(part.data)}]"
        if mime in _SHOWN_IMAGES:
            return [_display({mime: part.data, "text/plain": plain})]
        return [_display({"text/plain": plain})]
    if kind == "audio":
        mime = getattr(part, "mime_type", "") or "audio"
        return [_display({"text/plain": f"[audio {mime}, {_size(part.data)}]"})]
    if kind == "resource":
        res = part.resource
        uri = str(getattr(res, "uri", ""))
        text = getattr(res, "text", None)
        if text is not None:
            return [_display({"text/plain": f"[resource {uri}]\n{text}"})]
        mime = getattr(res, "mime_type", "") or "binary"
        return [_display({"text/plain": f"[resource {uri}: {mime}, {_size(res.blob)}]"})]
    if kind == "resource_link":
        name = getattr(part, "name", "") or ""
        return [_display({"text/plain": f"[resource link {name}: {part.uri}]"})]
    return [_display({"text/plain": f"[{kind or 'unknown'} content]"})]


def result_outputs(result: Any) -> tuple[bool, list[dict[str, Any]]]:
    """(is_error, outputs) of a ``CallToolResult``."""
    outputs: list[dict[str, Any]] = []
    for part in result.content or []:
        outputs += content_outputs(part)
    structured = getattr(result, "structured_content", None)
    if structured is not None and not any(getattr(p, "type", "") == "text"
                                          for p in result.content or []):
        text = json.dumps(structured, indent=1, ensure_ascii=False, default=str)
        outputs.append(_display({"application/json": structured, "text/plain": text}))
    return bool(getattr(result, "is_error", False)), outputs

