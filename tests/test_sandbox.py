"""The bubblewrap sandbox of the child kernel: its pieces, and a real sandboxed kernel.

Pure parts (the deny-by-default bwrap argv, grants, the environment filter, the derived
kernelspec, the seccomp program) are table-tested; the seccomp filter and the in-child
launcher run for real in subprocesses; then a real Open Interpreter kernel with
``OI_SANDBOX=1`` is driven through jupyter_client and the confinement is checked from
inside and outside: network, file system, credentials, secrets, state, interrupts, the
card's badge. What the sandbox hides and grants, and the escape through another kernel's
unix sockets, are in ``test_sandbox_escape.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest

from oi_kernel.errors import ChildKernelError
from oi_kernel.execution import childspec, confine, sandbox, sandbox_root
from tests import llm_server as S
from tests.kernel_client import KernelSession
from tests.test_card import Frontend, send_shell
from tests.test_kernel import kernel_env, sent_tool_results

HAVE_BWRAP = sandbox.unavailable() == ""
needs_bwrap = pytest.mark.skipif(not HAVE_BWRAP, reason=f"no sandbox here: {sandbox.unavailable()}")

OPENAI_KEY = "plainfakeopenaivalue0042"
SERVICE_TOKEN = "tokvalue-abcdef-9876-zyx"
OI_KEY = "sk-test-not-a-real-key-123456"
SECRETS = (OPENAI_KEY, SERVICE_TOKEN, OI_KEY)
MARKER = "visible-marker-31337"


# ------------------------------------------------------------------ the bwrap argv
def layout(tmp: Path, **kw) -> sandbox_root.Layout:
    base = dict(workspace=str(tmp / "home/ws"), ipc_dir="/tmp/oi-x/ipc", home=str(tmp / "home"),
                empty_file="/tmp/oi-x/spec/empty", empty_dir="/tmp/oi-x/spec/empty.d",
                launcher="/pkg/oi_kernel/execution/confine.py")
    return sandbox_root.Layout(**{**base, **kw})


def pairs(argv: list[str]) -> list[tuple[str, str]]:
    """(flag, destination) of every mount, in order."""
    out = []
    for i, word in enumerate(argv):
        if word in ("--bind", "--ro-bind"):
            out.append((word, argv[i + 2]))
        elif word == "--tmpfs":
            out.append((word, argv[i + 1]))
    return out


def test_the_root_is_built_from_what_the_child_needs(tmp_path):
    home = tmp_path / "home"
    (home / "ws").mkdir(parents=True)
    argv = sandbox_root.bwrap_argv("/usr/bin/bwrap", layout(tmp_path))
    assert argv[0] == "/usr/bin/bwrap" and argv[-1] == "--"
    joined = " ".join(argv)
    assert "--ro-bind / /" not in joined  # nothing is shown by default
    for flag in ("--unshare-user", "--disable-userns", "--unshare-net", "--unshare-pid",
                 "--die-with-parent", "--new-session"):
        assert flag in argv
    assert "--cap-drop ALL" in joined  # as root, bwrap would otherwise keep every capability
    assert "--ro-bind /usr /usr" in joined and "--ro-bind /etc /etc" in joined
    assert "--proc /proc" in joined and "--dev /dev" in joined
    mounts = pairs(argv)
    assert mounts.index(("--tmpfs", str(home))) < mounts.index(("--bind", str(home / "ws")))
    assert ("--tmpfs", "/tmp") in mounts and ("--bind", "/tmp/oi-x/ipc") in mounts
    for absent in ("/root", "/home", "/var", "/run", "/opt", "/srv", "/sys"):
        assert all(dest != absent for _, dest in mounts)
    assert argv[argv.index("--remount-ro") + 1] == "/"
    assert f"--setenv HOME {home}" in joined and f"--chdir {home / 'ws'}" in joined
    assert "--as-pid-1" not in argv


def test_deeper_mounts_win_whatever_the_input_order(tmp_path):
    home = tmp_path / "home"
    for sub in ("ws/.git", "ws/.venv/lib", "docs/inner", ".ssh", "out"):
        (home / sub).mkdir(parents=True)
    (home / "ws/.venv/pyvenv.cfg").write_text("home = /usr/bin\n")
    (home / ".netrc").write_text("secret")
    argv = sandbox_root.bwrap_argv("bwrap", layout(
        tmp_path, read_paths=(str(home),), write_paths=(str(home / "docs/inner"), str(home / "out")),
        python_dirs=((str(home / "ws/.venv"), True),), protected=(str(home / "ws/logs"),)))
    mounts = pairs(argv)
    at = {m: i for i, m in enumerate(mounts)}
    assert at[("--ro-bind", str(home))] < at[("--bind", str(home / "docs/inner"))]
    assert at[("--bind", str(home / "ws"))] < at[("--ro-bind", str(home / "ws/.git"))]
    assert at[("--bind", str(home / "ws"))] < at[("--ro-bind", str(home / "ws/.venv"))]
    # credentials in a granted home are hidden again: an empty dir / file over them, last
    assert at[("--ro-bind", str(home / ".ssh"))] > at[("--ro-bind", str(home))]
    assert f"--ro-bind /tmp/oi-x/spec/empty.d {home / '.ssh'}" in " ".join(argv)
    assert f"--ro-bind /tmp/oi-x/spec/empty {home / '.netrc'}" in " ".join(argv)
    assert all(dest != str(home / "ws/logs") for _, dest in mounts)  # missing: nothing to hide


def test_sensitive_etc_files_are_hidden():
    hidden = dict(sandbox_root.sensitive_etc())
    if os.path.exists("/etc/shadow"):
        assert hidden["/etc/shadow"] is False
    dirs = [p for p, d in hidden.items() if d]
    assert not any(p.startswith(d + "/") for p in hidden for d in dirs)  # no nested entries
    for path in hidden:
        if path.startswith("/etc/ssh/ssh_host_"):
            assert not path.endswith(".pub")


def test_minimal_dirs_never_binds_too_much(tmp_path):
    (tmp_path / "a/b").mkdir(parents=True)
    home = tmp_path / "home"
    home.mkdir()
    found = sandbox_root.minimal_dirs(
        ["/", "/tmp", "/usr/lib/python3", str(tmp_path / "a/b"), str(tmp_path / "a"),
         str(home), str(tmp_path), "/no/such/dir", ""], home=str(home))
    assert found == (str(tmp_path / "a"),)  # not /, /tmp, home or its ancestors, system dirs


def test_python_dirs_come_from_the_interpreter_itself():
    import site

    dirs = dict(sandbox_root.python_dirs(sys.executable, "", "/nonexistent-home"))
    packages = [p for p in site.getsitepackages() if os.path.isdir(p)]
    assert any(dirs.get(p) is True or any(p.startswith(d + "/") and dirs[d] for d in dirs)
               for p in packages)


# ------------------------------------------------------------------ grants
def test_grants_are_checked(tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / "data").mkdir(parents=True)
    assert sandbox.check_grant(str(home / "data"), True, str(home)) == str(home / "data")
    assert sandbox.check_grant(str(home), False, str(home)) == str(home)  # read: allowed
    for path, write, words in [
        (str(home / "missing"), False, "does not exist"),
        ("/proc/self", False, "kernel file system"),
        ("/", False, "everything"),
        (str(home), True, "run code outside the sandbox"),
        (str(tmp_path), True, "run code outside the sandbox"),  # an ancestor of home
        ("/usr", True, "run code outside the sandbox"),
    ]:
        with pytest.raises(sandbox.SandboxError, match=words):
            sandbox.check_grant(path, write, str(home))


def test_grants_from_the_environment_and_the_magic(tmp_path, monkeypatch):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    monkeypatch.setenv("OI_SANDBOX_READ", f"{tmp_path / 'a'}{os.pathsep}{tmp_path / 'b'}")
    grants = sandbox.Sandbox()
    assert grants.read_paths == [str(tmp_path / "a"), str(tmp_path / "b")]
    real, changed = grants.allow(str(tmp_path / "a"), True)
    assert changed and grants.write_paths == [real] and grants.read_paths == [str(tmp_path / "b")]
    assert grants.allow(str(tmp_path / "a"), True) == (real, False)
    assert grants.revoke(str(tmp_path / "b")) and grants.read_paths == []
    assert not grants.revoke(str(tmp_path / "b"))
    assert grants.resolved(cwd=str(tmp_path)) == ((), (real,))


def test_profiles_can_grant_paths():
    from oi_kernel.session import profiles

    loaded = profiles.parse_profile(
        "sandbox: true\nsandbox_read_paths: [~/data]\nsandbox_write_paths: [out]\n", "p")
    assert loaded.settings == {"sandbox": True, "sandbox_read_paths": ["~/data"],
                               "sandbox_write_paths": ["out"]}
    with pytest.raises(profiles.ProfileError, match="must be a list of paths"):
        profiles.parse_profile("sandbox_read_paths: /data\n", "p")
    assert profiles.SETTINGS["sandbox_write_paths"].trait == "write_paths"


def test_grants_come_from_the_config_file_too(tmp_path):
    from traitlets.config import Config

    from oi_kernel.execution.child import ChildKernel

    config = Config()
    config.Sandbox.read_paths = [str(tmp_path)]
    config.Sandbox.write_paths = ["relative/out"]
    child = ChildKernel(config=config)
    assert child.grants.read_paths == [str(tmp_path)]
    with pytest.raises(sandbox.SandboxError, match="does not exist"):
        child.grants.resolved(cwd=str(tmp_path))  # checked when the child starts


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


# ------------------------------------------------------------------ the derived kernelspec
def test_resolve_python_only_touches_a_bare_interpreter_name():
    assert childspec.resolve_python(["python", "-m", "x"])[0] == sys.executable
    assert childspec.resolve_python(["/opt/py", "python"]) == ["/opt/py", "python"]


def test_memory_only_spec_keeps_signal_interrupts(tmp_path):
    spec = childspec.write_child_spec(
        str(tmp_path), "python3", workspace=str(tmp_path), memory_limit=2 * 1024**3)
    derived = json.loads(Path(spec.spec_root, spec.name, "kernel.json").read_text())
    assert derived["argv"][1:6] == ["-m", "oi_kernel.execution.limits", "--memory",
                                    str(2 * 1024**3), "--"]
    assert "{connection_file}" in derived["argv"]
    assert derived["interrupt_mode"] == "signal"
    assert "bwrap" not in " ".join(derived["argv"]) and not spec.sandboxed


@needs_bwrap
def test_sandbox_spec_runs_the_launcher_and_interrupts_by_message(tmp_path):
    (tmp_path / "ws").mkdir()
    spec = childspec.write_child_spec(str(tmp_path), "python3", workspace=str(tmp_path / "ws"),
                                      sandbox=True, memory_limit=1024**3, home=str(tmp_path / "h"))
    try:
        derived = json.loads(Path(spec.spec_root, spec.name, "kernel.json").read_text())
        argv = derived["argv"]
        assert argv[0].endswith("bwrap") and spec.sandboxed
        tail = argv[argv.index("--") + 1:]
        assert tail[1] == os.path.realpath(confine.__file__)
        assert tail[2:4] == ["--memory", str(1024**3)]
        assert tail[tail.index("--canary-socket") + 1] == spec.canary.getsockname()
        assert tail[-3:] == ["--", "-f", "{connection_file}"]
        assert derived["interrupt_mode"] == "message"
    finally:
        spec.close()


@needs_bwrap
@pytest.mark.parametrize("where", ["/", "home", "above home"])
def test_sandbox_refuses_a_workspace_whose_files_run_code_later(tmp_path, where):
    home = tmp_path / "h"
    home.mkdir()
    workspace = {"/": "/", "home": str(home), "above home": str(tmp_path)}[where]
    with pytest.raises(ChildKernelError, match="project directory"):
        childspec.write_child_spec(str(tmp_path / "p"), "python3", workspace=workspace,
                                   sandbox=True, home=str(home))


@needs_bwrap
def test_sandbox_refuses_a_kernel_that_is_not_ipython(tmp_path, monkeypatch):
    spec_dir = tmp_path / "kernels" / "kernels" / "bashy"
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(json.dumps(
        {"argv": ["/bin/bash", "-c", "{connection_file}"], "display_name": "b", "language": "sh"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "kernels"))
    with pytest.raises(ChildKernelError, match="starts IPython kernels"):
        childspec.write_child_spec(str(tmp_path / "p"), "bashy", workspace=str(tmp_path),
                                   sandbox=True, home="/nonexistent-home")


def test_missing_bwrap_is_named():
    problem = sandbox.unavailable("no-such-bwrap-oi-test")
    assert "not installed" in problem and "apt install bubblewrap" in problem
    with pytest.raises(ChildKernelError, match="will not run unsandboxed"):
        sandbox.require_bwrap("no-such-bwrap-oi-test")


# ------------------------------------------------------------------ seccomp, for real
def test_the_filter_assembles_for_both_architectures():
    for arch in confine.ARCHES:
        program = confine.build_filter(arch)
        assert len(program) % 8 == 0 and 20 < len(program) // 8 < 64


FILTER_CHECK = r"""
import ctypes, socket, subprocess, sys, threading
sys.path.insert(0, sys.argv[1])
from oi_kernel.execution import confine
listener = socket.socket(socket.AF_UNIX)
listener.bind(sys.argv[2]); listener.listen(1)
early = []
worker = threading.Thread(target=lambda: (started.wait(), early.append(try_unix())))
started = threading.Event()
def try_unix():
    try:
        socket.socket(socket.AF_UNIX).connect(sys.argv[2]); return "connected"
    except PermissionError as exc:
        return f"refused {exc.errno}"
worker.start()  # a thread that exists before the filter gets it too (TSYNC)
confine.install_seccomp()
started.set(); worker.join()
print("main", try_unix(), "thread", early[0])
print("check", repr(confine.check_confined(sys.argv[2])))
a, b = socket.socketpair(); a.send(b"x"); print("pair", b.recv(1))
try:
    socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM); print("dgram allowed")
except PermissionError:
    print("dgram refused")
libc = ctypes.CDLL(None, use_errno=True)
print("unshare", libc.unshare(0x10000000), ctypes.get_errno())
print("x32", libc.syscall(41 | 0x40000000, 1, 1, 0), ctypes.get_errno())
print("io_uring", libc.syscall(425, 4, ctypes.create_string_buffer(120)), ctypes.get_errno())
print("sub", subprocess.run(["echo", "ok"], capture_output=True, text=True).stdout.strip())
t = threading.Thread(target=lambda: None); t.start(); t.join(); print("threads ok")
print("tcp", socket.create_server(("127.0.0.1", 0)).getsockname()[0])
"""


@pytest.mark.skipif(not confine.seccomp_available(), reason="no seccomp filters here")
def test_the_seccomp_filter_refuses_unix_sockets_on_every_thread(tmp_path):
    root = str(Path(__file__).resolve().parents[1])
    done = subprocess.run([sys.executable, "-c", FILTER_CHECK, root, str(tmp_path / "s")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "main refused 13 thread refused 13" in out
    assert "check ''" in out  # the launcher's own self-test agrees (no /proc/1/mem: pid != 1)
    assert "pair b'x'" in out and "dgram refused" in out
    assert "unshare -1 1" in out  # EPERM: no new user namespace
    assert "x32 -1 38" in out  # ENOSYS: no foreign system-call table
    assert "io_uring -1 1" in out
    assert "sub ok" in out and "threads ok" in out and "tcp 127.0.0.1" in out


@needs_bwrap
def test_the_launcher_refuses_when_the_protections_are_missing(tmp_path, monkeypatch):
    """Without Landlock, bwrap's unfiltered pid 1 must not share the sandbox: a launcher that
    finds itself in that situation exits with its reason instead of starting the kernel."""
    (tmp_path / "ws").mkdir()
    monkeypatch.setattr(confine, "landlock_abi", lambda: 7)  # the wrapper thinks it has it
    spec = childspec.write_child_spec(str(tmp_path), "python3", workspace=str(tmp_path / "ws"),
                                      sandbox=True, home=str(tmp_path / "h"))
    os.makedirs(spec.ipc_dir, exist_ok=True)
    argv = json.loads(Path(spec.spec_root, spec.name, "kernel.json").read_text())["argv"]
    argv = [a.replace("{connection_file}", os.path.join(spec.ipc_dir, "kernel.json")) for a in argv]
    env = {**os.environ, confine.NO_LANDLOCK_ENV: "1"}  # ...but the child has none
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
    spec.close()
    assert done.returncode == confine.EXIT_REFUSED
    assert "no Landlock here" in done.stderr and "refuses to run unconfined" in done.stderr
    assert "no Landlock here" in spec.refusal()


# ------------------------------------------------------------------ a sandboxed kernel
def test_without_bwrap_the_kernel_refuses_instead_of_running_unconfined(tmp_path):
    bare = tmp_path / "bin"
    bare.mkdir()
    with S.ScriptedLLMServer() as server:
        env = kernel_env(server, tmp_path, OI_SANDBOX="1", PATH=str(bare))
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


@pytest.fixture(scope="module")
def home():
    """A home directory outside /tmp (the sandbox's /tmp is private, which would hide it
    anyway and make the tests pass for the wrong reason)."""
    path = Path(tempfile.mkdtemp(prefix="oi-home-", dir="/var/tmp"))
    (path / "notes.txt").write_text("home-is-visible")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def boxed(_server, home, tmp_path_factory):
    if not HAVE_BWRAP:
        pytest.skip(f"no sandbox here: {sandbox.unavailable()}")
    workspace = tmp_path_factory.mktemp("workspace")
    env = kernel_env(
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
        "print('limit', resource.getrlimit(resource.RLIMIT_AS)[0])\n"
        "status = open('/proc/self/status').read().splitlines()\n"
        "print([l.split()[1] for l in status if l.split()[0] in ('CapEff:', 'NoNewPrivs:', 'Seccomp:')])",
    )
    assert "net ['lo']" in out
    assert "parent None" in out
    assert f"limit {4 * 1024**3}" in out  # the memory limit applies inside the sandbox too
    assert int(out.split("pid ")[1].split()[0]) < 10  # its own pid namespace
    assert "['0000000000000000', '1', '2']" in out  # no capabilities, no_new_privs, filtered


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
    targets = [Path("/usr") / name, Path("/etc") / name, Path("/") / name]
    in_home = home / name
    out = py(
        oi,
        "for path in " + repr([str(t) for t in targets]) + ":\n"
        "    try:\n"
        "        open(path, 'w').write('x')\n"
        "        print('WROTE', path)\n"
        "    except OSError as exc:\n"
        "        print('refused', exc.strerror)\n"
        f"open({str(in_home)!r}, 'w').write('x')  # the throw-away home takes it\n"
        "print('home write ok')",
    )
    assert "WROTE" not in out
    assert out.count("refused Read-only file system") == 3
    assert "home write ok" in out
    assert not any(t.exists() for t in [*targets, in_home])  # nothing reached the host


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


def test_processes_threads_and_pools_work_in_the_sandbox(oi):
    out = py(
        oi,
        "import multiprocessing as mp, subprocess, threading, asyncio\n"
        "with mp.get_context('fork').Pool(2) as pool:\n"
        "    print('pool', pool.map(abs, [-1, -2]))\n"
        "print('sub', subprocess.run(['sh', '-c', 'echo hi'], capture_output=True, text=True).stdout)\n"
        "t = threading.Thread(target=print, args=('thread',)); t.start(); t.join()\n"
        "print('async', await asyncio.sleep(0, result='ok'))",
    )
    assert "pool [1, 2]" in out and "sub hi" in out and "thread" in out and "async ok" in out


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
    status = oi.execute("%sandbox").text
    assert "**on**" in status and "read-only grants: none" in status and "seccomp" in status
    py(oi, "lost = 1")
    target = home / f"written-{uuid.uuid4().hex[:8]}.txt"
    write = f"open({str(target)!r}, 'w').write('x')\nprint(open({str(target)!r}).read())"
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
    assert py(oi, write).strip() == "x"  # written in the sandbox's throw-away home...
    assert not target.exists()  # ...never in the real one
    py(oi, "kept_on = 1")
    again = oi.execute("%sandbox on")  # no change: no restart
    assert "**on**" in again.text and "restarted" not in again.text
    assert py(oi, "print(kept_on)").strip() == "1"
    assert "Usage: %sandbox" in oi.execute("%sandbox sideways").reply["content"]["evalue"]


@needs_bwrap
def test_without_landlock_the_kernel_runs_as_pid_1_and_still_interrupts(tmp_path, monkeypatch):
    """The documented fallback where the kernel has no Landlock: bwrap --as-pid-1 (no
    unfiltered process in the sandbox), interrupts by message still work."""
    import asyncio

    from oi_kernel.execution.child import ChildKernel

    monkeypatch.setenv(confine.NO_LANDLOCK_ENV, "1")
    outputs: list[str] = []

    async def run() -> None:
        child = ChildKernel(sandbox=True, cwd=str(tmp_path))
        child.on_iopub = lambda msg: outputs.append(str(child.unpack(msg["content"])))
        try:
            await child.start_soon()
            assert child.sandboxed
            await child.execute("import os\nprint('pid', os.getpid(), "
                                "os.environ['OI_SANDBOX_LANDLOCK_ABI'])")
            loop = asyncio.get_running_loop()
            loop.call_later(1.5, lambda: asyncio.ensure_future(child.interrupt()))
            reply = await asyncio.wait_for(child.execute("import time\ntime.sleep(60)"), 30)
            assert reply["ename"] == "KeyboardInterrupt"
            await child.execute("print('alive')")
        finally:
            await child.shutdown()

    asyncio.run(run())
    shown = "".join(outputs)
    assert "pid 1 0" in shown and "alive" in shown


@needs_bwrap
def test_a_python_under_tmp_runs_sandboxed(tmp_path, monkeypatch):
    """A CI clone: the child's virtual environment lives under /tmp, which the sandbox
    replaces with a private tmpfs; it must be bound back (read-only) and work."""
    import asyncio
    import site
    import venv

    from oi_kernel.execution.child import ChildKernel

    env_dir = Path(tempfile.mkdtemp(prefix="oi-ci-clone-", dir="/tmp")) / ".venv"
    try:
        venv.EnvBuilder(with_pip=False, symlinks=True).create(env_dir)
        packages = next(env_dir.glob("lib/python*/site-packages"))
        ours = [p for p in site.getsitepackages() if os.path.isdir(p)]
        (packages / "oi_test_paths.pth").write_text("\n".join(ours) + "\n")
        spec_dir = tmp_path / "jp" / "kernels" / "ci-python"
        spec_dir.mkdir(parents=True)
        (spec_dir / "kernel.json").write_text(json.dumps({
            "argv": [str(env_dir / "bin" / "python"), "-m", "ipykernel_launcher", "-f",
                     "{connection_file}"], "display_name": "ci", "language": "python"}))
        monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jp"))
        outputs: list[str] = []

        async def run() -> None:
            child = ChildKernel(sandbox=True, cwd=str(tmp_path), kernel_name="ci-python")
            child.on_iopub = lambda msg: outputs.append(str(child.unpack(msg["content"])))
            try:
                await child.start_soon()
                await child.execute("import sys, os\nprint('prefix', sys.prefix)\n"
                                    f"open({str(packages / 'x.pth')!r}, 'w')")
            finally:
                await child.shutdown()

        asyncio.run(run())
        shown = "".join(outputs)
        assert f"prefix {env_dir}" in shown
        assert "Read-only file system" in shown  # the environment is visible, not writable
        assert not (packages / "x.pth").exists()
    finally:
        shutil.rmtree(env_dir.parent, ignore_errors=True)
