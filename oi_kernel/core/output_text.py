"""Outputs as the compact text the LLM reads after each step: streams and errors kept,
rich displays as their text (HTML flattened), images as ``[image/png 640x480 displayed]``,
long text cut to its head and tail. Pure: stdlib only."""

from __future__ import annotations

import binascii
import os
import re
import struct
from html.parser import HTMLParser
from typing import Any

_ANSI_RE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor movement
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC: titles, hyperlinks
    r"|\x1b[()*+][0-9A-Za-z]"  # character set selection, as in tput sgr0
    r"|\x1b[@-Z\\-_]"  # other two-character escapes
)
_WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
_TEXT_MIMES = ("text/plain", "text/markdown", "text/html")
_BLOCK_TAGS = frozenset(
    "p div br tr li ul ol table thead tbody tfoot h1 h2 h3 h4 h5 h6 pre blockquote hr".split()
)


def truncate_middle(text: str, max_chars: int) -> str:
    """``text`` unchanged if short enough, else its head (~40%) and tail (~60%).

    Cuts at line boundaries when a newline is near the cut, and puts a line
    ``[... N characters (M lines) cut ...]`` between head and tail.
    """
    max_chars = max(max_chars, 0)
    if len(text) <= max_chars:
        return text
    head_end = max_chars * 2 // 5
    tail_start = len(text) - (max_chars - head_end)
    reach = max_chars // 10
    newline = text.rfind("\n", head_end - reach, head_end)
    if reach and newline != -1:
        head_end = newline + 1
    newline = text.find("\n", tail_start, tail_start + reach)
    if reach and newline != -1:
        tail_start = newline + 1
    head, cut, tail = text[:head_end], text[head_end:tail_start], text[tail_start:]
    lead = "" if not head or head.endswith("\n") else "\n"
    marker = f"{lead}[... {len(cut):,} characters ({cut.count(chr(10)):,} lines) cut ...]\n"
    return head + marker + tail


def strip_ansi(text: str) -> str:
    """``text`` without ANSI escape sequences (CSI colours and cursor moves, OSC)."""
    return _ANSI_RE.sub("", text)


class _HTMLText(HTMLParser):
    """Collects readable text: table cells tab-separated, one row per line."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip_depth = 0
        self._cells_in_row = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self._skip_depth += 1
        elif tag in ("td", "th"):
            if self._cells_in_row:
                self.parts.append("\t")
            self._cells_in_row += 1
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n")
            self._cells_in_row = 0

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self._skip_depth = max(0, self._skip_depth - 1)
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n")
            self._cells_in_row = 0

    def handle_data(self, data: str) -> None:
        if not self._skip_depth:
            self.parts.append(re.sub(r"\s+", " ", data))


def html_to_text(html: str) -> str:
    """Readable text of an HTML fragment (a pandas DataFrame becomes tab-separated rows)."""
    parser = _HTMLText()
    parser.feed(html)
    parser.close()
    lines = []
    for line in "".join(parser.parts).split("\n"):
        cells = [cell.strip(" ") for cell in line.split("\t")]
        if any(cells):
            lines.append("\t".join(cells))
    return "\n".join(lines)


def _b64_prefix(b64: str, nbytes: int) -> bytes:
    """At least the first ``nbytes`` bytes of base64 data (fewer if it is shorter)."""
    chars = nbytes * 4 // 3 + 4
    while True:
        piece = re.sub(r"\s+", "", b64[:chars])
        if len(piece) >= nbytes * 4 // 3 + 4 or chars >= len(b64):
            break
        chars *= 2
    piece = piece[: len(piece) - len(piece) % 4]
    return binascii.a2b_base64(piece)


def image_size(mime: str, b64: str) -> tuple[int, int] | None:
    """(width, height) of a base64 PNG, JPEG or GIF from its header; None if unknown."""
    try:
        if mime == "image/png":
            head = _b64_prefix(b64, 24)
            if head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR":
                return struct.unpack(">II", head[16:24])
        elif mime == "image/gif":
            head = _b64_prefix(b64, 10)
            if head[:6] in (b"GIF87a", b"GIF89a"):
                return struct.unpack("<HH", head[6:10])
        elif mime == "image/jpeg":
            return _jpeg_size(b64)
    except (binascii.Error, struct.error, ValueError):
        return None
    return None


def _jpeg_size(b64: str) -> tuple[int, int] | None:
    """Scan JPEG markers for a start-of-frame, decoding more of the data as needed."""
    nbytes = 2048
    while True:
        data = _b64_prefix(b64, nbytes)
        size = _jpeg_frame_size(data)
        if size is not None or len(data) < nbytes:
            return size
        nbytes *= 8


def _jpeg_frame_size(data: bytes) -> tuple[int, int] | None:
    """The size from the frame header; None if ``data`` ends first; ValueError if no JPEG."""
    if data[:2] != b"\xff\xd8":
        raise ValueError("not a JPEG")
    i = 2
    while i + 4 <= len(data):
        if data[i] != 0xFF:
            raise ValueError("broken JPEG marker")
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
        elif marker == 0x01 or 0xD0 <= marker <= 0xD8:  # markers without a length
            i += 2
        elif 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            if i + 9 > len(data):
                return None
            height, width = struct.unpack(">HH", data[i + 5 : i + 9])
            return (width, height)
        else:
            i += 2 + struct.unpack(">H", data[i + 2 : i + 4])[0]
    return None


def _as_text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _bundle_text(data: dict[str, Any]) -> str:
    """One display's data as text: its best text form plus a line per image."""
    if _WIDGET_MIME in data:
        return "[widget displayed]"
    lines = []
    text_mime = next((mime for mime in _TEXT_MIMES if mime in data), None)
    if text_mime == "text/html":
        lines.append(html_to_text(_as_text(data[text_mime])))
    elif text_mime is not None:
        lines.append(strip_ansi(_as_text(data[text_mime])))
    for mime in data:
        if mime.startswith("image/"):
            size = image_size(mime, _as_text(data[mime]))
            dims = f" {size[0]}x{size[1]}" if size else ""
            lines.append(f"[{mime}{dims} displayed]")
    if not lines and data:
        lines.append(f"[{next(iter(data))} displayed]")
    return "\n".join(lines)


def _error_text(output: dict[str, Any]) -> str:
    traceback = strip_ansi("\n".join(output.get("traceback", [])))
    return f"{output.get('ename', 'Error')}: {output.get('evalue', '')}\n{traceback}".rstrip()


_USER_FRAME = re.compile(r"^\s*(Cell In\s*\[|Input In\s*\[|File <ipython-input)")
_FILE_FRAME = re.compile(r"^\s*File (.+?):\d+")
_LIBRARY_PATHS = ("site-packages", "dist-packages", "/lib/python", "<frozen", "\\lib\\")
MAX_USER_FRAMES = 3
MAX_FRAME_LINES = 12


def _is_user_frame(entry: str) -> bool:
    """A frame of the user's code: a notebook cell, or a file outside installed packages
    and the standard library (``File pandas/_libs/...`` of a compiled module is not)."""
    if _USER_FRAME.match(entry):
        return True
    found = _FILE_FRAME.match(entry)
    if found is None:
        return False
    path = found.group(1)
    return os.path.isabs(path) and not any(mark in path for mark in _LIBRARY_PATHS)


def compact_error(output: dict[str, Any]) -> tuple[str, list[str], int]:
    """An error output, compactly: (the error line, the user-code frames without ANSI
    colours, how many other frames were left out). Library internals (pandas', IPython's)
    are what is left out; the last ``MAX_USER_FRAMES`` user frames are kept."""
    line = f"{output.get('ename', 'Error')}: {output.get('evalue', '')}".rstrip(": ")
    frames, other = [], 0
    for entry in output.get("traceback", []):
        text = strip_ansi(str(entry)).rstrip("\n")
        if _is_user_frame(text):
            lines = [row for row in text.strip("\n").splitlines() if row.strip() != line]
            if len(lines) > MAX_FRAME_LINES:
                lines = [*lines[:2], "...", *lines[-(MAX_FRAME_LINES - 3):]]
            frames.append("\n".join(lines))
        elif _FILE_FRAME.match(text):
            other += 1
    other += max(0, len(frames) - MAX_USER_FRAMES)
    return line, frames[-MAX_USER_FRAMES:], other


def full_error_text(output: dict[str, Any]) -> str:
    """The whole traceback as plain text (what the cell showed before)."""
    traceback = strip_ansi("\n".join(output.get("traceback", []))).strip("\n")
    return traceback or f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"


def outputs_to_text(
    outputs: list[dict[str, Any]], max_chars: int = 6000, max_error_chars: int = 4000
) -> str:
    """The text the LLM reads about one step's outputs; "" when there were none.

    Errors are cut to ``max_error_chars`` first; the other text gets what remains
    of ``max_chars`` (at least ``max_chars - max_error_chars``), cut in the middle.
    """
    names = {o.get("name") for o in outputs if o.get("output_type") == "stream" and o.get("text")}
    both_streams = {"stdout", "stderr"} <= names
    parts: list[str] = []
    errors: list[str] = []
    for output in outputs:
        kind = output.get("output_type")
        if kind == "error":
            errors.append(_error_text(output))
        elif kind == "stream":
            text = strip_ansi(_as_text(output.get("text", "")))
            label = "[stderr]\n" if both_streams and output.get("name") == "stderr" else ""
            parts.append(label + text)
        elif kind in ("display_data", "execute_result"):
            parts.append(_bundle_text(output.get("data", {})))
    error_text = truncate_middle("\n".join(errors), max_error_chars)
    budget = max(max_chars - len(error_text), max_chars - max_error_chars, 0)
    other = truncate_middle("\n".join(p.rstrip("\n") for p in parts if p.strip()), budget)
    return "\n".join(part for part in (other, error_text) if part)
