"""``python -m oi_kernel.execution.mcp.launch COMMAND ARGS...``: run an MCP server that
Linux stops (SIGTERM) when the process that started it dies, then ``exec`` it."""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import sys


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit("usage: python -m oi_kernel.execution.mcp.launch COMMAND [ARGS...]")
    command = sys.argv[1]
    path = shutil.which(command) or command
    if not os.path.exists(path):
        sys.stderr.write(f"{command}: command not found (not on PATH={os.environ.get('PATH')})\n")
        sys.exit(127)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
        if os.getppid() == 1:  # the parent died before prctl
            sys.exit(1)
    except (OSError, AttributeError):
        pass
    os.execvp(path, [command, *sys.argv[2:]])


if __name__ == "__main__":
    main()
