"""A scripted OpenAI-compatible chat server on 127.0.0.1 for tests, demos and benchmarks.

Real HTTP (stdlib only), so the real litellm -> openai SDK -> httpx path runs in tests.
Responses are queued FIFO, one per request; when the queue is empty a fallback answers
(``text("Done.")`` unless set). Every request body is recorded in order.

The same script also answers in two other providers' wire formats (``tests/provider_wire``):
Ollama's ``/api/chat`` (with ``/api/show`` and ``/api/tags`` for ``ollama_models``) for
``ollama_chat/NAME`` with ``api_base=server.root``, and Anthropic's ``/v1/messages`` for
``anthropic/NAME`` with ``api_base=server.root``. A reply may carry ``reasoning``: sent as
``reasoning_content`` deltas, Ollama's ``thinking`` or an Anthropic thinking block.

In-process use::

    with ScriptedLLMServer() as server:
        server.enqueue(text("Hello", chunk_size="random", seed=1), tool_call("print(1)"))
        ...  # point OI_API_BASE at server.url, model "openai/scripted"

From another process, script it over HTTP: ``POST /_script`` with a JSON list of specs
(``[{"kind": "text", "content": "Hi"}]``) or an object ``{"responses": [...], "rules":
[{"match": "regex", "respond": {...}}]}``; ``POST /_reset``; ``GET /_requests``. Run it in
the foreground with ``python -m tests.llm_server --port 8765 [--script FILE.json]``.

With ``server.validate = True`` a request whose messages OpenAI would reject (a tool
call without its result, ...) gets HTTP 400 instead of its scripted answer.

Usage numbers are deterministic: prompt_tokens = len(json.dumps(messages)) // 4 and
completion_tokens = len(output) // 4 (output = text plus all tool-call arguments).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import re
import socket
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests import provider_wire as wire
from tests.provider_wire import DEFAULT_CHUNK  # noqa: F401 (re-exported: S.DEFAULT_CHUNK)

ChunkSize = int | str | None
Fallback = Callable[[dict], "Response"]


@dataclass
class Call:
    """One function call in a scripted reply; ``arguments`` is sent verbatim."""

    arguments: str
    name: str = "execute"
    id: str | None = None
    chunk_size: ChunkSize = None


@dataclass
class Response:
    """What the server answers to one request. Build it with the module functions."""

    content: str = ""
    calls: list[Call] = field(default_factory=list)
    chunk_size: ChunkSize = None
    delay: float = 0.0
    seed: int | None = None
    status: int = 200
    message: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    cut_after: int | None = None
    stall: float = 0.0
    cut_args_after: int | None = None  # drop the connection inside the tool-call arguments
    finish_reason: str | None = None  # sent instead of "stop"/"tool_calls" (e.g. "length")
    reasoning: str = ""  # streamed before the text as the model's reasoning

    @property
    def output(self) -> str:
        return self.content + "".join(c.arguments for c in self.calls)


# ----------------------------------------------------------------------------- builders


def text(
    content: str, chunk_size: ChunkSize = None, delay: float = 0.0, seed: int | None = None,
    reasoning: str = "",
) -> Response:
    """A plain text reply streamed in pieces of ``chunk_size`` chars (int, "random" = 1..12
    seeded by ``seed``, None = 4), ``delay`` seconds apart; ``reasoning`` streams first in
    the provider's reasoning field."""
    return Response(content=content, chunk_size=chunk_size, delay=delay, seed=seed,
                    reasoning=reasoning)


def tool_call(
    code: str,
    language: str = "python",
    name: str = "execute",
    call_id: str | None = None,
    args_chunk_size: ChunkSize = None,
    text: str = "",
) -> Response:
    """Optional leading ``text``, then one ``name(language, code)`` function call whose JSON
    arguments arrive in fragments of ``args_chunk_size`` characters."""
    arguments = json.dumps({"language": language, "code": code})
    return Response(content=text, calls=[Call(arguments, name, call_id, args_chunk_size)])


def tool_calls(calls: list[Call | dict | tuple], text: str = "", chunk_size: ChunkSize = None,
               seed: int | None = None) -> Response:
    """Several calls in one reply. Items are ``Call``s, dicts ``{"code", "language", "name",
    "call_id", "args_chunk_size"}`` or ``(code, language)`` tuples."""
    return Response(content=text, calls=[_as_call(c) for c in calls], chunk_size=chunk_size,
                    seed=seed)


def raw_tool_call(
    arguments_raw: str, name: str = "execute", call_id: str | None = None
) -> Response:
    """A function call whose arguments string is sent verbatim (e.g. invalid JSON)."""
    return Response(calls=[Call(arguments_raw, name, call_id)])


def error(status: int, message: str = "Scripted error", headers: dict | None = None) -> Response:
    """An HTTP error with an OpenAI-style JSON body (e.g. 429 with {"Retry-After": "1"})."""
    return Response(status=status, message=message, headers=dict(headers or {}))


def cut(
    content: str, after_chars: int, chunk_size: ChunkSize = None, delay: float = 0.0
) -> Response:
    """Stream ``content`` but drop the connection after ``after_chars`` characters, with no
    finish_reason, no [DONE] and no final zero-length chunk."""
    return Response(content=content, chunk_size=chunk_size, delay=delay, cut_after=after_chars)


def cut_tool_call(code: str, after_chars: int, language: str = "python") -> Response:
    """An ``execute(language, code)`` call whose JSON arguments stop after ``after_chars``
    characters: the connection drops, with no finish_reason and no [DONE]."""
    arguments = json.dumps({"language": language, "code": code})
    return Response(calls=[Call(arguments)], cut_args_after=after_chars)


def stall(seconds: float, then: Response | None = None) -> Response:
    """Wait ``seconds`` before sending any header, then answer ``then`` (text "Done.")."""
    return dataclasses.replace(then or text("Done."), stall=seconds)


def _as_call(item: Call | dict | tuple) -> Call:
    if isinstance(item, Call):
        return item
    if isinstance(item, tuple):
        item = dict(zip(("code", "language", "name", "call_id"), item, strict=False))
    if "arguments" in item:
        arguments = item["arguments"]
    else:
        arguments = json.dumps({"language": item.get("language", "python"), "code": item["code"]})
    return Call(
        arguments, item.get("name", "execute"), item.get("call_id"), item.get("args_chunk_size")
    )


def from_spec(spec: dict) -> Response:
    """A Response from its JSON form: ``{"kind": "text" | "tool_call" | "tool_calls" |
    "raw_tool_call" | "error" | "cut" | "stall", ...the builder's keyword arguments}``."""
    args = dict(spec)
    kind = args.pop("kind", "text")
    if kind == "stall":
        then = args.pop("then", None)
        return stall(args["seconds"], from_spec(then) if then else None)
    builders: dict[str, Callable[..., Response]] = {
        "text": text,
        "tool_call": tool_call,
        "tool_calls": tool_calls,
        "raw_tool_call": raw_tool_call,
        "error": error,
        "cut": cut,
        "cut_tool_call": cut_tool_call,
    }
    if kind not in builders:
        raise ValueError(f"unknown response kind {kind!r}; expected one of {sorted(builders)}")
    return builders[kind](**args)


def last_user_text(body: dict) -> str:
    """The text of the last user message of a request (content parts joined)."""
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            content = message.get("content") or ""
            if isinstance(content, list):
                return "".join(p.get("text", "") for p in content if isinstance(p, dict))
            return str(content)
    return ""


def rules_fallback(rules: list[dict], default: Response | None = None) -> Fallback:
    """A fallback answering with the first rule whose ``match`` regex is found in the last
    user message: ``[{"match": "plot", "respond": {"kind": "tool_call", "code": ...}}]``."""
    compiled = [(re.compile(r["match"]), from_spec(r["respond"])) for r in rules]
    fallback = default or text("Done.")

    def answer(body: dict) -> Response:
        prompt = last_user_text(body)
        return next((resp for pattern, resp in compiled if pattern.search(prompt)), fallback)

    return answer


# ----------------------------------------------------------------------------- wire format


_pieces = wire.pieces


def usage_for(body: dict, response: Response) -> dict:
    prompt = len(json.dumps(body.get("messages", []))) // 4
    completion = len(response.output) // 4
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


class _Chunks:
    """Builds chat.completion.chunk dicts for one streamed reply."""

    def __init__(self, model: str) -> None:
        self.base = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
            "system_fingerprint": "fp_scripted",
        }

    def delta(self, delta: dict, finish_reason: str | None = None) -> dict:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return {**self.base, "choices": [choice]}

    def usage(self, usage: dict) -> dict:
        return {**self.base, "choices": [], "usage": usage}


def stream_deltas(response: Response) -> Iterator[dict]:
    """The ``delta`` objects of a streamed reply, in order (without the final empty one)."""
    rng = random.Random(response.seed)
    yield {"role": "assistant", "content": ""}
    for piece in _pieces(response.reasoning, response.chunk_size, rng):
        yield {"reasoning_content": piece}
    for piece in _pieces(response.content, response.chunk_size, rng):
        yield {"content": piece}
    for index, call in enumerate(response.calls):
        call_id = call.id or f"call_{uuid.uuid4().hex[:24]}"
        function = {"name": call.name, "arguments": ""}
        yield {
            "tool_calls": [
                {"index": index, "id": call_id, "type": "function", "function": function}
            ]
        }
        size = call.chunk_size if call.chunk_size is not None else response.chunk_size
        for piece in _pieces(call.arguments, size, rng):
            yield {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}


def completion_object(body: dict, response: Response) -> dict:
    """A non-streamed chat.completion for ``response``."""
    message: dict[str, Any] = {"role": "assistant", "content": response.content or None}
    if response.calls:
        message["tool_calls"] = [
            {
                "id": c.id or f"call_{uuid.uuid4().hex[:24]}",
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            }
            for c in response.calls
        ]
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "scripted"),
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "tool_calls" if response.calls else "stop",
            }
        ],
        "usage": usage_for(body, response),
    }


# ----------------------------------------------------------------------------- server


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive and chunked bodies, as real providers do
    # each streamed chunk is its own small write: without TCP_NODELAY (which real providers'
    # servers set) Nagle holds one until the client's delayed ACK, 40 ms, in some replies
    disable_nagle_algorithm = True
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def do_GET(self) -> None:  # noqa: N802
        owner = self.server.owner
        path = self.path.split("?")[0].rstrip("/")
        if path in ("/v1/models", "/models"):
            model = {"id": owner.model, "object": "model", "created": 0, "owned_by": "scripted"}
            if owner.model_meta:
                model["meta"] = owner.model_meta
            model.update(owner.model_fields)
            self._json(200, {"object": "list", "data": [model]})
        elif path == "/api/tags":
            self._json(200, wire.ollama_tags(owner.ollama_models))
        elif path == "/_requests":
            self._json(200, owner.requests)
        else:
            self._json(404, _error_body(404, f"no route GET {self.path}"))

    def do_POST(self) -> None:  # noqa: N802
        owner = self.server.owner
        path = self.path.split("?")[0].rstrip("/")
        try:
            body = json.loads(
                self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}"
            )
        except json.JSONDecodeError as exc:
            self._json(400, _error_body(400, f"invalid JSON body: {exc}"))
            return
        if path in ("/v1/chat/completions", "/chat/completions"):
            problem = conversation_problem(body) if owner.validate else None
            if problem:
                owner._record(body)
                self._json(400, _error_body(400, f"Invalid 'messages': {problem}"))
                return
            self._answer(body, owner._next_response(body))
        elif path == "/api/chat":
            self._answer_ollama(body, owner._next_response(body, path))
        elif path == "/api/show":
            owner._record_side(path, body)
            self._json(*wire.ollama_show(owner.ollama_models, str(body.get("model") or
                                                                  body.get("name") or "")))
        elif path == "/v1/messages":
            self._answer_anthropic(body, owner._next_response(body, path))
        elif path == "/_script":
            try:
                owner.load_script(body)
            except (KeyError, TypeError, ValueError, re.error) as exc:
                self._json(400, _error_body(400, f"bad script: {exc!r}"))
                return
            self._json(200, {"queued": owner.queued})
        elif path == "/_reset":
            owner.reset()
            self._json(200, {"ok": True})
        else:
            self._json(404, _error_body(404, f"no route POST {self.path}"))

    # -- answers

    def _answer(self, body: dict, response: Response) -> None:
        if response.stall and self.server.owner._stopping.wait(response.stall):
            return
        if response.status >= 400:
            self._json(
                response.status, _error_body(response.status, response.message), response.headers
            )
        elif body.get("stream"):
            self._stream(body, response)
        else:
            self._json(200, completion_object(body, response), response.headers)

    def _answer_ollama(self, body: dict, response: Response) -> None:
        if response.stall and self.server.owner._stopping.wait(response.stall):
            return
        if response.status >= 400:
            self._json(response.status, wire.ollama_error(response.message), response.headers)
            return
        lines = list(wire.ollama_lines(body, response))
        if body.get("stream") is False:
            merged = {**lines[-1], "message": {
                "role": "assistant", "content": response.content,
                **({"thinking": response.reasoning} if response.reasoning else {}),
                **({"tool_calls": lines[-2]["message"]["tool_calls"]} if response.calls else {})}}
            self._json(200, merged)
            return
        self._send_paced(body, response, "application/x-ndjson",
                         (json.dumps(line).encode() + b"\n" for line in lines))

    def _answer_anthropic(self, body: dict, response: Response) -> None:
        if response.stall and self.server.owner._stopping.wait(response.stall):
            return
        if response.status >= 400:
            self._json(response.status, wire.anthropic_error(response.status, response.message),
                       response.headers)
            return
        if not body.get("stream"):
            self._json(400, wire.anthropic_error(400, "the scripted server only streams"))
            return
        self._send_paced(body, response, "text/event-stream; charset=utf-8",
                         (wire.sse_event(kind, data)
                          for kind, data in wire.anthropic_events(body, response)))

    def _send_paced(self, body: dict, response: Response, content_type: str,
                    pieces: Iterable[bytes]) -> None:
        """Stream ``pieces`` as chunks, ``response.delay`` apart; a client that hangs up
        is noted."""
        self._start_stream(content_type, response)
        try:
            for piece in pieces:
                self._write_chunk(piece)
                if response.delay and self.server.owner._stopping.wait(response.delay):
                    return
            self._write_chunk(b"")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
            self.server.owner._note_disconnect(body)

    def _start_stream(self, content_type: str, response: Response) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for key, value in response.headers.items():
            self.send_header(key, value)
        self.end_headers()

    def _stream(self, body: dict, response: Response) -> None:
        chunks = _Chunks(body.get("model", "scripted"))
        self._start_stream("text/event-stream", response)
        try:
            sent = args_sent = 0
            for delta in stream_deltas(response):
                if response.cut_after is not None and "content" in delta:
                    delta = {**delta, "content": delta["content"][: response.cut_after - sent]}
                    sent += len(delta["content"])
                if response.cut_args_after is not None and "tool_calls" in delta:
                    delta, args_sent = _cut_arguments(delta, response.cut_args_after, args_sent)
                self._event(chunks.delta(delta))
                if response.cut_after is not None and sent >= response.cut_after:
                    self._drop()
                    return
                if response.cut_args_after is not None and args_sent >= response.cut_args_after:
                    self._drop()
                    return
                opening = "role" in delta  # the role-only first delta is sent without delay
                if (
                    response.delay
                    and not opening
                    and self.server.owner._stopping.wait(response.delay)
                ):
                    return
            if response.cut_after is not None:
                self._drop()
                return
            finish = response.finish_reason or ("tool_calls" if response.calls else "stop")
            self._event(chunks.delta({}, finish))
            if (body.get("stream_options") or {}).get("include_usage"):
                self._event(chunks.usage(usage_for(body, response)))
            self._write_chunk(b"data: [DONE]\n\n")
            self._write_chunk(b"")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
            self.server.owner._note_disconnect(body)

    def _event(self, payload: dict) -> None:
        self._write_chunk(b"data: " + json.dumps(payload).encode() + b"\n\n")

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _drop(self) -> None:
        """Close the socket mid-body, as a crashed proxy would."""
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _json(self, status: int, payload: Any, headers: dict | None = None) -> None:
        data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


def _cut_arguments(delta: dict, limit: int, sent: int) -> tuple[dict, int]:
    """``delta`` with its tool-call arguments cut so no more than ``limit`` were sent."""
    calls = []
    for call in delta["tool_calls"]:
        function = call.get("function") or {}
        pieces = function.get("arguments") or ""
        kept = pieces[: max(0, limit - sent)]
        sent += len(kept)
        calls.append({**call, "function": {**function, "arguments": kept}})
    return {**delta, "tool_calls": calls}, sent


def conversation_problem(body: dict) -> str | None:
    """What OpenAI would reject in a request's messages (HTTP 400), or None.

    Every tool call of an assistant message needs a ``tool`` message with its id before
    the next message of another role; a ``tool`` message must answer such a call; an
    assistant message needs content or tool calls."""
    open_calls: set[str] = set()
    for i, message in enumerate(body.get("messages") or []):
        role = message.get("role")
        if role == "tool":
            if message.get("tool_call_id") not in open_calls:
                return f"messages[{i}]: a tool message must answer a preceding tool call"
            open_calls.discard(message["tool_call_id"])
            continue
        if open_calls:
            return (
                f"messages[{i}]: an assistant message with 'tool_calls' must be followed by "
                f"tool messages responding to each 'tool_call_id' ({sorted(open_calls)})"
            )
        if role == "assistant":
            calls = message.get("tool_calls") or []
            if message.get("content") is None and not calls:
                return f"messages[{i}]: an assistant message needs content or tool_calls"
            open_calls = {c["id"] for c in calls}
    if open_calls:
        return f"the last assistant message's tool calls have no results ({sorted(open_calls)})"
    return None


def _error_body(status: int, message: str) -> dict:
    kinds = {
        400: "invalid_request_error",
        401: "invalid_request_error",
        403: "permission_error",
        404: "not_found_error",
        429: "rate_limit_exceeded",
    }
    code = {401: "invalid_api_key", 429: "rate_limit_exceeded"}.get(status)
    kind = kinds.get(status, "server_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    owner: ScriptedLLMServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that closed its connection (a reply it stopped reading) is not news."""
        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return
        super().handle_error(request, client_address)


class ScriptedLLMServer:
    """An OpenAI-compatible server answering from a script; see the module docstring."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, model: str = "scripted") -> None:
        self.host, self.port, self.model = host, port, model
        self._lock = threading.Condition()
        self._queue: deque[Response] = deque()
        self._requests: list[dict] = []
        self._fallback: Fallback | None = None
        self._disconnected: list[dict] = []
        # When True, requests OpenAI would reject (see conversation_problem) get HTTP 400.
        self.validate = False
        # Ollama's /api/show and /api/tags: name -> {"parameter_size": "1.5B",
        # "parameter_count": int, "context_length": int, "capabilities": [...], "family": ...}
        self.ollama_models: dict[str, dict[str, Any]] = {}
        self.model_meta: dict[str, Any] = {}  # /v1/models "meta" (llama.cpp: n_params, ...)
        self.model_fields: dict[str, Any] = {}  # more /v1/models fields (owned_by, ...)
        self._paths: list[str] = []  # the path of each recorded chat request
        self._side: list[tuple[str, dict]] = []  # /api/show requests
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The API base, e.g. ``http://127.0.0.1:PORT/v1``."""
        return f"http://{self.host}:{self.port}/v1"

    @property
    def root(self) -> str:
        """The server's root (the api_base for ``ollama_chat/`` and ``anthropic/``)."""
        return f"http://{self.host}:{self.port}"

    def start(self) -> ScriptedLLMServer:
        self._stopping.clear()
        self._httpd = _HTTPServer((self.host, self.port), _Handler)
        self._httpd.owner = self
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(  # (polls often: stop() waits for one poll, 0.5 s by default)
            target=self._httpd.serve_forever, args=(0.02,), name="scripted-llm-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> ScriptedLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- scripting

    def enqueue(self, *responses: Response) -> None:
        """Queue responses, consumed first-in first-out, one per chat request."""
        with self._lock:
            self._queue.extend(responses)

    def set_fallback(self, response_or_callable: Response | Fallback | None) -> None:
        """What answers when the queue is empty: a Response, or ``callable(body) -> Response``.
        None restores the default ``text("Done.")``."""
        with self._lock:
            if isinstance(response_or_callable, Response):
                fixed = response_or_callable
                self._fallback = lambda body: fixed
            else:
                self._fallback = response_or_callable

    def load_script(self, script: list | dict) -> None:
        """Apply a JSON script: a list of specs to enqueue, or ``{"responses": [...],
        "rules": [...], "fallback": spec}``."""
        if isinstance(script, list):
            script = {"responses": script}
        responses = [from_spec(s) for s in script.get("responses", [])]
        default = from_spec(script["fallback"]) if script.get("fallback") else None
        if script.get("rules"):
            self.set_fallback(rules_fallback(script["rules"], default))
        elif default is not None:
            self.set_fallback(default)
        self.enqueue(*responses)

    def reset(self) -> None:
        """Forget the queue, the recorded requests and the fallback."""
        with self._lock:
            self._queue.clear()
            self._requests.clear()
            self._paths.clear()
            self._side.clear()
            self._disconnected.clear()
            self._fallback = None
            self.ollama_models = {}
            self.model_meta = {}
            self.model_fields = {}

    @property
    def queued(self) -> int:
        with self._lock:
            return len(self._queue)

    @property
    def requests(self) -> list[dict]:
        """A copy of every chat request body received, oldest first."""
        with self._lock:
            return list(self._requests)

    @property
    def request_paths(self) -> list[str]:
        """The path of each chat request (``/v1/chat/completions``, ``/api/chat``, ...)."""
        with self._lock:
            return list(self._paths)

    @property
    def side_requests(self) -> list[tuple[str, dict]]:
        """``(path, body)`` of each request that is not a chat (``/api/show``)."""
        with self._lock:
            return list(self._side)

    def _record_side(self, path: str, body: dict) -> None:
        with self._lock:
            self._side.append((path, body))

    @property
    def disconnected(self) -> list[dict]:
        """Bodies of the requests whose stream the client abandoned (a write failed)."""
        with self._lock:
            return list(self._disconnected)

    def _note_disconnect(self, body: dict) -> None:
        with self._lock:
            self._disconnected.append(body)
            self._lock.notify_all()

    def wait_for_requests(self, n: int, timeout: float = 10) -> list[dict]:
        """Block until at least ``n`` chat requests arrived; TimeoutError otherwise."""
        with self._lock:
            if not self._lock.wait_for(lambda: len(self._requests) >= n, timeout):
                raise TimeoutError(f"expected {n} requests, got {len(self._requests)}")
            return list(self._requests)

    def _record(self, body: dict, path: str = "/v1/chat/completions") -> None:
        with self._lock:
            self._requests.append(body)
            self._paths.append(path)
            self._lock.notify_all()

    def _next_response(self, body: dict, path: str = "/v1/chat/completions") -> Response:
        with self._lock:
            self._requests.append(body)
            self._paths.append(path)
            self._lock.notify_all()
            if self._queue:
                return self._queue.popleft()
            fallback = self._fallback
        return fallback(body) if fallback else text("Done.")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Run the scripted OpenAI-compatible server.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--model", default="scripted")
    parser.add_argument("--script", help="JSON file: a list of response specs, or an object")
    args = parser.parse_args(argv)
    server = ScriptedLLMServer(args.host, args.port, args.model)
    if args.script:
        with open(args.script, encoding="utf-8") as f:
            server.load_script(json.load(f))
    server.start()
    print(f"Scripted LLM server at {server.url} (model openai/{server.model})", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
