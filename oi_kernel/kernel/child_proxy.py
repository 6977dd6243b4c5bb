"""The wrapper's side of its child kernel, as the frontend sees it.

Everything the child publishes is re-parented to the frontend request that caused it
(requests sent to the child reuse the frontend's ``msg_id``, so widgets' Output capture
and ``echo_update`` work for widgets that user code creates in the child); strays from
requests we do not know are dropped. Comm messages go both ways: the frontend's messages
for the child's widgets are forwarded, and the widget manager's ``request_states`` gets one
answer merged from the wrapper's widgets (approval cards) and the child's. Output content
arrives packed (``execution.wire.PACKED_TYPES``) and is relayed as it came.

``ChildProxy`` knows the kernel only through what it is handed: the jupyter_client
``Session`` and iopub socket to send with, the comm manager, and the current cell.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from oi_kernel.core.outputs import OUTPUT_TYPES
from oi_kernel.execution.child import ChildKernel
from oi_kernel.kernel.widget_state import StateMerger

COMM_TYPES = frozenset({"comm_open", "comm_msg", "comm_close"})
WIDGET_TARGETS = frozenset({"jupyter.widget.control", "jupyter.widget"})
MAX_ROUTES = 512


class ChildProxy:
    """Re-parenting, comm proxying and widget-state merging for one child kernel."""

    def __init__(
        self,
        session: Any,
        iopub: Callable[[], Any],
        child: ChildKernel,
        comm_manager: Any,
        current_parent: Callable[[], dict[str, Any]],
        execution_count: Callable[[], int],
        on_widget_frontend: Callable[[], None],
    ) -> None:
        self.session = session
        self.iopub = iopub
        self.child = child
        self.comm_manager = comm_manager
        self.current_parent = current_parent
        self.execution_count = execution_count
        self.on_widget_frontend = on_widget_frontend  # the frontend renders widgets
        self._routes: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._child_comms: set[str] = set()
        self._states = StateMerger(self._send_comm_msg)

    # ------------------------------------------------------------ iopub
    def route(self, child_msg_id: str, parent: dict[str, Any]) -> None:
        """Messages the child sends for ``child_msg_id`` belong to ``parent``'s cell."""
        self._routes[child_msg_id] = parent
        self._routes.move_to_end(child_msg_id)
        while len(self._routes) > MAX_ROUTES:
            self._routes.popitem(last=False)

    def on_iopub(self, msg: dict[str, Any]) -> None:
        """Re-parent a child iopub message to the cell that caused it."""
        msg_type = msg["header"]["msg_type"]
        parent_id = msg["parent_header"].get("msg_id")
        parent = self._routes.get(parent_id) if parent_id else None
        content = msg["content"]
        if msg_type in COMM_TYPES:
            if msg_type == "comm_msg" and self._states.child_reply(msg):
                return  # merged into one answer for the frontend
            if msg_type == "comm_open":
                self._child_comms.add(content["comm_id"])
            elif msg_type == "comm_close":
                self._child_comms.discard(content.get("comm_id"))
            target = parent or self.current_parent()
        elif msg_type in OUTPUT_TYPES and parent is not None:
            if msg_type == "execute_result":
                content = {**content, "execution_count": self.execution_count()}
            target = parent
        else:
            return  # a stray from no request we know: never leak it into another cell
        if not isinstance(content, dict):
            self._relay(msg_type, content, target, msg.get("metadata"), msg.get("buffers"))
            return
        self.session.send(self.iopub(), msg_type, content, parent=target,
                          metadata=msg.get("metadata"), buffers=msg.get("buffers"))

    def _relay(self, msg_type: str, packed: Any, parent: dict[str, Any],
               metadata: dict[str, Any] | None, buffers: list[Any] | None) -> None:
        """Publish a message whose content is already packed (bytes or a zmq.Frame) with a
        new header and parent: the content is signed and sent as it is, not copied."""
        session = self.session
        msg = session.msg(msg_type, {}, parent=parent, metadata=metadata or {})
        frames = [
            session.pack(msg["header"]),
            session.pack(msg["parent_header"]),
            session.pack(msg["metadata"]),
            packed,
            *(buffers or []),
        ]
        longest = max(f.nbytes if isinstance(f, memoryview) else len(f) for f in frames)
        session.send_raw(self.iopub(), frames, copy=longest < session.copy_threshold)

    # ------------------------------------------------------------ comms
    def comm_open(self, msg: dict[str, Any]) -> bool:
        """A frontend opened a comm; True when it is for the wrapper itself (the caller lets
        the comm manager handle it), else it was forwarded to the child."""
        content = msg["content"]
        target = content.get("target_name")
        if target in WIDGET_TARGETS:
            self.on_widget_frontend()
        if target == "jupyter.widget.control":
            self._states.control_comms.add(content["comm_id"])
            self.to_child(msg)  # the child answers for its own widgets
        if target in self.comm_manager.targets:
            return True
        self._child_comms.add(content["comm_id"])
        self.to_child(msg)
        return False

    def comm_msg(self, msg: dict[str, Any]) -> bool:
        """True when the message is for a comm of the wrapper (handle it locally)."""
        comm_id = msg["content"].get("comm_id")
        if comm_id in self._states.control_comms:
            if (msg["content"].get("data") or {}).get("method") == "request_states":
                self.on_widget_frontend()
                if self._states.request(comm_id, msg, self.child.is_running):
                    self.to_child(msg)
            return False
        if comm_id in self._child_comms:
            self.to_child(msg)
            return False
        return True

    def comm_close(self, msg: dict[str, Any]) -> bool:
        """True when the comm is the wrapper's (close it locally)."""
        comm_id = msg["content"].get("comm_id")
        if comm_id in self._child_comms:
            self._child_comms.discard(comm_id)
            self.to_child(msg)
            return False
        return True

    def to_child(self, msg: dict[str, Any]) -> None:
        """Forward a frontend message with the same msg_id, remembering its parent."""
        if not self.child.is_running:
            return
        msg_id = msg["header"]["msg_id"]
        self.route(msg_id, msg)
        self.child.send(msg["header"]["msg_type"], msg["content"], msg_id,
                        metadata=msg.get("metadata"), buffers=msg.get("buffers"))

    async def comm_info(self, content: dict[str, Any]) -> dict[str, Any]:
        """The wrapper's comms and the child's, as one ``comm_info_reply`` content."""
        target = content.get("target_name")
        comms = {
            k: {"target_name": v.target_name}
            for k, v in self.comm_manager.comms.items()
            if target is None or v.target_name == target
        }
        if self.child.is_running:
            with contextlib.suppress(Exception):
                reply = await self.child.request("comm_info_request", content, timeout=5)
                comms.update(reply.get("comms", {}))
        return {"status": "ok", "comms": comms}

    def _send_comm_msg(self, content: dict[str, Any], buffers: list[Any],
                       parent: dict[str, Any]) -> None:
        self.session.send(self.iopub(), "comm_msg", content, parent=parent, buffers=buffers)
