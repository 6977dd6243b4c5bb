"""What the kernel asks of its warm host (``host_link``): litellm's answers about a model
(``RemoteLitellm``, what ``boundary.load()`` gives while the host serves) and whole streamed
requests (``stream``), run by the same ``LLM.stream`` in the host, so retries, tool calls,
reasoning, errors and their messages are the ones the kernel would produce itself.

Anything the host cannot do falls back to litellm imported in the kernel: an attribute
``RemoteLitellm`` does not know, a host that stopped answering, a request that is not JSON.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
from collections.abc import Callable
from typing import Any

from oi_kernel import errors
from oi_kernel.core.types import Reply, ToolCall, Usage
from oi_kernel.llm import host_link

LLM = Any  # oi_kernel.llm.client.LLM (which imports this module)

log = logging.getLogger(__name__)
STREAM_LIMIT = 1 << 26  # one event line may carry a long reply
_ANSWERS: dict[tuple[str, str], tuple[bool, Any]] = {}  # (question, args) -> (ok, answer)


class RemoteLitellm:
    """litellm's model questions, answered by the host; any other attribute is litellm's
    own, imported in this process (``boundary.load_local``)."""

    CALLS = ("supports_function_calling", "supports_vision", "get_model_info")

    def __init__(self, link: host_link.Link, local: Callable[[], Any],
                 count_local: Callable[[str], int]) -> None:
        self._link = link
        self._local = local  # boundary.load_local
        self._count_local = count_local

    @property
    def provider_list(self) -> list[str]:
        return self._cached("provider_list")

    def _cached(self, name: str, *args: Any) -> Any:
        """A model question's answer, asked of the host once per process: the engine asks
        them for every request (context window, tools), and litellm's answers for a model
        do not change while it serves."""
        key = (name, json.dumps(args, sort_keys=True, default=str))
        if key not in _ANSWERS:
            try:
                _ANSWERS[key] = (True, self._ask(name, *args))
            except Exception as exc:  # noqa: BLE001 - raised again below, every time
                _ANSWERS[key] = (False, str(exc))
        ok, value = _ANSWERS[key]
        if not ok:
            raise Exception(value)
        return value

    def count_tokens(self, text: str) -> int:
        return int(self._ask("count_tokens", text))

    def _ask(self, name: str, *args: Any) -> Any:
        try:
            return self._link.call(name, *args)
        except host_link.RemoteError as exc:
            raise Exception(str(exc)) from None  # what litellm raised, as callers expect
        except host_link.HostGone:
            log.info("warm host gone: %s answered by litellm in the kernel", name)
            if name == "count_tokens":
                return self._count_local(*args)
            value = getattr(self._local(), name)
            return value(*args) if callable(value) else value

    def __getattr__(self, name: str) -> Any:
        if name in self.CALLS:
            return lambda *args: self._cached(name, *args)
        return getattr(self._local(), name)


def config_of(llm: LLM) -> dict[str, Any]:
    """The settings this request uses (the turn's, ``LLM.now``), so the host builds the same
    client."""
    settings = llm.now
    return {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)}


def serves(llm: LLM) -> bool:
    """Whether ``llm``'s requests go to the warm host, decided before anything is sent:
    a host is attached (or starting) and the model is one it can run. What needs the
    kernel's own process stays here: the embedded model (``local/...``, llama.cpp in this
    process through a litellm provider registered here) and anything registered in this
    process's litellm (then litellm is imported here, and ``host_link.link()`` is None)."""
    return host_link.link() is not None and not getattr(llm, "is_embedded", False)


Callback = Callable[[str], None] | None


async def stream(llm: LLM, messages: list[dict], tools: list[dict] | None,
                 sampling: dict[str, Any] | None,
                 on: tuple[Callback, Callback, Callback]) -> Reply | None:
    """The reply through the host, or None when the host cannot serve (nothing was sent
    to the model then, or the host ended before anything arrived): take the plain path.
    ``on``: the text, retry and reasoning callbacks of ``LLM.stream``."""
    callbacks = dict(zip(("text", "retry", "reasoning"), on, strict=True))
    link = host_link.link()
    if link is None or not serves(llm):
        return None
    ready = link.ok or await asyncio.to_thread(link.wait)  # no thread hop once attached
    if not ready or host_link.link() is None:
        return None
    from oi_kernel.llm import model_info  # (urllib: not on the kernel's start-up path)

    try:
        request = json.dumps({"op": "stream", "kernel": os.getpid(), "config": config_of(llm),
                              "messages": messages, "tools": tools, "sampling": sampling,
                              "server": model_info.as_data()}).encode() + b"\n"
    except (TypeError, ValueError):
        return None
    try:
        reader, writer = await asyncio.open_unix_connection(link.path, limit=STREAM_LIMIT)
    except OSError:
        link.dead = True
        return None
    try:
        writer.write(request)
        await writer.drain()
        return await _relay(llm, reader, callbacks)
    finally:
        writer.close()  # on cancellation too: the host cancels the request


async def _relay(llm: LLM, reader: asyncio.StreamReader,
                 callbacks: dict[str, Callable[[str], None] | None]) -> Reply | None:
    partial: list[str] = []
    started = False
    while True:
        try:
            line = await reader.readline()
            event = json.loads(line) if line else None
        except (OSError, ValueError):
            event = None
        if event is None:
            if (link := host_link.link()) is not None:
                link.dead = True  # the host ended: later requests take the plain path
            if not started:
                log.info("warm host ended before the reply: asking in the kernel")
                return None
            raise errors.LLMStreamCutError(
                "The model's reply stopped halfway (the warm host ended). What arrived is "
                "kept; ask again to continue.", "".join(partial))
        kind = event.get("kind")
        if kind == "reply":
            return reply_of(event["reply"])
        if kind == "error":
            raise error_of(llm, event)
        started = started or kind in ("text", "reasoning")
        if kind == "text":
            partial.append(event["text"])
        callback = callbacks.get(kind)
        if callback is not None:
            callback(event["text"])


def reply_of(data: dict[str, Any]) -> Reply:
    return Reply(text=data["text"], tool_calls=[ToolCall(**c) for c in data["tool_calls"]],
                 usage=Usage(**data["usage"]), model=data["model"],
                 latency_s=data["latency_s"], finish_reason=data["finish_reason"],
                 reasoning=data["reasoning"])


def error_of(llm: LLM, event: dict[str, Any]) -> Exception:
    """The host's exception as the kernel would have raised it."""
    kind = getattr(errors, event.get("class", ""), None)
    if event.get("said"):
        llm._no_tools[(llm.now.model, llm.now.api_base)] = event["said"]  # as LLM.stream does
    if isinstance(kind, type) and issubclass(kind, errors.LLMError):
        return kind(event["message"], event.get("partial", ""))
    try:
        if isinstance(kind, type) and issubclass(kind, errors.OIError):
            return kind(event["message"])
    except TypeError:  # an error class made with more than a message: said as it was
        pass
    return RuntimeError(event["message"])
