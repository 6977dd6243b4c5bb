"""The bubblewrap sandbox of the child kernel.

Pure parts (the bwrap argv, the environment filter, the derived kernelspec) are
table-tested; then a real Open Interpreter kernel with ``OI_SANDBOX=1`` is driven
through jupyter_client and the confinement is checked from inside and outside:
network, file system, credentials, secrets, state, interrupts, the card's badge.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest

from oi_kernel.errors import ChildKernelError
from oi_kernel.execution import sandbox
from tests import llm_server as S
from tests.kernel_client import KernelSession
from tests.test_card import Frontend, send_shell
from tests.test_kernel import oi_env, sent_tool_results

HAVE_BWRAP = sandbox.probe() == ""
needs_bwrap = pytest.mark.skipif(not HAVE_BWRAP, reason=f"no sandbox here: {sandbox.probe()}")

OPENAI_KEY = "plainfakeopenaivalue0042"
SERVICE_TOKEN = "tokvalue-abcdef-9876-zyx"
OI_KEY = "sk-test-not-a-real-key-123456"
SECRETS = (OPENAI_KEY, SERVICE_TOKEN, OI_KEY)
MARKER = "visible-marker-31337"
PRIVATE_KEY = "FAKE-PRIVATE-KEY-CONTENT-0xC0FFEE"


# ------------------------------------------------------------------ pure parts
def test_bwrap_argv_order_confines_and_then_binds_back():
    argv = sandbox.bwrap_argv(
        "/usr/bin/bwrap",
        "/tmp/ws",
        "/tmp/oi-x",
        [("/h/.ssh", True), ("/h/.netrc", False)],
        ["/h/.local/share/jupyter/runtime"],
        "/tmp/oi-x/spec/empty",
    )
    assert argv[0] == "/usr/bin/bwrap" and argv[-1] == "--"
    joined = " ".join(argv)
    assert "--ro-bind / /" in joined
    # /tmp becomes private before the workspace and the ipc dir are bound back in
    assert joined.index("--tmpfs /tmp") < joined.index("--bind /tmp/ws /tmp/ws")
    assert joined.index("--tmpfs /tmp") < joined.index("--bind /tmp/oi-x /tmp/oi-x")
    # credentials are hidden after the writable binds (a workspace cannot uncover them)
    assert joined.index("--bind /tmp/ws") < joined.index("--tmpfs /h/.ssh")
    assert "--ro-bind /tmp/oi-x/spec/empty /h/.netrc" in joined
    assert "--tmpfs /h/.local/share/jupyter/runtime" in joined
    for flag in ("--unshare-net", "--unshare-pid", "--die-with-parent", "--new-session"):
        assert flag in argv
    assert "--unsetenv JPY_PARENT_PID" in joined
    assert "--chdir /tmp/ws" in joined


def test_child_env_drops_secrets_and_keeps_the_rest():
    env = {
        "OPENAI_API_KEY": "a" * 20,
        "OI_API_KEY": "b" * 20,
        "GITHUB_TOKEN": "c" * 20,
        "DB_PASSWORD": "d" * 20,
        "AWS_SECRET_ACCESS_KEY": "e" * 20,
        "PATH": "/usr/bin",
        "HOME": "/home/u",
        "TOKENIZERS_PARALLELISM": "false",
        "KEYBOARD": "us",
        "SSH_AUTH_SOCK": "/run/agent",
    }
    kept = sandbox.child_env(env)
    assert sorted(kept) == ["HOME", "KEYBOARD", "PATH", "SSH_AUTH_SOCK", "TOKENIZERS_PARALLELISM"]


def test_hidden_paths_lists_only_what_exists(tmp_path):
    (tmp_path / ".ssh").mkdir()
    (tmp_path / ".netrc").write_text("machine x password y")
    (tmp_path / ".config" / "gcloud").mkdir(parents=True)
    found = dict(sandbox.hidden_paths(tmp_path))
    assert found == {
        str(tmp_path / ".ssh"): True,
        str(tmp_path / ".netrc"): False,
        str(tmp_path / ".config/gcloud"): True,
    }


def test_resolve_python_only_touches_a_bare_interpreter_name():
    assert sandbox.resolve_python(["python", "-m", "x"])[0] == sys.executable
    assert sandbox.resolve_python(["/opt/py", "python"]) == ["/opt/py", "python"]


def test_memory_only_spec_keeps_signal_interrupts(tmp_path):
    name = sandbox.write_child_spec(
        str(tmp_path),
        "python3",
        workspace=str(tmp_path),
        private_dir=str(tmp_path),
        memory_limit=2 * 1024**3,
    )
    spec = json.loads((tmp_path / name / "kernel.json").read_text())
    assert spec["argv"][1:6] == ["-m", "oi_kernel.execution.limits", "--memory", str(2 * 1024**3), "--"]
    assert "{connection_file}" in spec["argv"]
    assert spec["interrupt_mode"] == "signal"
    assert "bwrap" not in " ".join(spec["argv"])


@needs_bwrap
def test_sandbox_spec_wraps_the_base_argv_and_interrupts_by_message(tmp_path):
    name = sandbox.write_child_spec(
        str(tmp_path / "spec"),
        "python3",
        workspace=str(tmp_path),
        private_dir=str(tmp_path),
        sandbox=True,
        home=str(tmp_path),
    )
    spec = json.loads((tmp_path / "spec" / name / "kernel.json").read_text())
    argv = spec["argv"]
    assert argv[0].endswith("bwrap")
    tail = argv[argv.index("--") + 1 :]
    assert tail[1:3] == ["-m", "ipykernel_launcher"] and tail[-1] == "{connection_file}"
    assert spec["interrupt_mode"] == "message"


@needs_bwrap
def test_sandbox_refuses_the_root_directory_as_workspace(tmp_path):
    with pytest.raises(ChildKernelError, match="project directory"):
        sandbox.write_child_spec(
            str(tmp_path), "python3", workspace="/", private_dir=str(tmp_path), sandbox=True
        )


def test_missing_bwrap_is_named():
    problem = sandbox.probe("no-such-bwrap-oi-test")
    assert "not installed" in problem and "apt install bubblewrap" in problem
    with pytest.raises(ChildKernelError, match="will not run unsandboxed"):
        sandbox.require_bwrap("no-such-bwrap-oi-test")


def test_without_bwrap_the_kernel_refuses_instead_of_running_unconfined(tmp_path):
    bare = tmp_path / "bin"
    bare.mkdir()
    with S.ScriptedLLMServer() as server:
        env = oi_env(server, tmp_path, OI_SANDBOX="1", PATH=str(bare))
        with KernelSession(env=env, cwd=str(tmp_path)) as ks:
            refused = ks.execute("%%python\nprint('ran-unconfined')")
            assert refused.status == "error"
            assert "ran-unconfined" not in refused.stdout
            evalue = refused.reply["content"]["evalue"]
            assert "bubblewrap" in evalue and "not installed" in evalue
            assert "%sandbox off" in evalue
            off = ks.execute("%sandbox off")
            assert "off" in off.text
            assert ks.execute("%%python\nprint('ran')").stdout == "ran\n"
            on = ks.execute("%sandbox on")
            assert on.status == "error" and "bubblewrap" in on.reply["content"]["evalue"]
            still = ks.execute("%%python\nprint('still off')")
            assert still.stdout == "still off\n"


# ------------------------------------------------------------------ a sandboxed kernel
@pytest.fixture(scope="module")
def home():
    """A home directory outside /tmp (the sandbox's /tmp is private, which would hide it
    anyway and make the credential test pass for the wrong reason)."""
    path = Path(tempfile.mkdtemp(prefix="oi-home-", dir="/var/tmp"))
    (path / ".ssh").mkdir(mode=0o700)
    (path / ".ssh" / "id_rsa").write_text(PRIVATE_KEY)
    (path / ".netrc").write_text(f"machine example.com password {PRIVATE_KEY}")
    (path / "notes.txt").write_text("home-is-visible")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def boxed(_server, home, tmp_path_factory):
    if not HAVE_BWRAP:
        pytest.skip(f"no sandbox here: {sandbox.probe()}")
    workspace = tmp_path_factory.mktemp("workspace")
    env = oi_env(
        _server,
        workspace,
        OI_SANDBOX="1",
        OI_AUTO_RUN="1",
        OI_MEMORY_LIMIT="4G",
        HOME=str(home),
        OI_API_KEY=OI_KEY,
        OPENAI_API_KEY=OPENAI_KEY,
        MY_SERVICE_TOKEN=SERVICE_TOKEN,
        OI_TEST_MARKER=MARKER,
    )
    with KernelSession(env=env, cwd=str(workspace)) as ks:
        ks.workspace = workspace
        yield ks


@pytest.fixture
def oi(boxed, _server):
    _server.reset()
    assert boxed.execute("%reset").status == "ok"
    return boxed


def py(ks: KernelSession, code: str, **kw) -> str:
    """Run Python in the child directly; return everything it showed."""
    return ks.execute("%%python\n" + code, **kw).text


def test_the_child_is_confined(oi):
    out = py(
        oi,
        "import os, resource\n"
        "print('pid', os.getpid())\n"
        "import socket\n"
        "print('net', sorted(name for _, name in socket.if_nameindex()))\n"
        "print('parent', os.environ.get('JPY_PARENT_PID'))\n"
        "print('limit', resource.getrlimit(resource.RLIMIT_AS)[0])",
    )
    assert "net ['lo']" in out
    assert "parent None" in out
    assert f"limit {4 * 1024**3}" in out  # the memory limit applies inside the sandbox too
    assert int(out.split("pid ")[1].split()[0]) < 10  # its own pid namespace


def test_host_loopback_is_unreachable(oi):
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    accepted: list[object] = []
    thread = threading.Thread(target=lambda: accepted.append(server.accept()), daemon=True)
    thread.start()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass  # the listener works from the host
        thread.join(5)
        assert accepted
        out = py(
            oi,
            "import socket\n"
            "try:\n"
            f"    socket.create_connection(('127.0.0.1', {port}), timeout=5)\n"
            "    print('CONNECTED')\n"
            "except OSError as exc:\n"
            "    print('blocked', type(exc).__name__)",
        )
        assert "CONNECTED" not in out
        assert "blocked ConnectionRefusedError" in out
    finally:
        server.close()


def test_writes_outside_the_workspace_fail(oi, home):
    name = f"oi-escape-{uuid.uuid4().hex[:8]}"
    targets = [home / name, Path("/usr") / name, Path("/etc") / name]
    out = py(
        oi,
        "for path in " + repr([str(t) for t in targets]) + ":\n"
        "    try:\n"
        "        open(path, 'w').write('x')\n"
        "        print('WROTE', path)\n"
        "    except OSError as exc:\n"
        "        print('refused', exc.strerror)",
    )
    assert "WROTE" not in out
    assert out.count("refused Read-only file system") == 3
    assert not any(t.exists() for t in targets)


def test_credentials_are_hidden_but_home_is_readable(oi, home):
    out = py(
        oi,
        "import os\n"
        f"home = {str(home)!r}\n"
        "print(open(os.path.join(home, 'notes.txt')).read())\n"
        "print('ssh', os.listdir(os.path.join(home, '.ssh')))\n"
        "print('netrc', repr(open(os.path.join(home, '.netrc')).read()))\n"
        "try:\n"
        "    print(open(os.path.join(home, '.ssh', 'id_rsa')).read())\n"
        "except OSError as exc:\n"
        "    print('key', type(exc).__name__)",
    )
    assert "home-is-visible" in out
    assert "ssh []" in out and "netrc ''" in out and "key FileNotFoundError" in out
    assert PRIVATE_KEY not in out
    assert (home / ".ssh" / "id_rsa").read_text() == PRIVATE_KEY  # untouched on the host


def test_workspace_writes_reach_the_host_and_tmp_stays_private(oi):
    private = f"/tmp/oi-private-{uuid.uuid4().hex[:8]}"
    out = py(
        oi,
        "open('made-inside.txt', 'w').write('hello from the sandbox')\n"
        f"open({private!r}, 'w').write('scratch')\n"
        "print('ok')",
    )
    assert "ok" in out
    assert (oi.workspace / "made-inside.txt").read_text() == "hello from the sandbox"
    assert not os.path.exists(private)


def test_state_persists_across_cells_and_turns(oi, _server):
    py(oi, "counter = 41")
    _server.enqueue(S.tool_call("counter += 1\nprint(counter)"), S.text("42 it is"))
    result = oi.execute("add one to the counter")
    assert result.stdout == "42\n42 it is\n"
    assert py(oi, "print(counter)").strip() == "42"


def test_interrupt_stops_sandboxed_code(oi):
    py(oi, "survivor = 'still here'")
    timer = threading.Timer(2.0, oi.km.interrupt_kernel)
    timer.start()
    started = time.monotonic()
    result = oi.execute("%%python\nimport time\ntime.sleep(60)", timeout=60)
    assert time.monotonic() - started < 20
    assert result.reply["content"]["ename"] == "KeyboardInterrupt"
    assert py(oi, "print(survivor)").strip() == "still here"


def test_widgets_created_in_the_sandbox_work_both_ways(oi):
    created = oi.execute("%%python\nimport ipywidgets as w\nknob = w.IntSlider(value=3)\nknob")
    opens = [
        m["content"]["comm_id"]
        for m in created.of_type("comm_open")
        if m["content"]["data"]["state"].get("_model_name") == "IntSliderModel"
    ]
    assert opens, "the sandboxed child's widget should reach the frontend"
    update = {"method": "update", "state": {"value": 7}, "buffer_paths": []}
    send_shell(oi, "comm_msg", {"comm_id": opens[0], "data": update})
    deadline = time.monotonic() + 15
    value = ""
    while time.monotonic() < deadline and value != "7":
        value = py(oi, "print(knob.value)").strip()
    assert value == "7"


def test_step_timeout_stops_a_busy_loop_in_the_sandbox(oi, _server):
    oi.execute("%limits step_timeout=2")
    try:
        _server.enqueue(S.tool_call("while True:\n    pass"), S.text("too slow"))
        started = time.monotonic()
        oi.execute("spin", timeout=60)
        assert time.monotonic() - started < 30
        assert "step timeout" in sent_tool_results(_server.requests[1])[0]
    finally:
        oi.execute("%limits step_timeout=0")
    assert py(oi, "print('alive')").strip() == "alive"


def test_no_secret_reaches_the_child_the_llm_the_log_or_an_export(oi, _server):
    _server.enqueue(
        S.tool_call("import os\nprint(dict(os.environ))\nprint('OPENAI_API_KEY' in os.environ)"),
        S.text("done"),
    )
    result = oi.execute("show the environment")
    assert MARKER in result.stdout and result.stdout.endswith("False\ndone\n")
    for secret in SECRETS:
        assert secret not in result.stdout  # never even in the sandboxed child
    bodies = json.dumps(_server.requests)
    assert MARKER in bodies
    log_path = Path(oi.execute("%log").text.split("`")[1])
    export = oi.workspace / "sandbox-export.ipynb"
    assert oi.execute(f"%export {export} --force").status == "ok"
    for text in (bodies, log_path.read_text(), export.read_text()):
        for secret in SECRETS:
            assert secret not in text


def test_the_card_says_the_code_runs_sandboxed(oi, _server):
    send_shell(
        oi,
        "comm_open",
        {"comm_id": uuid.uuid4().hex, "target_name": "jupyter.widget.control", "data": {}},
    )
    oi.execute("%approval always")
    try:
        _server.enqueue(S.tool_call("print('approved in the box')"), S.text("done"))
        frontend = Frontend(oi, [("oi-run", None)])
        result = oi.execute("run it after I click", on_message=frontend)
        assert frontend.cards_seen == 1
        shown = json.dumps(frontend.models, ensure_ascii=False)
        assert "🔒 runs sandboxed" in shown
        assert "approved in the box" in result.stdout
    finally:
        oi.execute("%approval never")


def test_sandbox_magic_turns_it_off_and_on(oi, home):
    assert "**on**" in oi.execute("%sandbox").text
    py(oi, "lost = 1")
    target = home / f"written-{uuid.uuid4().hex[:8]}.txt"
    write = f"open({str(target)!r}, 'w').write('x')"
    try:
        off = oi.execute("%sandbox off")
        assert "**off**" in off.text and "variables from before are gone" in off.text
        assert py(oi, "print('lost' in dir())").strip() == "False"
        py(oi, write)
        assert target.exists()  # unconfined now
        target.unlink()
    finally:
        on = oi.execute("%sandbox on")
    assert "**on**" in on.text
    assert "Read-only file system" in py(oi, write)
    assert not target.exists()
    py(oi, "kept_on = 1")
    again = oi.execute("%sandbox on")  # no change: no restart
    assert "**on**" in again.text and "restarted" not in again.text
    assert py(oi, "print(kept_on)").strip() == "1"


def test_a_python_installation_under_tmp_is_bound_back_read_only(tmp_path):
    """A virtual environment under /tmp (CI clones often live there) must stay visible
    inside the sandbox's private /tmp, read-only, before the workspace is bound."""
    venv = tmp_path / "venv" / "lib"
    venv.mkdir(parents=True)
    found = sandbox.masked_runtime_paths([str(venv)])
    assert any(str(venv.resolve()).startswith(p) for p in found)
    argv = sandbox.bwrap_argv("bwrap", "/work/ws", "/tmp/oi-x", readonly=found)
    ro = argv.index(found[0]) - 1
    assert argv[ro] == "--ro-bind"
    assert argv.index("--tmpfs") < ro < argv.index("--bind")
