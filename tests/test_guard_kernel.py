"""The runtime guard through a real kernel (issue 39, items 2 and 3): a step nobody approved
runs under the guard in the child kernel; what the guard stops is recorded in the session log
and the step is asked about, its question saying what was stopped; approved, it runs again
unguarded. The kernel talks to the scripted LLM server over HTTP; ``OI_GUARD=unasked`` guards
every unasked step, so these tests do not depend on what the static review lets through.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

import pytest

from tests import llm_server as S
from tests.kernel_client import KernelSession
from tests.test_kernel import kernel_env, sent_tool_results

pytestmark = pytest.mark.kernel


@pytest.fixture(scope="module")
def kernel(_server, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("guard")
    (tmp / "work").mkdir()
    env = kernel_env(_server, tmp, OI_AUTO_RUN="1", OI_GUARD="unasked",
                     OI_GUARD_TIME_LIMIT="120", OI_GUARD_MEMORY_LIMIT="1G")
    with KernelSession(env=env, cwd=str(tmp / "work")) as ks:
        ks.tmp = tmp
        ks.work = tmp / "work"
        yield ks


@pytest.fixture
def oi(kernel, _server):
    _server.reset()
    assert kernel.execute("%reset").status == "ok"
    assert kernel.execute("%limits guard_time_limit=120").status == "ok"
    (kernel.work / "data.csv").write_text("a,b\n1,2\n")
    return kernel


def guard_stops(kernel) -> list[dict]:
    records = []
    for log in sorted((kernel.tmp / "logs").rglob("*.jsonl")):
        for line in log.read_text().splitlines():
            record = json.loads(line)
            if record.get("event") == "guard_stop":
                records.append(record)
    return records


def ask(oi, server, code: str, answer: str = "n", timeout: float = 90):
    server.enqueue(S.tool_call(code), S.text("done"))
    return oi.execute("do it", stdin=[answer], timeout=timeout)


# ------------------------------------------------------------------ attacks, stopped
def test_network_connection_is_stopped_and_asked_about(oi, _server):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(3)
    port = listener.getsockname()[1]
    got: list[bytes] = []

    def accept() -> None:
        try:
            conn, _ = listener.accept()
            got.append(conn.recv(100))
        except OSError:
            pass

    thread = threading.Thread(target=accept)
    thread.start()
    before = len(guard_stops(oi))
    result = ask(oi, _server, "kept = 'before the stop'\nprint('early-output', flush=True)\n"
                 f"import socket\ns = socket.create_connection(('127.0.0.1', {port}))\n"
                 "s.sendall(b'secret')")
    thread.join()
    listener.close()
    assert got == []  # the listener got nothing: no connection was made
    assert len(result.prompts) == 1
    assert f"network connection to 127.0.0.1:{port}" in result.prompts[0]
    assert "early-output" in result.stdout  # the step's earlier output is not lost
    assert "oi_kernel guard: network connection" in result.text
    assert oi.execute("%%python\nprint(kept)").stdout.strip() == "before the stop"
    stops = guard_stops(oi)[before:]
    assert stops[0]["stops"][0]["event"] == "socket.connect"
    told = sent_tool_results(_server.requests[1])[0]
    assert "runtime guard stopped this step" in told and "chose not to run" in told


@pytest.mark.parametrize(("code", "what"), [
    ("open('data.csv', 'w').write('')", "writing the existing file"),
    ("import os\nos.truncate('data.csv', 0)", "truncating"),
    ("mode = 'w'\nwith open('data.csv', mode) as fh:\n    fh.write('gone')", "writing the existing"),
    ("import os\nos.remove('data.csv')", "deleting"),
    ("import shutil\nshutil.copyfile('/dev/null', 'data.csv')", "writing the existing file"),
])
def test_existing_workspace_file_is_not_changed(oi, _server, code, what):
    result = ask(oi, _server, code)
    assert what in result.prompts[0]
    assert (oi.work / "data.csv").read_text() == "a,b\n1,2\n"


def test_write_outside_the_workspace_is_stopped(oi, _server):
    outside = oi.tmp / "outside.txt"
    result = ask(oi, _server, f"open({str(outside)!r}, 'w').write('x')")
    assert "outside the workspace" in result.prompts[0]
    assert not outside.exists()


def test_process_creation_is_stopped(oi, _server):
    result = ask(oi, _server, "import subprocess\nsubprocess.run(['touch', 'spawned'])")
    assert "starting the process" in result.prompts[0]
    assert not (oi.work / "spawned").exists()


def test_environment_sys_path_and_builtins_are_kept(oi, _server):
    result = ask(oi, _server, "import os\nos.environ['LD_PRELOAD'] = '/tmp/evil.so'")
    assert "LD_PRELOAD" in result.prompts[0]
    result = ask(oi, _server, "import sys, builtins\nsys.path.insert(0, '/tmp/evil')\n"
                 "builtins.open = print")
    assert "changing sys.path" in result.prompts[0]
    assert "changing builtins: open" in result.prompts[0]
    check = oi.execute("%%python\nimport os, sys, builtins, io\n"
                       "print(os.environ.get('LD_PRELOAD'), '/tmp/evil' in sys.path, "
                       "builtins.open is io.open)")
    assert check.stdout.strip() == "None False True"


def test_timer_started_by_a_guarded_step_stays_guarded(oi, _server):
    (oi.work / "keep").mkdir(exist_ok=True)
    (oi.work / "keep" / "f.txt").write_text("x")
    result = ask(oi, _server, "import threading, shutil\n"
                 "threading.Timer(0.5, shutil.rmtree, ['keep']).start()\nprint('armed')")
    assert result.prompts == []  # nothing was stopped while the step ran
    time.sleep(1.5)
    assert (oi.work / "keep" / "f.txt").read_text() == "x"
    # the stop by the Timer shows in the next guarded step's report
    result = ask(oi, _server, "print('next')")
    assert "left running" in result.prompts[0]


def test_time_limit_stops_an_unasked_step_and_offers_to_run_unbounded(oi, _server):
    assert "| `guard_time_limit` | 3.0 |" in oi.execute("%limits guard_time_limit=3").text
    result = ask(oi, _server, "import time\nfor _ in range(6):\n    time.sleep(1)\n"
                 "print('slow-done')", answer="y")
    assert "time limit" in result.prompts[0]
    assert "slow-done" in result.stdout  # approved: it ran again without the limit


def test_memory_limit_stops_an_unasked_step(oi, _server):
    # (numpy's zeros take address space, not memory: the rerun costs nothing)
    result = ask(oi, _server, "import numpy as np\nbig = np.zeros(3 * 2**30, dtype=np.uint8)\n"
                 "print(big.nbytes)", answer="y")
    assert "memory limit" in result.prompts[0]
    assert str(3 * 2**30) in result.stdout  # approved: it ran again without the limit
    oi.execute("%%python\ndel big")


# ------------------------------------------------------------------ what still runs
def test_approved_step_runs_unguarded(oi, _server):
    result = ask(oi, _server, "open('data.csv', 'w').write('new')", answer="y")
    assert "writing the existing file" in result.prompts[0]
    assert (oi.work / "data.csv").read_text() == "new"


def test_new_file_print_and_plot_run_normally(oi, _server):
    result = ask(oi, _server, "import pandas as pd\nimport matplotlib.pyplot as plt\n"
                 "df = pd.read_csv('data.csv')\ndf.to_csv('summary.csv')\n"
                 "with open('notes.txt', 'w') as fh:\n    fh.write('x')\n"
                 "with open('notes.txt', 'a') as fh:\n    fh.write('y')\n"
                 "plt.plot([1, 2, 3])\nplt.show()\nprint(df.shape)", timeout=120)
    assert result.prompts == []
    assert "(1, 2)" in result.stdout
    assert any("image/png" in m["content"].get("data", {}) for m in result.messages
               if m["header"]["msg_type"] == "display_data")
    assert (oi.work / "notes.txt").read_text() == "xy"
    assert Path(oi.work / "summary.csv").exists()


def test_direct_python_cells_are_not_guarded(oi, _server):
    result = oi.execute("%%python\nopen('data.csv', 'w').write('mine')")
    assert result.status == "ok"
    assert (oi.work / "data.csv").read_text() == "mine"


def test_shell_step_is_stopped_and_the_users_own_shell_still_runs(oi, _server):
    _server.enqueue(S.tool_call("echo from-the-model > made.txt", language="shell"),
                    S.text("done"))
    result = oi.execute("do it", stdin=["n"], timeout=90)
    assert "starting the process" in result.prompts[0]
    assert not (oi.work / "made.txt").exists()
    # a thread a guarded step started (IPython's loop for %%bash) does not guard the user
    direct = oi.execute("%%python\n%%bash\necho direct-ok")
    assert "direct-ok" in direct.stdout
