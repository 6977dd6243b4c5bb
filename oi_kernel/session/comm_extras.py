"""What the ``oi_kernel`` comms carry beyond ``FrontendComms``' own messages: the features
each view's extension announced in its ``hello`` (``"cell_edits"``), the message types other
parts answer (``session.cell_edits``), and who wants to know when a comm closes (a notebook
closed)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Handler = Callable[[Any, dict[str, Any], dict[str, Any]], None]


class CommExtras:
    """Shares ``FrontendComms``' dict of open comms (by id) and its sender."""

    def __init__(self, comms: dict[str, Any], send: Callable[[Any, dict[str, Any]], None]) -> None:
        self.comms = comms
        self._send = send
        self.features: dict[str, set[str]] = {}  # comm id -> what its extension announced
        self.handlers: dict[str, Handler] = {}  # message type -> handler(comm, msg, data)
        self.closed: list[Callable[[], None]] = []  # called when a comm closes

    def hello(self, comm_id: str, data: Any) -> None:
        """Note the ``features`` a ``hello`` names (none: an extension from before them)."""
        if isinstance(data, dict) and data.get("type") == "hello":
            features = data.get("features")
            self.features[comm_id] = ({f for f in features if isinstance(f, str)}
                                      if isinstance(features, list) else set())

    def supports(self, feature: str) -> bool:
        """Whether an open comm's extension announced ``feature``."""
        return any(feature in self.features.get(cid, ()) for cid in self.comms)

    def send(self, comm: Any, data: dict[str, Any]) -> None:
        self._send(comm, data)

    def broadcast(self, data: dict[str, Any]) -> None:
        for comm in list(self.comms.values()):
            self._send(comm, data)

    def comm_closed(self, comm_id: str) -> None:
        self.comms.pop(comm_id, None)
        self.features.pop(comm_id, None)
        for callback in list(self.closed):
            callback()
