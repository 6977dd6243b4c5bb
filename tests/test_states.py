"""Named states (``%state save|restore|drop NAME``, ``%states``) as a user meets them: a real
kernel and child, litellm over HTTP to the scripted server. The tree (restoring an older
state keeps the newer ones), a state whose kernel was SIGKILLed restored through the
recorded steps, the model's ``restore_state`` tool call, the Python API, bad input."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from tests import llm_server as S
from tests.kernel_client import KernelSession
from tests.test_kernel import kernel_env
from tests.test_rebuild import _build_sales, _kernel, _log_events

pytestmark = pytest.mark.timeout(240)


def _py(ks: KernelSession, code: str) -> str:
    result = ks.execute(f"%%python\n{code}", timeout=60)
    assert result.status == "ok", result.text
    return result.stdout


def test_states_form_a_tree_restoring_older_keeps_newer(llm_server, tmp_path):
    with KernelSession(env=kernel_env(llm_server, tmp_path, OI_AUTO_RUN="1"),
                       cwd=str(tmp_path)) as ks:
        _py(ks, "x = 1\nopen('a.txt', 'w').write('one')")
        assert "Saved state `S1`: 1 variable, kept on disk" in ks.execute("%state save S1").text
        _py(ks, "import collections\nx = 2\nc = collections.Counter('ab')\n"
                "open('a.txt', 'w').write('two')\nopen('b.txt', 'w').write('b')")
        assert "held by a fork" in ks.execute("%state save S2").text  # (a Counter)

        back = ks.execute("%state restore S1")
        assert back.status == "ok"
        assert "removed `c`" in back.text and "Files put back: `a.txt`" in back.text
        assert "Files removed (not in the state): `b.txt`" in back.text
        assert _py(ks, "print(x, 'c' in dir())") == "1 False\n"
        assert (tmp_path / "a.txt").read_text() == "one" and not (tmp_path / "b.txt").exists()

        _py(ks, "y = 5\nopen('a.txt', 'w').write('branch')")  # work after a restore: a branch
        ks.execute("%state save S3")
        assert ks.execute("%state restore S2").status == "ok"  # the newer one is still there
        assert _py(ks, "print(x, c['a'], 'y' in dir())") == "2 1 False\n"
        assert (tmp_path / "a.txt").read_text() == "two" and (tmp_path / "b.txt").exists()

        tree = ks.execute("%states").text
        lines = [line for line in tree.splitlines() if line.lstrip().startswith("- ")]
        assert [line.split("`")[1] for line in lines] == ["S1", "S2", "S3"]
        assert lines[0].startswith("- ") and lines[1].startswith("  - ")
        assert lines[2].startswith("  - ")  # S3 grew from S1 too: a branch beside S2
        assert "← you are here" in lines[1]
        assert "Dropped state `S3`" in ks.execute("%state drop S3").text
        assert "S3" not in ks.execute("%states").text
    saved = [e for e in _log_events(tmp_path) if e["event"] == "state"]
    assert [(e["action"], e["name"]) for e in saved][:3] == [
        ("save", "S1"), ("save", "S2"), ("restore", "S1")]


def test_a_state_outlives_a_sigkilled_kernel_through_its_recorded_steps(llm_server, tmp_path):
    with _kernel(llm_server, tmp_path) as ks:
        _build_sales(ks, llm_server)  # df (a DataFrame: a fork holds it) and total
        assert "held by a fork" in ks.execute("%state save sales").text
        _py(ks, "df = None\nopen('sales.csv', 'w').write('broken')")
        pid = int(_py(ks, "import os\nprint(os.getpid())"))
        os.kill(pid, signal.SIGKILL)  # as the OOM killer does
        time.sleep(1.5)  # the watchdog notices
        _py(ks, "scratch = 1")  # the new kernel

        done = ks.execute("%state restore sales", timeout=120)
        assert done.status == "ok", done.text
        assert "Rebuilding state `sales`" in done.text
        assert done.text.index("pd.read_csv") < done.text.index("int(df['amount'].sum())")
        assert "Rebuilt**: 2 of 2 steps ran again" in done.text
        assert _py(ks, "print(len(df), total, 'scratch' in dir())") == "3 42 False\n"
        assert (tmp_path / "sales.csv").read_text().startswith("month,amount")
        assert (tmp_path / "runs.txt").read_text() == "loaded\n"  # as the state had it


# Started by a cell: waits (in the kernel's child) until the state's copies are under way in
# their thread (``later``, started when ``%state save`` returns), then changes the file, as a
# process or thread other than a cell may do in that window.
CHANGER = """import sys, threading, time
def _change():
    end = time.time() + 60
    while time.time() < end:
        if any(f.f_code.co_name == 'later' for f in sys._current_frames().values()):
            open('data.txt', 'w').write('changed after the save')
            return
        time.sleep(0.0005)
_changer = threading.Thread(target=_change, daemon=True)
_changer.start()
"""


def test_a_file_changed_while_the_state_copies_it_is_said_on_restore(llm_server, tmp_path):
    with KernelSession(env=kernel_env(llm_server, tmp_path, OI_AUTO_RUN="1"),
                       cwd=str(tmp_path)) as ks:
        _py(ks, "open('data.txt', 'w').write('as saved')\nx = 1\n" + CHANGER)
        assert ks.execute("%state save S1").status == "ok"
        _py(ks, "_changer.join(60)\nassert not _changer.is_alive()")
        assert (tmp_path / "data.txt").read_text() == "changed after the save"
        _py(ks, "open('data.txt', 'w').write('later work')")
        back = ks.execute("%state restore S1")
        assert back.status == "ok", back.text
        now = (tmp_path / "data.txt").read_text()
        # either the copy was made before the change (the state has the file as saved), or
        # the state keeps what was copied and the restore says so: never a silent change
        assert now == "as saved" or (
            now == "changed after the save"
            and "Changed while the state was being saved" in back.text
            and "`data.txt`" in back.text.split("Changed while")[1]), (now, back.text)


def test_the_model_proposes_a_restore_and_it_asks_like_a_step(llm_server, tmp_path):
    asked: list[str] = []

    def answer(prompt: str) -> str:
        asked.append(prompt)
        return "y"

    with KernelSession(env=kernel_env(llm_server, tmp_path), cwd=str(tmp_path)) as ks:
        _py(ks, "outliers = [1, 2, 99]")
        ks.execute("%state save S2")
        _py(ks, "outliers = [1, 2]")
        call = S.Call(json.dumps({"name": "S2"}), "restore_state")
        llm_server.enqueue(S.Response(calls=[call]), S.text("Back at S2."))
        turn = ks.execute("go back to S2", stdin=answer)
        assert turn.status == "ok", turn.text
        assert len(asked) == 1  # the card (here: stdin) asked before the restore ran
        assert "restore_state" in asked[0] and "goes back to a named state" in asked[0]
        assert "Restored state `S2`" in turn.text
        assert _py(ks, "print(outliers)") == "[1, 2, 99]\n"
        offered = [t["function"]["name"] for t in llm_server.requests[0].get("tools", [])]
        assert "restore_state" in offered
    decisions = [e for e in _log_events(tmp_path) if e["event"] == "decision"]
    assert [d["action"] for d in decisions] == ["approved"]


def test_bad_input_lists_the_known_states_and_a_state_too_large_is_refused(llm_server,
                                                                             tmp_path):
    from oi_kernel.api import Interpreter
    from oi_kernel.errors import OIError

    (tmp_path / "big.bin").write_bytes(b"x" * 5000)
    it = Interpreter("openai/scripted", api_base=llm_server.url, api_key="sk-test-123456789",
                     log_dir=tmp_path / "logs", cwd=tmp_path, auto_run=True)
    with it:
        it.run_code("a = 1")
        it.engine.max_checkpoint_bytes = 1000
        with pytest.raises(OIError) as refused:
            it.states.save("S1")
        said = str(refused.value)
        assert "5.0 KB" in said and "c.Engine.max_checkpoint_bytes" in said
        assert list(it.states) == []
        it.engine.max_checkpoint_bytes = 100_000
        assert "Saved state `S1`" in it.states.save("S1")
        it.run_code("a = 2")
        with pytest.raises(OIError, match="There is no state named 'S9'. States kept: `S1`"):
            it.states.restore("S9")
        with pytest.raises(OIError, match="exists already"):
            it.states.save("S1")
        with pytest.raises(OIError, match="letters, digits"):
            it.states.save("a/b")
        assert "Restored state `S1`" in it.states.restore("S1")
        assert it.run_code("print(a)").text.strip() == "1"
        assert it.states.current == "S1" and [s.name for s in it.states] == ["S1"]


def test_state_commands_exist_in_every_front_door():
    from oi_kernel.session import commands
    from oi_kernel.session import states as _states  # noqa: F401
    from oi_kernel.session.assembly import build_session

    kernel = build_session("kernel", approver=object(), logging=False)
    magic = build_session("magic", approver=object(), logging=False, executor=kernel.runner)
    magic.child = None
    for session in (kernel, magic):
        assert {"state", "states"} <= {c.name for c in commands.available(session)}


def test_the_tree_in_words():
    from types import SimpleNamespace as NS

    from oi_kernel.session.states_text import size_text, tree_markdown

    info = {"variables": 2, "files": 1, "bytes": 1500, "plain": True}
    states = [NS(name="a", parent=None, created=1.0, instruction="", info=info),
              NS(name="b", parent="a", created=2.0, instruction="instruction 2 (“x”)",
                 info={**info, "plain": False}),
              NS(name="c", parent="gone", created=3.0, instruction="", info=info)]
    text = tree_markdown(states, "b", "%")
    assert "- `a` —" in text and "  - `b` **← you are here**" in text
    assert "- `c` —" in text  # a parent that was dropped: at the top
    assert "after instruction 2" in text and "(fork)" in text and "1.5 KB" in text
    assert size_text(999) == "999 bytes" and size_text(2_500_000) == "2.5 MB"
    assert "No named states yet" in tree_markdown([], None, "%")


def test_the_probe_parts_define_each_name_once():
    """The probe package gives its top module every part's names (``probe.install``): a
    name defined in two parts would silently replace the first there (a state's file
    restore once replaced the checkpoints' own)."""
    import ast

    from oi_kernel.execution import probe

    seen: dict[str, str] = {}
    here = Path(probe.__file__).parent
    for part in probe.PARTS:
        tree = ast.parse((here / f"{part}.py").read_text())
        for node in tree.body:
            names = [node.name] if isinstance(node, (ast.FunctionDef, ast.ClassDef)) else [
                t.id for t in getattr(node, "targets", []) if isinstance(t, ast.Name)]
            for name in names:
                assert seen.setdefault(name, part) == part, f"{name}: {seen[name]} and {part}"


def test_acp_state_commands_go_through_the_agent(llm_server, tmp_path):
    from tests.test_acp import Client, agent, prompt, run

    llm_server.enqueue(S.tool_call("kept = [1, 2, 3]"), S.text("Kept."),
                       S.tool_call("kept = []"), S.text("Emptied."),
                       S.tool_call("print(len(kept))"), S.text("3."))
    client = Client(["allow_once"] * 4)

    async def go() -> None:
        async with agent(llm_server, tmp_path, client) as (conn, _proc, sid):
            await prompt(conn, sid, "keep three numbers")
            await prompt(conn, sid, "/state save three")
            await prompt(conn, sid, "empty the list")
            await prompt(conn, sid, "/states")
            await prompt(conn, sid, "/state restore three")
            await prompt(conn, sid, "how many are kept?")

    run(go())
    said = client.message()
    assert "Saved state `three`" in said and "`three` **← you are here**" in said
    assert "Restored state `three`. Variables as the state has them: 1 put back" in said
