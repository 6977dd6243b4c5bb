"""``oi-kernel acp``: run the agent on stdio until the client closes it.

stdin and stdout carry the protocol, so nothing else may touch them: the agent keeps
duplicates of both for the SDK, and the process's own fd 0 becomes /dev/null and fd 1 a
copy of stderr. A child kernel, an MCP server or a stray ``print`` (each inherits or uses
fd 1) then writes to stderr instead of into the JSON-RPC stream. End of input (the client
closed the pipe or died), SIGTERM and SIGINT all end in ``OIAgent.close``: no child kernel
or MCP server is left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from typing import Any, NoReturn

from oi_kernel.errors import OIError

INSTALL_HINT = ("The Agent Client Protocol SDK is not installed: `pip install "
                "'oi-kernel[acp]'` (or `pip install agent-client-protocol`).")
STDIO_LIMIT = 50 * 1024 * 1024  # one JSON-RPC line may carry a large prompt


def check_sdk() -> None:
    try:
        import acp  # noqa: F401
    except ImportError:
        raise OIError(INSTALL_HINT) from None


def config_parent() -> Any:
    """A configurable carrying ``oi_kernel_config.py`` / ``.json`` from the Jupyter config
    path (the kernel's config: ``c.LLM.model``, ``c.Engine...``, ``c.ChildKernel...``)."""
    from jupyter_core.paths import jupyter_config_path
    from traitlets.config import Application

    class AcpApp(Application):
        name = "oi-kernel-acp"

    app = AcpApp()
    try:
        app.load_config_file("oi_kernel_config", path=jupyter_config_path())
    except Exception as exc:  # a broken config file is reported, not fatal
        from oi_kernel import config

        config.warn(f"oi_kernel_config could not be read ({exc}); the defaults are used.")
    return app


def take_stdio() -> tuple[Any, Any]:
    """The protocol's stdin and stdout as files of their own; fd 0 becomes /dev/null and
    fd 1 stderr, so nothing else reaches the protocol streams."""
    proto_in = os.fdopen(os.dup(0), "rb", buffering=0)
    proto_out = os.fdopen(os.dup(1), "wb", buffering=0)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return proto_in, proto_out


async def serve(proto_in: Any, proto_out: Any) -> None:
    from acp import run_agent, stdio_streams

    from oi_kernel.acp.agent import OIAgent

    saved = sys.stdin, sys.stdout
    sys.stdin, sys.stdout = proto_in, proto_out  # what the SDK's stdio_streams connects
    try:
        reader, writer = await stdio_streams(limit=STDIO_LIMIT)
    finally:
        sys.stdin, sys.stdout = saved
    agent = OIAgent(parent=config_parent())
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, lambda: main and main.cancel())
    try:
        # session/resume, /fork and /close are "unstable" in the SDK's router: without
        # the flag it answers them itself with method_not_found
        await run_agent(agent, writer, reader, use_unstable_protocol=True)
    except asyncio.CancelledError:
        pass
    finally:
        await asyncio.shield(agent.close())


def main() -> NoReturn:
    """Run the agent on this process's stdio (``oi-kernel acp``) until the client leaves."""
    check_sdk()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never a download here
    proto_in, proto_out = take_stdio()
    asyncio.run(serve(proto_in, proto_out))
    # Every session is closed by now (child kernels, MCP servers, logs). The interpreter's
    # teardown then blocked about 5 s in C code (measured with faulthandler: no Python
    # frame), and a client waits for its agent to exit: leave at once.
    sys.stderr.flush()
    os._exit(0)
