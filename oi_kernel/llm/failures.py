"""What went wrong with a request, reduced to what retrying and the user's message need:
litellm, openai, httpx and aiohttp exceptions classified without importing most of them."""

from __future__ import annotations

import email.utils
import socket
import time
from collections.abc import Iterator
from types import ModuleType

from oi_kernel.llm.stream import StreamEndedEarly

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
