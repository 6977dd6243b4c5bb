"""Reading the child's messages straight from its sockets: one ``recv_multipart`` per
message, large frames left in ZeroMQ's buffer, and output content left packed (the JSON
bytes as the child sent them) so the wrapper relays it without decoding and encoding;
``Pending``, one request waiting for its reply; and the gateway websocket's two frame
formats, parsed into the same message dicts."""

from __future__ import annotations

import asyncio
import json
from typing import Any

_DELIM = b"<IDS|MSG>"
_ZERO_COPY_MIN = 65536  # frames from this size on stay in ZeroMQ's buffer (zmq.Frame)

# Output messages the owner normally passes on unchanged: the iopub pump leaves their
# content packed (the JSON bytes as the child sent them), so a 20 MB stream is relayed
# without being decoded and encoded again; ``ChildKernel.unpack`` decodes it when needed.
PACKED_TYPES = frozenset({"stream", "display_data", "update_display_data", "error", "clear_output"})


async def next_msg(channel: Any, packed: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The channel's next message, read straight from its socket (``get_msg()`` creates a
    poll future per message) and parsed by ``_parse``. Large frames are not copied out of
    ZeroMQ: a relayed 20 MB output goes on as the same buffer."""
    raw = await channel.socket.recv_multipart(copy=False)
    frames = [f.bytes if len(f) < _ZERO_COPY_MIN else f for f in raw]
    return _parse(channel.session, frames, packed)


def _parse(session: Any, raw: list[Any], packed: frozenset[str]) -> dict[str, Any]:
    """A message dict like ``Session.deserialize``'s, with the content left packed (bytes,
    or a ``zmq.Frame`` when large) for ``packed`` types. On the unsigned link (see
    ``ChildKernel._start``) the header dates stay strings: nothing here reads them, and
    parsing them was a third of the time spent receiving (benchmarks/overhead.py)."""
    frames = raw[raw.index(_DELIM) + 1 :]  # after the identities (the iopub topic)
    if session.auth is not None:  # a signed link: let jupyter_client check the signature
        frames = [f if isinstance(f, bytes) else f.bytes for f in frames]
        msg = session.deserialize(frames, content=False)
    else:  # [signature, header, parent_header, metadata, content, *buffers]
        header = _loads(frames[1])
        msg = {
            "header": header,
            "msg_id": header["msg_id"],
            "msg_type": header["msg_type"],
            "parent_header": _loads(frames[2]),
            "metadata": _loads(frames[3]),
            "content": frames[4],
            "buffers": [memoryview(b) for b in frames[5:]],
        }
    if msg["header"]["msg_type"] not in packed:
        msg["content"] = _loads(msg["content"])
    return msg


def _loads(data: Any) -> Any:
    """JSON from bytes or a ``zmq.Frame`` (whose bytes are decoded in place)."""
    return json.loads(str(data, "utf-8", "replace"))


class Pending:
    """One request to the child; ``done`` resolves with the reply's content once the reply
    and, for executions, the idle status (all output is in) have arrived."""

    def __init__(self, loop: asyncio.AbstractEventLoop, wants_idle: bool) -> None:
        self.done: asyncio.Future[dict[str, Any]] = loop.create_future()
        self._reply: dict[str, Any] | None = None
        self._idle = not wants_idle

    def got_reply(self, content: dict[str, Any]) -> None:
        self._reply = content
        self._finish()

    def got_idle(self) -> None:
        self._idle = True
        self._finish()

    def _finish(self) -> None:
        if self._reply is not None and self._idle and not self.done.done():
            self.done.set_result(self._reply)

    def fail(self, error: BaseException) -> None:
        if not self.done.done():
            self.done.set_exception(error)
            self.done.exception()  # mark retrieved: a failure nobody awaits is not an error


# ----------------------------------------------------------------------------- gateway websocket frames
def parse_v1_frame(data: bytes) -> tuple[str, dict[str, Any]]:
    """A v1 frame: the number of offsets and the offsets (8-byte little-endian), the
    channel, then the message parts. The parts are views into the frame (not copied);
    output content stays packed."""
    view = memoryview(data)
    count = int.from_bytes(view[:8], "little")
    offsets = [int.from_bytes(view[8 * (i + 1): 8 * (i + 2)], "little") for i in range(count)]
    channel = str(view[offsets[0]: offsets[1]], "utf-8")
    parts = [view[offsets[i]: offsets[i + 1]] for i in range(1, count - 1)]
    header = _loads(parts[0])
    msg = {
        "header": header,
        "msg_id": header.get("msg_id", ""),
        "msg_type": header.get("msg_type", ""),
        "parent_header": _loads(parts[1]),
        "metadata": _loads(parts[2]),
        "content": parts[3],
        "buffers": parts[4:],
    }
    if channel != "iopub" or header.get("msg_type") not in PACKED_TYPES:
        msg["content"] = _loads(parts[3])
    return channel, msg


def parse_legacy_frame(data: str | bytes) -> tuple[str, dict[str, Any]]:
    """A frame of the legacy websocket protocol (JSON text, or jupyter_server's binary form)."""
    if isinstance(data, bytes):
        from jupyter_server.services.kernels.connection.base import deserialize_binary_message

        msg = deserialize_binary_message(data)
    else:
        msg = json.loads(data)
    msg.setdefault("buffers", [])
    return msg.pop("channel", "iopub"), msg
