"""What the sandboxed child can reach, tried as an attacker would (real bubblewrap).

The original escape: a proposed step found another Jupyter kernel's connection file (an
``ipc`` kernel of a second server, its runtime dir under another home), connected to its
unix sockets and made that unconfined kernel write a file. Then the deny-by-default view:
$HOME is not there unless granted, grants are read-only unless granted for writing,
sensitive /etc files, the host's processes, the wrapper's connection file and session log
stay out of reach, and a unix socket planted in a granted directory cannot be reached.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import threading
import uuid
from pathlib import Path

import pytest
from jupyter_client import KernelManager

from oi_kernel.execution import sandbox
from tests import llm_server as S
from tests.kernel_client import KernelSession
from tests.test_kernel import oi_env, sent_tool_results

pytestmark = pytest.mark.skipif(sandbox.unavailable() != "", reason=f"no sandbox: {sandbox.unavailable()}")

PRIVATE_KEY = "FAKE-PRIVATE-KEY-CONTENT-0xC0FFEE"
HOST_MARKER = "host-process-marker-8812"

ATTACK = r"""
import glob, json, socket
found = sorted(set(glob.glob("/var/tmp/*/.local/share/jupyter/runtime/kernel-*.json")
                   + glob.glob(RUNTIME + "/kernel-*.json")))
print("connection files seen:", found)
for path in found:
    info = json.load(open(path))
    shell = f"{info['ip']}-{info['shell_port']}"
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(shell)
        print("CONNECTED to", shell)
    except OSError as exc:
        print("connect:", exc)
    from jupyter_client import BlockingKernelClient
    client = BlockingKernelClient(connection_file=path)
    client.load_connection_file()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=3)
        client.execute_interactive("open(TARGET, 'w').write('escaped')", timeout=3)
        print("DROVE THE OTHER KERNEL")
    except Exception as exc:
        print("jupyter_client:", type(exc).__name__, exc)
    finally:
        client.stop_channels()
"""


@pytest.fixture(scope="module")
def home():
    """The user's home, outside /tmp (the sandbox's /tmp is private anyway)."""
    path = Path(tempfile.mkdtemp(prefix="oi-home-", dir="/var/tmp"))
    (path / ".ssh").mkdir(mode=0o700)
    (path / ".ssh" / "id_rsa").write_text(PRIVATE_KEY)
    (path / ".netrc").write_text(f"machine example.com password {PRIVATE_KEY}")
    (path / "notes.txt").write_text("home-is-visible")
    (path / "docs").mkdir()
    (path / "docs" / "readme.txt").write_text("granted-docs")
    (path / "out").mkdir()
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def victim():
    """Another Jupyter server's kernel: ipc transport, its connection file in the runtime
    dir of another home outside /tmp. Returns (runtime dir, file it must never write)."""
    other_home = Path(tempfile.mkdtemp(prefix="oi-victim-home-", dir="/var/tmp"))
    runtime = other_home / ".local/share/jupyter/runtime"
    runtime.mkdir(parents=True, mode=0o700)
    km = KernelManager(kernel_name="python3", transport="ipc",
                       connection_file=str(runtime / "kernel-victim.json"))
    with open(os.devnull, "w") as null:
        km.start_kernel(env={**os.environ, "HOME": str(other_home)}, cwd=str(other_home),
                        stdout=null, stderr=null)
    target = other_home / f"escaped-{uuid.uuid4().hex[:6]}.txt"
    try:
        # The route works from outside a sandbox: the test could fail.
        client = km.client()
        client.start_channels()
        client.wait_for_ready(timeout=60)
        proof = other_home / "reachable.txt"
        client.execute_interactive(f"open({str(proof)!r}, 'w').write('yes')", timeout=30)
        client.stop_channels()
        assert proof.read_text() == "yes"
        yield runtime, target
    finally:
        km.shutdown_kernel(now=True)
        shutil.rmtree(other_home, ignore_errors=True)


@pytest.fixture(scope="module")
def boxed(_server, home, tmp_path_factory):
    """A sandboxed Open Interpreter kernel whose connection file and session log lie in its
    workspace (the worst place for them)."""
    workspace = tmp_path_factory.mktemp("workspace")
    env = oi_env(_server, workspace, OI_SANDBOX="1", OI_AUTO_RUN="1", HOME=str(home))
    connection = workspace / "wrapper-kernel.json"
    with KernelSession(env=env, cwd=str(workspace), connection_file=str(connection)) as ks:
        ks.workspace, ks.connection = workspace, connection
        yield ks


@pytest.fixture
def oi(boxed, _server):
    _server.reset()
    assert boxed.execute("%reset").status == "ok"
    return boxed


def py(ks: KernelSession, code: str) -> str:
    return ks.execute("%%python\n" + code).text


def step(ks: KernelSession, server: S.ScriptedLLMServer, code: str) -> tuple[str, str]:
    """Run ``code`` as an approved step the model proposed: (what the user saw, what the
    model was told)."""
    server.enqueue(S.tool_call(code), S.text("done"))
    shown = ks.execute("look around", timeout=120).stdout
    return shown, sent_tool_results(server.requests[-1])[-1]


def test_another_kernels_sockets_cannot_be_driven(oi, _server, victim):
    runtime, target = victim
    code = ATTACK.replace("RUNTIME", repr(str(runtime))).replace("TARGET", repr(str(target)))
    shown, told = step(oi, _server, code)
    assert "connection files seen: []" in shown  # nothing of another home is visible
    assert not target.exists()
    granted = oi.execute(f"%sandbox allow {runtime}")
    assert "restarted" in granted.text and f"read-only grants: `{runtime}`" in granted.text
    try:
        _server.reset()
        shown, told = step(oi, _server, code)
        assert "kernel-victim.json" in shown  # granted: the file is readable...
        assert "CONNECTED" not in shown and "DROVE" not in shown  # ...its sockets are not
        why = "the oi sandbox refuses new unix-domain sockets"
        assert why in shown and why in told  # the user and the model are told why
        assert not target.exists()
    finally:
        oi.execute(f"%sandbox revoke {runtime}")


def test_home_is_not_readable_until_granted_and_not_writable_unless_granted(oi, home):
    read = ("import os\n"
            f"for p in ['notes.txt', 'docs/readme.txt', '.ssh/id_rsa', '.netrc']:\n"
            f"    path = os.path.join({str(home)!r}, p)\n"
            "    try:\n"
            "        print(p, repr(open(path).read()))\n"
            "    except OSError as exc:\n"
            "        print(p, type(exc).__name__)\n")
    write = (f"try:\n    open({str(home / 'docs' / 'new.txt')!r}, 'w').write('w')\n"
             "    print('WROTE docs')\nexcept OSError as exc:\n    print('docs', exc.strerror)\n"
             f"try:\n    open({str(home / 'out' / 'result.txt')!r}, 'w').write('result')\n"
             "    print('WROTE out')\nexcept OSError as exc:\n    print('out', exc.strerror)\n")
    out = py(oi, read)
    assert "notes.txt FileNotFoundError" in out and "docs/readme.txt FileNotFoundError" in out
    assert PRIVATE_KEY not in out
    oi.execute(f"%sandbox allow {home / 'docs'}")
    oi.execute(f"%sandbox allow {home / 'out'} --write")
    try:
        status = oi.execute("%sandbox").text
        assert f"read-only grants: `{home / 'docs'}`" in status
        assert f"read-write grants: `{home / 'out'}`" in status
        out = py(oi, read + write)
        assert "docs/readme.txt 'granted-docs'" in out and "notes.txt FileNotFoundError" in out
        assert "docs Read-only file system" in out and "WROTE out" in out
        assert not (home / "docs" / "new.txt").exists()
        assert (home / "out" / "result.txt").read_text() == "result"
        oi.execute(f"%sandbox allow {home}")  # the whole home, read-only
        out = py(oi, read + write)
        assert "notes.txt 'home-is-visible'" in out and "WROTE out" in out
        assert ".ssh/id_rsa FileNotFoundError" in out and ".netrc ''" in out  # still hidden
        assert PRIVATE_KEY not in out
    finally:
        for path in (home, home / "docs", home / "out"):
            oi.execute(f"%sandbox revoke {path}")
    assert "docs/readme.txt FileNotFoundError" in py(oi, read)
    assert (home / ".ssh" / "id_rsa").read_text() == PRIVATE_KEY  # untouched on the host


def test_a_write_grant_of_home_is_refused(oi, home):
    refused = oi.execute(f"%sandbox allow {home} --write")
    assert refused.status == "error"
    assert "run code outside the sandbox" in refused.reply["content"]["evalue"]


def test_a_socket_planted_in_a_granted_dir_cannot_be_reached(oi, home):
    planted = home / "out" / "planted.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(planted))
    listener.listen(1)
    listener.settimeout(0.5)
    oi.execute(f"%sandbox allow {home / 'out'} --write")
    try:
        out = py(oi, "import os, socket\n"
                     f"print('visible', os.path.exists({str(planted)!r}))\n"
                     "try:\n"
                     "    s = socket.socket(socket.AF_UNIX)\n"
                     f"    s.connect({str(planted)!r})\n"
                     "    print('CONNECTED')\n"
                     "except OSError as exc:\n"
                     "    print('refused', exc.errno)")
        assert "visible True" in out and "refused 13" in out and "CONNECTED" not in out
        with pytest.raises(socket.timeout):
            listener.accept()  # the host saw nothing
    finally:
        listener.close()
        planted.unlink()
        oi.execute(f"%sandbox revoke {home / 'out'}")


def test_sensitive_files_and_host_processes_are_out_of_reach(oi):
    host = subprocess.Popen(["sleep", "60"], env={**os.environ, "HOST_MARKER": HOST_MARKER})
    try:
        out = py(oi, "import os\n"
                     "print('shadow', repr(open('/etc/shadow').read()))\n"
                     "print('passwd', len(open('/etc/passwd').read()) > 0)\n"
                     "seen = []\n"
                     "for pid in os.listdir('/proc'):\n"
                     "    if pid.isdigit():\n"
                     "        try:\n"
                     "            seen.append(open(f'/proc/{pid}/environ', 'rb').read())\n"
                     "        except OSError:\n"
                     "            pass\n"
                     f"print('marker', any(b{HOST_MARKER!r} in e for e in seen))\n"
                     "print('pids', sorted(int(p) for p in os.listdir('/proc') if p.isdigit())[:3])\n"
                     "try:\n"
                     "    open('/proc/1/environ', 'rb').read()\n"
                     "    print('pid 1 environ READ')\n"
                     "except OSError as exc:\n"
                     "    print('pid 1 environ', type(exc).__name__)\n"
                     "for d in ('/root', '/home', '/run', '/srv', '/mnt', '/media', '/opt', '/sys'):\n"
                     "    print(d, os.path.exists(d) and sorted(os.listdir(d)))")
    finally:
        host.kill()
        host.wait()
    assert "shadow ''" in out and "passwd True" in out
    assert "marker False" in out and "pids [1, 2" in out
    assert "pid 1 environ PermissionError" in out
    for d in ("/home", "/run", "/srv", "/mnt", "/media", "/sys"):
        assert f"{d} False" in out


def test_the_wrappers_connection_file_and_session_log_are_hidden(oi):
    log = Path(oi.execute("%log").text.split("`")[1])
    assert log.is_file() and str(log).startswith(str(oi.workspace))
    key = oi.connection.read_text()
    out = py(oi, "import os\n"
                 f"print('connection', repr(open({str(oi.connection)!r}).read()))\n"
                 f"print('logs', os.listdir({str(log.parent)!r}))\n"
                 "try:\n"
                 f"    open({str(log)!r}).read()\n"
                 "    print('LOG READ')\n"
                 "except OSError as exc:\n"
                 "    print('log', type(exc).__name__)\n"
                 "try:\n"
                 f"    open({str(log.parent / 'forged.jsonl')!r}, 'w').write('x')\n"
                 "    print('LOG WRITTEN')\n"
                 "except OSError as exc:\n"
                 "    print('forge', exc.strerror)")
    assert "connection ''" in out and key not in out
    assert "logs []" in out and "log FileNotFoundError" in out
    assert "forge Read-only file system" in out
    assert not (log.parent / "forged.jsonl").exists()


def test_network_is_still_blocked(oi):
    server = socket.create_server(("127.0.0.1", 0))
    accepted: list[object] = []
    thread = threading.Thread(target=lambda: accepted.append(server.accept()), daemon=True)
    thread.start()
    try:
        out = py(oi, "import socket\n"
                     "try:\n"
                     f"    socket.create_connection(('127.0.0.1', {server.getsockname()[1]}), 3)\n"
                     "    print('CONNECTED')\n"
                     "except OSError as exc:\n"
                     "    print('tcp', type(exc).__name__)\n"
                     "try:\n"
                     "    socket.getaddrinfo('example.com', 443)\n"
                     "    print('DNS')\n"
                     "except OSError as exc:\n"
                     "    print('dns', type(exc).__name__)")
        assert "tcp ConnectionRefusedError" in out and "dns gaierror" in out
        assert not accepted
    finally:
        server.close()
