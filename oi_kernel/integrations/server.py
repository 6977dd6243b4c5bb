"""The Jupyter server extension, enabled by the wheel (``oi_kernel/data/
jupyter_server_config.json``, installed as ``etc/jupyter/jupyter_server_config.d/
oi_kernel.json``). When Jupyter starts, it starts the warm model host (``llm/host_link.py``)
that its Open Interpreter kernels will use, so the first notebook's first instruction finds
litellm already imported instead of waiting seconds for it.

The server stays attached to the host while it runs (the host exits ``OI_WARM_HOST_IDLE``
seconds after the server and its kernels are gone). A kernel shares the server's host when
its environment is the server's up to the variables a kernel gets of its own (``JPY_*``,
``OI_*``, ...: ``host_link.VOLATILE_PREFIXES``); otherwise it starts its own, as without the
extension. Nothing is started with ``OI_WARM_HOST=0``, nor when the kernels will run the
embedded model (it runs in each kernel's own process). Nothing here imports litellm.
"""

from __future__ import annotations

from typing import Any


def _load_jupyter_server_extension(serverapp: Any) -> None:
    from oi_kernel.llm import host_link, local

    if local.expected():
        serverapp.log.info("oi_kernel: the embedded model runs in each kernel; no warm model host")
    elif host_link.start(who="jupyter server"):
        serverapp.log.info("oi_kernel: starting the warm model host for Open Interpreter "
                           "kernels (OI_WARM_HOST=0 turns it off)")


load_jupyter_server_extension = _load_jupyter_server_extension  # the name older servers call
