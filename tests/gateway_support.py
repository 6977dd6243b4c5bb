"""A real ``jupyter kernelgateway`` on 127.0.0.1 for tests: a free port, a random token (in
the environment, not on the command line), a private runtime directory, ready when
``GET /api`` answers 200 with the token. The options tests need: kernels can be listed
(to check that none is left behind) and iopub output is not rate-limited."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

TEST_OPTIONS = (
    "--JupyterWebsocketPersonality.list_kernels=True",
    "--ZMQChannelsWebsocketConnection.limit_rate=False",
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Gateway:
    url: str
    token: str
    port: int
    proc: subprocess.Popen[bytes]
    argv: list[str]
    env: dict[str, str]
    log_path: str

    def api(self, path: str, method: str = "GET", body: Any = None) -> tuple[int, Any]:
        """(status, decoded JSON or None) of one REST call with the token."""
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.url + path, data=data, method=method, headers={
            "Authorization": f"token {self.token}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                raw = response.read()
                return response.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as exc:
            return exc.code, None

    def kernels(self) -> list[dict[str, Any]]:
        status, body = self.api("/api/kernels")
        assert status == 200, status
        return body

    def wait_for_kernels(self, count: int, timeout: float = 15.0) -> list[dict[str, Any]]:
        """The kernel list once it has ``count`` kernels (fails after ``timeout``)."""
        deadline = time.monotonic() + timeout
        while True:
            kernels = self.kernels()
            if len(kernels) == count or time.monotonic() > deadline:
                assert len(kernels) == count, kernels
                return kernels
            time.sleep(0.1)

    def log(self) -> str:
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            return f.read()


def _wait_ready(url: str, token: str, proc: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    request = urllib.request.Request(url + "/api", headers={"Authorization": f"token {token}"})
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"the kernel gateway exited with {proc.returncode}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"the kernel gateway did not answer within {timeout} s")
        try:
            with urllib.request.urlopen(request, timeout=1) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.05)


def start(extra: tuple[str, ...] = (), *, port: int | None = None, token: str | None = None,
          env: dict[str, str] | None = None, timeout: float = 90.0) -> Gateway:
    port = port or free_port()
    token = token or secrets.token_hex(16)
    exe = os.path.join(os.path.dirname(sys.executable), "jupyter-kernelgateway")
    argv = [exe, "--KernelGatewayApp.ip=127.0.0.1", f"--KernelGatewayApp.port={port}",
            "--KernelGatewayApp.port_retries=0", *TEST_OPTIONS, *extra]
    runtime = tempfile.mkdtemp(prefix="kg-runtime-")
    full_env = {**os.environ, **(env or {}), "JUPYTER_RUNTIME_DIR": runtime,
                "KG_AUTH_TOKEN": token}
    log_path = os.path.join(runtime, "gateway.log")
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(argv, env=full_env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    gateway = Gateway(url, token, port, proc, argv, full_env, log_path)
    try:
        _wait_ready(url, token, proc, timeout)
    except BaseException:
        stop(gateway)
        raise
    return gateway


def stop(gateway: Gateway, sig: int = signal.SIGTERM) -> None:
    """Stop the gateway (SIGTERM: it shuts its kernels down first)."""
    proc = gateway.proc
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def restart(gateway: Gateway, timeout: float = 90.0) -> Gateway:
    """Kill the gateway (its kernels die with it) and start a new one on the same port."""
    stop(gateway, signal.SIGKILL)  # its kernels notice their parent died and exit
    proc = subprocess.Popen(gateway.argv, env=gateway.env,
                            stdout=open(gateway.log_path, "ab"),  # noqa: SIM115
                            stderr=subprocess.STDOUT, start_new_session=True)
    gateway.proc = proc
    _wait_ready(gateway.url, gateway.token, proc, timeout)
    return gateway


@contextlib.contextmanager
def kernel_gateway(*extra: str, **kw: Any) -> Iterator[Gateway]:
    gateway = start(tuple(extra), **kw)
    try:
        yield gateway
    finally:
        stop(gateway)
        shutil.rmtree(gateway.env["JUPYTER_RUNTIME_DIR"], ignore_errors=True)
