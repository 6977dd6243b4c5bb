"""The warm host (issue 42 item 1, oi_kernel/llm/host_link.py and warm_host.py): a process of
ours that imports litellm asks the host and never imports litellm itself; the replies, tool
calls, retries, errors and their messages are the ones the plain path gives; an interrupt
stops the request; a host that dies leaves the plain path working; a host leaves when its
kernels are gone (no orphan). Each run is a fresh interpreter against the scripted server
over real HTTP.

Guarded against upgrades: when a litellm release or a change of ours stops the host from
applying (the kernel then quietly imports litellm itself), ``imported_here`` turns True and
these tests fail.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from oi_kernel.llm import host_link

REPO = Path(__file__).resolve().parents[1]
SCRIPT = """
import asyncio, sys, time, json
from tests import llm_server as S
from oi_kernel.errors import LLMError
from oi_kernel.llm import boundary, host_link
from oi_kernel.llm.client import LLM

boundary.own_process()
boundary.warm_up()
events = []
def on(kind):
    return lambda text: events.append([kind, text])

async def ask(llm, tools=None):
    try:
        reply = await llm.stream([{"role": "user", "content": "hi"}], tools, on_text=on("text"),
                                 on_retry=on("retry"), on_reasoning=on("reasoning"))
        return {"text": reply.text, "calls": [[c.name, c.arguments] for c in reply.tool_calls],
                "usage": [reply.usage.prompt_tokens, reply.usage.completion_tokens],
                "finish": reply.finish_reason, "reasoning": reply.reasoning}
    except LLMError as exc:
        return {"error": type(exc).__name__, "message": str(exc).replace(llm.api_base, "URL"),
                "partial": exc.partial_text}

async def cancelled(llm):
    task = asyncio.ensure_future(ask(llm))
    await asyncio.sleep(1.0)
    started = time.monotonic()
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    return time.monotonic() - started

TOOL = [{"type": "function", "function": {"name": "execute", "parameters": {
    "type": "object", "properties": {"code": {"type": "string"}}}}}]
with S.ScriptedLLMServer() as server:
    llm = LLM(model="openai/scripted", api_base=server.url, api_key="sk-test-000",
              max_retries=1)
    server.enqueue(S.text("Hello there."), S.tool_call("print(1)"), S.error(401, "bad key"),
                   S.error(500, "down"), S.error(500, "down"), S.stall(30), S.text("After."))
    out = {"results": [asyncio.run(ask(llm)), asyncio.run(ask(llm, TOOL)),
                       asyncio.run(ask(llm)), asyncio.run(ask(llm))]}
    out["cancel_s"] = asyncio.run(cancelled(llm))
    out["results"].append(asyncio.run(ask(llm)))
    server.enqueue(S.error(400, "this model does not support tools"))
    out["results"].append(asyncio.run(ask(llm, TOOL)))
    out["refused"] = llm.tools_refused()
    out["tokens"] = llm.count_tokens("one two three")
    out["uses_tools"] = llm.uses_tools()
    out["window"] = llm.context_window()
    out["events"] = events
    out["imported_here"] = "litellm" in sys.modules
    link = host_link._link
    out["host"] = None if link is None or not link.ok else link.path
print(json.dumps(out))
"""


def run_script(script: str, tag: str, tmp: Path, *, host: bool = True) -> Any:
    """What ``script`` printed last (JSON), run in a fresh interpreter with a host of its own
    (``tag``=tmp is part of the host's identity) or with hosts switched off."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           host_link.SWITCH_ENV: "1" if host else "0", host_link.IDLE_ENV: "1", tag: str(tmp)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=600, env=env, cwd=str(REPO))
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def host_processes(path: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        if path in " ".join(proc.info["cmdline"] or []):
            found.append(proc)
    return found


@pytest.mark.kernel  # real processes: a host, litellm imported, the scripted server
def test_the_host_answers_as_the_kernel_would_and_leaves_after_it(tmp_path):
    hosted = run_script(SCRIPT, "WARM_HOST_TEST", tmp_path)
    plain = run_script(SCRIPT, "WARM_HOST_TEST", tmp_path, host=False)
    assert hosted["host"] and plain["host"] is None
    assert hosted["imported_here"] is False, "the host did not serve: litellm imported here"
    assert plain["imported_here"] is True
    for key in ("results", "tokens", "uses_tools", "window", "events", "refused"):
        assert hosted[key] == plain[key], key
    text, call, auth, server, after, no_tools = hosted["results"]
    assert no_tools["error"] == "LLMToolsUnsupportedError" and hosted["refused"]
    assert text["text"] == "Hello there." and call["calls"][0][0] == "execute"
    assert auth["error"] == "LLMAuthError" and server["error"] == "LLMError"
    assert ["retry", server_retry_line(hosted)] in hosted["events"]
    assert after["text"] == "After."
    assert hosted["cancel_s"] < 2.0  # the interrupt reached the request through the host
    deadline = time.monotonic() + 15  # idle 1 s once the process that attached is gone
    while host_processes(hosted["host"]) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert host_processes(hosted["host"]) == [], "the warm host outlived its kernels"
    assert not Path(hosted["host"]).exists()


def server_retry_line(result: dict) -> str:
    return next(text for kind, text in result["events"] if kind == "retry")


KILL_SCRIPT = """
import asyncio, json, os, signal, sys
from tests import llm_server as S
from oi_kernel.llm import boundary, host_link
from oi_kernel.llm.client import LLM

boundary.own_process()
boundary.warm_up()
with S.ScriptedLLMServer() as server:
    server.set_fallback(lambda body: S.text("Done."))
    llm = LLM(model="openai/scripted", api_base=server.url, api_key="sk-test-000")
    first = asyncio.run(llm.stream([{"role": "user", "content": "hi"}], None)).text
    before = "litellm" in sys.modules
    other = host_link.Link()  # another kernel: finds the warm host (its hello and ok at once)
    other.start()
    shared = other.wait() and other.process is None
    other.release()
    os.kill(host_link._link.process.pid, signal.SIGKILL)  # this process started it
    host_link._link.process.wait()
    second = asyncio.run(llm.stream([{"role": "user", "content": "hi"}], None)).text
    old = host_link._link
    stale = os.path.exists(old.path)  # the killed host's socket: nobody listens
    host_link._link = None
    host_link.start()  # a new kernel: finds the stale socket and starts a host of its own
    fresh = host_link._link.wait() and host_link._link.process is not None
    host_link.release()
print(json.dumps([first, before, shared, second, "litellm" in sys.modules, stale, fresh]))
"""


@pytest.mark.kernel
def test_a_host_that_dies_leaves_the_plain_path(tmp_path):
    assert run_script(KILL_SCRIPT, "WARM_HOST_KILL", tmp_path) == [
        "Done.", False, True, "Done.", True, True, True]


BUSY_SCRIPT = """
import asyncio, json, random, sys, threading, time
from tests import llm_server as S
from oi_kernel.llm import boundary, host_link
from oi_kernel.llm.client import LLM

boundary.own_process()
boundary.warm_up()
assert host_link._link.wait()
random.seed(7)
words = ["".join(random.choice("abcdefghij") for _ in range(6)) for _ in range(5000)]
text = " ".join(random.choice(words) for _ in range(2_400_000))  # ~1.5 s of counting here
at = {}
sent = threading.Event()
def count():  # another kernel's question about a very large text (host_link.Link.call's wire)
    sock = host_link.dial(host_link._link.path, timeout=300)
    sock.sendall(json.dumps({"op": "call", "name": "count_tokens", "args": [text]}).encode()
                 + b"\\n")
    at["sent"] = time.monotonic()  # the host has read (nearly) all of it: its buffer is small
    sent.set()
    at["tokens"] = json.loads(host_link.read_line(sock))["value"]
    at["count"] = time.monotonic()
with S.ScriptedLLMServer() as server:
    server.set_fallback(lambda body: S.text("Done."))
    llm = LLM(model="openai/scripted", api_base=server.url, api_key="sk-test-000")
    asyncio.run(llm.stream([{"role": "user", "content": "warm"}], None))
    counter = threading.Thread(target=count)
    counter.start()
    sent.wait()
    time.sleep(0.3)  # the host parses the question and is counting
    reply = asyncio.run(llm.stream([{"role": "user", "content": "hi"}], None)).text
    at["stream"] = time.monotonic()
    counter.join()
print(json.dumps({"reply": reply, "stream_s": at["stream"] - at["sent"],
                  "count_s": at["count"] - at["sent"], "tokens": at["tokens"],
                  "imported_here": "litellm" in sys.modules}))
"""


@pytest.mark.kernel
def test_a_long_model_question_does_not_hold_up_another_kernels_stream(tmp_path):
    out = run_script(BUSY_SCRIPT, "WARM_HOST_BUSY", tmp_path)
    assert out["reply"] == "Done." and out["imported_here"] is False
    assert out["tokens"] > 1_000_000  # the count ran in the host, to the end
    # served while the count went on: the stream ends at ~0.3 s, the count ~1 s later (on the
    # loop, the stream waited for the whole count and ended after it)
    assert out["stream_s"] < out["count_s"] - 0.5, out


def test_a_host_is_shared_only_within_one_environment(monkeypatch):
    monkeypatch.setenv("OI_LOG_DIR", "/one")
    monkeypatch.setenv("JPY_SESSION_NAME", "a.ipynb")
    first = host_link.host_key()
    monkeypatch.setenv("OI_LOG_DIR", "/two")  # ours, read by the kernel: the same host
    monkeypatch.setenv("JPY_SESSION_NAME", "b.ipynb")
    assert host_link.host_key() == first
    monkeypatch.setenv("OPENAI_API_KEY", "sk-other")  # litellm reads it: another host
    assert host_link.host_key() != first


def test_the_socket_directory_is_owner_only(monkeypatch):
    short = Path(tempfile.mkdtemp(prefix="oiw"))  # a socket's path must stay short
    try:
        (short / "run" / "oi-kernel").mkdir(parents=True)
        os.chmod(short / "run" / "oi-kernel", 0o755)  # someone else could reach a socket
        monkeypatch.delenv(host_link.DIR_ENV, raising=False)
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(short / "run"))
        monkeypatch.setattr(host_link.tempfile, "gettempdir", lambda: str(short))
        chosen = host_link.runtime_dir()
        assert chosen == str(short / f"oi-kernel-{os.getuid()}")
        assert stat.S_IMODE(os.stat(chosen).st_mode) == 0o700
    finally:
        shutil.rmtree(short)


def test_the_embedded_model_stays_in_the_kernel_decided_before_asking(monkeypatch):
    from oi_kernel.llm import remote
    from oi_kernel.llm.client import LLM

    monkeypatch.setattr(host_link, "_link", host_link.Link())  # a host starting
    monkeypatch.delitem(sys.modules, "litellm", raising=False)
    assert remote.serves(LLM(model="openai/gpt-4o-mini"))
    assert not remote.serves(LLM(model="local/smollm2"))  # llama.cpp runs in this process
    host_link._link.dead = True  # a host that died: nothing goes there
    assert not remote.serves(LLM(model="openai/gpt-4o-mini"))


def test_a_host_is_started_early_only_for_a_model_it_can_serve(monkeypatch):
    from oi_kernel.llm import local as local_model

    for name in [k for k in os.environ if k.endswith("_API_KEY") or k.startswith("OI_API")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("OI_MODEL", "local/smollm2")
    assert local_model.expected()  # python -m oi_kernel starts no host
    monkeypatch.setenv("OI_MODEL", "openai/gpt-4o-mini")
    assert not local_model.expected()
    monkeypatch.delenv("OI_MODEL")  # the default: the embedded model when it is installed
    assert local_model.expected() is local_model.available()
    monkeypatch.setenv("OI_API_BASE", "http://127.0.0.1:1/v1")
    assert not local_model.expected()


def test_a_host_from_other_code_is_not_used(tmp_path, monkeypatch):
    (tmp_path / "llm").mkdir()
    (tmp_path / "llm" / "client.py").write_text("x = 1\n")
    before = host_link.code_stamps(str(tmp_path))
    os.utime(tmp_path / "llm" / "client.py", (1, 1))  # the module changed (or reinstalled)
    assert host_link.code_stamps(str(tmp_path)) != before
    key = host_link.host_key()
    monkeypatch.setattr(host_link, "code_stamps", lambda package: [("kernel.py", 1.0)])
    assert host_link.host_key() != key  # another socket: the other code's host is not asked


def test_a_hung_host_is_found_out_and_the_plain_path_taken(tmp_path, monkeypatch):
    short = Path(tempfile.mkdtemp(prefix="oiw"))
    os.chmod(short, 0o700)
    monkeypatch.setenv(host_link.DIR_ENV, str(short))
    monkeypatch.setattr(host_link, "HELLO_TIMEOUT_S", 0.5)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(str(short / f"host-{host_link.host_key()}.sock"))
        listener.listen()  # accepts connections, never answers
        link = host_link.Link()
        started = time.monotonic()
        link.start()
        assert link.wait(timeout=10) is False and link.dead
        assert time.monotonic() - started < 5
    finally:
        listener.close()
        shutil.rmtree(short)


def test_files_of_hosts_gone_for_a_day_are_removed(tmp_path):
    import fcntl

    for key in ("old", "held", "new"):
        for suffix in (".sock.lock", ".log"):
            (tmp_path / f"host-{key}{suffix}").write_text("")
            if key != "new":
                os.utime(tmp_path / f"host-{key}{suffix}", (1, 1))
    with open(tmp_path / "host-held.sock.lock") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # a host still runs for this key
        host_link.sweep(str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "host-held.log", "host-held.sock.lock", "host-new.log", "host-new.sock.lock"]


def wait_for(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


@pytest.mark.kernel  # a real Jupyter server, its warm host and an Open Interpreter kernel
def test_jupyter_starts_the_host_and_its_kernels_share_it(tmp_path):
    """The server extension starts the host when Jupyter starts (before any notebook), and a
    kernel the server starts attaches to that host rather than starting its own: the
    environment the kernel gets from the server hashes to the server's host."""
    import urllib.request

    from tests.browser_support import free_port

    sockets = Path(tempfile.mkdtemp(prefix="oiw"))  # short: a Unix socket's path is limited
    os.chmod(sockets, 0o700)
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO), host_link.DIR_ENV: str(sockets),
           host_link.IDLE_ENV: "1", "OI_MODEL": "openai/scripted",
           "OI_API_BASE": "http://127.0.0.1:9/v1", "OI_API_KEY": "k",
           "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime")}
    command = [sys.executable, "-m", "jupyter", "server", "--no-browser", f"--port={port}",
               "--IdentityProvider.token=t", "--ServerApp.jpserver_extensions={'oi_kernel': True}",
               f"--ServerApp.root_dir={tmp_path}"] + (["--allow-root"] if os.getuid() == 0 else [])
    server = subprocess.Popen(command, env=env, cwd=str(tmp_path), stdout=subprocess.DEVNULL,
                              stderr=open(tmp_path / "server.log", "wb"))  # noqa: SIM115
    logs = lambda: "".join(p.read_text() for p in sockets.glob("*.log"))  # noqa: E731
    try:
        wait_for(lambda: "attached: jupyter server" in logs(), 120,
                 "the server started no warm host:\n" + (tmp_path / "server.log").read_text())
        assert "oi_kernel: starting the warm model host" in (tmp_path / "server.log").read_text()
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/api/kernels", data=b'{"name": "open-interpreter"}',
            headers={"Authorization": "token t", "Content-Type": "application/json"})
        assert urllib.request.urlopen(request, timeout=60).status == 201
        wait_for(lambda: "attached: kernel" in logs(), 120, "the kernel attached to no host")
        assert len(list(sockets.glob("*.sock"))) == 1, "the kernel started a host of its own"
        assert "(2 attached)" in logs(), logs()
    finally:
        server.terminate()  # its kernels are shut down with it
        server.wait(timeout=60)
        wait_for(lambda: not list(sockets.glob("*.sock")), 30, "the host outlived the server")
        shutil.rmtree(sockets)


def test_the_server_extension_starts_no_host_when_there_is_nothing_to_warm(monkeypatch):
    from types import SimpleNamespace

    from oi_kernel.integrations import server

    said: list[str] = []
    app = SimpleNamespace(log=SimpleNamespace(info=said.append))
    started: list[str] = []
    monkeypatch.setattr(host_link, "start", lambda who: started.append(who) or True)
    monkeypatch.setenv("OI_MODEL", "local/smollm2")  # the embedded model runs in the kernel
    server._load_jupyter_server_extension(app)
    assert started == [] and "no warm model host" in said[-1]
    monkeypatch.setenv("OI_MODEL", "openai/gpt-4o-mini")
    server._load_jupyter_server_extension(app)
    assert started == ["jupyter server"] and "OI_WARM_HOST=0 turns it off" in said[-1]


def test_hosts_switched_off_start_nothing(monkeypatch):
    monkeypatch.setattr(host_link, "_link", None)
    monkeypatch.setenv(host_link.SWITCH_ENV, "0")
    assert host_link.start(who="jupyter server") is False and host_link._link is None
