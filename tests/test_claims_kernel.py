"""Answers you can check, as a notebook user meets them: a real kernel, a real child, litellm
over HTTP to the scripted server. Each number of the final answer names the step that
printed it; a number printed nowhere reads "— not in any output"; export carries the claims
and verify catches a traced number that changed."""

from __future__ import annotations

import json
import re

import nbformat
import pytest

from oi_kernel.record.verify import verify_notebook
from tests import llm_server as S
from tests.env import oi_env
from tests.kernel_client import KernelSession

NOT_FOUND = "not in any output"


@pytest.fixture(scope="module")
def kernel(_server, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("claims")
    with KernelSession(env=oi_env(_server, tmp, OI_AUTO_RUN="1"), cwd=str(tmp)) as ks:
        ks.tmp = tmp
        yield ks


@pytest.fixture
def oi(kernel, _server):
    _server.reset()
    assert kernel.execute("%reset").status == "ok"
    return kernel


def marks(result) -> list[dict]:
    """The displays that show the answer's numbers (their markdown and plain text)."""
    return [m["content"] for m in result.of_type("display_data")
            if "answer_check" in (m["content"].get("metadata", {}).get("oi") or {})]


def test_a_right_answer_names_its_steps_and_marks_nothing(oi, _server):
    _server.enqueue(
        S.tool_call("orders = [41.2, 41.34]\nprint(round(sum(orders) / 2, 4))"),
        S.tool_call("print(f'{1200:,} rows')"),
        S.text("The mean order is 41.27 EUR across 1,200 rows."))
    result = oi.execute("what is the mean order?")
    assert result.status == "ok"
    [shown] = marks(result)
    plain, markdown = shown["data"]["text/plain"], shown["data"]["text/markdown"]
    assert NOT_FOUND not in plain and NOT_FOUND not in markdown
    assert "41.27 EUR ← step 1" in plain and "1,200 ← step 2" in plain
    assert 'title="step 1 printed 41.27"' in markdown  # the hover names what was printed
    assert len(plain.splitlines()) == 1  # all traced: one quiet line


def test_a_wrong_number_is_marked_in_those_words(oi, _server):
    _server.enqueue(S.tool_call("print(0.2304)"),
                    S.text("Revenue grew 32% over last year."))
    result = oi.execute("how much did revenue grow?")
    [shown] = marks(result)
    assert "32% — not in any output" in shown["data"]["text/plain"]
    assert "32% — not in any output" in shown["data"]["text/markdown"]


def test_rounding_and_separators_trace(oi, _server):
    _server.enqueue(
        S.tool_call("print(41.2749, 0.2304, 1234567.891, 3215000000)"),
        S.text("Mean 41.3, growth 23%, total 1 234 567,89 and 1.234.568, file 3.2 GB."))
    result = oi.execute("summarise")
    plain = marks(result)[0]["data"]["text/plain"]
    assert NOT_FOUND not in plain, plain
    for text in ("41.3", "23%", "1 234 567,89", "1.234.568", "3.2 GB"):
        assert f"{text} ← step 1" in plain, (text, plain)


def test_a_number_from_an_earlier_instruction_names_it(oi, _server):
    _server.enqueue(S.tool_call("print(7919)"), S.text("The prime is 7919."))
    oi.execute("find the 1000th prime")
    _server.enqueue(S.text("As computed before, 7,919 is the 1000th prime."))
    result = oi.execute("remind me which prime it was")
    plain = marks(result)[0]["data"]["text/plain"]
    # (the module's kernel is shared: the instruction before this one has the number n - 1)
    match = re.fullmatch(r"numbers traced: 7,919 ← instruction (\d+), step 1", plain)
    assert match, plain
    log = sorted((oi.tmp / "logs").glob("*.jsonl"))[-1]
    turns = [r["turn"] for r in map(json.loads, log.read_text().splitlines())
             if r["event"] == "turn_start"]
    assert int(match.group(1)) == turns[-2]


def test_the_users_own_numbers_are_not_claims(oi, _server):
    _server.enqueue(S.tool_call("print(sum(range(1, 51)))"),
                    S.text("The sum of the first 50 numbers is 1275."))
    result = oi.execute("add the numbers from 1 to 50")
    plain = marks(result)[0]["data"]["text/plain"]
    assert plain == "numbers traced: 1275 ← step 1"


def test_ask_model_sends_the_answer_back_once(_server, tmp_path):
    _server.reset()
    env = oi_env(_server, tmp_path, OI_AUTO_RUN="1", OI_CHECK_ANSWERS="ask-model")
    _server.enqueue(S.tool_call("print(18.5)"),
                    S.text("The median is 19.5 and the spread is 4.2."),
                    S.tool_call("print(4.25)"),
                    S.text("The median is 18.5 and the spread is 4.25."))
    with KernelSession(env=env, cwd=str(tmp_path)) as ks:
        result = ks.execute("median and spread?")
    sent_back = [m["content"] for m in _server.requests[2]["messages"] if m["role"] == "user"]
    assert "These numbers appear in no output: 19.5, 4.2." in sent_back[-1]
    assert len(_server.requests) == 4  # asked once, not again
    assert "The median is 18.5 and the spread is 4.25." in result.text
    plain = marks(result)[0]["data"]["text/plain"]
    assert plain == "numbers traced: 18.5 ← step 1 · 4.25 ← step 2"


def test_the_log_records_claims_export_links_them_and_verify_catches_a_change(oi, _server,
                                                                              tmp_path):
    data = tmp_path / "data.json"  # read from outside the workspace: verify can't pin it
    data.write_text(json.dumps([40.1, 42.44]))
    _server.enqueue(
        S.tool_call(f"import json\nxs = json.load(open({str(data)!r}))\n"
                    "print(round(sum(xs) / len(xs), 2))"),
        S.text("The mean is 41.27, up 5% on the target."))
    oi.execute("mean of data.json")
    log = sorted((oi.tmp / "logs").glob("*.jsonl"))[-1]
    record = [r for r in map(json.loads, log.read_text().splitlines())
              if r["event"] == "answer_check"][-1]
    assert [(c["text"], c["found"] and c["found"]["printed"]) for c in record["claims"]] == [
        ("41.27", "41.27"), ("5%", None)]
    out = oi.tmp / "export.ipynb"
    assert oi.execute(f"%export {out} --force").status == "ok"
    nb = nbformat.read(out, as_version=4)
    answer = [c for c in nb.cells if "answer_check" in c.metadata.get("oi_kernel", {})][-1]
    assert "41.27 → [step 1 (In [" in answer.source and "**5% — not in any output**" in answer.source
    [traced] = [c for c in answer.metadata["oi_kernel"]["answer_check"]["claims"] if c["found"]]
    target = next(c for c in nb.cells if c.get("id") == traced["cell"])
    assert "41.27" in target.outputs[0]["text"]
    data.write_text(json.dumps([40.1, 44.44]))  # the data changed: the mean is now 42.27
    report = verify_notebook(out)
    assert not report.ok
    assert any("41.27" in p and "no longer prints it" in p for p in report.claims), report.claims
    assert "claim: the answer's 41.27 was traced to 41.27" in report.format()


def test_an_output_too_large_to_keep_is_traced_from_what_was_kept(oi, _server):
    _server.enqueue(S.tool_call("print('\\n'.join(str(i * 7) for i in range(350_000)))"),
                    S.text("It printed 14 first, 1,225,000 in the middle and 2,449,993 last."))
    result = oi.execute("print multiples of seven")
    plain = marks(result)[0]["data"]["text/plain"]
    lines = plain.splitlines()
    assert lines[0] == "1,225,000 — not in any output"  # printed, but in the part cut away
    assert lines[1] == "traced: 14 ← step 1 · 2,449,993 ← step 1"
    assert lines[2].startswith("(traced from what the session kept: the output of step 1 "
                               "was too large and was cut")
