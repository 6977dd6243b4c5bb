"""Comms between the frontend and the kernel: the child's widgets and comms relayed through
``ChildProxy`` (targets the wrapper does not own go to the child), and whether the frontend
renders widgets, which decides how approval is asked (``approval_ui``)."""

from __future__ import annotations

from typing import Any

from oi_kernel.kernel.child_proxy import COMM_TYPES


class CommRouting:
    """Mixed into ``OIKernel``: comm messages, and the widget frontend."""

    approval_ui: str
    comm_manager: Any
    proxy: Any
    session: Any
    shell_handlers: dict[str, Any]
    _widget_frontend: bool

    def _setup_comms(self) -> None:
        import comm
        import ipykernel.ipkernel  # noqa: F401  (makes comm.create_comm real, see ARCHITECTURE)

        self.comm_manager = comm.get_comm_manager()
        for msg_type in COMM_TYPES:
            self.shell_handlers[msg_type] = getattr(self, f"_{msg_type}")

    def _on_widget_frontend(self) -> None:
        """The frontend opened a widget comm: it renders widgets."""
        self._widget_frontend = True
        self._ensure_widget_targets()

    def _use_widgets(self) -> bool:
        if self.approval_ui == "auto":
            return self._widget_frontend
        return self.approval_ui == "widget"

    def _ensure_widget_targets(self) -> None:
        """Register ipywidgets' comm targets (imported lazily: it is not cheap)."""
        if "jupyter.widget" not in self.comm_manager.targets:
            import ipywidgets

            ipywidgets.register_comm_target()

    async def _comm_open(self, stream: Any, ident: Any, msg: dict[str, Any]) -> None:
        if self.proxy.comm_open(msg):
            self.comm_manager.comm_open(stream, ident, msg)

    async def _comm_msg(self, stream: Any, ident: Any, msg: dict[str, Any]) -> None:
        if self.proxy.comm_msg(msg):
            self.comm_manager.comm_msg(stream, ident, msg)

    async def _comm_close(self, stream: Any, ident: Any, msg: dict[str, Any]) -> None:
        if self.proxy.comm_close(msg):
            self.comm_manager.comm_close(stream, ident, msg)

    async def comm_info_request(self, stream: Any, ident: Any, parent: dict[str, Any]) -> None:
        content = await self.proxy.comm_info(parent["content"])
        self.session.send(stream, "comm_info_reply", content, parent, ident)
