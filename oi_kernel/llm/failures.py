"""What went wrong with a request, reduced to what retrying and the user's message need:
litellm, openai, httpx and aiohttp exceptions classified without importing most of them, and
the final error the user sees (``final_error``: what happened and what to change)."""

from __future__ import annotations

import email.utils
import json
import re
import socket
import time
from collections.abc import Iterator
from types import ModuleType
from typing import Any

from oi_kernel.errors import (
    LLMAuthError,
    LLMConnectionError,
    LLMError,
    LLMRateLimitError,
    LLMStreamCutError,
    LLMTimeoutError,
)
from oi_kernel.llm.stream import Stream, StreamEndedEarly

RETRY_BASE_S = 0.5
RETRY_CAP_S = 30.0

class Failure:
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


def classify(litellm: ModuleType, exc: Exception) -> Failure:
    import openai

    chain = list(_chain(exc))
    detail = _detail(exc)
    if isinstance(exc, StreamEndedEarly):
        return Failure("cut", str(exc))
    if any(
        isinstance(e, (openai.APITimeoutError, TimeoutError)) or _named(e, "TimeoutException")
        for e in chain
    ):
        return Failure("timeout", "timed out")
    network = [
        e
        for e in chain
        if isinstance(e, (ConnectionError, socket.gaierror))
        or any(_named(e, n) for n in _NETWORK_ERRORS)
    ]
    if network:
        root = network[-1]
        return Failure("connection", str(root) or type(root).__name__)
    client_side = [e for e in chain if type(e) is openai.OpenAIError]  # raised before any request
    if client_side and any(w in str(client_side[0]).lower() for w in ("api_key", "credential")):
        return Failure("auth", _detail(client_side[0]))
    status = _status(exc)
    if status in (401, 403) or isinstance(
        exc, (litellm.AuthenticationError, litellm.PermissionDeniedError)
    ):
        return Failure("auth", detail, status)
    if status == 429 or isinstance(exc, litellm.RateLimitError):
        return Failure("rate_limit", detail, 429, _retry_after(exc))
    if status is not None and status >= 500:
        return Failure("server", detail, status, _retry_after(exc))
    if status == 404 or "LLM Provider NOT provided" in str(exc):
        return Failure("model", detail, status)
    return Failure("other", detail, status)


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
    """The provider's message without litellm's "litellm.X: X: OpenAIException - " prefixes;
    from a JSON body shown as bytes (Anthropic), or from the cause's plain-text body when
    litellm kept only "Error code: 400"."""
    text = str(getattr(exc, "message", "") or exc).strip()
    for sep in ("Exception - ", "Error - "):
        if sep in text:
            text = text.split(sep, 1)[1]
    text = _message_in_body(text) or text
    if re.fullmatch(r"Error code: \d+", text):
        for e in _chain(exc):
            body = getattr(e, "body", None)
            if isinstance(body, str) and body.strip():
                text = body.strip()
                break
    return text.splitlines()[0] if text else type(exc).__name__


def _message_in_body(text: str) -> str:
    """The error message inside ``b'{"type": "error", "error": {"message": ...}}'``."""
    if not text.startswith(("b'", 'b"')):
        return ""
    try:
        import ast

        raw = ast.literal_eval(text.split("\n", 1)[0])
        body = json.loads(raw.decode("utf-8", "replace"))
    except (ValueError, SyntaxError, json.JSONDecodeError, AttributeError):
        return ""
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return str(message) if message else ""


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


def key_variables(litellm: ModuleType, model: str) -> list[str]:
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


# What servers say when they do not take ``tools`` (Ollama, vLLM, llama.cpp's llama-server,
# OpenRouter, LM Studio, ...), matched in lower case.
_NO_TOOLS_RE = re.compile(
    r"does not support tools|tools? (?:are |is )?not supported|not support(?:ed)? (?:for )?tools"
    r"|requires --jinja|enable-auto-tool-choice|tool[ _]choice|tool use is not supported"
    r"|no endpoints found that support tool use|unsupported param(?:eter)?s?:? ?['\"]?tools"
    r"|unrecognized .*\btools\b|extra_forbidden.*\btools\b|unknown (?:field|parameter).*\btools\b"
)
_NO_TOOLS_STATUS = frozenset({400, 404, 422, 500, 501})


def tools_rejected(exc: BaseException) -> str | None:
    """The server's words when ``exc`` says it does not take ``tools``, else None.

    The real status may sit deep in the chain (litellm reports every HTTP error of
    Ollama's native API as a 500 APIConnectionError whose cause holds the 400), and the
    message in a cause's body (a plain-text body leaves only "Error code: 400" in the
    exception's own text), so both are read from the whole chain. A bare 400 alone is not
    enough: it is as often a context overflow or a malformed message."""
    statuses = [s for e in _chain(exc) if (s := _status(e)) is not None]
    if statuses and statuses[-1] not in _NO_TOOLS_STATUS and statuses[0] not in _NO_TOOLS_STATUS:
        return None
    for text in chain_texts(exc):
        if _NO_TOOLS_RE.search(text.lower()):
            return _detail_text(text)
    return None


def chain_texts(exc: BaseException) -> list[str]:
    """The messages and error bodies of ``exc`` and everything it was raised from."""
    texts: list[str] = []
    for e in _chain(exc):
        texts.append(str(getattr(e, "message", "") or e))
        body = getattr(e, "body", None)
        if body is not None:
            texts.append(body if isinstance(body, str) else json.dumps(body, default=str))
    return texts


def _detail_text(text: str) -> str:
    for sep in ("Exception - ", "Error - "):
        if sep in text:
            text = text.split(sep, 1)[1]
    return text.strip().splitlines()[0][:300] if text.strip() else "tools are not supported"


def local_server_hint(api_base: str) -> str:
    """For a server on this machine: how to start one again (``oi-kernel serve-local``)."""
    host = api_base.split("://", 1)[-1].split("/", 1)[0].rsplit(":", 1)[0]
    if host not in ("127.0.0.1", "localhost", "[::1]"):
        return ""
    return ("\nIt is on this machine: for a GGUF model start it again with `oi-kernel "
            "serve-local` (it prints the OI_API_BASE to use); for Ollama with `ollama serve`.")


def final_error(llm: Any, litellm: ModuleType, failure: Failure, stream: Stream,
                attempts: int) -> LLMError:
    """The user-facing error for ``llm``'s final failure (an ``LLM``: its model, address,
    key and timeout name what to change), keeping what streamed."""
    partial = stream.text
    where = llm.now.api_base or "the provider's default URL"
    tries = f" after {attempts} attempts" if attempts > 1 else ""
    if failure.kind == "timeout" and stream.started:
        return LLMTimeoutError(
            f"The model's reply stalled: nothing more arrived for {llm.now.request_timeout:g} s "
            f"({where}). What arrived is kept; ask again to continue, or raise the limit "
            "with `c.LLM.request_timeout = 300` in the kernel's config.",
            partial,
        )
    if failure.kind == "timeout":
        return LLMTimeoutError(
            f"The model did not answer within {llm.now.request_timeout:g} s ({where}).\n"
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
        return LLMAuthError(_auth_message(llm, litellm, failure), partial)
    if failure.kind == "connection":
        return LLMConnectionError(
            f"Could not connect to {where}{tries}: {failure.detail}.\n"
            "Check that the server is running and the address is right: set OI_API_BASE "
            "before starting Jupyter, or `c.LLM.api_base` in the kernel's config."
            + local_server_hint(llm.now.api_base), partial)
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
            f"Model {llm.now.model!r} is unknown here: {failure.detail}\n"
            "Model names are litellm's (https://docs.litellm.ai/docs/providers), "
            "e.g. gpt-4o-mini or ollama_chat/qwen2.5-coder:1.5b; `%model NAME` or OI_MODEL.",
            partial,
        )
    status = f" (HTTP {failure.status})" if failure.status else ""
    return LLMError(
        f"The request to model {llm.now.model!r} failed{status}: {failure.detail}", partial
    )

def _auth_message(llm: Any, litellm: ModuleType, failure: Failure) -> str:
    variables = " or ".join(key_variables(litellm, llm.resolved_model())) or "OPENAI_API_KEY"
    how = f"set OI_API_KEY, or the provider's own variable {variables}, before starting Jupyter"
    if failure.status is None:
        return f"No API key was found for model {llm.now.model!r} ({failure.detail}).\nTo fix it, {how}."
    source = "OI_API_KEY (or c.LLM.api_key)" if llm.now.api_key else variables
    return (
        f"The provider rejected the API key (HTTP {failure.status}): {failure.detail}\n"
        f"Check the key in {source}; to change it, {how}."
    )
