"""``%rebuild``: a lost child kernel's variables built again from the session log. The plan
read from records (pure), then as a user meets it: a real kernel, a real child killed by
``os._exit`` or SIGKILL, litellm talking HTTP to the scripted server."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from oi_kernel.errors import OIError
from oi_kernel.record.records import parse_record
from oi_kernel.session import rebuild as R
from tests import llm_server as S
from tests.kernel_client import KernelSession
from tests.test_kernel import kernel_env

LOAD = ("import pandas as pd\ndf = pd.read_csv('sales.csv')\n"
        "_ = open('runs.txt', 'a').write('loaded\\n')")
TOTAL = "total = int(df['amount'].sum())\nprint(total)"
KILL = "%%python\nimport os\nos._exit(1)"


# ----------------------------------------------------------------------------- the plan
def _records(*lines: dict) -> list:
    return [parse_record({"v": 1, "seq": i, **line}) for i, line in enumerate(lines)]


def _step(turn: int, step: int, code: str, action: str = "auto", status: str = "ok",
          language: str = "python") -> list[dict]:
    both = {"turn": turn, "step": step, "language": language, "code": code}
    return [{"event": "decision", "action": action, **both},
            {"event": "execution", "status": status, **both}]


def test_the_plan_keeps_what_ran_to_the_end_in_order_since_the_last_restart():
    records = _records(
        {"event": "session_start"},
        {"event": "turn_start", "turn": 1, "instruction": "old"},
        *_step(1, 1, "gone = 1"),
        {"event": "child_restart", "reason": "%reset --restart"},
        {"event": "turn_start", "turn": 2, "instruction": "load the sales"},
        *_step(2, 1, "print(nope)", status="error"),
        *_step(2, 2, "df = 1", action="edited"),
        {"event": "decision", "turn": 2, "step": 3, "action": "skipped", "language": "python",
         "code": ""},
        {"event": "direct", "kind": "shell", "code": "!echo hi", "status": "ok"},
        {"event": "direct", "kind": "python", "code": "import os\nos._exit(1)",
         "status": "died"},
        {"event": "child_restart", "reason": "the previous child kernel died"},
    )
    plan = R.plan(records)
    assert plan.lost == "it died"
    assert [s.block.code for s in plan.steps] == ["df = 1", "!echo hi"]
    assert plan.steps[0].turn == 2 and plan.steps[1].turn is None
    assert [s.split(":")[0] for s in plan.skipped] == [
        "instruction 2 (“load the sales”), step 1", "instruction 2 (“load the sales”), step 3",
        "`%%python` cell"]
    assert "error" in plan.skipped[0] and "skipped" in plan.skipped[1]
    assert "died" in plan.skipped[2]


def test_nothing_lost_or_rebuilt_already_is_said_plainly():
    with pytest.raises(OIError, match="nothing to rebuild"):
        R.plan(_records({"event": "session_start"}, *_step(1, 1, "x = 1")))
    again = _records({"event": "child_restart", "reason": "the previous child kernel died"},
                     {"event": "rebuild", "lost": "it died", "planned": 1, "ran": 1})
    with pytest.raises(OIError, match="rebuilt already"):
        R.plan(again)


def test_flagged_steps_ask_again_and_the_listing_says_so():
    records = _records(
        {"event": "turn_start", "turn": 1, "instruction": "tidy"},
        *_step(1, 1, "import os\nos.remove('old.txt')"),
        *_step(1, 2, "x = 1"),
        {"event": "child_restart", "reason": "the previous child kernel died"})
    plan = R.plan(records)
    assert [s.asks for s in plan.steps] == [True, False]
    text = R.plan_markdown(plan, "%", dry_run=True)
    assert "flagged: delete-files — **asks again**" in text and "no risk flags" in text
    assert "would re-run 2 recorded steps" in text and "Nothing was run" in text


# ----------------------------------------------------------------------------- a real kernel
def _kernel(server: S.ScriptedLLMServer, tmp: Path) -> KernelSession:
    (tmp / "sales.csv").write_text("month,amount\njan,10\nfeb,20\nmar,12\n")
    return KernelSession(env=kernel_env(server, tmp, OI_AUTO_RUN="1"), cwd=str(tmp))


def _build_sales(ks: KernelSession, server: S.ScriptedLLMServer) -> None:
    server.enqueue(S.tool_call(LOAD), S.text("Loaded."))
    assert ks.execute("read sales.csv into df").status == "ok"
    server.enqueue(S.tool_call("print(nope)"), S.tool_call(TOTAL), S.text("The total is 42."))
    assert "42" in ks.execute("add up the amounts").stdout


def _log_events(tmp: Path) -> list[dict]:
    (log,) = (tmp / "logs").glob("*.jsonl")
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_a_child_lost_to_os_exit_is_rebuilt_with_its_dataframe(llm_server, tmp_path):
    with _kernel(llm_server, tmp_path) as ks:
        _build_sales(ks, llm_server)
        died = ks.execute(KILL, timeout=30)
        assert "died" in died.text
        after = ks.execute("%%python\nprint('df' in dir())")
        assert after.stdout == "False\n"
        assert "%rebuild" in after.stderr and "--dry-run" in after.stderr

        listing = ks.execute("%rebuild --dry-run").text
        assert "would re-run 2 recorded steps" in listing
        assert listing.index("pd.read_csv") < listing.index("int(df['amount'].sum())")
        assert "step 1: it ended with an error" in listing  # print(nope)
        assert "the kernel died while it ran" in listing  # the os._exit cell
        assert ks.execute("%%python\nprint('df' in dir())").stdout == "False\n"  # nothing ran

        done = ks.execute("%rebuild", timeout=60)
        assert done.status == "ok"
        assert "Rebuilt**: 2 of 2 steps ran again" in done.text
        assert "`df`" in done.text and "`total`" in done.text
        back = ks.execute("%%python\nprint(len(df), total)")
        assert back.stdout == "3 42\n"
        # the files were put back as before the first step, which appended to runs.txt again
        assert "Files put back as they were before instruction 1: removed `runs.txt`" in done.text
        assert (tmp_path / "runs.txt").read_text() == "loaded\n"
        assert "rebuilt already" in ks.execute("%rebuild").text

    events = _log_events(tmp_path)
    (rebuilt,) = [e for e in events if e["event"] == "rebuild"]
    assert rebuilt["planned"] == 2 and rebuilt["ran"] == 2 and rebuilt["failed"] == ""
    starts = [e for e in events if e["event"] == "turn_start"]
    assert starts[-1]["instruction"] == "%rebuild" and starts[-1]["rebuild"] == "it died"


def test_sigkill_then_a_deliberate_restart_rebuild_the_same_way(llm_server, tmp_path):
    with _kernel(llm_server, tmp_path) as ks:
        _build_sales(ks, llm_server)
        pid = int(ks.execute("%%python\nimport os\nprint(os.getpid())").stdout)
        os.kill(pid, signal.SIGKILL)  # as the OOM killer does
        time.sleep(1.5)  # the watchdog notices
        # the two steps and the cell that printed the pid (a direct cell that ran)
        assert "Rebuilt**: 3 of 3" in ks.execute("%rebuild", timeout=60).text
        assert ks.execute("%%python\nprint(total)").stdout == "42\n"

        assert "%rebuild" in ks.execute("%reset --restart").text
        assert ks.execute("%%python\nprint('total' in dir())").stdout == "False\n"
        text = ks.execute("%rebuild", timeout=60).text
        # what the rebuild ran (three steps) and the cell after it
        assert "restarted (%reset --restart)" in text and "Rebuilt**: 4 of 4" in text
        assert ks.execute("%%python\nprint(len(df), total)").stdout == "3 42\n"


def test_a_flagged_step_asks_again_and_a_failing_step_stops_the_rebuild(llm_server, tmp_path):
    fetch = ("import urllib.request\ndef fetch():\n"
             "    return urllib.request.urlopen('http://127.0.0.1:9/')")
    with _kernel(llm_server, tmp_path) as ks:
        (tmp_path / "notes.txt").write_text("kept outside")
        llm_server.enqueue(S.tool_call(fetch), S.tool_call("first = 1"),
                           S.tool_call("notes = open('notes.txt').read()"),
                           S.tool_call("last = 3"), S.text("Done."))
        assert ks.execute("set things up").status == "ok"
        ks.execute(KILL, timeout=30)
        (tmp_path / "notes.txt").unlink()  # changed outside the session

        listing = ks.execute("%rebuild --dry-run").text
        assert "flagged: network — **asks again**" in listing

        done = ks.execute("%rebuild", stdin=["y"], timeout=60)
        assert len(done.prompts) == 1  # only the network step asked
        assert "urlopen" in done.prompts[0] or "network" in done.prompts[0]
        assert "Rebuild stopped at step 3 of 4" in done.text
        assert "FileNotFoundError" in done.text and "notes.txt" in done.text
        left = ks.execute("%%python\nprint(callable(fetch), first, 'last' in dir())")
        assert left.stdout == "True 1 False\n"  # what ran before the failure is kept

        (tmp_path / "notes.txt").write_text("back")  # the cause fixed: it goes on from there
        listing = ks.execute("%rebuild --dry-run").text
        assert "would re-run 2 recorded steps" in listing and "goes on from step 3" in listing
        assert "urlopen" not in listing  # (ran in the rebuild before)
        again = ks.execute("%rebuild", timeout=60)
        assert again.prompts == [] and "Rebuilt**: 2 of 2 steps ran again" in again.text
        assert ks.execute("%%python\nprint(first, notes, last)").stdout == "1 back 3\n"
        assert "rebuilt already" in ks.execute("%rebuild").text

    first_try, second = [e for e in _log_events(tmp_path) if e["event"] == "rebuild"]
    assert first_try["ran"] == 2 and "step 3" in first_try["failed"]
    assert (first_try["planned"], first_try["done"]) == (4, 2)
    assert (second["ran"], second["done"], second["failed"]) == (2, 4, "")


def test_a_flagged_step_with_no_way_to_ask_stops_the_rebuild_and_it_is_recorded(
        llm_server, tmp_path):
    with _kernel(llm_server, tmp_path) as ks:
        llm_server.enqueue(S.tool_call("x = 1"),
                           S.tool_call("import os\nif os.path.exists('old.txt'):\n"
                                       "    os.remove('old.txt')"), S.text("Done."))
        ks.execute("tidy up")
        ks.execute(KILL, timeout=30)
        refused = ks.execute("%rebuild", timeout=60)  # no stdin, no widgets: nobody to ask
        assert refused.status == "error"
        assert ks.execute("%%python\nprint(x)").stdout == "1\n"  # the step before ran
    (rebuilt,) = [e for e in _log_events(tmp_path) if e["event"] == "rebuild"]
    assert rebuilt["ran"] == 1 and rebuilt["done"] == 1
    assert rebuilt["failed"].startswith("the rebuild ended early")


def test_the_api_rebuilds_and_asks_its_callback_for_a_flagged_step(llm_server, tmp_path):
    from oi_kernel.api import Interpreter
    from oi_kernel.core.types import Decision

    (tmp_path / "old.txt").write_text("x")
    asked: list[str] = []

    def approve(request):
        asked.append(request.block.code)
        return Decision("run", request.block.code)

    it = Interpreter("openai/scripted", api_base=llm_server.url, api_key="sk-test-123456789",
                     log_dir=tmp_path / "logs", cwd=tmp_path, approve=approve)
    with it:
        llm_server.enqueue(S.tool_call("import os\nif os.path.exists('old.txt'):\n"
                                       "    os.remove('old.txt')"),
                           S.tool_call("answer = 6 * 7"), S.text("Done."))
        list(it.chat("tidy up and compute"))
        assert len(asked) == 2  # approve asks about every step when auto_run is off
        assert it.run_code("import os\nos._exit(1)").status == "died"
        listing = it.rebuild(dry_run=True)
        assert "would re-run 2 recorded steps" in listing and "delete-files" in listing
        asked.clear()
        done = it.rebuild()
        assert "Rebuilt**: 2 of 2" in done
        assert len(asked) == 1 and "os.remove" in asked[0]  # only the flagged step asked
        assert it.run_code("print(answer)").text == "42"


def test_rebuild_is_a_command_where_code_runs_in_a_child_of_ours():
    from oi_kernel.session import commands
    from oi_kernel.session.assembly import build_session

    kernel = build_session("kernel", approver=object(), logging=False)
    magic = build_session("magic", approver=object(), logging=False, executor=kernel.runner)
    magic.child = None
    assert "rebuild" in {c.name for c in commands.available(kernel)}
    assert "rebuild" not in {c.name for c in commands.available(magic)}
    assert "--dry-run" in commands.COMMANDS["rebuild"].usage


def test_acp_rebuild_asks_the_client_for_the_flagged_step(llm_server, tmp_path):
    from tests.test_acp import Client, agent, prompt, run, text_of

    tidy = "import os\nif os.path.exists('old.txt'):\n    os.remove('old.txt')"
    llm_server.enqueue(S.tool_call(tidy), S.tool_call("answer = 6 * 7"), S.text("Done."),
                       S.tool_call("import os\nos._exit(1)"), S.text("It died."),
                       S.tool_call("print(answer)"), S.text("42."))
    client = Client(["allow_once"] * 6)

    async def go() -> None:
        async with agent(llm_server, tmp_path, client) as (conn, _proc, sid):
            await prompt(conn, sid, "tidy up and compute")
            await prompt(conn, sid, "crash")
            asked = len(client.permissions)
            await prompt(conn, sid, "/rebuild")
            assert len(client.permissions) == asked + 1  # only the flagged step asked again
            assert "os.remove" in text_of(client.permissions[-1][0])
            await prompt(conn, sid, "print the answer")

    run(go())
    assert "Rebuilt**: 2 of 2 steps ran again" in client.message()
    assert "42" in text_of(client.finished()[-1])
