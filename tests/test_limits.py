"""Limits and secrets: the approval policy, the step timeout, the memory limit, token and
cost caps, the output cap, and keys kept out of the LLM, the log and exports.

Pure parts are table-tested; the rest drives a real Open Interpreter kernel (and its real
child kernel) through jupyter_client, with litellm talking HTTP to the scripted server.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from oi_kernel.core.caps import Caps, cap_notice
from oi_kernel.core.types import Usage
from oi_kernel.execution.limits import format_size, launcher_argv, parse_size
from tests import llm_server as S
from tests.kernel_client import CellResult, KernelSession
from tests.test_kernel import kernel_env, sent_tool_results

GIB = 1024**3
OPENAI_KEY = "plainfakeopenaivalue0042"  # not key-shaped: only the env-value redaction masks it
SERVICE_TOKEN = "tokvalue-abcdef-9876-zyx"  # a *_TOKEN: only secret_values_from_env knows it
OI_KEY = "sk-test-not-a-real-key-123456"
MARKER = "visible-marker-31337"
SECRETS = (OPENAI_KEY, SERVICE_TOKEN, OI_KEY)


# ------------------------------------------------------------------ pure parts
@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("2G", 2 * GIB),
        ("2g", 2 * GIB),
        ("2GiB", 2 * GIB),
        ("2 GB", 2 * GIB),
        ("512M", 512 * 1024**2),
        ("1.5G", int(1.5 * GIB)),
        ("64k", 65536),
        ("1048576", 1048576),
        ("", 0),
        ("0", 0),
        (None, 0),
        (4096, 4096),
    ],
)
def test_parse_size(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["two gigs", "2X", "-1G", "G", "1e9"])
def test_parse_size_rejects_nonsense_with_a_hint(text):
    with pytest.raises(ValueError, match="512M"):
        parse_size(text)


def test_format_size():
    assert format_size(2 * GIB) == "2 GiB"
    assert format_size(int(1.5 * GIB)) == "1.5 GiB"
    assert format_size(100) == "100 bytes"


def usage(tokens: int, cost: float | None = None) -> Usage:
    return Usage(prompt_tokens=tokens, completion_tokens=0, cost=cost)


@pytest.mark.parametrize(
    ("caps", "turn", "session", "expect"),
    [
        (Caps(), usage(10**9, 99.0), usage(10**9, 99.0), ""),
        (Caps(tokens_per_turn=100), usage(99), usage(500), ""),
        (Caps(tokens_per_turn=100), usage(100), usage(500), "OI_MAX_TOKENS"),
        (Caps(cost_per_turn=0.5), usage(1, 0.6), usage(1, 0.6), "OI_MAX_COST"),
        (Caps(cost_per_turn=0.5), usage(1, None), usage(1, None), ""),  # unknown cost
        (Caps(tokens_per_session=1000), usage(10), usage(1000), "OI_MAX_SESSION_TOKENS"),
        (Caps(cost_per_session=1.0), usage(1, 0.1), usage(1, 1.2), "OI_MAX_SESSION_COST"),
    ],
)
def test_cap_notice_names_the_cap_and_how_to_raise_it(caps, turn, session, expect):
    notice = cap_notice(caps, turn, session)
    if not expect:
        assert notice == ""
    else:
        assert expect in notice and "0 turns it off" in notice
        assert ("session" in notice) == ("SESSION" in expect)


def test_launcher_caps_memory_and_execs(tmp_path):
    code = (
        "import os, resource\n"
        "print(resource.getrlimit(resource.RLIMIT_AS)[0], os.getpid())\n"
        "try:\n    bytearray(4 * 1024**3)\nexcept MemoryError:\n    print('MemoryError')\n"
    )
    argv = launcher_argv(parse_size("512M"), [sys.executable, "-c", code])
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    limit, _pid = out.stdout.split("\n")[0].split()
    assert int(limit) == 512 * 1024**2
    assert "MemoryError" in out.stdout


def test_launcher_reports_a_missing_command():
    argv = launcher_argv(GIB, ["no-such-command-oi-test"])
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert out.returncode == 127
    assert "no-such-command-oi-test" in out.stderr


# ------------------------------------------------------------------ a real kernel
@pytest.fixture(scope="module")
def kernel(_server, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("limits")
    env = kernel_env(
        _server,
        tmp,
        OI_AUTO_RUN="1",
        OI_APPROVAL_UI="stdin",
        OI_API_KEY=OI_KEY,
        OPENAI_API_KEY=OPENAI_KEY,
        MY_SERVICE_TOKEN=SERVICE_TOKEN,
        OI_TEST_MARKER=MARKER,
    )
    with KernelSession(env=env, cwd=str(tmp)) as ks:
        ks.tmp = tmp
        yield ks


@pytest.fixture
def oi(kernel, _server):
    _server.reset()
    assert kernel.execute("%reset").status == "ok"
    assert kernel.execute("%approval never").status == "ok"
    assert kernel.execute("%limits " + " ".join(f"{n}=0" for n in LIMIT_NAMES)).status == "ok"
    return kernel


LIMIT_NAMES = (
    "step_timeout",
    "max_tokens_per_turn",
    "max_cost_per_turn",
    "max_tokens_per_session",
    "max_cost_per_session",
)


def test_risky_policy_runs_harmless_code_and_asks_for_flagged_code(oi, _server):
    (oi.tmp / "data").mkdir(exist_ok=True)
    oi.execute("%approval risky")
    _server.enqueue(
        S.tool_call("print('harmless-ran')"),
        S.tool_call("import shutil\nshutil.rmtree('data')\nprint('deleted')"),
        S.text("done"),
    )
    result = oi.execute("tidy up", stdin=["n"])
    assert result.status == "ok"
    assert len(result.prompts) == 1  # asked once: for the flagged block only
    assert "Run this code?" in result.prompts[0]
    assert "harmless-ran" in result.stdout and "deleted" not in result.stdout
    assert (oi.tmp / "data").is_dir()
    told = sent_tool_results(_server.requests[2])
    assert told[0] == "harmless-ran"
    assert "declined" in told[1]


def test_step_timeout_interrupts_and_tells_the_llm(oi, _server):
    oi.execute("%%python\nkept = 'before'")
    oi.execute("%limits step_timeout=2")
    _server.enqueue(S.tool_call("print('spinning', flush=True)\nwhile True:\n    pass"))
    _server.enqueue(S.text("It was too slow."))
    started = time.monotonic()
    result = oi.execute("spin forever", timeout=60)
    assert time.monotonic() - started < 30
    assert result.status == "ok"  # the turn went on: the LLM was told and answered
    assert "step timeout" in result.text and "OI_STEP_TIMEOUT" in result.text
    told = sent_tool_results(_server.requests[1])[0]
    assert "step timeout of 2 s" in told
    assert "It was too slow." in result.text
    # the interrupt was enough: the same kernel, variables kept
    assert oi.execute("%%python\nprint(kept)").stdout == "before\n"


def test_step_timeout_restarts_a_child_that_ignores_interrupts(oi, _server):
    oi.execute("%%python\nkept = 'before'")
    oi.execute("%limits step_timeout=2")
    code = "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass"
    _server.enqueue(S.tool_call(code), S.text("ok"))
    started = time.monotonic()
    result = oi.execute("spin harder", timeout=90)
    assert time.monotonic() - started < 60
    assert "step timeout" in sent_tool_results(_server.requests[1])[0]
    assert result.status == "ok"
    after = oi.execute("%%python\nprint('kept' in dir())", timeout=90)
    assert after.stdout == "False\n"  # a new kernel: it answers, the old state is gone


def test_token_cap_per_instruction_ends_the_turn(oi, _server):
    oi.execute("%limits max_tokens_per_turn=1")
    _server.enqueue(S.tool_call("print('ran-once')"), S.text("never asked for"))
    result = oi.execute("count tokens")
    assert result.status == "ok"
    assert "ran-once" in result.stdout  # the proposed step ran; then the cap ended the turn
    assert len(_server.requests) == 1
    assert "token cap" in result.text and "OI_MAX_TOKENS" in result.text


def test_session_token_cap_stops_before_any_request(oi, _server):
    _server.enqueue(S.text("warm"))
    oi.execute("say something")  # the session has used some tokens now
    oi.execute("%limits max_tokens_per_session=1")
    _server.reset()
    result = oi.execute("say more")
    assert _server.requests == []
    assert "OI_MAX_SESSION_TOKENS" in result.text and "this session" in result.text


def test_cost_cap_with_a_priced_model(oi, _server):
    # litellm knows this model's price; the scripted server answers for any model name
    oi.execute("%model openai/gpt-4o-mini")
    try:
        oi.execute("%limits max_cost_per_turn=0.0000001")
        _server.enqueue(S.tool_call("print('priced')"), S.text("never asked for"))
        result = oi.execute("spend money")
        assert len(_server.requests) == 1
        assert "cost cap" in result.text and "OI_MAX_COST" in result.text
    finally:
        oi.execute("%model openai/scripted")


def test_limits_magic_shows_and_rejects(oi):
    shown = oi.execute("%limits step_timeout=7.5")
    assert "| `step_timeout` | 7.5 |" in shown.text
    bad = oi.execute("%limits step_timeout=soon")
    assert bad.status == "error" and "not a number" in bad.reply["content"]["evalue"]
    unknown = oi.execute("%limits speed=3")
    assert unknown.status == "error" and "max_tokens_per_turn" in unknown.reply["content"]["evalue"]


def test_a_100_mb_print_reaches_the_user_and_only_head_and_tail_reach_the_llm(oi, _server):
    _server.enqueue(S.tool_call("print('start-' + 'x' * 100_000_000 + '-end')"), S.text("ok"))
    seen = [0]

    def count(msg: dict) -> None:
        if msg["header"]["msg_type"] == "stream":
            seen[0] += len(msg["content"]["text"])

    result = oi.execute("print a lot", timeout=300, on_message=count)
    assert result.status == "ok"
    assert seen[0] == 100_000_011 + len("ok\n")  # the user sees all of it (and the reply)
    told = sent_tool_results(_server.requests[1])[0]
    assert len(told) < 10_000 and told.startswith("start-") and told.endswith("-end")
    log_path = Path(oi.execute("%log").text.split("`")[1])
    assert log_path.stat().st_size < 5_000_000  # the recorded output is bounded too


def test_secrets_never_reach_the_llm_the_log_or_an_export(oi, _server):
    _server.enqueue(S.tool_call("import os\nprint(dict(os.environ))"), S.text("done"))
    result = oi.execute("show me the environment")
    assert OPENAI_KEY in result.stdout  # the user's own screen shows their environment
    bodies = json.dumps(_server.requests)
    assert MARKER in bodies  # the environment did go back to the LLM...
    for secret in SECRETS:  # ...without the secrets
        assert secret not in bodies
    log_path = Path(oi.execute("%log").text.split("`")[1])
    export = oi.tmp / "secrets-export.ipynb"
    assert oi.execute(f"%export {export} --force").status == "ok"
    for path in (log_path, export):
        text = path.read_text()
        assert MARKER in text
        for secret in SECRETS:
            assert secret not in text, (path, secret)


# ------------------------------------------------------------------ memory limit
def test_memory_limit_stops_a_runaway_allocation_and_the_kernel_lives(_server, tmp_path):
    env = kernel_env(_server, tmp_path, OI_AUTO_RUN="1", OI_MEMORY_LIMIT="1200M")
    _server.reset()
    with KernelSession(env=env, cwd=str(tmp_path)) as ks:
        limit = ks.execute(
            "%%python\nimport resource\nkept = 1\nprint(resource.getrlimit(resource.RLIMIT_AS)[0])"
        )
        assert limit.stdout == f"{1200 * 1024**2}\n"
        _server.enqueue(
            S.tool_call("blob = bytearray(8 * 1024**3)"),
            S.tool_call("chunks = []\nwhile True:\n    chunks.append(bytearray(10**7))"),
            S.text("Out of memory, twice."),
        )
        result: CellResult = ks.execute("use all the memory", timeout=120)
        assert result.status == "ok"
        errors = [m["content"]["ename"] for m in result.of_type("error")]
        assert errors == ["MemoryError"]  # the last, in full; the first compact
        assert result.text.count("MemoryError") >= 2
        told = sent_tool_results(_server.requests[2])
        assert all("MemoryError" in t for t in told)
        alive = ks.execute("%%python\ndel chunks\nprint(kept)")
        assert alive.stdout == "1\n"  # same kernel: the state survived
