"""Small-model mode for any model: when "auto" turns it on (the name, Ollama's /api/show,
an OpenAI-compatible server's /v1/models) and why, asked once with a short timeout and
never on the kernel's start-up path; what it changes; ``%model`` saying so; and a reply
that is only code proposed as code, with the card and the stdin prompt saying so."""

from __future__ import annotations

import asyncio
import socket
import time
from pathlib import Path

import pytest

from oi_kernel.approval.approvers import RECOGNISED_PROMPT, StdinApprover
from oi_kernel.approval.card import header_html, record_html
from oi_kernel.core import events as E
from oi_kernel.core.types import ApprovalRequest, CodeBlock, Decision, Reply
from oi_kernel.llm import model_info
from oi_kernel.llm.client import LLM
from oi_kernel.session.view import TurnView
from tests import llm_server as S
from tests.kernel_client import KernelSession


@pytest.fixture(autouse=True)
def _fresh_probe_cache():
    model_info.forget()
    yield
    model_info.forget()


# ----------------------------------------------------------------------------- names

NAMES = [
    ("qwen2.5-coder:1.5b", 1.5, True),
    ("ollama_chat/llama3.2:3b", 3.0, True),
    ("phi3:mini", 3.8, True),
    ("openai/Qwen/Qwen2.5-Coder-7B-Instruct", 7.0, True),
    ("Llama-3.2-1B-Instruct-Q4_K_M.gguf", 1.0, True),
    ("SmolLM2-135M-Instruct.Q4_1.gguf", 0.135, True),
    ("gemma3n:e4b", 4.0, True),
    ("gemma3:270m", 0.27, True),
    ("llama3.1:8b-instruct-q4_K_M", 8.0, True),
    ("ollama/llama3.2", 3.2, True),  # Ollama's default tag
    ("qwen2.5:latest", 7.6, True),
    ("openai/smollm2", 1.7, True),  # every SmolLM is small
    ("llama3.1:70b", 70.0, False),
    ("mixtral:8x7b", 56.0, False),
    ("qwen3:30b-a3b", 30.0, False),  # 3B active, 30B in memory
    ("phi3:medium", 14.0, False),
    ("gpt-oss:20b", 20.0, False),
    ("gpt-4o-mini", None, None),  # hosted: "mini" says nothing
    ("o3-mini", None, None),
    ("anthropic/claude-3-5-sonnet-latest", None, None),
    ("my-finetune", None, None),
]


@pytest.mark.parametrize(("model", "billions", "small"), NAMES, ids=[n[0] for n in NAMES])
def test_size_from_the_name(model, billions, small):
    size = model_info.size_from_name(model)
    if billions is None:
        assert size is None
    else:
        assert size is not None and size.billions == pytest.approx(billions)
        assert size.small is small


@pytest.mark.parametrize(("text", "billions"), [("3.2B", 3.2), ("135M", 0.135),
                                                ("494.03M", 0.49403), ("8x7B", 56.0),
                                                ("", None), ("unknown", None)])
def test_ollama_parameter_size(text, billions):
    assert model_info.parameter_size(text) == (pytest.approx(billions) if billions else None)


@pytest.mark.parametrize(("setting", "model", "on"), [
    ("auto", "local/smollm2", True),
    ("auto", "ollama_chat/qwen2.5-coder:1.5b", True),
    ("auto", "ollama_chat/llama3.1:70b", False),
    ("auto", "gpt-4o-mini", False),
    ("on", "gpt-4o-mini", True),
    ("off", "ollama_chat/qwen2.5-coder:1.5b", False),
])
def test_the_setting_and_its_reason(setting, model, on):
    llm = LLM(model=model, small_model=setting)
    verdict, why = llm.small_model_verdict()
    assert verdict is on and why.startswith(setting)
    assert llm.is_small_model is on


def test_the_setting_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("OI_SMALL_MODEL", "on")
    assert LLM(model="gpt-4o").is_small_model
    monkeypatch.setenv("OI_SMALL_MODEL", "sometimes")
    assert LLM(model="gpt-4o").small_model == "auto"  # a bad value: reported, default kept


# ----------------------------------------------------------------------------- the server


def test_an_ollama_model_is_asked_once_and_its_answer_used(llm_server):
    llm_server.ollama_models = {"coder:latest": {
        "parameter_count": 1_543_714_304, "context_length": 32768,
        "capabilities": ["completion", "insert"]}}
    llm = LLM(model="ollama_chat/coder", api_base=llm_server.root)
    assert not llm.is_small_model  # nothing asked yet: the name says nothing
    asyncio.run(llm.prepare())
    asyncio.run(llm.prepare())
    assert llm_server.side_requests == [("/api/show", {"model": "coder"})]
    on, why = llm.small_model_verdict()
    assert on and "1.5B parameters (Ollama's /api/show)" in why
    assert llm.context_window() == 32768
    llm.small_model = "off"
    assert not llm.uses_tools()  # its capabilities lack "tools"


def test_an_openai_compatible_server_with_n_params(llm_server):
    llm_server.model_meta = {"n_params": 3_212_749_888, "n_ctx_train": 131072}
    llm = LLM(model="mystery", api_base=llm_server.url)
    asyncio.run(llm.prepare())
    on, why = llm.small_model_verdict()
    assert on and "3.2B parameters (the server's /v1/models)" in why


def test_a_llama_cpp_python_server_names_its_model_file(llm_server):
    llm_server.model = "/models/Qwen2.5-Coder-1.5B-Instruct-Q4_K_M.gguf"
    try:
        llm = LLM(model="coder", api_base=llm_server.url)
        asyncio.run(llm.prepare())
        on, why = llm.small_model_verdict()
        assert on and "model file 'qwen2.5-coder-1.5b-instruct-q4_k_m.gguf'" in why
    finally:
        llm_server.model = "scripted"


def test_a_server_that_says_nothing_leaves_the_mode_off(llm_server):
    llm = LLM(model="mystery", api_base=llm_server.url)
    asyncio.run(llm.prepare())
    on, why = llm.small_model_verdict()
    assert not on and "not known" in why


def _accept_one(listener: socket.socket) -> bool:
    """Take one pending connection off a non-blocking listener; False when there is none."""
    try:
        conn, _ = listener.accept()
    except BlockingIOError:
        return False
    conn.close()
    return True


def test_a_silent_server_costs_at_most_the_timeout():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(5)  # accepts connections, never answers
    port = listener.getsockname()[1]
    try:
        started = time.monotonic()
        info = model_info.ask_server("ollama_chat", "x:1b", f"http://127.0.0.1:{port}", timeout=0.3)
        assert info is None and time.monotonic() - started < 2
        listener.setblocking(False)
        while _accept_one(listener):  # the connection the first probe made
            pass
        assert model_info.ask_server("ollama_chat", "x:1b", f"http://127.0.0.1:{port}") is None
        assert not _accept_one(listener)  # the failure is remembered: nobody asked again
    finally:
        listener.close()


def test_nothing_is_asked_before_the_first_instruction(llm_server):
    llm = LLM(model="mystery", api_base=llm_server.url)
    llm.check_configured()
    llm.is_small_model, llm.small_model_verdict(), llm.take_notice()
    assert llm_server.side_requests == [] and llm_server.requests == []


def test_named_sizes_need_no_server():
    llm = LLM(model="openai/qwen2.5-coder:1.5b", api_base="http://127.0.0.1:9/v1")
    assert llm.is_small_model and not llm.uses_tools()  # before (and without) any answer


def test_llama_cpp_python_server_gets_no_tools(llm_server):
    """Its listing gives it away; it would take tools and ignore them without a word."""
    llm_server.model_fields = {"owned_by": "me", "permissions": []}
    llm = LLM(model="qwen-big", api_base=llm_server.url, small_model="off")
    assert llm.uses_tools()  # an explicit server is assumed to call tools...
    asyncio.run(llm.prepare())
    assert not llm.uses_tools()  # ...until it says which one it is
    llm_server.enqueue(S.text("```python\nprint(1)\n```"))
    asyncio.run(llm.stream([{"role": "user", "content": "hi"}], None))
    assert "tools" not in llm_server.requests[-1]


def test_a_served_context_window_is_used(llm_server):
    llm_server.model_meta = {"n_ctx": 8192, "n_ctx_train": 131072}
    llm = LLM(model="qwen-big", api_base=llm_server.url)
    asyncio.run(llm.prepare())
    assert llm.context_window() == 8192


# ----------------------------------------------------------------------------- shown to the user


def test_card_and_stdin_prompt_say_the_code_was_recognised():
    request = ApprovalRequest(1, 1, CodeBlock("python", "print(1)", bare=True), allow_stdin=True)
    assert "recognised as code" in header_html(request)
    plain = ApprovalRequest(1, 1, CodeBlock("python", "print(1)"), allow_stdin=True)
    assert "recognised" not in header_html(plain)
    assert "recognised as code" in record_html(request, Decision("run", "print(1)"))
    assert "recognised" not in record_html(plain, Decision("run", "print(1)"))
    prompts: list[str] = []

    async def ask(prompt: str) -> str:
        prompts.append(prompt)
        return "y"

    approver = StdinApprover(ask)
    asyncio.run(approver.decide(request))
    asyncio.run(approver.decide(plain))
    assert RECOGNISED_PROMPT in prompts[0] and RECOGNISED_PROMPT not in prompts[1]


def test_thinking_is_shown_collapsed_and_apart_from_the_answer():
    sent: list[tuple[str, dict]] = []
    view = TurnView(lambda kind, content: sent.append((kind, content)), coalesce_s=0)

    async def feed() -> None:
        view(E.ReasoningDelta("Let me think "))
        view(E.ReasoningDelta("about <it>."))
        view(E.TextDelta("It is 4."))
        await asyncio.sleep(0.01)
        view(E.ReplyDone(1, Reply("It is 4.", reasoning="Let me think about <it>."), []))

    asyncio.run(feed())
    thinking = [c for _, c in sent if "text/html" in c["data"]]
    answer = [c for _, c in sent if "text/markdown" in c["data"]]
    final = thinking[-1]["data"]["text/html"]
    assert final.startswith('<details class="oi-thinking">') and "<details open" not in final
    assert "about &lt;it&gt;." in final and "thinking · 5 words" in final
    assert thinking[-1]["data"]["text/plain"] == "[thinking · 5 words]"
    assert answer[-1]["data"]["text/markdown"] == "It is 4."
    assert all("think" not in c["data"]["text/markdown"] for c in answer)
    assert len({c["transient"]["display_id"] for c in thinking}) == 1


# ----------------------------------------------------------------------------- the kernel


def test_model_command_and_a_recognised_reply_in_the_kernel(llm_server, tmp_path: Path):
    llm_server.model_meta = {"n_params": 1_543_714_304}
    env = {
        "OI_MODEL": "mystery",
        "OI_API_BASE": llm_server.url,
        "OI_LOG_DIR": str(tmp_path / "logs"),
        "OI_AUTO_RUN": "0",
        "OI_APPROVAL_UI": "stdin",
        "OI_SMALL_MODEL_SAMPLES": "0",  # one request per reply (sampling: test_consensus.py)
    }
    with KernelSession(env=env, cwd=str(tmp_path)) as ks:
        shown = ks.execute("%model", timeout=60).text
        assert "Small-model mode: **on**, auto: 1.5B parameters (the server's /v1/models)" in shown
        assert "Code comes as fenced code blocks (small-model mode" in shown
        llm_server.enqueue(S.text("print(6 * 7)"))
        result = ks.execute("What is 6 times 7?", timeout=60, stdin=["y"])
        assert result.status == "ok", result.text
        assert result.stdout == "print(6 * 7)\n42\n"  # the reply, printed (no widgets), then the output
        assert result.prompts and RECOGNISED_PROMPT in result.prompts[0]
        assert "print(6 * 7)" in result.prompts[0]  # the question shows the code it asks about
        assert "Small-model mode is on for `mystery`" in result.text
        assert len(llm_server.requests) == 1  # it printed a result: the turn is done
        shown = ks.execute("%model llama3.1:70b", timeout=60).text
        assert "Small-model mode: **off**, auto: 70B parameters (from the name" in shown
        assert "Code comes as the execute tool" in shown

