"""Reading the child's messages straight from its sockets: one ``recv_multipart`` per
message, large frames left in ZeroMQ's buffer, and output content left packed (the JSON
bytes as the child sent them) so the wrapper relays it without decoding and encoding."""

from __future__ import annotations

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
