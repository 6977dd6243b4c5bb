"""oi_kernel.llm.client over real HTTP: the scripted server, litellm, the openai SDK and aiohttp.

Each test runs its own event loop with asyncio.run (no pytest-asyncio needed).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Annotated, Any

import pytest
from openai._utils._transform import PropertyInfo
from typing_extensions import Required, TypedDict

from oi_kernel.core.codeblocks import parse_tool_arguments
from oi_kernel.core.types import Reply
from oi_kernel.errors import (
    LLMAuthError,
    LLMConnectionError,
    LLMError,
    LLMRateLimitError,
    LLMStreamCutError,
    LLMTimeoutError,
    NotConfiguredError,
)
from oi_kernel.llm import boundary
from oi_kernel.llm.client import LLM
from tests import llm_server as fake
from tests.llm_server import ScriptedLLMServer

# litellm 1.83 touches pydantic attributes deprecated in 2.11 on every chunk.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:litellm.*")

ROOT = Path(__file__).resolve().parent.parent
KEY = "sk-test-not-a-real-key"
MESSAGES = [
    {"role": "system", "content": "You run code."},
    {"role": "user", "content": "print hello"},
]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "execute",
            "description": "Run code",
            "parameters": {
                "type": "object",
                "properties": {"language": {"type": "string"}, "code": {"type": "string"}},
                "required": ["language", "code"],
            },
        },
    }
]


def make_llm(server: ScriptedLLMServer, **traits: object) -> LLM:
    return LLM(model="openai/scripted", api_base=server.url, api_key=KEY, **traits)


def run(llm: LLM, tools: list[dict] | None = None, **callbacks: object) -> Reply:
    return asyncio.run(llm.stream(MESSAGES, tools, **callbacks))  # type: ignore[arg-type]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ----------------------------------------------------------------------------- success


def test_text_with_random_chunks_arrives_in_order(llm_server: ScriptedLLMServer) -> None:
    content = "The quick brown fox jumps over the lazy dog. " * 5
    llm_server.enqueue(fake.text(content, chunk_size="random", seed=7))
    pieces: list[str] = []
    reply = run(make_llm(llm_server), on_text=pieces.append)
    assert reply.text == content
    assert "".join(pieces) == content
    assert len(pieces) > 10
    assert reply.tool_calls == ()
    assert reply.finish_reason == "stop"
    assert reply.model == "openai/scripted"
    assert reply.latency_s > 0


def test_tool_call_split_across_many_deltas(llm_server: ScriptedLLMServer) -> None:
    code = 'import math\nprint("pi", math.pi)\nfor i in range(3):\n    print(i)'
    llm_server.enqueue(
        fake.tool_call(code, call_id="call_abc", args_chunk_size=1, text="Let me compute.")
    )
    pieces: list[str] = []
    reply = run(make_llm(llm_server), TOOLS, on_text=pieces.append)
    assert reply.text == "Let me compute."
    assert "".join(pieces) == "Let me compute."
    [call] = reply.tool_calls
    assert (call.id, call.name) == ("call_abc", "execute")
    assert call.arguments == json.dumps({"language": "python", "code": code})
    assert json.loads(call.arguments)["code"] == code
    assert reply.finish_reason == "tool_calls"


def test_two_tool_calls_in_one_reply(llm_server: ScriptedLLMServer) -> None:
    llm_server.enqueue(
        fake.tool_calls(
            [
                {"code": "x = 1", "call_id": "call_1", "args_chunk_size": 3},
                {"code": "ls -la", "language": "shell", "call_id": "call_2", "args_chunk_size": 5},
            ]
        )
    )
    reply = run(make_llm(llm_server), TOOLS)
    assert [c.id for c in reply.tool_calls] == ["call_1", "call_2"]
    args = [json.loads(c.arguments) for c in reply.tool_calls]
    assert args == [
        {"language": "python", "code": "x = 1"},
        {"language": "shell", "code": "ls -la"},
    ]


def test_usage_reaches_reply(llm_server: ScriptedLLMServer) -> None:
    content = "a" * 400
    llm_server.enqueue(fake.text(content, chunk_size=50))
    reply = run(make_llm(llm_server))
    assert reply.usage.prompt_tokens == len(json.dumps(MESSAGES)) // 4
    assert reply.usage.completion_tokens == 100
    assert reply.usage.cost is None  # "openai/scripted" has no price in litellm's map


def test_cost_for_a_model_litellm_knows(llm_server: ScriptedLLMServer) -> None:
    # (litellm aborts a stream after 100 identical consecutive chunks: vary them)
    llm_server.enqueue(fake.text("0123456789" * 400, chunk_size=7))
    llm = LLM(model="openai/gpt-4o-mini", api_base=llm_server.url, api_key=KEY)
    reply = run(llm)
    assert llm_server.requests[0]["model"] == "gpt-4o-mini"
    assert reply.usage.completion_tokens == 1000
    assert reply.usage.cost is not None and 0 < reply.usage.cost < 0.01


def test_request_body_carries_messages_tools_and_options(llm_server: ScriptedLLMServer) -> None:
    run(make_llm(llm_server, temperature=0.25), TOOLS)
    [body] = llm_server.requests
    assert body["model"] == "scripted"
    assert body["messages"] == MESSAGES
    assert body["tools"] == TOOLS
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["temperature"] == 0.25


def test_no_tools_key_without_tools(llm_server: ScriptedLLMServer) -> None:
    run(make_llm(llm_server))
    assert "tools" not in llm_server.requests[0]


# ----------------------------------------------------------------------------- retries


def test_429_with_retry_after_retries_once(llm_server: ScriptedLLMServer) -> None:
    llm_server.enqueue(fake.error(429, "Slow down", {"Retry-After": "1"}), fake.text("ok"))
    notices: list[str] = []
    started = time.monotonic()
    reply = run(make_llm(llm_server), on_retry=notices.append)
    elapsed = time.monotonic() - started
    assert reply.text == "ok"
    assert notices == ["Rate limited (HTTP 429); retrying in 1.0 s (attempt 2 of 4)"]
    assert len(llm_server.requests) == 2
    assert 0.9 <= elapsed < 10  # waited the Retry-After, once


def test_429_every_time_raises_rate_limit_error(llm_server: ScriptedLLMServer) -> None:
    llm_server.set_fallback(fake.error(429, "Quota", {"Retry-After": "0"}))
    with pytest.raises(LLMRateLimitError, match="429"):
        run(make_llm(llm_server, max_retries=2))
    assert len(llm_server.requests) == 3


def test_500_until_retries_run_out(llm_server: ScriptedLLMServer) -> None:
    llm_server.enqueue(*[fake.error(500, "Boom")] * 3, fake.text("never reached"))
    notices: list[str] = []
    with pytest.raises(LLMError, match=r"HTTP 500\) after 3 attempts") as info:
        run(make_llm(llm_server, max_retries=2), on_retry=notices.append)
    assert "Boom" in str(info.value)
    assert len(llm_server.requests) == 3
    assert notices == [
        "Server error (HTTP 500); retrying in 0.5 s (attempt 2 of 3)",
        "Server error (HTTP 500); retrying in 1.0 s (attempt 3 of 3)",
    ]


# ----------------------------------------------------------------------------- failures


def test_401_is_auth_error_naming_the_key_variable(llm_server: ScriptedLLMServer) -> None:
    llm_server.enqueue(fake.error(401, "Incorrect API key provided"))
    with pytest.raises(LLMAuthError) as info:
        run(make_llm(llm_server))
    message = str(info.value)
    assert "OI_API_KEY" in message and "OPENAI_API_KEY" in message
    assert "Incorrect API key provided" in message
    assert KEY not in message
    assert len(llm_server.requests) == 1


def test_404_and_other_client_errors_are_not_retried(llm_server: ScriptedLLMServer) -> None:
    llm_server.enqueue(fake.error(404, "The model `scripted` does not exist"))
    with pytest.raises(LLMError, match=r"(?s)unknown here.*does not exist.*%model NAME"):
        run(make_llm(llm_server))
    llm_server.enqueue(fake.error(400, "This model's maximum context length is 8192 tokens"))
    with pytest.raises(LLMError, match=r"failed \(HTTP 400\): This model's maximum context"):
        run(make_llm(llm_server))
    assert len(llm_server.requests) == 2


def test_missing_key_is_auth_error_before_any_request(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OI_API_KEY", "OPENAI_API_KEY", "OI_API_BASE"):
        monkeypatch.delenv(name, raising=False)
    unreachable = f"http://127.0.0.1:{closed_port()}/v1"  # in case a request were made after all
    monkeypatch.setenv("OPENAI_BASE_URL", unreachable)
    monkeypatch.setenv("OPENAI_API_BASE", unreachable)
    notices: list[str] = []
    with pytest.raises(LLMAuthError, match="OPENAI_API_KEY") as info:
        run(LLM(model="gpt-4o-mini"), on_retry=notices.append)
    assert "OI_API_KEY" in str(info.value)
    assert notices == []


def test_local_server_needs_no_key(
    llm_server: ScriptedLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OI_API_KEY", raising=False)
    reply = run(LLM(model="llama3.1", api_base=llm_server.url))
    assert reply.text == "Done."
    assert llm_server.requests[0]["model"] == "llama3.1"


def test_connection_refused(llm_server: ScriptedLLMServer) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    llm = LLM(model="openai/scripted", api_base=url, api_key=KEY, max_retries=1)
    notices: list[str] = []
    with pytest.raises(LLMConnectionError) as info:
        run(llm, on_retry=notices.append)
    assert url in str(info.value) and "OI_API_BASE" in str(info.value)
    assert len(notices) == 1 and "retrying in 0.5 s (attempt 2 of 2)" in notices[0]


def test_stall_beyond_request_timeout(llm_server: ScriptedLLMServer) -> None:
    llm_server.enqueue(fake.stall(20))
    boundary.load()  # its import (seconds) is not part of the timeout
    started = time.monotonic()
    with pytest.raises(LLMTimeoutError, match="request_timeout"):
        run(make_llm(llm_server, request_timeout=1.0))
    assert time.monotonic() - started < 12  # the server would answer after 20 s
    assert len(llm_server.requests) == 1  # timeouts are not retried


def test_stall_midway_keeps_partial_text(llm_server: ScriptedLLMServer) -> None:
    llm_server.enqueue(fake.text("First words, then nothing.", chunk_size=12, delay=20))
    boundary.load()
    started = time.monotonic()
    with pytest.raises(LLMTimeoutError, match="stalled") as info:
        run(make_llm(llm_server, request_timeout=1.0))
    assert time.monotonic() - started < 12  # the next chunk would come after 20 s
    assert info.value.partial_text == "First words,"


def test_cut_inside_tool_call_arguments_is_a_cut_reply(llm_server: ScriptedLLMServer) -> None:
    llm_server.enqueue(fake.cut_tool_call("print('the whole program')", after_chars=30))
    with pytest.raises(LLMStreamCutError):
        run(make_llm(llm_server), tools=TOOLS)
    assert len(llm_server.requests) == 1


def test_lone_surrogates_in_the_stream_become_replacement_characters(
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.enqueue(fake.tool_call("x = '\udc00'", text="half \ud83d pair"))
    pieces: list[str] = []
    reply = run(make_llm(llm_server), tools=TOOLS, on_text=pieces.append)
    assert reply.text == "half \ufffd pair" == "".join(pieces)
    assert parse_tool_arguments(reply.tool_calls[0].arguments)["code"] == "x = '\ufffd'"


class _Card(TypedDict, total=False):
    card_id: Required[Annotated[str, PropertyInfo(alias="cardID")]]


class _Wallet(TypedDict, total=False):
    cards: list[_Card]


def test_request_body_skips_the_sdks_no_op_transform() -> None:
    """The openai SDK's per-message walk of the request body is skipped for chat
    completions (nothing in them is renamed), and still runs for types that rename keys."""
    from openai.resources.chat.completions import completions
    from openai.types.chat import completion_create_params as params

    from oi_kernel.llm import fastpath

    boundary.own_process()  # the kernel's process: the fast path is installed
    boundary.load()
    transform = completions.async_maybe_transform
    assert getattr(transform, "_oi_skips_noop", False)
    assert not fastpath._type_transforms(params.CompletionCreateParamsStreaming)
    assert fastpath._type_transforms(_Wallet)
    body = {"messages": MESSAGES, "model": "m", "stream": True}
    sent = asyncio.run(transform(body, params.CompletionCreateParamsStreaming))
    assert sent == body and sent["messages"] is MESSAGES
    renamed = asyncio.run(transform({"cards": [{"card_id": "1"}]}, _Wallet))
    assert renamed == {"cards": [{"cardID": "1"}]}


def _plain_json_reference(data: object) -> bool:
    if isinstance(data, dict):
        return all(isinstance(k, str) and _plain_json_reference(v) for k, v in data.items())
    if isinstance(data, list):
        return all(_plain_json_reference(v) for v in data)
    return data is None or isinstance(data, (str, int, float))


class _Str(str):
    pass


@pytest.mark.unit
@pytest.mark.parametrize("data", [
    {"messages": MESSAGES, "model": "m", "stream": True, "n": 1, "t": 0.5, "x": None},
    {"a": [{"b": [1, 2.5, True, None, "s", _Str("sub")]}]},
    {1: "int key"}, {"a": {(1, 2): "tuple key"}}, {_Str("k"): "str subclass key"},
    {"a": (1, 2)}, {"a": [b"bytes"]}, {"a": {"b": object()}}, [["deep", [{"x": {1}}]]],
    "text", 3, None, [],
])
def test_plain_json_check_agrees_with_its_definition(data: object) -> None:
    """The fast path sends a body as is only when it is plain JSON data (checked on every
    request, so written for speed): the same verdict as the obvious recursive definition."""
    from oi_kernel.llm import fastpath

    assert fastpath._is_plain_json(data) == _plain_json_reference(data)


FASTPATHS = """
import asyncio, gc, json, sys, traceback
from oi_kernel.llm import boundary
from oi_kernel.llm.client import LLM
url, root, who = sys.argv[1:4]
if who == "own":
    boundary.own_process()
litellm = boundary.load()
out = {}
def check(name, run):  # a check that fails says why under its own name; the others go on
    try:
        out[name] = run()
    except Exception:
        out[name] = {"error": traceback.format_exc()}

def session():
    from litellm.litellm_core_utils import logging_utils
    return [logging_utils.MAX_BASE64_LENGTH_FOR_LOGGING, gc.get_freeze_count() > 10_000]
check("session", session)

def wrappers():
    finalised = []
    async def main():
        loop = asyncio.get_running_loop()
        hook = loop._asyncgen_finalizer_hook
        def finalizer(agen):
            finalised.append(agen.__qualname__)
            return hook(agen)
        loop._asyncgen_finalizer_hook = finalizer
        sys.set_asyncgen_hooks(finalizer=finalizer)
        llm = LLM(model="openai/scripted", api_base=url, api_key="sk-test-0000")
        reply = await llm.stream([{"role": "user", "content": "wrappers"}], None)
        await asyncio.sleep(0.2)
        return reply.text
    return [asyncio.run(main()), finalised.count("AsyncStream.__aiter__")]
check("wrappers", wrappers)

def cost():
    from litellm.litellm_core_utils.litellm_logging import Logging
    from oi_kernel.llm import fastpath
    patched = [name for name in fastpath.COST_CALCULATORS
               if getattr(getattr(Logging, name, None), "_oi_skips_stream", False)]
    async def main():
        messages = [{"role": "user", "content": "cost"}]
        stream = await litellm.acompletion(model="openai/gpt-4o-mini", api_base=url,
                                           messages=messages, api_key="sk-test-0000",
                                           stream=True)
        async for _ in stream:
            pass
        whole = await litellm.acompletion(model="openai/gpt-4o-mini", api_base=url,
                                          messages=messages, api_key="sk-test-0000")
        return stream._hidden_params["response_cost"], whole._hidden_params["response_cost"]
    return [patched, *asyncio.run(main())]
check("cost", cost)

seen = []
builds = []
build = litellm.stream_chunk_builder
def counted(*args, **kwargs):
    builds.append(1)
    return build(*args, **kwargs)
litellm.stream_chunk_builder = counted
tools = [{"type": "function", "function": {"name": "execute", "parameters": {"type": "object",
          "properties": {"language": {"type": "string"}, "code": {"type": "string"}}}}}]
def final_pass(model, callback):
    async def main():
        llm = LLM(model=model, api_base=url if model.startswith("openai/") else root,
                  api_key="sk-test-0000", small_model="off")
        replies = [await llm.stream([{"role": "user", "content": said}], tools)
                   for said in ("print hello", "say hello")]
        for _ in range(100):  # litellm logs in a task and a thread after the stream
            if len(seen) >= 2 or not callback:
                break
            await asyncio.sleep(0.05)
        return replies
    builds.clear()
    seen.clear()
    replies = asyncio.run(main())
    return [len(builds), len(seen), [[r.text, [[c.name, c.arguments] for c in r.tool_calls],
                                      r.usage.prompt_tokens, r.usage.completion_tokens]
                                     for r in replies]]
for callback in ([False, True] if who == "own" else [False]):  # a callback stays registered
    if callback:
        from litellm.integrations.custom_logger import CustomLogger
        class Logger(CustomLogger):
            async def async_log_success_event(self, kwargs, response_obj, start_time, end_time):
                seen.append(1)
        litellm.callbacks = [Logger()]
    for model in sys.argv[4:]:
        check(f"final_pass {model} {callback}", lambda: final_pass(model, callback))
print(json.dumps(out))
"""
FINAL_PASS_MODELS = ["openai/scripted", "ollama_chat/llama3.1:70b",
                     "anthropic/claude-3-5-sonnet-latest"]
FASTPATH_REPLIES = {  # the last user message -> the scripted reply
    "wrappers": fake.text("0123456789" * 4, chunk_size=4),
    "cost": fake.text("hello there", chunk_size=3),
    "print hello": fake.tool_call("print('hi')", args_chunk_size=5),
    "say hello": fake.text("hello there", chunk_size=3),
}


@pytest.fixture(scope="module")
def fastpaths() -> dict[str, dict]:
    """The shortcuts litellm takes in the kernel's process ("own": ``own_process()``) and
    does not take in a user's ("user"), each checked by FASTPATHS in one process per side
    (importing litellm takes seconds: one import per side, not one per check). Replies
    follow the request's text, so a check that stops early shifts no other's."""
    results = {}
    with fake.ScriptedLLMServer() as server:
        server.set_fallback(lambda body: FASTPATH_REPLIES[fake.last_user_text(body)])
        for who in ("own", "user"):
            out = subprocess.run([sys.executable, "-c", FASTPATHS, server.url, server.root,
                                  who, *FINAL_PASS_MODELS],
                                 capture_output=True, text=True, timeout=240)
            assert out.returncode == 0, out.stderr[-3000:]
            results[who] = json.loads(out.stdout.splitlines()[-1])
    return results


def checked(fastpaths: dict[str, dict], who: str, name: str) -> Any:
    """One check's result in one process; the check's traceback when it raised."""
    value = fastpaths[who][name]
    assert not (isinstance(value, dict) and "error" in value), value["error"]
    return value


@pytest.mark.kernel
@pytest.mark.timeout(600)  # two processes, each importing litellm: ~100 s at load 13
def test_our_process_skips_litellm_work_that_grows_with_the_session(fastpaths) -> None:
    """In the kernel's process litellm's logging payload is not scanned for base64 images
    (nobody reads it; the scan walked the whole conversation twice per reply) and the
    import's objects are frozen out of full garbage collections; a user's process keeps
    litellm's setting and its garbage collector as they were."""
    assert checked(fastpaths, "own", "session") == [0, True]
    assert checked(fastpaths, "user", "session") == [64, False]


@pytest.mark.kernel
@pytest.mark.timeout(600)
def test_our_process_reads_sdk_streams_without_a_wrapper_per_chunk(fastpaths) -> None:
    """litellm starts a new ``async for`` over the openai SDK's stream for every chunk; in
    the kernel's process that reads the stream's iterator directly instead of leaving one
    half-run wrapper generator per chunk for the event loop to finalise. The text is the
    same. Fails when the SDK's stream changes so that the shortcut no longer applies."""
    own, user = checked(fastpaths, "own", "wrappers"), checked(fastpaths, "user", "wrappers")
    assert user[0] == own[0] == "0123456789" * 4
    assert user[1] >= 10 and own[1] == 0


@pytest.mark.kernel
@pytest.mark.timeout(600)
def test_our_process_leaves_a_stream_it_has_not_read_unpriced(fastpaths) -> None:
    """In the kernel's process litellm does not price the stream object it returns before
    any of it arrived (a whole cost calculation of nothing, nobody reads it); a whole reply
    is still priced, and a user's process keeps litellm's pricing of both. Fails when a
    litellm upgrade renames the calculator (nothing patched: the list is empty)."""
    patched, stream_cost, whole_cost = checked(fastpaths, "own", "cost")
    assert patched and stream_cost is None and whole_cost > 0
    patched, stream_cost, whole_cost = checked(fastpaths, "user", "cost")
    assert patched == [] and stream_cost == 0.0 and whole_cost > 0


@pytest.mark.kernel
@pytest.mark.timeout(600)
@pytest.mark.parametrize("model", FINAL_PASS_MODELS)
def test_our_process_skips_litellms_logging_pass_after_the_last_chunk(fastpaths,
                                                                      model: str) -> None:
    """In the kernel's process (no litellm callback registered) the stream ends with the
    chunk carrying the usage: litellm's extra pass for its success logging (the reply
    rebuilt from its chunks a second time, then handed to its logging handlers) does not
    run. Text, tool calls and usage are the same as litellm's own way. A user's process, or
    one with a success callback, keeps litellm's behaviour: the callback still fires.
    Counted through ``litellm.stream_chunk_builder``, which both passes call (1.83 to
    1.110): if a litellm upgrade moves the flag the shortcut reads, the count doubles and
    this fails."""
    builds, seen, replies = checked(fastpaths, "user", f"final_pass {model} False")
    assert builds >= 2 and seen == 0
    assert replies[0][1] == [["execute", json.dumps({"language": "python", "code": "print('hi')"})]]
    assert replies[1][0] == "hello there" and all(r[2] > 0 and r[3] > 0 for r in replies)
    assert checked(fastpaths, "own", f"final_pass {model} False") == [builds // 2, 0, replies]
    assert checked(fastpaths, "own", f"final_pass {model} True") == [builds, 2, replies]


def test_cut_stream_keeps_partial_text(llm_server: ScriptedLLMServer) -> None:
    llm_server.enqueue(fake.cut("Hello world, this reply is cut short", after_chars=8))
    pieces: list[str] = []
    with pytest.raises(LLMStreamCutError) as info:
        run(make_llm(llm_server), on_text=pieces.append)
    assert info.value.partial_text == "Hello wo"
    assert "".join(pieces) == "Hello wo"
    assert len(llm_server.requests) == 1  # text had arrived: never retried


def test_cancellation_mid_stream_returns_promptly(llm_server: ScriptedLLMServer) -> None:
    llm_server.enqueue(fake.text("x" * 100, chunk_size=1, delay=0.2))
    messages = [{"role": "user", "content": "cancel me"}]

    async def scenario() -> float:
        first = asyncio.Event()
        task = asyncio.create_task(
            make_llm(llm_server).stream(messages, None, lambda _: first.set())
        )
        await asyncio.wait_for(first.wait(), 10)
        cancelled_at = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.monotonic() - cancelled_at

    assert asyncio.run(scenario()) < 1.0
    # The HTTP stream was closed: the server's next writes fail.
    deadline = time.monotonic() + 3
    while messages[0] not in [b["messages"][0] for b in llm_server.disconnected]:
        assert time.monotonic() < deadline, "the server never saw the client go away"
        time.sleep(0.05)


def test_timeout_between_chunks_keeps_partial_text(llm_server: ScriptedLLMServer) -> None:
    llm_server.enqueue(fake.text("ab" * 10, chunk_size=2, delay=3))
    with pytest.raises(LLMTimeoutError) as info:
        run(make_llm(llm_server, request_timeout=1.0))
    assert info.value.partial_text == "ab"
    assert len(llm_server.requests) == 1


def test_on_text_exception_propagates_unchanged(llm_server: ScriptedLLMServer) -> None:
    def boom(_: str) -> None:
        raise ZeroDivisionError("from the callback")

    with pytest.raises(ZeroDivisionError, match="from the callback"):
        run(make_llm(llm_server), on_text=boom)
    assert len(llm_server.requests) == 1


# ----------------------------------------------------------------------------- configuration


def test_check_configured_without_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OI_MODEL", raising=False)
    monkeypatch.setenv("OI_DISABLE_LOCAL_MODEL", "1")  # else the embedded model is the default
    with pytest.raises(NotConfiguredError):
        LLM().check_configured()
    monkeypatch.setenv("OI_MODEL", "gpt-4o-mini")
    LLM().check_configured()
    assert LLM().model == "gpt-4o-mini"


def test_check_configured_does_not_import_litellm() -> None:
    code = (
        "import sys\n"
        "from oi_kernel.errors import NotConfiguredError\n"
        "from oi_kernel.llm.client import LLM\n"
        "try:\n"
        "    LLM().check_configured()\n"
        "except NotConfiguredError:\n"
        "    pass\n"
        "else:\n"
        "    raise SystemExit('no error')\n"
        "LLM(model='gpt-4o-mini').check_configured()\n"
        "LLM().secrets()\n"
        "assert 'litellm' not in sys.modules, 'litellm was imported'\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OI_MODEL"}
    env["OI_DISABLE_LOCAL_MODEL"] = "1"  # else the embedded model is the default
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    ("model", "api_base", "expected"),
    [
        ("gpt-4o-mini", "", "gpt-4o-mini"),
        ("llama3.1", "http://127.0.0.1:8000/v1", "openai/llama3.1"),
        ("meta-llama/Llama-3-8B", "http://127.0.0.1:8000/v1", "openai/meta-llama/Llama-3-8B"),
        ("ollama/llama3.1", "http://127.0.0.1:11434", "ollama/llama3.1"),
        ("openai/scripted", "http://127.0.0.1:8000/v1", "openai/scripted"),
    ],
)
def test_resolved_model(model: str, api_base: str, expected: str) -> None:
    assert LLM(model=model, api_base=api_base).resolved_model() == expected


def test_uses_tools() -> None:
    local = "http://127.0.0.1:8000/v1"
    assert LLM(model="my-model", api_base=local).uses_tools()
    assert not LLM(model="llama3.1", api_base=local).uses_tools()  # 8B: small-model mode
    assert LLM(model="llama3.1", api_base=local, small_model="off").uses_tools()
    assert LLM(model="llama3.1", api_base=local, tool_mode="tools").uses_tools()
    assert LLM(model="gpt-4o-mini").uses_tools()
    assert not LLM(model="no-such-provider-model").uses_tools()
    assert not LLM(model="gpt-4o-mini", tool_mode="markdown").uses_tools()
    assert LLM(model="no-such-provider-model", tool_mode="tools").uses_tools()


def test_env_defaults_and_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OI_API_BASE", "http://127.0.0.1:1/v1")
    monkeypatch.setenv("OI_API_KEY", "sk-oi-secret")
    monkeypatch.setenv("OI_TOOL_MODE", "markdown")
    monkeypatch.setenv("SOMEPROVIDER_API_KEY", "sk-provider-secret")
    llm = LLM()
    assert (llm.api_base, llm.api_key, llm.tool_mode) == (
        "http://127.0.0.1:1/v1",
        "sk-oi-secret",
        "markdown",
    )
    assert {"sk-oi-secret", "sk-provider-secret"} <= set(llm.secrets())


# ----------------------------------------------------------------------------- the server


def _post(url: str, payload: object) -> dict:
    request = urllib.request.Request(
        url, json.dumps(payload).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)


def _chat(base: str, prompt: str) -> dict:
    body = {"model": "scripted", "messages": [{"role": "user", "content": prompt}]}
    return _post(f"{base}/chat/completions", body)


def test_server_http_control_endpoints(llm_server: ScriptedLLMServer) -> None:
    root = llm_server.url.removesuffix("/v1")
    script = {
        "responses": [{"kind": "tool_call", "code": "print(2)"}],
        "rules": [{"match": "(?i)weather", "respond": {"kind": "text", "content": "Sunny."}}],
        "fallback": {"kind": "text", "content": "No rule matched."},
    }
    assert _post(f"{root}/_script", script) == {"queued": 1}
    first = _chat(llm_server.url, "anything")["choices"][0]
    assert first["finish_reason"] == "tool_calls"
    assert (
        json.loads(first["message"]["tool_calls"][0]["function"]["arguments"])["code"] == "print(2)"
    )
    assert (
        _chat(llm_server.url, "What's the WEATHER?")["choices"][0]["message"]["content"] == "Sunny."
    )
    assert _chat(llm_server.url, "hello")["choices"][0]["message"]["content"] == "No rule matched."
    with urllib.request.urlopen(f"{root}/_requests", timeout=10) as response:
        assert [b["messages"][0]["content"] for b in json.load(response)] == [
            "anything",
            "What's the WEATHER?",
            "hello",
        ]
    with urllib.request.urlopen(f"{llm_server.url}/models", timeout=10) as response:
        assert json.load(response)["data"][0]["id"] == "scripted"
    _post(f"{root}/_reset", {})
    assert llm_server.requests == []
    assert _chat(llm_server.url, "weather")["choices"][0]["message"]["content"] == "Done."


def test_server_rejects_unknown_kind(llm_server: ScriptedLLMServer) -> None:
    root = llm_server.url.removesuffix("/v1")
    with pytest.raises(urllib.error.HTTPError) as info:
        _post(f"{root}/_script", [{"kind": "nonsense"}])
    assert info.value.code == 400


def test_server_wait_for_requests(llm_server: ScriptedLLMServer) -> None:
    with pytest.raises(TimeoutError):
        llm_server.wait_for_requests(1, timeout=0.1)
    _chat(llm_server.url, "one")
    assert len(llm_server.wait_for_requests(1, timeout=1)) == 1


def test_server_cli_with_script_file(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"kind": "text", "content": "From the file."}]))
    port = closed_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.llm_server", "--port", str(port), "--script", str(script)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert f"http://127.0.0.1:{port}/v1" in line
        base = f"http://127.0.0.1:{port}/v1"
        assert _chat(base, "hi")["choices"][0]["message"]["content"] == "From the file."
        assert _chat(base, "hi")["choices"][0]["message"]["content"] == "Done."
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()
