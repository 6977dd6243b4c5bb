"""The three front doors (the Open Interpreter kernel, ``%%oi``, the Python API) share one
session assembly: the same secrets are masked everywhere, the same commands exist, and
loading oi_kernel into a user's own process changes nothing the user set up."""

from __future__ import annotations

import concurrent.futures
import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from oi_kernel import Interpreter
from oi_kernel.cli.headless import run_notebook
from oi_kernel.cli.install import LOGOS, install_kernelspec
from oi_kernel.core.conversation import MessageList
from oi_kernel.core.types import ApprovalRequest, CodeBlock
from oi_kernel.record.export import export_notebook
from oi_kernel.safety.risk import review_or_flag
from oi_kernel.session import commands
from oi_kernel.session.assembly import build_session
from tests import llm_server as S
from tests.env import oi_env
from tests.kernel_client import KernelSession

TOKEN = "tok-4f1c9e2b7a6d5e8f"  # not key-shaped: only its name says it is secret
PASSWORD = "correct-horse-battery-staple-42"
LEAK = "import os\nprint(os.environ['GITHUB_TOKEN'], os.environ['DB_PASSWORD'])"


# ----------------------------------------------------------------------------- secrets
def _leak_through(door: str, server: S.ScriptedLLMServer, tmp: Path,
                  monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run the leaking step through one front door; returns the session log."""
    server.enqueue(S.tool_call(LEAK), S.text("Printed them."))
    secrets = {"GITHUB_TOKEN": TOKEN, "DB_PASSWORD": PASSWORD}
    logs = tmp / "logs"
    if door == "api":
        for name, value in secrets.items():
            monkeypatch.setenv(name, value)
        with Interpreter("openai/scripted", api_base=server.url, api_key="sk-test-abc12345",
                         auto_run=True, log_dir=logs, cwd=tmp) as it:
            chunks = list(it.chat("print my token and password"))
            shown = "".join(getattr(c, "text", "") for c in chunks)
            assert TOKEN in shown  # the user sees their own output
            return it.log_path
    env = oi_env(server, tmp, OI_AUTO_RUN="1", **secrets)
    kernel = "open-interpreter" if door == "kernel" else "python3"
    with KernelSession(kernel_name=kernel, env=env, cwd=str(tmp)) as ks:
        if door == "magic":
            assert ks.execute("%load_ext oi_kernel").status == "ok"
            cell = ks.execute("%%oi -y\nprint my token and password")
        else:
            cell = ks.execute("print my token and password")
        assert cell.status == "ok" and TOKEN in cell.text
    (log,) = logs.glob("*.jsonl")
    return log


@pytest.mark.parametrize("door", ["kernel", "magic", "api"])
def test_secrets_are_masked_before_the_llm_the_log_and_the_export(
        door, llm_server, tmp_path, monkeypatch):
    log = _leak_through(door, llm_server, tmp_path, monkeypatch)
    sent = json.dumps(llm_server.requests)
    exported = export_notebook(log, tmp_path / "export.ipynb").read_text()
    for where, text in (("the LLM", sent), ("the log", log.read_text()), ("the export", exported)):
        assert TOKEN not in text and PASSWORD not in text, f"a secret reached {where}"
    assert "[REDACTED] [REDACTED]" in json.dumps(llm_server.requests[-1]["messages"])


# ----------------------------------------------------------------------------- risk review
def test_a_failing_risk_review_fails_closed(monkeypatch):
    def broken(language: str, code: str) -> list:
        raise ValueError("reviewer bug")

    monkeypatch.setattr("oi_kernel.safety.risk.review", broken)
    flags = review_or_flag("python", "print(1)")
    assert [(f.category, f.severity) for f in flags] == [("unreviewed", "high")]
    assert "reviewer bug" in flags[0].reason
    session = build_session("api", approver=object(), logging=False,
                            engine_options={"approval": "risky"})
    request = ApprovalRequest(1, 1, CodeBlock("python", "print(1)"), flags)
    assert session.engine.steps.needs_approval(request)  # under "risky" it asks
    assert not session.engine.steps.needs_approval(ApprovalRequest(1, 1, request.block, []))


# ----------------------------------------------------------------------------- the user's process
def test_importing_litellm_leaves_the_environment_as_it_was():
    code = (
        "import os\n"
        "os.environ.pop('LITELLM_LOCAL_MODEL_COST_MAP', None)\n"
        "from oi_kernel.llm import boundary\n"
        "litellm = boundary.load()\n"
        "from openai.resources.chat.completions import completions\n"
        "print(json.dumps(['LITELLM_LOCAL_MODEL_COST_MAP' in os.environ,\n"
        "      len(litellm.model_cost) > 100,\n"
        "      hasattr(completions.async_maybe_transform, '_oi_skips_noop')]))\n"
    )
    out = subprocess.run([sys.executable, "-c", "import json\n" + code], capture_output=True,
                         text=True, timeout=120, check=True)
    assert json.loads(out.stdout.splitlines()[-1]) == [False, True, False]


USER_CALLBACK = """
import litellm, time
seen = []
def my_callback(kwargs, response, start, end):
    seen.append(kwargs.get("model"))
litellm.success_callback = [my_callback]
"""
USER_CALL = """
before = len(seen)
litellm.completion(model="openai/scripted", api_base={url!r}, api_key="sk-user-0000000000",
                   messages=[{{"role": "user", "content": "hi"}}])
for _ in range(100):
    if len(seen) > before:
        break
    time.sleep(0.05)
from openai.resources.chat.completions import completions
import os
print(len(seen) > before, litellm.success_callback == [my_callback],
      hasattr(completions.async_maybe_transform, "_oi_skips_noop"))
"""


def test_oi_leaves_the_users_litellm_as_it_was(llm_server, tmp_path):
    """A user's litellm callback still fires for the user's own calls after
    ``%load_ext oi_kernel`` and a turn; the openai SDK is not patched in their process."""
    env = oi_env(llm_server, tmp_path, OI_AUTO_RUN="1")
    with KernelSession(kernel_name="python3", env=env, cwd=str(tmp_path)) as ks:
        assert ks.execute(USER_CALLBACK, timeout=120).status == "ok"
        assert ks.execute("%load_ext oi_kernel").status == "ok"
        llm_server.enqueue(S.tool_call("x = 41 + 1\nprint(x)"), S.text("42."))
        assert "42" in ks.execute("%%oi\nwhat is 41 + 1?").text
        llm_server.enqueue(S.text("hello"))
        result = ks.execute(USER_CALL.format(url=llm_server.url), timeout=60)
        assert result.stdout.strip() == "True True False", result.text


# ----------------------------------------------------------------------------- commands
def test_kernel_and_magic_offer_the_same_commands():
    kernel = build_session("kernel", approver=object(), logging=False)
    magic = build_session("magic", approver=object(), logging=False,
                          executor=kernel.runner)  # any executor: the magic brings its own
    magic.child = None
    in_kernel = {c.name for c in commands.available(kernel)}
    in_magic = {c.name for c in commands.available(magic)}
    # the only ones that need a child of ours (rebuild: once session.rebuild is imported)
    assert in_magic == in_kernel - {"sandbox", "rebuild"}
    assert {"model", "history", "export", "undo", "save", "load", "tokens", "reset",
            "approval", "instructions", "profile", "help", "limits", "log"} <= in_magic
    assert commands.complete(kernel, "%ap") == ["%approval"]
    assert commands.complete(magic, "%oi ap") == ["%oi approval"]


def test_the_same_command_line_does_the_same_in_both(llm_server, tmp_path):
    env = oi_env(llm_server, tmp_path)
    with KernelSession(env=env, cwd=str(tmp_path)) as oi:
        in_kernel = oi.execute("%approval risky").text
        kernel_help = oi.execute("%help").text
    with KernelSession(kernel_name="python3", env=env, cwd=str(tmp_path)) as py:
        assert py.execute("%load_ext oi_kernel").status == "ok"
        in_magic = py.execute("%oi approval risky").text
        magic_help = py.execute("%oi help").text
        replayed = py.execute("%oi load missing.json --replay")  # awaits: a top-level await cell
        assert replayed.status == "error" and "No file" in replayed.text
    assert in_kernel == in_magic == "Approval policy: `risky`."
    for name in ("model", "undo", "save", "load", "tokens", "limits"):
        assert f"`%{name}`" in kernel_help and f"`%oi {name}`" in magic_help


# ----------------------------------------------------------------------------- conversation
def test_the_api_messages_setter_keeps_turn_boundaries():
    with Interpreter("openai/none", log=False) as a, Interpreter("openai/none", log=False) as b:
        conversation = a.engine.conversation
        conversation.start_turn("first")
        conversation.append({"role": "assistant", "content": "```python\nx = 1\n```"})
        conversation.append({"role": "user", "content": "The code ran and printed nothing."})
        conversation.append({"role": "assistant", "content": "Done."})
        conversation.start_turn("second")
        assert isinstance(a.messages, MessageList) and a.messages.turn_starts == [0, 4]
        b.messages = copy.deepcopy(a.messages)  # fork
        assert b.engine.conversation.turn_starts == [0, 4]
        assert b.engine.undo(1) == ["second"] and len(a.messages) == 5
        b.messages = [dict(m) for m in a.messages]  # a plain list: turns inferred
        assert b.engine.conversation.turn_starts == [0, 4]


# ----------------------------------------------------------------------------- cli
def _direct_notebook(path: Path, text: str) -> Path:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(f"%%python\nprint({text!r})")])
    nb.metadata["kernelspec"] = {"name": "open-interpreter", "display_name": "Open Interpreter",
                                 "language": "markdown"}
    nbformat.write(nb, path)
    return path


def test_two_headless_runs_at_once_each_find_their_own_log(tmp_path, llm_server):
    """The runner names the kernel's session (OI_SESSION_ID), so runs sharing a log
    directory do not take each other's log."""
    env = oi_env(llm_server, tmp_path)
    books = [_direct_notebook(tmp_path / f"{name}.ipynb", name) for name in ("alpha", "beta")]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda nb: run_notebook(nb, env=env, timeout=120), books))
    for result, name in zip(results, ("alpha", "beta"), strict=True):
        assert result.ok, result.error
        assert len(result.logs) == 1
        records = [json.loads(line) for line in result.logs[0].read_text().splitlines()]
        assert [r["code"] for r in records if r["event"] == "direct"] == [f"print({name!r})"]
        assert records[0]["headless"] is True


def test_install_ships_the_logos(tmp_path):
    name, display, dest = install_kernelspec("oi-logo-test", prefix=str(tmp_path))
    assert (name, display) == ("oi-logo-test", "Open Interpreter")
    assert sorted(os.listdir(dest)) == sorted([*LOGOS, "kernel.json"])
    assert Path(dest, "logo-64x64.png").read_bytes()[:4] == b"\x89PNG"
