"""A headless JupyterLab and Chromium for the browser tests.

``LabServer`` runs ``jupyter lab`` on 127.0.0.1 (free port, no token) in a
private root with its own settings, workspaces and runtime directories, the news
pop-up and update check off, and an environment that kernels inherit (the
scripted LLM server). ``launch_chromium`` starts the system Chromium through
Playwright; nothing is ever downloaded. The ``Lab`` page helpers wait on what the
UI really shows (the status bar's kernel state, rendered outputs), never on time.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

CHROMIUM = os.environ.get("OI_TEST_CHROMIUM") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
REPO = Path(__file__).resolve().parent.parent
ARTIFACTS = REPO / "test-artifacts"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_settings(settings_dir: Path, plugin: str, values: dict[str, Any]) -> None:
    """A user settings file, e.g. plugin ``@jupyterlab/apputils-extension:notification``."""
    package, _, name = plugin.rpartition(":")
    path = settings_dir / package / f"{name}.jupyterlab-settings"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(values), encoding="utf-8")


def write_notebook(path: Path, kernel: str, display_name: str, sources: list[str]) -> None:
    """A notebook file with code cells ``sources`` (one empty cell when none)."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": kernel, "display_name": display_name}
    nb.cells = [nbformat.v4.new_code_cell(s) for s in (sources or [""])]
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)


class LabServer:
    """``jupyter lab`` (or with ``app="notebook"``, Jupyter Notebook 7) as a subprocess;
    ``url`` once started; ``stop()`` ends it and its kernels."""

    def __init__(self, base: Path, env: dict[str, str], settings: dict[str, dict[str, Any]],
                 app: str = "lab"):
        self.base = base
        self.app = app
        self.root = base / "root"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = base / "lab.log"
        self.root.mkdir(parents=True, exist_ok=True)
        settings_dir = base / "settings"
        defaults = {
            "@jupyterlab/apputils-extension:notification": {
                "fetchNews": "false",
                "checkForUpdates": False,
            },
        }
        for plugin, values in {**defaults, **settings}.items():
            write_settings(settings_dir, plugin, values)
        self.env = {
            **os.environ,
            "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
            "JUPYTER_CONFIG_DIR": str(base / "config"),
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            **env,
        }
        module, cls = ("jupyterlab", "LabApp") if app == "lab" else ("notebook", "JupyterNotebookApp")
        self.args = [
            sys.executable, "-m", module,
            "--no-browser", "--allow-root",
            "--ip=127.0.0.1", f"--port={self.port}", "--port-retries=0",
            "--IdentityProvider.token=", "--ServerApp.password=",
            "--ServerApp.disable_check_xsrf=True",  # loopback test server: lets stop() POST
            f"--ServerApp.root_dir={self.root}",
            f"--{cls}.user_settings_dir={settings_dir}",
            f"--{cls}.workspaces_dir={base / 'workspaces'}",
            f"--{cls}.expose_app_in_browser=True",
        ]  # fmt: skip
        if app == "lab":
            self.args += [
                "--LabApp.news_url=None",
                "--LabApp.check_for_updates_class=jupyterlab.handlers.announcements.NeverCheckForUpdate",
            ]  # fmt: skip
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 90) -> None:
        log = open(self.log_path, "wb")  # noqa: SIM115  (closed with the process)
        self.proc = subprocess.Popen(
            self.args, env=self.env, cwd=self.root, stdout=log, stderr=subprocess.STDOUT
        )
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"jupyter lab exited:\n{self.log_tail()}")
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(f"{self.url}/api/status", timeout=2) as r:
                    if r.status == 200:
                        return
            time.sleep(0.2)
        self.stop()
        raise TimeoutError(f"jupyter lab did not answer in {timeout} s:\n{self.log_tail()}")

    def has_labextension(self, plugin: str) -> bool:
        """Whether the server serves ``plugin``'s settings schema (its extension is installed)."""
        try:  # Notebook 7 serves the settings at the same address
            with urllib.request.urlopen(f"{self.url}/lab/api/settings/{plugin}", timeout=10) as r:
                return r.status == 200
        except urllib.error.HTTPError:
            return False

    def shutdown_kernels(self) -> None:
        """End every session and kernel (what a test opened), keeping the server."""
        for kind in ("sessions", "kernels"):
            with urllib.request.urlopen(f"{self.url}/api/{kind}", timeout=10) as r:
                items = json.load(r)
            for item in items:
                req = urllib.request.Request(f"{self.url}/api/{kind}/{item['id']}", method="DELETE")
                with contextlib.suppress(urllib.error.HTTPError):
                    urllib.request.urlopen(req, timeout=30).close()

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        """Ask the server to shut down (it stops its kernels), then make sure it is gone."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            with contextlib.suppress(OSError, urllib.error.URLError):
                req = urllib.request.Request(f"{self.url}/api/shutdown", method="POST")
                urllib.request.urlopen(req, timeout=10).close()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
        self.proc = None


def launch_chromium(playwright: Any) -> Any:
    import pytest

    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"No Chromium at {CHROMIUM}: `apt-get install chromium` (scripts/test does "
                    "it), or set OI_TEST_CHROMIUM to one.", pytrace=False)
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


NB = "window.jupyterapp.shell.currentWidget.content"


class Lab:
    """One browser page on the lab server, with waits on what the UI shows."""

    def __init__(self, page: Any, server: LabServer) -> None:
        self.page = page
        self.server = server
        self.errors: list[str] = []
        page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))
        page.on(
            "console",
            lambda m: self.errors.append(m.text) if m.type == "error" else None,
        )

    def open_notebook(self, path: str, timeout: float = 90_000) -> None:
        """Open ``path`` in a fresh workspace and wait until its kernel is really idle."""
        self.page.goto(f"{self.server.url}/lab/tree/{path}?reset")
        self.page.wait_for_function(
            "p => window.jupyterapp && window.jupyterapp.shell.currentWidget"
            " && window.jupyterapp.shell.currentWidget.context"
            " && window.jupyterapp.shell.currentWidget.context.path === p",
            arg=path,
            timeout=timeout,
        )
        self.wait_kernel_idle(timeout)

    def wait_kernel_idle(self, timeout: float = 90_000) -> None:
        """The status bar's kernel item says Idle (the toolbar says so too early)."""
        self.page.locator("#jp-main-statusbar").get_by_text(re.compile(r"\|\s*Idle")).wait_for(
            timeout=timeout
        )

    def current_panel(self) -> Any:
        return self.page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")

    def cell(self, index: int) -> Any:
        return self.current_panel().locator(".jp-Notebook .jp-Cell").nth(index)

    def type_in_cell(self, index: int, text: str) -> None:
        self.cell(index).locator(".jp-InputArea-editor").click()
        self.page.keyboard.type(text)

    def cell_sources(self) -> list[str]:
        return self.page.evaluate(f"{NB}.widgets.map(c => c.model.sharedModel.getSource())")

    def cell_tags(self, index: int) -> list[str]:
        return self.page.evaluate(f"i => {NB}.widgets[i].model.getMetadata('tags') || []", index)

    def command(self, command: str, args: dict[str, Any] | None = None) -> Any:
        return self.page.evaluate(
            "([c, a]) => window.jupyterapp.commands.execute(c, a)", [command, args or {}]
        )

    def screenshot(self, name: str) -> Path:
        ARTIFACTS.mkdir(exist_ok=True)
        path = ARTIFACTS / name
        self.page.screenshot(path=str(path))
        return path
