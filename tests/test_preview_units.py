"""The pure parts of Preview (issue 44): what a preview says, how a real run is compared
with it, when one is possible, the modes and the administrator's floor."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace

import pytest

from oi_kernel.core import preview as P
from oi_kernel.core.types import ApprovalRequest, CodeBlock
from oi_kernel.session.policy import load_policy

ANSWER = {"status": "error", "duration_s": 0.12,
          "outputs": [{"output_type": "stream", "name": "stdout", "text": "hi\n"},
                      {"output_type": "display_data", "data": {"image/png": "AAAA"}},
                      {"output_type": "error", "ename": "ValueError", "evalue": "bad"}],
          "changes": {"variables": [{"name": "df", "change": "new", "after": "DataFrame 3×2"}],
                      "files": [{"path": "a.csv", "change": "modified", "size": 2000,
                                 "before_size": 10},
                                {"path": "old.txt", "change": "deleted", "before_size": 5}]},
          "network": ["example.com:443"]}


def test_a_preview_reads_as_the_real_run_would_show_its_changes():
    result = P.PreviewResult.of("x = 1", ANSWER)
    assert result.lines() == [
        "Preview (0.12 s, in a disposable copy: nothing real changed): the step raised an error",
        "  output:", "    hi", "    [image]", "    ValueError: bad",
        "  would change:", "    df: DataFrame 3×2 (new)", "    a.csv (modified, 10 bytes → 2.0 kB)",
        "    old.txt (deleted)",
        "  network: example.com:443 (blocked in preview)"]
    page = result.html()
    assert "data:image/png;base64,AAAA" in page and "blocked in preview" in page
    assert P.NOT_CAUGHT in page
    assert result.record()["sha256"] == result.sha256 and list(result.record()["network"]) == [
        "example.com:443"]


@pytest.mark.parametrize("answer, headline", [
    ({"status": "timeout", "timeout_s": 30}, "Preview stopped after 30 s"),
    ({"status": "unavailable", "why": "no user namespaces"},
     "Preview not available: no user namespaces"),
])
def test_a_preview_that_could_not_finish_says_why(answer, headline):
    result = P.PreviewResult.of("x", answer)
    assert result.lines()[0].startswith(headline) and len(result.lines()) == 1


def test_differences_name_what_only_one_side_changed():
    shown = {"files": [{"path": "a.txt", "change": "created", "size": 3}]}
    real = {"files": [{"path": "a.txt", "change": "created", "size": 3},
                      {"path": "b.txt", "change": "created", "size": 1}]}
    assert P.differences(shown, real) == ["only in the real run: b.txt (created, 1 bytes)"]
    assert P.differences(shown, shown) == []
    assert P.differences(shown, None) == ["only in the preview: a.txt (created, 3 bytes)"]


class Probe:
    def __init__(self, answer):
        self.answer, self.calls = answer, []

    async def probe(self, name, *args):
        self.calls.append((name, *args))
        if isinstance(self.answer, Exception):
            raise self.answer
        return dict(self.answer)


@pytest.mark.parametrize("executor, language, tool, why", [
    (SimpleNamespace(probe=None), "python", "", "no copy of it can be made"),
    (SimpleNamespace(probe=1, child=SimpleNamespace(kernel_id="k1")), "python", "",
     "on a gateway"),
    (SimpleNamespace(probe=1), "r", "", "a r step runs in a process that is not copied"),
    (SimpleNamespace(probe=1), "python", "git › commit", "MCP server"),
    (SimpleNamespace(probe=1), "python", "", ""),
    (SimpleNamespace(probe=1), "shell", "", ""),
])
def test_where_no_copy_can_be_made_it_says_why(executor, language, tool, why):
    reason = P.unavailable_reason(executor, language, tool)
    assert (why in reason) if why else reason == ""


def test_a_failing_probe_is_said_on_the_card_and_not_tried_again():
    executor = Probe(RuntimeError("child gone"))
    events = []
    step = P.StepPreview(executor, "python", timeout=5, publish=events.append, turn=1, step=2)
    result = asyncio.run(step.run("x = 1"))
    assert result.status == "unavailable" and "child gone" in result.why
    assert executor.preview_unavailable == result.why
    assert P.unavailable_reason(executor, "python") == result.why
    [event] = events
    assert (event.turn, event.step, event.result) == (1, 2, result)


def test_previews_are_kept_by_code_hash_and_the_timeout_is_passed():
    executor = Probe({"status": "ok", "changes": {}})
    step = P.StepPreview(executor, "shell", timeout=7)
    asyncio.run(step.run("echo a"))
    asyncio.run(step.run("echo b"))
    assert executor.calls == [("preview", "echo a", "shell", 7), ("preview", "echo b", "shell", 7)]
    assert step.of_code("echo a").code == "echo a" and step.latest().code == "echo b"
    assert step.of_code("echo c") is None


@pytest.mark.parametrize("mode, floor, flags, asks, previewed", [
    ("flagged", "", ["f"], True, True),
    ("flagged", "", [], True, False),
    ("flagged", "", ["f"], False, False),
    ("on-request", "", ["f"], True, False),
    ("off", "flagged", ["f"], True, True),  # the administrator's floor wins
])
def test_flagged_previews_before_the_card(mode, floor, flags, asks, previewed):
    executor = Probe({"status": "ok"})
    host = SimpleNamespace(preview=mode, preview_floor=floor, preview_timeout=3,
                           executor=executor)
    request = ApprovalRequest(1, 1, CodeBlock("python", "x = 1"), flags)
    request.preview = P.for_request(host, host.executor, request, "python", lambda e: None)
    asyncio.run(P.before_card(host, request, asks))
    assert (request.previewed is not None) == previewed


def test_off_offers_no_preview():
    host = SimpleNamespace(preview="off", preview_floor="", preview_timeout=3,
                           executor=Probe({}))
    request = ApprovalRequest(1, 1, CodeBlock("python", "x = 1"))
    assert P.for_request(host, host.executor, request, "python", print) is None


def test_the_administrator_may_require_flagged_previews(tmp_path):
    (tmp_path / "oi_kernel_policy.json").write_text(json.dumps({"preview": "flagged"}))
    policy = load_policy([tmp_path])
    assert policy.preview == "flagged" and not policy.problems
    assert "steps with a risk flag are previewed before they are asked about" in policy.rules()
    (tmp_path / "oi_kernel_policy.json").write_text(json.dumps({"preview": "always"}))
    policy = load_policy([tmp_path])
    assert "must be \"flagged\"" in policy.problems[0]
