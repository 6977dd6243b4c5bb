"""Where the child kernel runs, chosen in one place: on this machine (``ChildKernel``,
optionally sandboxed) or on a Jupyter gateway (``GatewayChildKernel``) when a gateway URL
is set. Every front door gets its child kernel from ``new_child_kernel`` (through
``session.assembly``), so nothing else knows which one it has."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Forced = Callable[[str], str]


def new_child_kernel(parent: Any = None, *, choose_gateway: Forced | None = None,
                     **options: Any) -> Any:
    """The child kernel for these settings: a ``GatewayChildKernel`` when a gateway URL is set
    (by ``options``, the config or OI_CHILD_GATEWAY_URL), else a local ``ChildKernel``.

    ``choose_gateway`` maps the configured URL to the one to use (the administrator's policy
    may force one, or refuse the user's); it is called once, before the choice.
    """
    from oi_kernel.execution.child import ChildKernel

    child = ChildKernel(parent=parent, **options)
    url = child.gateway_url if choose_gateway is None else choose_gateway(child.gateway_url)
    if not url:
        if child.gateway_url:
            child.gateway_url = ""
        return child
    from oi_kernel.execution.gateway import GatewayChildKernel

    return GatewayChildKernel(parent=parent, **{**options, "gateway_url": url})
