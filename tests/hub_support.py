"""A real JupyterHub on 127.0.0.1 for tests: DummyAuthenticator with a password, a
SimpleLocalProcessSpawner (every user's single-user server is a local process of the OS user
running the tests, with that user's own home and ``JUPYTERHUB_USER``; ``USER`` names the OS
account, as in a container image shared by every user), and the Node.js
configurable-http-proxy in front.

JupyterHub is not a dependency of oi-kernel, so it lives in a virtual environment of its own,
created on first use in ``$OI_TEST_HUB_VENV`` (default
``~/.cache/oi-kernel-tests/jupyterhub-6.1.1-py3.X``): a ``.pth`` file there puts the test
run's own site-packages (``.venv``) on the path, so pip adds only what JupyterHub needs beyond
them (alembic, SQLAlchemy, certipy, ...) and never changes ``.venv``. The proxy is installed
with npm into ``$OI_TEST_CHP_PREFIX`` (default ``~/.cache/oi-kernel-tests/
configurable-http-proxy-5.3.0``). Both take about 15 s the first time.

A user's client logs in through the Hub's login form (the password is checked), asks the
Hub's REST API for a token, starts its server, and drives kernels through that server's REST
API and kernel websocket (``websocket-client``), sending an empty ``username`` in message
headers as JupyterLab 4 does.
"""

from __future__ import annotations

import contextlib
import fcntl
import getpass
import json
import os
import secrets
import shutil
import signal
import site
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.cookiejar import CookieJar
from pathlib import Path
from typing import Any

from tests.gateway_support import free_port

HUB_VERSION = "6.1.1"
CHP_VERSION = "5.3.0"
PY = f"{sys.version_info[0]}.{sys.version_info[1]}"
CACHE = Path.home() / ".cache" / "oi-kernel-tests"
HUB_VENV = Path(os.environ.get("OI_TEST_HUB_VENV") or CACHE / f"jupyterhub-{HUB_VERSION}-py{PY}")
CHP_PREFIX = Path(os.environ.get("OI_TEST_CHP_PREFIX")
                  or CACHE / f"configurable-http-proxy-{CHP_VERSION}")
ROOT = Path(__file__).resolve().parent.parent  # the checkout: the kernels run its oi_kernel
MARK = "OI_TEST_HUB_RUN"  # in every spawned server's environment: finds what is left behind


class Missing(RuntimeError):
    """A tool the Hub needs is not installed (the message says how to install it)."""


@contextlib.contextmanager
def _locked(name: str) -> Iterator[None]:
    """One installer at a time (two test runs may start together)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def hub_venv() -> Path:
    """The JupyterHub venv, created when missing; its ``.pth`` names this run's site-packages."""
    python = HUB_VENV / "bin" / "python"
    with _locked("jupyterhub"):
        if not python.exists():
            base = getattr(sys, "_base_executable", None) or sys.executable
            subprocess.run([base, "-m", "venv", "--clear", str(HUB_VENV)], check=True,
                           timeout=120)
        own = HUB_VENV / "lib" / f"python{PY}" / "site-packages"
        (own / "oi-kernel-tests-base.pth").write_text("\n".join(site.getsitepackages()) + "\n")
        # every top-level module the Hub and its servers import, found (not imported: fast)
        probe = [str(python), "-c", "import importlib.util as u, sys; sys.exit(not all("
                 "u.find_spec(m) for m in ('jupyterhub', 'alembic', 'sqlalchemy', 'certipy', "
                 "'oauthlib', 'pamela', 'jupyter_server', 'tornado', 'jupyter_events')))"]
        if subprocess.run(probe, capture_output=True, timeout=120).returncode != 0:
            subprocess.run([str(python), "-m", "pip", "install", "-q",
                            "--disable-pip-version-check", f"jupyterhub=={HUB_VERSION}"],
                           check=True, timeout=600)
            subprocess.run(probe, check=True, timeout=120)
    return HUB_VENV


def proxy_command() -> Path:
    """``configurable-http-proxy``, installed with npm when missing."""
    exe = CHP_PREFIX / "node_modules" / ".bin" / "configurable-http-proxy"
    if not (shutil.which("node") and shutil.which("npm")):
        raise Missing("JupyterHub's proxy needs Node.js and npm: apt-get install nodejs npm")
    with _locked("chp"):
        if not exe.exists():
            subprocess.run(["npm", "install", "--prefix", str(CHP_PREFIX), "--no-audit",
                            "--no-fund", "--loglevel=error",
                            f"configurable-http-proxy@{CHP_VERSION}"], check=True, timeout=600)
    return exe


@dataclass
class Hub:
    url: str
    dir: Path
    proc: subprocess.Popen[bytes]
    run_id: str
    log_path: Path
    users: list[str] = field(default_factory=list)

    def home(self, user: str) -> Path:
        return self.dir / "home" / user

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-6000:]


def _config(hub_dir: Path, ports: dict[str, int], password: str, users: list[str],
            environment: dict[str, str], venv: Path, chp: Path) -> str:
    spawner_cmd = [str(venv / "bin" / "jupyterhub-singleuser")]
    return "\n".join([
        "c = get_config()  # noqa",
        "c.JupyterHub.ip = '127.0.0.1'",
        f"c.JupyterHub.port = {ports['public']}",
        "c.JupyterHub.hub_ip = '127.0.0.1'",
        f"c.JupyterHub.hub_port = {ports['hub']}",
        f"c.JupyterHub.db_url = {('sqlite:///' + str(hub_dir / 'jupyterhub.sqlite'))!r}",
        f"c.JupyterHub.cookie_secret_file = {str(hub_dir / 'cookie_secret')!r}",
        "c.JupyterHub.cleanup_servers = True",
        f"c.ConfigurableHTTPProxy.api_url = 'http://127.0.0.1:{ports['proxy_api']}'",
        f"c.ConfigurableHTTPProxy.command = [{str(chp)!r}]",
        f"c.ConfigurableHTTPProxy.pid_file = {str(hub_dir / 'proxy.pid')!r}",
        "c.JupyterHub.authenticator_class = 'dummy'",
        f"c.DummyAuthenticator.password = {password!r}",
        f"c.Authenticator.allowed_users = {set(users)!r}",
        "from jupyterhub.spawner import SimpleLocalProcessSpawner",
        "class SameAccountSpawner(SimpleLocalProcessSpawner):",
        "    # each server: the Hub user's own home and JUPYTERHUB_USER, run by the one OS",
        "    # account running the Hub and saying so in USER (as a container image's account",
        "    # is the same for every user)",
        "    def user_env(self, env):",
        "        env = super().user_env(env)",
        f"        env['USER'] = env['LOGNAME'] = {getpass.getuser()!r}",
        "        return env",
        "c.JupyterHub.spawner_class = SameAccountSpawner",
        f"c.SimpleLocalProcessSpawner.home_dir_template = {str(hub_dir / 'home' / '{username}')!r}",
        f"c.Spawner.cmd = {spawner_cmd!r}",
        # jupyter_server refuses root without it (CI runs as root); harmless otherwise
        "c.Spawner.args = ['--allow-root']",
        "c.Spawner.start_timeout = 120",
        "c.Spawner.http_timeout = 120",
        f"c.Spawner.environment = {environment!r}",
        "",
    ])


def start_hub(hub_dir: Path, environment: dict[str, str], users: list[str], password: str,
              timeout: float = 180.0) -> Hub:
    """A JupyterHub whose single-user servers get ``environment`` (the administrator's
    settings), with ``users`` allowed in with ``password``; ready when its API answers."""
    venv, chp = hub_venv(), proxy_command()
    ports = {name: free_port() for name in ("public", "hub", "proxy_api")}
    run_id = secrets.token_hex(8)
    server_env = {
        MARK: run_id,
        "PYTHONPATH": str(ROOT),  # the checkout's oi_kernel, in servers and kernels alike
        "JUPYTER_PATH": os.path.join(sys.prefix, "share", "jupyter"),  # its kernelspecs
        **environment,
    }
    hub_dir.mkdir(parents=True, exist_ok=True)
    config = hub_dir / "jupyterhub_config.py"
    config.write_text(_config(hub_dir, ports, password, users, server_env, venv, chp))
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "JUPYTERHUB_USER")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["CONFIGPROXY_AUTH_TOKEN"] = secrets.token_hex(16)
    log_path = hub_dir / "hub.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([str(venv / "bin" / "jupyterhub"), "-f", str(config)],
                                cwd=hub_dir, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
    hub = Hub(f"http://127.0.0.1:{ports['public']}", hub_dir, proc, run_id, log_path, users)
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(OSError):
            with urllib.request.urlopen(hub.url + "/hub/api/", timeout=5) as response:
                if response.status == 200:
                    return hub
        if proc.poll() is not None or time.monotonic() > deadline:
            stop_hub(hub)
            raise RuntimeError(f"JupyterHub did not start:\n{hub.log()}")
        time.sleep(0.3)


def _spawned_pids(run_id: str) -> list[int]:
    """The processes this run's Hub spawned (servers, kernels): those with our marker."""
    needle = f"{MARK}={run_id}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if needle in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
    return found


def stop_hub(hub: Hub) -> None:
    """Stop the Hub (it stops its servers and proxy), then anything of ours still running."""
    if hub.proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(hub.proc.pid, signal.SIGTERM)
        try:
            hub.proc.wait(30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(hub.proc.pid, signal.SIGKILL)
            hub.proc.wait(10)
    pid_file = hub.dir / "proxy.pid"
    pids = _spawned_pids(hub.run_id)
    with contextlib.suppress(OSError, ValueError):
        pids.append(int(pid_file.read_text().strip()))
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


# ------------------------------------------------------------------------------ a user
class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


@dataclass
class HubUser:
    """One person's client of the Hub: their login cookie, then their API token."""

    hub: Hub
    name: str
    token: str = ""
    jar: CookieJar = field(default_factory=CookieJar)

    def __post_init__(self) -> None:
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar),
                                                  NoRedirect())

    def _cookie(self, name: str) -> str:
        return next((c.value for c in self.jar if c.name == name), "") or ""

    def login(self, password: str) -> int:
        """Log in through the login form; the HTTP status (302: logged in)."""
        with self.opener.open(self.hub.url + "/hub/login", timeout=10) as response:
            response.read()
        form = urllib.parse.urlencode({"username": self.name, "password": password,
                                       "_xsrf": self._cookie("_xsrf")}).encode()
        try:
            with self.opener.open(urllib.request.Request(self.hub.url + "/hub/login",
                                                         data=form), timeout=30) as response:
                return response.status
        except urllib.error.HTTPError as exc:
            return exc.code

    def request_token(self) -> str:
        """A token of the logged-in user, from the Hub's REST API (the cookie and _xsrf)."""
        with contextlib.suppress(urllib.error.HTTPError):  # a page that refreshes _xsrf
            self.opener.open(self.hub.url + "/hub/home", timeout=10).read()
        status, body = self.call(f"/hub/api/users/{self.name}/tokens", "POST",
                                 {"note": "oi-kernel test", "expires_in": 3600},
                                 headers={"X-XSRFToken": self._cookie("_xsrf")}, auth=False)
        if status != 201:
            raise RuntimeError(f"the Hub gave {self.name} no token: {status} {body}\n"
                               f"{self.hub.log()}")
        self.token = body["token"]
        return self.token

    def call(self, path: str, method: str = "GET", body: Any = None, *,
             headers: dict[str, str] | None = None, auth: bool = True) -> tuple[int, Any]:
        """(status, decoded JSON or text) of one request to the Hub or through its proxy."""
        data = json.dumps(body).encode() if body is not None else None
        all_headers = {"Content-Type": "application/json", **(headers or {})}
        if auth and self.token:
            all_headers["Authorization"] = f"token {self.token}"
        request = urllib.request.Request(self.hub.url + path, data=data, method=method,
                                         headers=all_headers)
        try:
            with self.opener.open(request, timeout=30) as response:
                raw = response.read()
                status = response.status
        except urllib.error.HTTPError as exc:
            raw, status = exc.read(), exc.code
        try:
            return status, json.loads(raw) if raw else None
        except ValueError:
            return status, raw.decode(errors="replace")

    def start_server(self, timeout: float = 150.0) -> None:
        """Start this user's server and wait until the Hub says it is ready."""
        status, body = self.call(f"/hub/api/users/{self.name}/server", "POST")
        if status not in (201, 202, 400):  # 400: already running
            raise RuntimeError(f"{self.name}'s server did not start: {status} {body}")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status, model = self.call(f"/hub/api/users/{self.name}")
            server = (model or {}).get("servers", {}).get("", {}) if status == 200 else {}
            if server.get("ready"):
                return
            time.sleep(0.5)
        raise RuntimeError(f"{self.name}'s server was not ready in {timeout:.0f} s:\n"
                           f"{self.hub.log()}")

    def stop_server(self) -> None:
        self.call(f"/hub/api/users/{self.name}/server", "DELETE")

    def start_kernel(self, kernel_name: str = "open-interpreter") -> KernelSocket:
        status, model = self.call(f"/user/{self.name}/api/kernels", "POST",
                                  {"name": kernel_name})
        if status != 201:
            raise RuntimeError(f"no kernel on {self.name}'s server: {status} {model}")
        return KernelSocket(self, model["id"])


# ------------------------------------------------------------------------------ a kernel
@dataclass
class Reply:
    reply: dict[str, Any]
    messages: list[dict[str, Any]]
    prompts: list[str]

    @property
    def status(self) -> str:
        return self.reply["content"]["status"]

    @property
    def stdout(self) -> str:
        return "".join(m["content"]["text"] for m in self.messages
                       if m["msg_type"] == "stream" and m["content"]["name"] == "stdout")

    @property
    def records(self) -> list[str]:
        """The approval cards' decided records (HTML), in order."""
        return [m["content"]["data"]["text/html"] for m in self.messages
                if m["msg_type"] == "update_display_data"
                and "oi-card-decided" in m["content"]["data"].get("text/html", "")]

    @property
    def text(self) -> str:
        """Streams, displays and errors, as plain text."""
        parts = []
        for m in self.messages:
            kind, content = m["msg_type"], m["content"]
            if kind == "stream":
                parts.append(content["text"])
            elif kind in ("display_data", "update_display_data", "execute_result"):
                parts.append(content["data"].get("text/plain", ""))
            elif kind == "error":
                parts.append(f"{content['ename']}: {content['evalue']}")
        return "\n".join(parts)


class KernelSocket:
    """A kernel on a user's server, driven over its websocket as JupyterLab does."""

    def __init__(self, user: HubUser, kernel_id: str) -> None:
        import websocket  # websocket-client

        self.user, self.id = user, kernel_id
        self.session = uuid.uuid4().hex
        url = (user.hub.url.replace("http://", "ws://", 1)
               + f"/user/{user.name}/api/kernels/{kernel_id}/channels?session_id={self.session}")
        self.ws = websocket.create_connection(
            url, header=[f"Authorization: token {user.token}"], timeout=5)

    def _message(self, msg_type: str, content: dict[str, Any], channel: str,
                 parent: dict[str, Any] | None = None) -> dict[str, Any]:
        header = {"msg_id": uuid.uuid4().hex, "msg_type": msg_type, "session": self.session,
                  "username": "",  # what JupyterLab 4 sends
                  "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "version": "5.3"}
        return {"header": header, "parent_header": parent or {}, "metadata": {},
                "content": content, "channel": channel, "buffers": []}

    def send(self, msg_type: str, content: dict[str, Any], channel: str = "shell",
             metadata: dict[str, Any] | None = None) -> None:
        msg = self._message(msg_type, content, channel)
        msg["metadata"] = metadata or {}
        self.ws.send(json.dumps(msg))

    def open_widgets(self) -> None:
        """Say that this frontend renders widgets, as JupyterLab's widget manager does."""
        self.send("comm_open", {"comm_id": uuid.uuid4().hex,
                                "target_name": "jupyter.widget.control", "data": {}},
                  metadata={"version": "1.0.0"})

    def execute(self, code: str, answer: Callable[[str], str] | list[str] | None = None,
                timeout: float = 120.0, on_message: Callable[[dict[str, Any]], None] | None = None,
                on_other: Callable[[dict[str, Any]], None] | None = None) -> Reply:
        """Run a cell; answer its stdin questions from ``answer`` (a list, or a function of
        the prompt); wait for its reply and idle. ``on_message`` sees each iopub message of
        the cell as it comes, ``on_other`` the iopub messages of other requests (a click's)."""
        import websocket

        answers = list(answer) if isinstance(answer, list) else None
        request = self._message("execute_request", {
            "code": code, "silent": False, "store_history": True, "user_expressions": {},
            "allow_stdin": True, "stop_on_error": True}, "shell")
        msg_id = request["header"]["msg_id"]
        self.ws.send(json.dumps(request))
        reply, idle, messages, prompts = None, False, [], []
        deadline = time.monotonic() + timeout
        while reply is None or not idle:
            if time.monotonic() > deadline:
                raise TimeoutError(f"no reply to {code!r} in {timeout:.0f} s; got {messages}")
            try:
                msg = json.loads(self.ws.recv())
            except websocket.WebSocketTimeoutException:
                continue
            if (msg.get("parent_header") or {}).get("msg_id") != msg_id:
                if on_other and msg.get("channel") == "iopub":
                    on_other(msg)
                continue
            kind, channel = msg["msg_type"], msg.get("channel")
            if channel == "shell" and kind == "execute_reply":
                reply = msg
            elif channel == "stdin" and kind == "input_request":
                prompt = msg["content"]["prompt"]
                prompts.append(prompt)
                if answers is not None:
                    value = answers.pop(0) if answers else ""
                else:
                    value = answer(prompt) if answer else ""
                self.ws.send(json.dumps(self._message(
                    "input_reply", {"value": value}, "stdin", parent=msg["header"])))
            elif channel == "iopub" and kind == "status":
                idle = msg["content"]["execution_state"] == "idle"
            elif channel == "iopub":
                messages.append(msg)
                if on_message:
                    on_message(msg)
        return Reply(reply, messages, prompts)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.ws.close()
        self.user.call(f"/user/{self.user.name}/api/kernels/{self.id}", "DELETE")
