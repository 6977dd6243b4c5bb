"""Model dialects through the whole loop: replies from the scripted server (in random
chunkings, over real HTTP, through litellm's OpenAI, Ollama and Anthropic provider code)
into the engine, whose executor here only records what it was asked to run.

Covered: reasoning (a ``reasoning_content`` field and inline ``<think>``) shown as
thinking and never run or sent back; tool calls printed as text in each family's format;
several tool calls in one reply (a step each, in order, each result with its call's id,
"Run all" covering the rest); a reply that explains and calls; an empty reply after a tool
result; arguments as a JSON string inside a JSON string; a reply that is only code in
small-model mode; a server that rejects ``tools`` (answered again at once with fenced
code, no error shown)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from oi_kernel.core import events as E
from oi_kernel.core.engine import Engine
from oi_kernel.core.executor import ExecResult
from oi_kernel.core.turn_context import NO_CONTEXT, TurnContext
from oi_kernel.core.types import CodeBlock, Decision
from oi_kernel.llm.client import LLM
from tests import llm_server as S
from tests.test_dialects import ARGS, DIALECT_CASES

SEEDS = (0, 1, 2)


class Recorder:
    """An executor that runs nothing: each block "prints" ``ran <n>``."""

    sandboxed = False
    cwd = "/tmp"
    probe = None  # (no change tracking)

    def __init__(self) -> None:
        self.blocks: list[CodeBlock] = []

    async def namespace_summary(self) -> str:
        return ""

    async def run(self, block: CodeBlock, context: TurnContext = NO_CONTEXT) -> ExecResult:
        self.blocks.append(block)
        text = f"ran {len(self.blocks)}\n"
        return ExecResult("ok", [{"output_type": "stream", "name": "stdout", "text": text}])


class Approver:
    """Approves everything; with ``run_all`` the first answer approves the rest too."""

    def __init__(self, run_all: bool = False) -> None:
        self.run_all = run_all
        self.asked: list[Any] = []

    async def decide(self, request: Any) -> Decision:
        self.asked.append(request)
        return Decision("run", request.block.code, run_all=self.run_all)


def engine_for(server: S.ScriptedLLMServer, model: str = "openai/scripted", *,
               approver: Any = None, **llm: Any) -> tuple[Engine, Recorder, list[Any]]:
    base = server.url if model.startswith("openai/") else server.root
    options = {"small_model": "off", **llm}
    client = LLM(model=model, api_base=base, api_key="sk-scripted", **options)
    executor = Recorder()
    engine = Engine(executor, approver or Approver(), llm=client,
                    approval="always" if approver else "never", languages=["python", "shell"])
    events: list[Any] = []
    return engine, executor, events


def run(engine: Engine, events: list[Any], instruction: str = "compute 2 ** 10") -> Any:
    return asyncio.run(engine.run_turn(instruction, events.append))


def notices(events: list[Any], *levels: str) -> list[str]:
    return [e.text for e in events if isinstance(e, E.Notice) and e.level in levels]


# ----------------------------------------------------------------------------- reasoning


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("where", ["field", "inline", "lone close"])
def test_reasoning_is_shown_never_run_never_sent_back(llm_server, seed, where):
    thought = "The user wants 2^10.\n```python\nprint(2 * 10)\n```\nNo: a power."
    answer = "```python\nprint(2 ** 10)\n```"
    reply = {
        "field": S.text(answer, chunk_size="random", seed=seed, reasoning=thought),
        "inline": S.text(f"<think>\n{thought}\n</think>\n\n{answer}", "random", seed=seed),
        "lone close": S.text(f"{thought}\n</think>\n\n{answer}", "random", seed=seed),
    }[where]
    llm_server.enqueue(reply, S.text("It is 1024.", "random", seed=seed))
    engine, executor, events = engine_for(llm_server)
    turn = run(engine, events)
    assert [b.code for b in executor.blocks] == ["print(2 ** 10)"]  # not the reasoning's code
    assert turn.final_text == "It is 1024."
    done = [e for e in events if isinstance(e, E.ReplyDone)]
    assert done[0].reply.reasoning == thought
    assert [b.code for b in done[0].blocks] == ["print(2 ** 10)"]
    streamed = "".join(e.text for e in events if isinstance(e, E.ReasoningDelta))
    if where != "lone close":  # only the complete reply shows a lone close
        assert streamed.strip() == thought
        assert "print(2 * 10)" not in "".join(e.text for e in events if isinstance(e, E.TextDelta))
    follow_up = llm_server.requests[1]["messages"]
    assert not any("2^10" in json.dumps(m) for m in follow_up)  # never sent back
    assert engine.messages[1] == {"role": "assistant", "content": answer}


def test_reasoning_through_ollama_and_anthropic(llm_server):
    for model in ("ollama_chat/llama3.1:70b", "anthropic/claude-3-5-sonnet-latest"):
        llm_server.reset()
        llm_server.enqueue(S.text("```python\nprint(1)\n```", "random", seed=4, reasoning="Hmm."),
                           S.text("Done."))
        engine, executor, events = engine_for(llm_server, model)
        run(engine, events)
        assert [b.code for b in executor.blocks] == ["print(1)"], model
        assert "".join(e.text for e in events if isinstance(e, E.ReasoningDelta)) == "Hmm."
        assert "Hmm" not in json.dumps(llm_server.requests[1]), model


# ----------------------------------------------------------------------------- text dialects


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in DIALECT_CASES],
                         ids=[c[0] for c in DIALECT_CASES])
def test_tool_calls_printed_as_text(llm_server, text, expected, seed):
    llm_server.enqueue(S.text(text, chunk_size="random", seed=seed), S.text("Done."))
    engine, executor, events = engine_for(llm_server)
    turn = run(engine, events)
    assert [(b.language, b.code) for b in executor.blocks] == expected
    assert turn.end_reason == "done"
    if expected:  # markdown mode: the results go back as one user message
        assert llm_server.requests[1]["messages"][-1]["role"] == "user"
        assert "ran 1" in llm_server.requests[1]["messages"][-1]["content"]


# ----------------------------------------------------------------------------- real tool calls


@pytest.mark.parametrize("model", ["openai/scripted", "ollama_chat/llama3.1:70b",
                                   "anthropic/claude-3-5-sonnet-latest"])
@pytest.mark.parametrize("seed", SEEDS)
def test_several_tool_calls_each_a_step_in_order_with_its_own_result(llm_server, model, seed):
    llm_server.enqueue(
        S.tool_calls([{"code": "x = 2 ** 10", "call_id": "call_a"},
                      {"code": "ls", "language": "shell", "call_id": "call_b"},
                      {"code": "print(x)", "call_id": "call_c"}],
                     text="I'll set x, list the files, then print x.", chunk_size="random",
                     seed=seed),
        S.text("x is 1024."))
    approver = Approver(run_all=True)
    engine, executor, events = engine_for(llm_server, model, approver=approver,
                                          tool_mode="tools")
    turn = run(engine, events)
    assert [(b.language, b.code) for b in executor.blocks] == [
        ("python", "x = 2 ** 10"), ("shell", "ls"), ("python", "print(x)")]
    assert [s.index for s in turn.steps] == [1, 2, 3]
    proposed = [e for e in events if isinstance(e, E.CodeProposed)]
    assert [p.needs_approval for p in proposed] == [True, False, False]  # Run all: the rest
    assert len(approver.asked) == 1
    ids = [b.tool_call_id for b in executor.blocks]
    assert len(set(ids)) == 3 and all(ids)
    results = [m for m in engine.messages if m["role"] == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in results] == [
        (ids[0], "ran 1"), (ids[1], "ran 2"), (ids[2], "ran 3")]
    assistant = engine.messages[1]
    assert assistant["content"] == "I'll set x, list the files, then print x."  # explains too
    assert [c["id"] for c in assistant["tool_calls"]] == ids
    assert turn.final_text == "x is 1024."
    if model.startswith("openai/"):
        assert ids == ["call_a", "call_b", "call_c"]
        assert S.conversation_problem(llm_server.requests[1]) is None


def test_ollama_sees_its_own_calls_in_the_history(llm_server):
    """litellm drops tool_calls from the history it sends to Ollama: they go as text."""
    llm_server.enqueue(S.tool_call("print(2 ** 10)"), S.text("Done."))
    engine, executor, events = engine_for(llm_server, "ollama_chat/llama3.1:70b",
                                          tool_mode="tools")
    run(engine, events)
    sent = llm_server.requests[1]["messages"]
    assistant = next(m for m in sent if m["role"] == "assistant")
    assert json.loads(assistant["content"]) == {"name": "execute", "arguments": {
        "language": "python", "code": "print(2 ** 10)"}}
    assert (sent[-1]["role"], sent[-1]["content"]) == ("tool", "ran 1")
    assert llm_server.request_paths == ["/api/chat", "/api/chat"]


def test_anthropic_tool_result_names_the_tool_use(llm_server):
    llm_server.enqueue(S.tool_call("print(1)", call_id="toolu_01abc"), S.text("Done."))
    engine, executor, events = engine_for(llm_server, "anthropic/claude-3-5-sonnet-latest",
                                          tool_mode="tools")
    run(engine, events)
    sent = llm_server.requests[1]["messages"]
    assert sent[1]["content"][-1]["type"] == "tool_use" and sent[1]["content"][-1]["id"] == \
        "toolu_01abc"
    assert sent[2]["content"][0] == {"type": "tool_result", "tool_use_id": "toolu_01abc",
                                     "content": "ran 1"}


def test_a_bad_call_among_several_gets_its_own_problem(llm_server):
    llm_server.enqueue(
        S.tool_calls([{"code": "print(1)", "call_id": "c1"},
                      {"arguments": "{not json", "call_id": "c2"},
                      {"code": "q", "name": "web_search", "call_id": "c3"}]),
        S.text("Done."))
    engine, executor, events = engine_for(llm_server, tool_mode="tools")
    run(engine, events)
    assert [b.code for b in executor.blocks] == ["print(1)"]
    results = {m["tool_call_id"]: m["content"] for m in engine.messages if m["role"] == "tool"}
    assert results["c1"] == "ran 1"
    assert "JSON arguments like" in results["c2"] and "web_search" not in results["c2"]
    assert "web_search" in results["c3"] and "JSON arguments" not in results["c3"]


@pytest.mark.parametrize("model", ["openai/scripted", "ollama_chat/llama3.1:70b",
                                   "anthropic/claude-3-5-sonnet-latest"])
def test_arguments_as_a_json_string_inside_a_json_string(llm_server, model):
    llm_server.enqueue(S.raw_tool_call(json.dumps(json.dumps(ARGS))), S.text("Done."))
    engine, executor, events = engine_for(llm_server, model, tool_mode="tools")
    run(engine, events)
    assert [b.code for b in executor.blocks] == ["print(2 ** 10)"]


@pytest.mark.parametrize("model", ["openai/scripted", "ollama_chat/llama3.1:70b",
                                   "anthropic/claude-3-5-sonnet-latest"])
def test_an_empty_reply_after_a_tool_result_ends_the_turn_quietly(llm_server, model):
    llm_server.enqueue(S.tool_call("print(1)"), S.text(""))
    engine, executor, events = engine_for(llm_server, model, tool_mode="tools")
    turn = run(engine, events)
    assert turn.end_reason == "done" and len(executor.blocks) == 1
    assert notices(events, "warning", "error") == []
    assert engine.messages[-1]["role"] == "tool"  # no empty assistant message kept
    llm_server.enqueue(S.text("Hello."))
    run(engine, events, "say hello")  # the next request is valid for the provider
    assert engine.messages[-1] == {"role": "assistant", "content": "Hello."}


def test_an_empty_first_reply_is_still_reported(llm_server):
    llm_server.enqueue(S.text(""), S.text("", reasoning="Let me think... out of tokens."))
    engine, _, events = engine_for(llm_server)
    run(engine, events)
    assert any("empty reply" in n for n in notices(events, "warning"))
    events.clear()
    run(engine, events)
    assert any("only reasoned" in n for n in notices(events, "warning"))


# ----------------------------------------------------------------------------- small models


@pytest.mark.parametrize("seed", SEEDS)
def test_a_reply_that_is_only_code_is_recognised_in_small_model_mode(llm_server, seed):
    llm_server.enqueue(S.text("def power(n):\n    return 2 ** n\nprint(power(10))",
                              "random", seed=seed))
    approver = Approver()
    engine, executor, events = engine_for(llm_server, "openai/smollm2-135m-instruct",
                                          approver=approver, small_model="auto")
    turn = run(engine, events)
    assert [(b.language, b.bare) for b in executor.blocks] == [("python", True)]
    assert approver.asked[0].block.bare  # the card says it was recognised as code
    assert turn.steps[0].status == "ok" and turn.end_reason == "done"
    assert "tools" not in llm_server.requests[0]  # small models write fenced code


def test_only_code_is_not_run_outside_small_model_mode(llm_server):
    llm_server.enqueue(S.text("print(2 ** 10)"))
    engine, executor, events = engine_for(llm_server, "openai/gpt-4o", small_model="auto")
    turn = run(engine, events)
    assert executor.blocks == [] and turn.final_text == "print(2 ** 10)"


def test_small_model_mode_stops_the_reply_after_its_first_block(llm_server):
    code = "print('hi')"
    llm_server.enqueue(S.text(f"```python\n{code}\n```\nOutput:\n```\nhi\n```\nMore chatter",
                              chunk_size=3))
    engine, executor, events = engine_for(llm_server, "openai/qwen2.5-coder:1.5b",
                                          small_model="auto")
    run(engine, events, "say hi")
    assert [b.code for b in executor.blocks] == [code]
    assert engine.messages[1]["content"] == f"```python\n{code}\n```"
    assert llm_server.requests[0]["max_tokens"] == 512
    assert llm_server.requests[0]["repeat_penalty"] == 1.0  # see providers.no_repeat_penalty


def test_small_model_sampling_on_ollama_and_a_server_that_refuses_it(llm_server):
    llm_server.enqueue(S.text("```python\nprint('hi')\n```"))
    engine, executor, events = engine_for(llm_server, "ollama_chat/qwen2.5-coder:1.5b",
                                          small_model="auto")
    run(engine, events, "say hi")
    options = llm_server.requests[0]["options"]
    assert options["repeat_penalty"] == 1.0 and options["num_predict"] == 512
    llm_server.reset()
    llm_server.enqueue(S.error(400, "Unrecognized request argument supplied: repeat_penalty"),
                       S.text("```python\nprint('hi')\n```"), S.text("```python\nprint('hi')\n```"))
    engine, executor, events = engine_for(llm_server, "openai/qwen2.5-coder:1.5b",
                                          small_model="auto")
    engine.small_model_samples = 0  # one request per reply: the requests are the subject
    run(engine, events, "say hi")
    run(engine, events, "say hi")
    assert ["repeat_penalty" in body for body in llm_server.requests] == [True, False, False]
    assert len(executor.blocks) == 2 and notices(events, "warning", "error") == []


# ----------------------------------------------------------------------------- no tools


REJECTIONS = [
    ("openai 400", "openai/scripted", S.error(400, "tools not supported")),
    ("ollama /v1", "openai/scripted",
     S.error(400, "registry.ollama.ai/library/gemma3:4b does not support tools")),
    ("vllm", "openai/scripted", S.error(400, '"auto" tool choice requires '
                                        "--enable-auto-tool-choice and --tool-call-parser")),
    ("llama-server 500", "openai/scripted", S.error(500, "tools param requires --jinja flag")),
    ("ollama native", "ollama_chat/gemma3:27b",
     S.error(400, "registry.ollama.ai/library/gemma3:27b does not support tools")),
    ("anthropic", "anthropic/claude-3-5-sonnet-latest",
     S.error(400, "tools: tool use is not supported for this model")),
]


@pytest.mark.parametrize(("model", "rejection"), [c[1:] for c in REJECTIONS],
                         ids=[c[0] for c in REJECTIONS])
def test_a_server_that_rejects_tools_gets_fenced_code_in_the_same_turn(llm_server, model,
                                                                      rejection):
    llm_server.enqueue(rejection, S.text("```python\nprint(2 ** 10)\n```"), S.text("1024."))
    # even when tools were asked for, the server's answer wins
    engine, executor, events = engine_for(llm_server, model, tool_mode="tools")
    turn = run(engine, events)
    assert [b.code for b in executor.blocks] == ["print(2 ** 10)"]
    assert turn.end_reason == "done" and turn.llm_calls == 2
    assert notices(events, "warning", "error") == []  # no error, no retry notices
    bodies = llm_server.requests
    assert len(bodies) == 3 and "tools" in bodies[0] and "tools" not in bodies[1]
    assert not engine.llm.uses_tools() and engine.llm.tools_refused()
    assert "fenced code block" in bodies[1]["messages"][0]["content"] or model.startswith(
        "anthropic/")  # litellm lifts Anthropic's system prompt out of the messages


def test_a_plain_400_is_not_taken_for_no_tools(llm_server):
    llm_server.enqueue(S.error(400, "This model's maximum context length is 8192 tokens"))
    engine, executor, events = engine_for(llm_server, tool_mode="tools")
    with pytest.raises(Exception, match="maximum context length"):
        run(engine, events)
    assert len(llm_server.requests) == 1 and engine.llm.uses_tools()


def test_anthropic_api_base_with_v1_is_forgiven(llm_server):
    """litellm appends /v1/messages itself: a base ending in /v1 would get a 404."""
    llm_server.enqueue(S.text("Hello."))
    client = LLM(model="anthropic/claude-3-5-sonnet-latest", api_base=llm_server.root + "/v1/",
                 api_key="sk-scripted")
    reply = asyncio.run(client.stream([{"role": "user", "content": "hi"}], None))
    assert reply.text == "Hello." and llm_server.request_paths == ["/v1/messages"]
