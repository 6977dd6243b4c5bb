"""Jupyter outputs: collect iopub messages as nbformat v4 outputs (``OutputCollector``);
``core.output_text`` turns them into the text the LLM reads.

Pure: no I/O and stdlib only. The collector's memory is bounded however much a
program prints: a long stream keeps its head and its latest tail, and at most
``PENDING_LIMIT`` bytes of packed messages wait to be decoded.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable
from typing import Any

_CONTROL_RE = re.compile(r"\r\n|[\r\n\b]|[^\r\n\b]+")
_LINE_MAX = 8192  # longer lines are committed in pieces and lose "\r" overwriting
# The iopub message types that are a cell's output (what a collector keeps, and what the
# kernel re-parents from its child).
OUTPUT_TYPES = frozenset(
    {"stream", "display_data", "update_display_data", "execute_result", "error", "clear_output"}
)
class _StreamText:
    """The text of one stream output, with terminal-like "\\r"/"\\b" and a size bound."""

    def __init__(self, name: str, limit: int) -> None:
        self.name = name
        self.dropped = 0
        self._head_limit = limit // 2
        self._tail_limit = limit - self._head_limit
        self._line_max = max(1, min(_LINE_MAX, limit // 2))
        self._head: list[str] = []
        self._head_len = 0
        self._tail: deque[str] = deque()
        self._tail_len = 0
        self._line = ""  # the current, unfinished line
        self._col = 0  # cursor position in the current line

    def write(self, text: str) -> None:
        """Take more of the stream, as a terminal would show it."""
        if "\r" in text or "\b" in text:
            self._write_tokens(text)
            return
        if self._col != len(self._line):  # after a "\r": the slow way up to the next line
            first = text.find("\n") + 1
            self._write_tokens(text[:first] if first else text)
            if not first:
                return
            text = text[first:]
        self._write_plain(text)

    def _write_plain(self, text: str) -> None:
        """``_write_tokens`` for text without "\\r" and "\\b" with the cursor at the end of
        the line, in bulk: then everything up to the last newline is committed as is
        (however it would be split into commits, head and tail come out the same), and
        the rest is appended to the current line. Printing 100,000 lines or 20 MB costs
        a few string searches instead of Python work per line (benchmarks/throughput.py)."""
        last = text.rfind("\n") + 1
        if last:
            self._commit_span(self._line, 0, len(self._line))
            self._commit_span(text, 0, last)
            self._line, self._col = "", 0
        if last < len(text):
            self._append_run(text, last)

    def _append_run(self, text: str, start: int) -> None:
        """Append ``text[start:]`` (no control characters) to the current line, committing
        exactly where ``_write_tokens`` would: it takes the run in ``_line_max`` slices and
        commits the whole line each time it grows past ``_line_max``."""
        size = len(text) - start
        step = size if size <= self._line_max else self._line_max
        length, cut = len(self._line), 0  # cut: how much of line + run is committed
        for offset in range(0, size, step):
            length += min(step, size - offset)
            if length > self._line_max:
                cut, length = len(self._line) + offset + min(step, size - offset), 0
        if cut:
            self._commit_span(self._line, 0, len(self._line))
            self._commit_span(text, start, start + cut - len(self._line))
            self._line = text[start + cut - len(self._line) :]
        else:
            self._line += text[start:]
        self._col = len(self._line)

    def _commit_span(self, text: str, start: int, end: int) -> None:
        """``_commit(text[start:end])`` without copying the part that would be cut."""
        room = self._head_limit - self._head_len
        if room > 0 and start < end:
            take = min(room, end - start)
            self._head.append(text[start : start + take])
            self._head_len += take
            start += take
        size = end - start
        if size <= 0:
            return
        if size >= self._tail_limit:  # this span alone fills the tail
            self.dropped += self._tail_len + size - self._tail_limit
            self._tail.clear()
            self._tail.append(text[end - self._tail_limit : end])
            self._tail_len = self._tail_limit
        else:
            self._tail.append(text[start:end])
            self._tail_len += size
            self._trim_tail()

    def _write_tokens(self, text: str) -> None:
        # One token at a time, and long runs of text in line-sized slices: a single
        # 100 MB message must not cost another 100 MB (or several) while it is taken in.
        for match in _CONTROL_RE.finditer(text):
            token = match[0]
            if token in ("\n", "\r\n"):
                self._commit(self._line + "\n")
                self._line, self._col = "", 0
            elif token == "\r":
                self._col = 0
            elif token == "\b":
                self._col = max(0, self._col - 1)
            elif len(token) <= self._line_max:
                self._overwrite(token)
            else:
                start, end = match.span()
                for i in range(start, end, self._line_max):
                    self._overwrite(text[i : min(i + self._line_max, end)])

    def _overwrite(self, token: str) -> None:
        line, col = self._line, self._col
        self._line = line[:col] + token + line[col + len(token) :]
        self._col = col + len(token)
        if len(self._line) > self._line_max:
            self._commit(self._line[: self._col])
            self._line, self._col = self._line[self._col :], 0

    def _commit(self, text: str) -> None:
        room = self._head_limit - self._head_len
        if room > 0:
            self._head.append(text[:room])
            self._head_len += min(room, len(text))
            text = text[room:]
        if text:
            self._tail.append(text)
            self._tail_len += len(text)
            self._trim_tail()

    def _trim_tail(self) -> None:
        while self._tail_len > self._tail_limit:
            excess = self._tail_len - self._tail_limit
            first = self._tail[0]
            if len(first) <= excess:
                self._tail.popleft()
                cut = len(first)
            else:
                self._tail[0] = first[excess:]
                cut = excess
            self._tail_len -= cut
            self.dropped += cut

    def text(self) -> str:
        head = "".join(self._head)
        tail = "".join(self._tail) + self._line
        if not self.dropped:
            return head + tail
        newline = "" if not head or head.endswith("\n") else "\n"
        return f"{head}{newline}[... {self.dropped:,} characters cut ...]\n{tail}"


# Packed messages (JSON bytes) an OutputCollector may hold before decoding them: enough
# for one large output to be decoded after the cell has replied, not before.
PENDING_LIMIT = 32_000_000


class OutputCollector:
    """Collects the iopub messages of one execution as nbformat v4 output dicts.

    Messages may arrive still packed (``add_packed``): they are decoded when something
    reads the collector, or once more than ``pending_limit`` bytes wait. A kernel that
    relays a 20 MB output can so reply first and decode it afterwards (decoding holds
    the GIL, which also kept the relayed message from leaving; benchmarks/throughput.py).
    """

    def __init__(self, max_chars: int = 2_000_000, pending_limit: int = PENDING_LIMIT) -> None:
        if max_chars < 2:
            raise ValueError(f"max_chars must be at least 2, not {max_chars}")
        self.max_chars = max_chars
        self.pending_limit = pending_limit
        self._entries: list[dict[str, Any] | _StreamText] = []
        self._display_ids: dict[str, list[dict[str, Any]]] = {}
        self._clear_pending = False
        self._dropped_before_clear = 0
        self._error: dict[str, Any] | None = None
        self._packed: list[tuple[str, bytes, Callable[[bytes], dict[str, Any]]]] = []
        self._packed_bytes = 0

    @property
    def outputs(self) -> list[dict[str, Any]]:
        """The outputs so far, as nbformat v4 dicts (a fresh list each time)."""
        self._unpack_waiting()
        return [_stream_output(e) if isinstance(e, _StreamText) else dict(e) for e in self._entries]

    @property
    def has_error(self) -> bool:
        self._unpack_waiting()
        return self._error is not None

    @property
    def error(self) -> dict[str, Any] | None:
        """The last error output, kept even if a ``clear_output`` removed it from view."""
        self._unpack_waiting()
        return self._error

    @property
    def dropped_chars(self) -> int:
        """How many stream characters were cut to keep memory bounded."""
        self._unpack_waiting()
        streams = (e.dropped for e in self._entries if isinstance(e, _StreamText))
        return self._dropped_before_clear + sum(streams)

    def add_packed(
        self, msg_type: str, packed: bytes, unpack: Callable[[bytes], dict[str, Any]]
    ) -> None:
        """Take one iopub message whose content is still packed; ``unpack`` decodes it
        when it is needed (see the class docstring)."""
        self._packed.append((msg_type, packed, unpack))
        self._packed_bytes += len(packed)
        if self._packed_bytes > self.pending_limit:
            self._unpack_waiting()

    def _unpack_waiting(self) -> None:
        waiting, self._packed, self._packed_bytes = self._packed, [], 0
        for msg_type, packed, unpack in waiting:
            self._add(msg_type, unpack(packed))

    def add(self, msg_type: str, content: dict[str, Any]) -> None:
        """Take one iopub message; types other than outputs and clears are ignored."""
        self._unpack_waiting()
        self._add(msg_type, content)

    def _add(self, msg_type: str, content: dict[str, Any]) -> None:
        if msg_type == "clear_output":
            self._clear_pending = bool(content.get("wait", False))
            if not self._clear_pending:
                self._clear()
        elif msg_type == "update_display_data":
            self._update_display(content)
        elif msg_type in ("stream", "display_data", "execute_result", "error"):
            if self._clear_pending:
                self._clear()
            self._add_output(msg_type, content)

    def _clear(self) -> None:
        self._dropped_before_clear = self.dropped_chars
        self._entries.clear()
        self._display_ids.clear()
        self._clear_pending = False

    def _add_output(self, msg_type: str, content: dict[str, Any]) -> None:
        if msg_type == "stream":
            text = str(content.get("text", ""))
            if text:
                self._add_stream(str(content.get("name", "stdout")), text)
            return
        output = _nbformat_output(msg_type, content)
        self._entries.append(output)
        if msg_type == "error":
            self._error = output
        display_id = (content.get("transient") or {}).get("display_id")
        if display_id and msg_type != "error":
            self._display_ids.setdefault(str(display_id), []).append(output)

    def _add_stream(self, name: str, text: str) -> None:
        last = self._entries[-1] if self._entries else None
        if not isinstance(last, _StreamText) or last.name != name:
            last = _StreamText(name, self.max_chars)
            self._entries.append(last)
        last.write(text)

    def _update_display(self, content: dict[str, Any]) -> None:
        display_id = (content.get("transient") or {}).get("display_id")
        for output in self._display_ids.get(str(display_id), []):
            output["data"] = content.get("data", {})
            output["metadata"] = content.get("metadata", {})


def _stream_output(stream: _StreamText) -> dict[str, Any]:
    return {"output_type": "stream", "name": stream.name, "text": stream.text()}


def _nbformat_output(msg_type: str, content: dict[str, Any]) -> dict[str, Any]:
    if msg_type == "error":
        return {
            "output_type": "error",
            "ename": str(content.get("ename", "")),
            "evalue": str(content.get("evalue", "")),
            "traceback": [str(line) for line in content.get("traceback", [])],
        }
    output: dict[str, Any] = {"output_type": msg_type}
    if msg_type == "execute_result":
        output["execution_count"] = content.get("execution_count")
    output["data"] = content.get("data", {})
    output["metadata"] = content.get("metadata", {})
    return output
