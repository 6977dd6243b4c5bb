"""Provider quirks of litellm 1.83.0, worked around in one place.

Ollama (``ollama/``, ``ollama_chat/``): before each request litellm asks ``/api/show``
about the model, blocking, at ``http://localhost:11434`` whatever ``api_base`` says (and,
after the stream, at a broken ``{api_base}/api/chat/api/show``), unless the model is
registered with ``litellm.register_model``; ``register_ollama`` registers it with what our
own probe learnt (context window, tools). ``ollama_chat/`` also drops ``tool_calls`` from
the assistant messages of the history it sends, so the model would never see the calls
whose results follow; ``request_messages`` writes each call into the message's text.

Small models on local servers: llama-cpp-python's server and Ollama apply a repetition
penalty of 1.1 by default (the embedded model, llama.cpp's own server and most clients
1.0). Code repeats names and values, and with the penalty a small model writes them wrong
(SmolLM2-135M wrote ``text = 'Python'`` for "reverse 'python'", measured), so in
small-model mode ``no_repeat_penalty`` asks for 1.0; a server that rejects the parameter
is asked again without it (``drop_rejected_sampling``).

Anthropic wants the bare root as ``api_base`` (litellm appends ``/v1/messages``), the
OpenAI-compatible providers want ``.../v1``; ``api_base_for`` forgives either.
"""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Any

# Cache prices of a model that costs nothing: without them litellm >= 1.110 warns on
# register_model that they "will default to 0" (which is what they are).
FREE_CACHE = {"cache_creation_input_token_cost": 0.0, "cache_read_input_token_cost": 0.0}

if TYPE_CHECKING:  # model_info (urllib.request) is imported where used: not at start-up
    from oi_kernel.llm.model_info import ServerInfo, Size

_registered: set[str] = set()
_lock = threading.Lock()


def provider_of(model: str) -> str:
    """litellm's provider prefix of a resolved model name ("" when there is none)."""
    return model.split("/", 1)[0].lower() if "/" in model else ""


def is_ollama(model: str) -> bool:
    from oi_kernel.llm.model_info import OLLAMA_PROVIDERS

    return provider_of(model) in OLLAMA_PROVIDERS


def register_ollama(litellm: Any, model: str, info: ServerInfo | None) -> None:
    """Tell litellm about an Ollama model once, so it stops asking the server itself."""
    with _lock:
        if model in _registered:
            return
        _registered.add(model)
    entry: dict[str, Any] = {
        "litellm_provider": provider_of(model),
        "mode": "chat",
        "input_cost_per_token": 0.0,  # a local model costs nothing
        "output_cost_per_token": 0.0,
        **FREE_CACHE,
    }
    if info is not None and info.context:
        entry["max_input_tokens"] = entry["max_tokens"] = info.context
    if info is not None and info.tools is not None:
        entry["supports_function_calling"] = info.tools
    try:
        litellm.register_model({model: entry})
    except Exception:  # registering is an optimisation; never fail a request over it
        with _lock:
            _registered.discard(model)


def request_messages(model: str, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages as sent to ``model``'s provider (see the module docstring)."""
    if provider_of(model) != "ollama_chat":
        return messages
    return [_with_calls_as_text(m) if m.get("tool_calls") else m for m in messages]


def _with_calls_as_text(message: dict[str, Any]) -> dict[str, Any]:
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        try:
            arguments: Any = json.loads(function.get("arguments") or "{}")
        except json.JSONDecodeError:
            arguments = function.get("arguments")
        calls.append(json.dumps({"name": function.get("name"), "arguments": arguments}))
    text = "\n".join(p for p in (message.get("content") or "", *calls) if p)
    return {"role": "assistant", "content": text}


def api_base_for(model: str, api_base: str) -> str:
    """``api_base`` as ``model``'s provider wants it."""
    if provider_of(model) == "anthropic":
        base = api_base.rstrip("/")
        return base[: -len("/v1")] if base.endswith("/v1") else api_base
    return api_base


def no_repeat_penalty(model: str, api_base: str) -> dict[str, Any]:
    """Request parameters that turn a local server's repetition penalty off (see above)."""
    if is_ollama(model):
        return {"repeat_penalty": 1.0}  # litellm passes it on in Ollama's "options"
    if provider_of(model) == "openai" and api_base:
        return {"extra_body": {"repeat_penalty": 1.0}}
    return {}


def drop_rejected_sampling(kwargs: dict[str, Any], exc: BaseException) -> bool:
    """Remove ``repeat_penalty`` from ``kwargs`` when ``exc`` is the server rejecting it;
    True when it did (ask again)."""
    if "repeat_penalty" not in kwargs and "repeat_penalty" not in kwargs.get("extra_body", {}):
        return False
    from oi_kernel.llm.failures import chain_texts

    if not any("repeat_penalty" in text for text in chain_texts(exc)):
        return False
    kwargs.pop("repeat_penalty", None)
    extra = {k: v for k, v in kwargs.pop("extra_body", {}).items() if k != "repeat_penalty"}
    if extra:
        kwargs["extra_body"] = extra
    return True


# ----------------------------------------------------------------------------- the model's server


def server_key(model: str, api_base: str) -> tuple[str, str, str]:
    """(provider, name, api_base): what ``model_info`` asks a server about and caches under."""
    model = model.strip()
    provider = provider_of(model)
    if not provider and api_base:
        provider = "openai"
    name = model.split("/", 1)[1] if "/" in model and provider else model
    return provider, name, api_base


def server_info(model: str, api_base: str) -> ServerInfo | None:
    """What the model's server said about it (once asked: ``LLM.prepare``), or None."""
    from oi_kernel.llm import model_info

    return model_info.cached(*server_key(model, api_base))


def worth_asking(model: str, api_base: str, embedded: bool) -> bool:
    """Ask the server about the model (context, tools, size): Ollama (litellm would ask
    it anyway) and any server at an explicit api_base; hosted providers never."""
    from oi_kernel.llm import model_info

    key = server_key(model, api_base)
    if embedded or model_info.was_asked(*key):
        return False
    return key[0] in model_info.OLLAMA_PROVIDERS or (bool(api_base) and key[0] == "openai")


def model_size(model: str, api_base: str) -> Size | None:
    """The model's size as far as it is known: its name (a size in it), its server (once
    ``LLM.prepare()`` asked), or the size its bare name has by default."""
    from oi_kernel.llm import model_info

    by_name = model_info.size_from_name(model)
    if by_name is not None and by_name.source == "name":
        return by_name
    info = server_info(model, api_base)
    if info is not None and info.size is not None:
        return info.size
    return by_name
