"""The LLM seam (issue 33): every model the engine is handed (``LLM``, ``RecordedLLM``, the
tests' ``FakeModel``) has each member of ``core.model.Model`` with a compatible signature, and
a plain class with those members runs a whole turn (no litellm, no server, no mock)."""

from __future__ import annotations

import asyncio
import inspect
import json
import typing
from typing import Any

import pytest

from oi_kernel.core.engine import Engine
from oi_kernel.core.executor import ExecResult
from oi_kernel.core.model import Model
from oi_kernel.core.turn_context import NO_CONTEXT, TurnContext
from oi_kernel.core.types import CodeBlock, Reply, ToolCall
from oi_kernel.llm.client import LLM
from oi_kernel.llm.recorded import RecordedLLM
from tests.fake_model import FakeModel

pytestmark = pytest.mark.unit

IMPLEMENTATIONS = [LLM, RecordedLLM, FakeModel]


def members() -> tuple[set[str], dict[str, Any]]:
    """The protocol's attributes and its methods/properties, read from ``Model`` itself."""
    attributes = set(Model.__annotations__)
    methods = {n: v for n, v in vars(Model).items()
               if not n.startswith("_") and (inspect.isfunction(v) or isinstance(v, property))}
    return attributes, methods


def _return(func: Any) -> Any:
    try:
        return typing.get_type_hints(func).get("return")
    except Exception:  # an annotation that needs a name imported only for type checkers
        return inspect.signature(func).return_annotation


def signature_problems(impl: type, name: str, wanted: Any) -> list[str]:
    """Why ``impl.name`` cannot stand where ``Model.name`` is asked for ([] when it can)."""
    got = inspect.getattr_static(impl, name, None)
    if isinstance(wanted, property):
        ok = isinstance(got, property) or (got is not None and not callable(got))
        return [] if ok else [f"{name}: not a property or attribute"]
    if isinstance(got, staticmethod | classmethod) or not inspect.isfunction(got):
        return [f"{name}: missing or not a method"]
    problems = []
    if inspect.iscoroutinefunction(got) != inspect.iscoroutinefunction(wanted):
        problems.append(f"{name}: async in one and not the other")
    have = list(inspect.signature(got).parameters.values())[1:]
    need = list(inspect.signature(wanted).parameters.values())[1:]
    variadic = {p.kind for p in have} & {inspect.Parameter.VAR_POSITIONAL,
                                         inspect.Parameter.VAR_KEYWORD}
    for i, p in enumerate(need):
        match = have[i] if i < len(have) else None
        if match is None or match.name != p.name or match.kind != p.kind:
            if not variadic:
                problems.append(f"{name}: parameter {i + 1} should be {p.name} ({p.kind})")
            continue
        if p.default is not p.empty and match.default is p.empty:
            problems.append(f"{name}: {p.name} needs a default")
    for extra in have[len(need):]:
        if extra.default is extra.empty and extra.kind not in (extra.VAR_POSITIONAL,
                                                               extra.VAR_KEYWORD):
            problems.append(f"{name}: extra parameter {extra.name} without a default")
    if _return(got) != _return(wanted):
        problems.append(f"{name}: returns {_return(got)}, not {_return(wanted)}")
    return problems


def conformance(impl: type, instance: Any) -> list[str]:
    attributes, methods = members()
    problems = []
    for name in sorted(attributes):
        hint = typing.get_type_hints(Model)[name]
        if not isinstance(getattr(instance, name, None), hint):
            problems.append(f"{name}: not a {hint.__name__} on an instance")
    for name, wanted in sorted(methods.items()):
        problems += signature_problems(impl, name, wanted)
    if isinstance(methods.get("is_small_model"), property):
        if not isinstance(instance.is_small_model, bool):
            problems.append("is_small_model: not a bool")
    return problems


def test_the_protocol_names_what_the_engine_uses():
    attributes, methods = members()
    assert attributes == {"model"}
    assert set(methods) == {
        "is_small_model", "check_configured", "prepare", "take_notice", "uses_tools",
        "count_tokens", "context_window", "supports_vision", "secrets", "stream", "sample",
        "freeze", "pinned"}


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=lambda c: c.__name__)
def test_every_model_has_every_member_with_a_compatible_signature(impl):
    instance = impl(model="some-model")
    assert conformance(impl, instance) == []
    instance.model = "another-model"  # front doors switch models (%model, the lab's picker)
    assert instance.model == "another-model"


def test_the_check_finds_a_model_that_does_not_fit():
    class Wrong(FakeModel):
        def stream(self, messages, on_text=None):  # not async, no tools, misses parameters
            return Reply("")

        def count_tokens(self, text: str, exact: bool) -> int:  # an extra required parameter
            return 0

        def context_window(self) -> int:  # never None
            return 1

    wrong = Wrong()
    wrong.model = 3  # type: ignore[assignment]
    problems = conformance(Wrong, wrong)
    assert "model: not a str on an instance" in problems
    assert "stream: async in one and not the other" in problems
    assert "stream: parameter 2 should be tools (POSITIONAL_OR_KEYWORD)" in problems
    assert "count_tokens: extra parameter exact without a default" in problems
    assert any(p.startswith("context_window: returns") for p in problems)


class _Recorder:
    """An executor that runs nothing: each block "prints" what it would have run."""

    sandboxed = False
    cwd = "/tmp"
    probe = None

    def __init__(self) -> None:
        self.ran: list[CodeBlock] = []

    async def namespace_summary(self) -> str:
        return ""

    async def run(self, block: CodeBlock, context: TurnContext = NO_CONTEXT) -> ExecResult:
        self.ran.append(block)
        return ExecResult("ok", [{"output_type": "stream", "name": "stdout", "text": "6\n"}])


def test_a_plain_class_with_the_members_runs_a_turn():
    call = ToolCall("call-1", "execute", json.dumps({"language": "python", "code": "print(2 * 3)"}))
    model = FakeModel([Reply("", tool_calls=[call]), "It is 6."])
    executor = _Recorder()
    engine = Engine(executor, object(), llm=model, approval="never", languages=["python"])
    events: list[Any] = []
    turn = asyncio.run(engine.run_turn("What is 2 times 3?", events.append))
    assert [b.code for b in executor.ran] == ["print(2 * 3)"]
    assert turn.end_reason == "done" and turn.llm_calls == 2
    tool_result = model.requests[1][-1]
    assert tool_result["role"] == "tool" and "6" in tool_result["content"]
