"""The scripted server's replies in the wire formats of two more providers, so that
``ollama_chat/...`` and ``anthropic/...`` models go through litellm's real provider code
over HTTP (see ``tests/llm_server.py``, which routes the requests here):

- Ollama's native chat API: ``POST /api/chat`` answers with NDJSON lines (``message.content``,
  ``message.thinking``, ``message.tool_calls`` with arguments as an object, a final
  ``done: true`` line with the counters); ``POST /api/show`` and ``GET /api/tags`` describe
  the models in ``ScriptedLLMServer.ollama_models``; errors are ``{"error": "..."}``.
- Anthropic's Messages API: ``POST /v1/messages`` answers with server-sent events
  (``message_start``, a ``thinking`` block, a ``text`` block, one ``tool_use`` block per
  call whose input streams as ``input_json_delta``, ``message_delta`` with the stop reason,
  ``message_stop``); errors are ``{"type": "error", "error": {...}}``.

The shapes follow what was measured against litellm 1.83.0 (see the project's notes).
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.llm_server import Response


def _now() -> str:
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


DEFAULT_CHUNK = 4  # characters per delta when no size is given: about one token


def pieces(s: str, size: int | str | None, rng: random.Random) -> Iterator[str]:
    """``s`` in pieces of ``size`` characters (an int, "random" = 1..12 from ``rng``, None = 4)."""
    i = 0
    while i < len(s):
        n = rng.randint(1, 12) if size == "random" else int(size or DEFAULT_CHUNK)
        yield s[i : i + max(1, n)]
        i += max(1, n)


def _pieces(text: str, response: Response, rng: random.Random) -> Iterator[str]:
    yield from pieces(text, response.chunk_size, rng)


# ----------------------------------------------------------------------------- Ollama


def ollama_error(message: str) -> dict[str, Any]:
    return {"error": message}


def ollama_lines(body: dict[str, Any], response: Response) -> Iterator[dict[str, Any]]:
    """The NDJSON objects of a streamed ``/api/chat`` reply."""
    model = body.get("model", "scripted")
    rng = random.Random(response.seed)

    def line(message: dict[str, Any]) -> dict[str, Any]:
        return {"model": model, "created_at": _now(),
                "message": {"role": "assistant", "content": "", **message}, "done": False}

    for piece in _pieces(response.reasoning, response, rng):
        yield line({"thinking": piece})
    for piece in _pieces(response.content, response, rng):
        yield line({"content": piece})
    if response.calls:
        calls = []
        for index, call in enumerate(response.calls):
            try:
                arguments: Any = json.loads(call.arguments)
            except json.JSONDecodeError:
                arguments = call.arguments
            calls.append({"id": call.id or f"call_{uuid.uuid4().hex[:8]}",
                          "function": {"index": index, "name": call.name, "arguments": arguments}})
        yield line({"tool_calls": calls})
    done_reason = response.finish_reason or "stop"
    prompt = len(json.dumps(body.get("messages", []))) // 4
    yield {"model": model, "created_at": _now(), "message": {"role": "assistant", "content": ""},
           "done_reason": done_reason, "done": True, "total_duration": 1000,
           "prompt_eval_count": prompt, "eval_count": len(response.output) // 4}


def ollama_show(models: dict[str, dict[str, Any]], name: str) -> tuple[int, dict[str, Any]]:
    """``/api/show`` for ``name``: details, model_info and capabilities, or a 404."""
    model = models.get(name) or models.get(f"{name}:latest")
    if model is None:
        return 404, ollama_error(f"model '{name}' not found")
    family = model.get("family", "llama")
    capabilities = model.get("capabilities", ["completion", "tools"])
    info: dict[str, Any] = {"general.architecture": family}
    if "parameter_count" in model:
        info["general.parameter_count"] = model["parameter_count"]
    if "context_length" in model:
        info[f"{family}.context_length"] = model["context_length"]
    return 200, {
        "modelfile": f"FROM {name}\n",
        "template": "{{ if .Tools }}{{ .Tools }}{{ end }}" if "tools" in capabilities else "",
        "details": {"format": "gguf", "family": family, "families": [family],
                    "parameter_size": model.get("parameter_size", ""),
                    "quantization_level": "Q4_K_M"},
        "model_info": info,
        "capabilities": capabilities,
        "modified_at": _now(),
    }


def ollama_tags(models: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {"models": [
        {"name": name, "model": name, "modified_at": _now(), "size": 1_000_000,
         "details": {"format": "gguf", "family": m.get("family", "llama"),
                     "parameter_size": m.get("parameter_size", ""), "quantization_level": "Q4_K_M"}}
        for name, m in models.items()]}


# ----------------------------------------------------------------------------- Anthropic


def anthropic_error(status: int, message: str) -> dict[str, Any]:
    kind = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
            429: "rate_limit_error"}.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


def anthropic_events(body: dict[str, Any], response: Response) -> Iterator[tuple[str, dict]]:
    """The ``(event, data)`` pairs of a streamed ``/v1/messages`` reply."""
    rng = random.Random(response.seed)
    prompt = len(json.dumps(body.get("messages", []))) // 4
    yield "message_start", {"message": {
        "id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message", "role": "assistant",
        "model": body.get("model", "scripted"), "content": [], "stop_reason": None,
        "stop_sequence": None, "usage": {"input_tokens": prompt, "output_tokens": 1}}}
    yield "ping", {}
    index = 0
    if response.reasoning:
        yield "content_block_start", {"index": index, "content_block": {
            "type": "thinking", "thinking": "", "signature": ""}}
        for piece in _pieces(response.reasoning, response, rng):
            yield "content_block_delta", {"index": index, "delta": {
                "type": "thinking_delta", "thinking": piece}}
        yield "content_block_delta", {"index": index, "delta": {
            "type": "signature_delta", "signature": "c2NyaXB0ZWQ="}}
        yield "content_block_stop", {"index": index}
        index += 1
    if response.content:
        yield "content_block_start", {"index": index, "content_block": {"type": "text", "text": ""}}
        for piece in _pieces(response.content, response, rng):
            yield "content_block_delta", {"index": index, "delta": {
                "type": "text_delta", "text": piece}}
        yield "content_block_stop", {"index": index}
        index += 1
    for call in response.calls:
        yield "content_block_start", {"index": index, "content_block": {
            "type": "tool_use", "id": call.id or f"toolu_{uuid.uuid4().hex[:24]}",
            "name": call.name, "input": {}}}
        yield "content_block_delta", {"index": index, "delta": {
            "type": "input_json_delta", "partial_json": ""}}
        size = call.chunk_size if call.chunk_size is not None else response.chunk_size
        for piece in pieces(call.arguments, size, rng):
            yield "content_block_delta", {"index": index, "delta": {
                "type": "input_json_delta", "partial_json": piece}}
        yield "content_block_stop", {"index": index}
        index += 1
    stop = {"length": "max_tokens"}.get(response.finish_reason or "", "")
    stop = stop or ("tool_use" if response.calls else "end_turn")
    yield "message_delta", {"delta": {"stop_reason": stop, "stop_sequence": None},
                            "usage": {"output_tokens": max(1, len(response.output) // 4)}}
    yield "message_stop", {}


def sse_event(kind: str, data: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()
