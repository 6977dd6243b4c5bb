"""One answer to the widget manager's "request_states", from two kernels.

When JupyterLab (re)connects it opens the ``jupyter.widget.control`` comm and
asks for the state of every widget. Widgets live in two places here: the
approval cards in the wrapper and whatever user code created in the child. The
frontend takes the first ``update_states`` reply as the whole truth, so the
wrapper asks the child too and sends one merged reply (or its own alone, if the
child does not answer in time).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Send = Callable[[dict[str, Any], list[Any], dict[str, Any]], None]  # data, buffers, parent


def local_states() -> tuple[dict[str, Any], list[Any], list[Any]]:
    """States of the wrapper's own widgets, split as ipywidgets sends them."""
    from ipywidgets.widgets.widget import _instances, _remove_buffers

    full = {}
    for w in list(_instances.values()):
        try:
            full[w.model_id] = {
                "model_name": w._model_name,
                "model_module": w._model_module,
                "model_module_version": w._model_module_version,
                "state": w.get_state(drop_defaults=False),
            }
        except Exception:  # a half-closed widget must not cost the others their state
            continue
    return _remove_buffers(full)


@dataclass
class _Pending:
    states: dict[str, Any]
    paths: list[Any]
    buffers: list[Any]
    parent: dict[str, Any]
    timer: asyncio.TimerHandle | None = field(default=None)


class StateMerger:
    """Tracks control comms and merges the wrapper's and the child's widget states."""

    def __init__(self, send: Send, timeout: float = 3.0) -> None:
        self.send = send
        self.timeout = timeout
        self.control_comms: set[str] = set()
        self._pending: dict[str, _Pending] = {}

    def request(self, comm_id: str, parent: dict[str, Any], child_running: bool) -> bool:
        """Note a request_states; True when the child should be asked as well."""
        states, paths, buffers = local_states()
        pending = _Pending(states, paths, buffers, parent)
        if not child_running:
            self._reply(comm_id, pending)
            return False
        self._pending[comm_id] = pending
        loop = asyncio.get_running_loop()
        pending.timer = loop.call_later(self.timeout, self._give_up, comm_id)
        return True

    def child_reply(self, msg: dict[str, Any]) -> bool:
        """Merge a child's update_states; True when the message was consumed."""
        content = msg["content"]
        data = content.get("data") or {}
        pending = self._pending.pop(content.get("comm_id"), None)
        if pending is None or data.get("method") != "update_states":
            if pending is not None:
                self._pending[content["comm_id"]] = pending
            return False
        if pending.timer is not None:
            pending.timer.cancel()
        pending.states = {**pending.states, **data.get("states", {})}
        pending.paths = [*pending.paths, *data.get("buffer_paths", [])]
        pending.buffers = [*pending.buffers, *(msg.get("buffers") or [])]
        self._reply(content["comm_id"], pending)
        return True

    def _give_up(self, comm_id: str) -> None:
        pending = self._pending.pop(comm_id, None)
        if pending is not None:
            self._reply(comm_id, pending)

    def _reply(self, comm_id: str, p: _Pending) -> None:
        data = {"method": "update_states", "states": p.states, "buffer_paths": p.paths}
        self.send({"comm_id": comm_id, "data": data}, p.buffers, p.parent)
