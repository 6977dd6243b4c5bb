"""Self-consistency for small models (``oi_kernel.core.consensus`` and
``SmallModelHandling.consensus``): more drafts of the same request, compared as code, and the
code most drafts without visible mistakes agree on proposed; sampling stops once the choice
cannot change. The tally as pure logic; the loop through litellm over real HTTP to the
scripted server (the samples' temperature and seed on the wire), a failed step's code not
voted for again, and a real kernel whose stdin question shows the chosen code."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from oi_kernel.approval.approvers import RECOGNISED_PROMPT
from oi_kernel.core import events as E
from oi_kernel.core.consensus import Tally, code_key, sampling_plan
from oi_kernel.core.executor import ExecResult
from oi_kernel.core.types import CodeBlock
from oi_kernel.record.log_writer import LogWriter
from oi_kernel.record.session_log import SessionLog, read_log
from oi_kernel.session.view import turn_footer
from tests import llm_server as S
from tests.env import oi_env
from tests.kernel_client import KernelSession
from tests.test_dialects_loop import engine_for, run
from tests.test_small_model import _engine, _fenced, _printed

MOD = "What is the remainder when 100 is divided by 7?"
FLOOR = "a = 100\nb = 7\nprint(a // b)"
REMAINDER = "a = 100\nb = 7\nprint(a % b)"


def _blocks(*codes: str) -> list[CodeBlock]:
    return [CodeBlock("python", code) for code in codes]


# ----------------------------------------------------------------------------- the tally


def test_the_sampling_plan_alternates_two_temperatures_with_fixed_seeds():
    assert sampling_plan(5) == [
        {"temperature": 0.5, "seed": 1}, {"temperature": 0.8, "seed": 1},
        {"temperature": 0.5, "seed": 2}, {"temperature": 0.8, "seed": 2},
        {"temperature": 0.5, "seed": 3},
    ]
    assert sampling_plan(0) == []


def test_drafts_are_the_same_when_their_code_is():
    same = code_key(_blocks("print(a  %  b) # remainder")) == code_key(_blocks('print(a % b)'))
    assert same
    assert code_key(_blocks("print(a % b)")) != code_key(_blocks("print(a // b)"))
    assert code_key(_blocks("print(1")) == code_key(_blocks("print(1\n"))  # unparsable: text
    assert code_key([CodeBlock("shell", "ls")]) != code_key([CodeBlock("python", "ls")])


def test_the_most_agreed_code_wins_and_the_first_draft_wins_ties():
    tally = Tally(planned=5)
    tally.add("first", _blocks(FLOOR), [])
    tally.add("s1", _blocks(REMAINDER), [])
    assert tally.winner().text == "first"  # 1 : 1, the first (greedy) draft among equals
    tally.add("s2", _blocks(REMAINDER), [])
    assert tally.winner().text == "s1" and tally.summary() == "2 of 3 drafts"
    assert not tally.settled()  # 2 against 1 with two to come


def test_drafts_with_visible_mistakes_do_not_vote_while_a_clean_one_exists():
    tally = Tally(planned=4)
    tally.add("bad", _blocks("print(word)"), ["it uses `word`, which is not defined"])
    tally.add("bad again", _blocks("print(word)"), ["it uses `word`, which is not defined"])
    tally.add("clean", _blocks("print(len(text))"), [])
    assert tally.winner().text == "clean"
    worse = Tally(planned=3)
    worse.add("two", _blocks("print(x + y)"), ["x", "y"])
    worse.add("one", _blocks("print(z)"), ["z"])
    worse.add("one again", _blocks("print(z)"), ["z"])
    assert worse.winner().text == "one"  # none clean: the fewest mistakes


def test_sampling_is_settled_once_the_leader_cannot_be_caught():
    tally = Tally(planned=7)
    for name in ("first", "s1", "s2"):
        tally.add(name, _blocks(REMAINDER), [])
    assert not tally.settled()  # 3 votes, 4 to come
    tally.add("s3", _blocks(REMAINDER), [])
    assert tally.settled()  # 4 against at most 3
    unclean = Tally(planned=3)
    unclean.add("bad", _blocks("print(q)"), ["q"])
    unclean.add("bad", _blocks("print(q)"), ["q"])
    assert not unclean.settled()  # a clean draft may still come
    unclean.add("bad", _blocks("print(q)"), ["q"])
    assert unclean.settled()  # none left


# ----------------------------------------------------------------------------- the loop


def _enqueue_replies(server: S.ScriptedLLMServer, *codes: str) -> None:
    server.enqueue(*(S.text(f"```python\n{code}\n```", chunk_size="random", seed=i)
                     for i, code in enumerate(codes)))


def test_the_code_most_samples_agree_on_is_proposed_over_real_http(llm_server, tmp_path):
    _enqueue_replies(llm_server, FLOOR, REMAINDER, FLOOR + "  # floor", REMAINDER, REMAINDER)
    engine, executor, events = engine_for(llm_server, "openai/smollm2-135m", small_model="on")
    engine.small_model_samples = 4
    log = SessionLog(directory=str(tmp_path))
    engine.recorder = LogWriter(log)
    turn = run(engine, events, MOD)
    log.close()
    assert [b.code for b in executor.blocks] == [REMAINDER]
    sent = [(r.get("temperature"), r.get("seed")) for r in llm_server.requests]
    assert sent[1:] == [(0.5, 1), (0.8, 1), (0.5, 2), (0.8, 2)]
    assert sent[0][0] in (None, 0, 0.0)  # the first draft is the deterministic one
    bodies = [[m["content"] for m in r["messages"]] for r in llm_server.requests]
    assert all(b == bodies[0] for b in bodies)  # the same request, sampled
    said = [e.text for e in events if isinstance(e, E.Notice)]
    assert any("Proposing the code 3 of 5 drafts agree on" in n for n in said), said
    assert engine.messages[1]["content"] == f"```python\n{REMAINDER}\n```"  # as it ran
    assert turn.llm_calls == 1 and turn.samples == 4  # not steps, but their tokens count:
    assert turn_footer(turn).startswith("1 LLM call + 4 samples · ")
    record = [r for r in read_log(log.path) if r["event"] == "llm_response"][0]
    assert turn.usage.prompt_tokens == 5 * record["usage"]["prompt_tokens"] > 0
    record = next(r for r in read_log(log.path) if r["event"] == "draft_samples")  # noqa
    assert record["drawn"] == 5 and record["chosen"] == 1
    assert [d["votes"] for d in record["drafts"]] == [2, 3]


def test_sampling_stops_when_the_samples_agree(llm_server):
    _enqueue_replies(llm_server, REMAINDER, REMAINDER, REMAINDER)
    llm_server.set_fallback(S.text("```python\nprint('unasked')\n```"))
    engine, executor, events = engine_for(llm_server, "openai/smollm2-135m", small_model="on")
    engine.small_model_samples = 4  # 5 drafts: 3 alike cannot be caught by the other 2
    run(engine, events, MOD)
    assert len(llm_server.requests) == 3
    assert [b.code for b in executor.blocks] == [REMAINDER]
    assert not [e for e in events if isinstance(e, E.Notice) and "Proposing" in e.text]


def test_when_every_draft_shows_a_mistake_the_user_is_told(llm_server):
    half = "a = 100\nprint(a % b)"  # `b` not set, 7 not used: 2 mistakes
    _enqueue_replies(llm_server, "print(x)", half, half)  # `x`, 100 and 7: 3 mistakes
    engine, executor, events = engine_for(llm_server, "openai/smollm2-135m", small_model="on")
    engine.small_model_samples = 2
    run(engine, events, MOD)
    assert [b.code for b in executor.blocks] == [half]  # the fewest mistakes, then votes
    warned = [e.text for e in events if isinstance(e, E.Notice) and e.level == "warning"]
    assert any(w.startswith("None of the 3 drafts is without visible mistakes; proposing the "
                            "code 2 of 3 drafts agree on (it uses `b` without setting it")
               for w in warned), warned


def test_a_sample_error_keeps_the_first_draft(llm_server):
    _enqueue_replies(llm_server, FLOOR)
    llm_server.enqueue(S.error(500, "out of memory"), S.error(500, "out of memory"),
                       S.error(500, "out of memory"))
    engine, executor, events = engine_for(llm_server, "openai/smollm2-135m", small_model="on",
                                          max_retries=0)
    engine.small_model_samples = 4
    turn = run(engine, events, MOD)
    assert [b.code for b in executor.blocks] == [FLOOR] and turn.end_reason == "done"
    assert not [e for e in events if isinstance(e, E.Notice) and e.level == "error"]


def test_capable_models_are_not_sampled(llm_server):
    _enqueue_replies(llm_server, FLOOR)
    llm_server.enqueue(S.text("Done."))
    engine, executor, events = engine_for(llm_server, "openai/gpt-4o", small_model="off",
                                          tool_mode="markdown")
    engine.small_model_samples = 4
    run(engine, events, MOD)
    assert len(llm_server.requests) == 2  # the code, then the answer after its output
    assert all(r.get("seed") is None for r in llm_server.requests)


def test_code_that_already_failed_does_not_win_again():
    wrong = "items = [3, 17, 8, 11]\nprint(max(items, max(items)))"
    right = "items = [3, 17, 8, 11]\nprint(max(items))"
    error = ExecResult("error", [{"output_type": "error", "ename": "TypeError",
                                  "evalue": "'>' not supported", "traceback": []}])
    engine, llm, executor = _engine(
        [_fenced(wrong), _fenced(wrong),  # call 1 and a sample agree: settled (2 > 0 + 1)
         _fenced(wrong), _fenced(right), _fenced(wrong)],  # call 2: the repeats do not vote
        [error, _printed("17\n")],
        small_model_samples=2,
    )
    turn = _run_turn(engine, "What is the largest number in [3, 17, 8, 11]?")
    assert executor.ran == [wrong, right]
    assert turn.end_reason == "done" and turn.llm_calls == 2 and llm.replies == []


def _run_turn(engine, instruction):
    return asyncio.run(engine.run_turn(instruction, lambda event: None))


def test_without_samples_the_redraw_rules_apply():
    engine, llm, executor = _engine(
        [_fenced("print(len(word))"), _fenced("text = 'a b c'\nprint(len(text.split()))")],
        [_printed("3\n")],
        small_model_samples=0,
    )
    _run_turn(engine, "How many words are in 'a b c'?")
    assert executor.ran == ["text = 'a b c'\nprint(len(text.split()))"]
    assert [s and s["seed"] for s in llm.samplings] == [None, 1]


# ----------------------------------------------------------------------------- a kernel


def test_the_kernel_asks_about_the_chosen_code(llm_server, tmp_path: Path):
    llm_server.model_meta = {"n_params": 134_515_008}
    llm_server.enqueue(*(S.text(code) for code in (FLOOR, REMAINDER, REMAINDER)))
    env = oi_env(llm_server, tmp_path, OI_MODEL="smollm2", OI_AUTO_RUN="0",
                 OI_APPROVAL_UI="stdin", OI_SMALL_MODEL_SAMPLES="2")
    with KernelSession(env=env, cwd=str(tmp_path)) as ks:
        result = ks.execute(MOD, timeout=90, stdin=["y"])
        assert result.status == "ok", result.text
        assert result.prompts and RECOGNISED_PROMPT in result.prompts[0]
        assert "a % b" in result.prompts[0] and "a // b" not in result.prompts[0]
        assert "Proposing the code 2 of 3 drafts agree on" in result.text
        assert result.stdout.rstrip().endswith("2")
        assert len(llm_server.requests) == 3
        shown = ks.execute("%model", timeout=60).text
        assert "compared with up to 2 more samples" in shown.replace("\n", " ")


@pytest.mark.parametrize("value", ["-1", "many"])
def test_a_bad_sample_count_is_reported_and_the_default_kept(value, monkeypatch):
    from oi_kernel import config
    from oi_kernel.core.settings import EngineSettings

    config.take_warnings()
    monkeypatch.setenv("OI_SMALL_MODEL_SAMPLES", value)
    assert EngineSettings().small_model_samples == 12
    said = config.take_warnings()
    assert any(w.startswith(f"OI_SMALL_MODEL_SAMPLES={value!r} is not") for w in said), said


def test_a_replay_gives_the_recorded_samples_back(tmp_path):
    from oi_kernel import Interpreter
    from oi_kernel.api.replay import replay_log
    from oi_kernel.llm.client import LLM

    with S.ScriptedLLMServer() as server:
        _enqueue_replies(server, FLOOR, REMAINDER, REMAINDER)
        llm = LLM(model="openai/smollm2", api_base=server.url, api_key="sk-scripted",
                  small_model="on")
        with Interpreter(llm=llm, auto_run=True, log_dir=tmp_path / "logs", cwd=tmp_path) as it:
            it.engine.small_model_samples = 2
            list(it.chat(MOD))
            assert [s.block.code for s in it.turns[-1].steps] == [REMAINDER]
            log = it.log_path
        assert len(server.requests) == 3
    samples = [r for r in read_log(log) if r["event"] == "llm_sample"]
    assert [(r["sampling"]["seed"], r["text"]) for r in samples] == [
        (1, f"```python\n{REMAINDER}\n```"), (1, f"```python\n{REMAINDER}\n```")]
    report = replay_log(log)  # the server is gone: the samples come from the log
    assert [(c.turn, c.step, c.status) for c in report.checks] == [(1, 1, "same")]
    assert report.ok, report.format()


def test_a_model_too_slow_for_four_samples_is_not_sampled(llm_server):
    llm_server.enqueue(S.text(f"```python\n{FLOOR}\n```", chunk_size=8, delay=0.05))
    engine, executor, events = engine_for(llm_server, "openai/smollm2-135m", small_model="on")
    engine.small_model_samples = 4
    engine.small_model_sample_seconds = 0.4  # the reply takes ~0.2 s: 4 would not fit
    run(engine, events, MOD)
    assert len(llm_server.requests) == 1
    assert [b.code for b in executor.blocks] == [FLOOR]
