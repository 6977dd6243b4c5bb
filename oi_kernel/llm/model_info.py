"""What can be learnt cheaply about a model: its size (is it small?), its context window and
whether its server takes tools.

Sources, cheapest first:

1. The name, with no I/O: a size token (``qwen2.5-coder:1.5b``, ``Llama-3.2-1B-Instruct``,
   ``SmolLM2-135M``, ``mixtral:8x7b`` = 56B, ``gemma3n:e4b``; the ``a3b`` of a mixture of
   experts is its active part, not its size), a size word (``phi3:mini``), or the size a
   bare name has by default (Ollama's ``llama3.2`` is 3.2B; SmolLM models are small in
   every size).
2. The server, asked once per (server, model) with a short timeout and cached for the
   process (failures too): Ollama's ``POST /api/show`` (parameter count, context length,
   capabilities such as "tools"), else ``GET /v1/models`` of an OpenAI-compatible server
   (llama.cpp's ``llama-server`` reports ``meta.n_params`` and its context; vLLM its
   ``max_model_len``; llama-cpp-python's server names the model by its file, whose name
   usually carries the size, and is known by its listing: it ignores ``tools``).

``ask_server`` does the asking and is only ever called off the event loop, from
``LLM.prepare()`` (before a turn's first request) or ``%model``, never on the kernel's
start-up path. Nothing here imports litellm.
"""

from __future__ import annotations

import json
import re
import threading
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from typing import Any

SMALL_LIMIT_B = 8.5  # "up to ~8B": Llama 3.1 8B has 8.03e9 parameters
ASK_TIMEOUT_S = 1.5
OLLAMA_PROVIDERS = ("ollama", "ollama_chat")

_SIZE_RE = re.compile(
    r"(?<![a-z0-9.])(?P<e>e)?(?:(?P<experts>\d+)x)?(?P<num>\d+(?:\.\d+)?)(?P<unit>[bm])"
    r"(?![a-z0-9])",
    re.IGNORECASE,
)
_ACTIVE_RE = re.compile(r"(?<![a-z0-9])a(?P<num>\d+(?:\.\d+)?)b(?![a-z0-9])", re.IGNORECASE)
_PARAMETER_SIZE_RE = re.compile(r"\s*(?:(\d+)x)?(\d+(?:\.\d+)?)\s*([KMBT])\s*", re.IGNORECASE)

# The size (billions) of a bare name or ":latest" tag: Ollama library defaults.
DEFAULT_SIZE_B = {
    "llama3.2": 3.2, "llama3.1": 8.0, "llama3": 8.0, "llama2": 7.0, "qwen2.5": 7.6,
    "qwen2.5-coder": 7.6, "qwen3": 8.2, "qwen2": 7.6, "phi3": 3.8, "phi3.5": 3.8,
    "phi4": 14.7, "phi4-mini": 3.8, "gemma2": 9.2, "gemma3": 4.3, "gemma": 9.0,
    "mistral": 7.2, "mistral-nemo": 12.2, "deepseek-r1": 8.0, "deepseek-coder": 1.3,
    "codellama": 7.0, "tinyllama": 1.1, "granite3.1-dense": 8.2, "starcoder2": 3.0,
    "codegemma": 9.0, "orca-mini": 3.0, "llama3.2-vision": 10.7, "qwen2.5vl": 8.3,
}
# Families that are small in every size they come in (the largest size, in billions).
SMALL_FAMILIES_B = {"smollm": 1.7, "smollm2": 1.7, "smollm3": 3.1, "tinyllama": 1.1}
# Size words instead of numbers.
SIZE_WORDS_B = {"phi3": {"mini": 3.8, "small": 7.4, "medium": 14.0},
                "phi3.5": {"mini": 3.8}, "phi4": {"mini": 3.8}}


@dataclass(frozen=True)
class Size:
    """A model's size in billions of parameters and how it was learnt."""

    billions: float
    source: str  # "name", "default" (a bare name's usual size), "server"
    detail: str  # for people: where it came from

    @property
    def small(self) -> bool:
        return self.billions <= SMALL_LIMIT_B

    def describe(self) -> str:
        return f"{_billions(self.billions)} parameters ({self.detail})"


@dataclass(frozen=True)
class ServerInfo:
    """What the model's server said about it (None: it did not say)."""

    size: Size | None = None
    context: int | None = None
    tools: bool | None = None
    server: str = ""  # "ollama", "openai-compatible"


def _billions(value: float) -> str:
    if value < 1:
        return f"{value * 1000:.0f}M"
    return f"{value:.1f}B".replace(".0B", "B")


def base_name(model: str) -> str:
    """The model's own name: no provider prefix, no organisation, lower case."""
    return model.strip().lower().rsplit("/", 1)[-1]


def size_from_name(model: str) -> Size | None:
    """The size a model's name gives, if any (see the module docstring)."""
    base = base_name(model)
    active = _ACTIVE_RE.search(base)
    sizes = [
        float(m["num"]) * (0.001 if m["unit"].lower() == "m" else 1.0)
        * (int(m["experts"]) if m["experts"] else 1)
        for m in _SIZE_RE.finditer(base)
        if not (active and m.start() == active.start())
    ]
    if sizes:
        return Size(max(sizes), "name", f"from the name {base!r}")
    family, _, tag = base.partition(":")
    for word, size in SIZE_WORDS_B.get(family, {}).items():
        if word in re.split(r"[-_.]", tag):
            return Size(size, "name", f"{family}:{word} from the name")
    for prefix, size in SMALL_FAMILIES_B.items():
        if family == prefix or family.startswith(prefix + "-"):
            return Size(size, "default", f"{prefix} models are at most {_billions(size)}")
    if tag in ("", "latest") and family in DEFAULT_SIZE_B:
        size = DEFAULT_SIZE_B[family]
        return Size(size, "default", f"{family} is {_billions(size)} by default in Ollama")
    return None


def parameter_size(text: str) -> float | None:
    """Ollama's ``details.parameter_size`` ("3.2B", "494.03M", "8x7B") in billions."""
    m = _PARAMETER_SIZE_RE.fullmatch(text or "")
    if not m:
        return None
    scale = {"k": 1e-6, "m": 1e-3, "b": 1.0, "t": 1e3}[m[3].lower()]
    return float(m[2]) * scale * (int(m[1]) if m[1] else 1)


# ----------------------------------------------------------------------------- the server

_cache: dict[tuple[str, str, str], ServerInfo | None] = {}
_lock = threading.Lock()


def cached(provider: str, name: str, api_base: str) -> ServerInfo | None:
    """What ``ask_server`` found before (None when it was never asked or learnt nothing)."""
    with _lock:
        return _cache.get((provider, name, api_base.rstrip("/")))


def was_asked(provider: str, name: str, api_base: str) -> bool:
    with _lock:
        return (provider, name, api_base.rstrip("/")) in _cache


def ask_server(provider: str, name: str, api_base: str, timeout: float = ASK_TIMEOUT_S
          ) -> ServerInfo | None:
    """Ask the server about model ``name`` once (blocking; call it off the event loop).
    ``provider`` is litellm's ("ollama_chat", "openai", ...); Ollama's default address
    is used when ``api_base`` is empty."""
    key = (provider, name, api_base.rstrip("/"))
    with _lock:
        if key in _cache:
            return _cache[key]
    if provider in OLLAMA_PROVIDERS:
        info = _ask_ollama(api_base or "http://localhost:11434", name, timeout)
    elif api_base:
        info = _ask_openai_compatible(api_base, name, timeout)
    else:
        info = None  # a hosted provider: nothing to ask cheaply
    with _lock:
        _cache[key] = info
    return info


def as_data() -> list[list[Any]]:
    """What was learnt from models' servers, as JSON data for the warm host
    (``llm/remote.py``), so it does not ask them again."""
    with _lock:
        known = list(_cache.items())
    return [[list(key), asdict(info) if info is not None else None] for key, info in known]


def take_data(data: list[list[Any]] | None) -> None:
    """Remember what ``as_data`` gave (in the warm host), unless it is known here already."""
    for key, raw in data or []:
        info = None if raw is None else ServerInfo(
            size=Size(**raw["size"]) if raw.get("size") else None, context=raw.get("context"),
            tools=raw.get("tools"), server=raw.get("server", ""))
        with _lock:
            _cache.setdefault(tuple(key), info)


def forget() -> None:
    """Drop every cached answer (tests; a server that changed models)."""
    with _lock:
        _cache.clear()


def _get(url: str, body: dict[str, Any] | None, timeout: float) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (http only)
        return json.loads(response.read(1_000_000))


_ERRORS = (OSError, urllib.error.URLError, ValueError, TimeoutError)


def _root(api_base: str) -> str:
    return re.sub(r"/(v1|api(/chat|/generate)?)/?$", "", api_base.rstrip("/"))


def _ask_ollama(api_base: str, name: str, timeout: float) -> ServerInfo | None:
    try:
        show = _get(f"{_root(api_base)}/api/show", {"model": name}, timeout)
    except _ERRORS:
        return None
    if not isinstance(show, dict):
        return None
    info = show.get("model_info") if isinstance(show.get("model_info"), dict) else {}
    details = show.get("details") if isinstance(show.get("details"), dict) else {}
    size = None
    count = info.get("general.parameter_count")
    if isinstance(count, (int, float)) and count > 0:
        size = Size(count / 1e9, "server", "Ollama's /api/show")
    elif (billions := parameter_size(str(details.get("parameter_size") or ""))) is not None:
        size = Size(billions, "server", "Ollama's /api/show")
    context = next((int(v) for k, v in info.items()
                    if k.endswith(".context_length") and isinstance(v, int)), None)
    capabilities = show.get("capabilities")
    if isinstance(capabilities, list):
        tools: bool | None = "tools" in capabilities
    elif isinstance(show.get("template"), str):
        tools = ".Tools" in show["template"]  # older Ollama: the template shows it
    else:
        tools = None
    return ServerInfo(size, context, tools, "ollama")


def _ask_openai_compatible(api_base: str, name: str, timeout: float) -> ServerInfo | None:
    base = api_base.rstrip("/")
    url = f"{base}/models" if base.endswith("/v1") else f"{_root(base)}/v1/models"
    try:
        listing = _get(url, None, timeout)
    except _ERRORS:
        return None
    models = listing.get("data") if isinstance(listing, dict) else None
    if not isinstance(models, list):
        return None
    models = [m for m in models if isinstance(m, dict)]
    entry = next((m for m in models if str(m.get("id", "")).lower() == name.lower()), None)
    if entry is None and len(models) == 1:
        entry = models[0]  # servers of one model answer to any name
    if entry is None:
        return None
    meta = entry.get("meta") if isinstance(entry.get("meta"), dict) else {}
    size = None
    if isinstance(meta.get("n_params"), (int, float)) and meta["n_params"] > 0:
        size = Size(meta["n_params"] / 1e9, "server", "the server's /v1/models")
    elif (by_id := size_from_name(str(entry.get("id", "")))) is not None and by_id.source == "name":
        size = Size(by_id.billions, "server", f"the server's model file {base_name(entry['id'])!r}")
    context = meta.get("n_ctx") or entry.get("max_model_len") or meta.get("n_ctx_train")
    # llama-cpp-python's server takes ``tools`` and ignores them without a word (its chat
    # templates never show them; streamed tool choice fails): its listing says who it is.
    quiet_about_tools = entry.get("owned_by") == "me" and entry.get("permissions") == []
    return ServerInfo(size, int(context) if isinstance(context, int) else None,
                      False if quiet_about_tools else None,
                      "llama-cpp-python" if quiet_about_tools else "openai-compatible")
