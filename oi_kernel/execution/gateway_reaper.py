"""Deletes a kernel on a gateway when the process that started it dies without doing so.

A kernel on a gateway outlives the wrapper that started it: if the wrapper is killed
(SIGKILL, out of memory, a crash), nothing would delete it and it would run until the
gateway culls it. So each gateway child gets a reaper, a small process in its own
session (a kill of the wrapper's process group does not reach it) started as
``python -m oi_kernel.execution.gateway_reaper``. It reads one JSON line on stdin (the
kernel's URL and the request headers, which hold the token: never on the command line),
then waits for stdin to close. The wrapper writes ``keep`` first when it deleted the
kernel itself; when stdin closes without it (the wrapper died), the reaper sends
``DELETE`` and exits. Standard library only, so it starts in a few tens of milliseconds.
"""

from __future__ import annotations

import json
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from typing import Any

KEEP = b"keep"


class Reaper:
    """The wrapper's handle on one reaper process."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc

    def stop(self, delete: bool) -> None:
        """Let the reaper go: it deletes the kernel first when ``delete``."""
        stdin = self.proc.stdin
        if stdin is not None:
            try:
                if not delete:
                    stdin.write(KEEP)
                stdin.close()
            except OSError:
                pass
        threading.Thread(target=self.proc.wait, daemon=True).start()  # no zombie


def start_reaper(kernel_url: str, headers: dict[str, str], *, validate_cert: bool,
                 timeout: float) -> Reaper:
    """Start the reaper of the kernel at ``kernel_url`` (``.../api/kernels/ID``)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", __name__],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    spec = {"url": kernel_url, "headers": headers, "validate_cert": validate_cert,
            "timeout": timeout}
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(spec).encode() + b"\n")
    proc.stdin.flush()
    return Reaper(proc)


def delete_kernel(spec: dict[str, Any], attempts: int = 3) -> bool:
    """DELETE the kernel; True when it is gone (deleted now, or already: 404)."""
    context = None
    if str(spec["url"]).startswith("https") and not spec.get("validate_cert", True):
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    request = urllib.request.Request(spec["url"], method="DELETE",
                                     headers=dict(spec.get("headers") or {}))
    for attempt in range(attempts):
        try:
            with urllib.request.urlopen(request, timeout=float(spec.get("timeout", 20)),
                                        context=context):
                return True
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return True
            if exc.code < 500:
                return False
        except OSError:
            pass
        time.sleep(0.5 * (attempt + 1))
    return False


def main() -> int:
    line = sys.stdin.buffer.readline()
    if not line.strip():
        return 1
    spec = json.loads(line)
    rest = sys.stdin.buffer.read()  # until the wrapper closes stdin, or dies
    if rest.strip() == KEEP:
        return 0
    return 0 if delete_kernel(spec) else 1


if __name__ == "__main__":
    sys.exit(main())
