"""Two people on one notebook (issue 34, items 2 and 4): JupyterLab with real-time
collaboration (jupyter-collaboration 5), two Chromium contexts signed in as alice and bob,
one Open Interpreter kernel. Both see the pending card (code, flags, buttons), also when bob
opens the notebook after the card appeared; bob approves; both views turn into the record
naming bob, and so do the session log and the status tooltip; under four-eyes, alice's own
Run of a flagged step is refused and bob's counts.

jupyter-collaboration is not a dependency of the project, and installing it changes how
every JupyterLab document opens, so it lives in a venv of its own, layered over the test
venv (a ``.pth`` file: only the collaboration packages are installed there), in
``$OI_TEST_COLLAB_VENV`` (default ``~/.cache/oi-kernel-tests/collab-5.0.4``), created on
first use. The lab server runs from it with this worktree's lab extension first on the
labextensions path. Each browser context is a user through a small jupyter_server
IdentityProvider that reads a cookie (the identity JupyterLab shows and sends).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import llm_server as S
from tests.browser_support import REPO, Lab, LabServer, write_notebook
from tests.env import oi_env
from tests.test_browser import OI_KERNEL, UI_TIMEOUT
from tests.test_identity import RISKY

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]

COLLAB_VERSION = "5.0.4"
COLLAB_VENV = Path(os.environ.get("OI_TEST_COLLAB_VENV") or
                   Path.home() / ".cache" / "oi-kernel-tests" / f"collab-{COLLAB_VERSION}")
CODE = "print('hello from the shared kernel')"
USER_COOKIE = "oi_test_user"

IDENTITY = f'''
from jupyter_server.auth.identity import IdentityProvider, User


class CookieUsers(IdentityProvider):
    """Test users: the {USER_COOKIE} cookie names who is signed in (loopback test server)."""

    def get_user(self, handler):
        name = handler.get_cookie("{USER_COOKIE}") or "nobody"
        return User(username=name, name=name.title(), display_name=name.title())
'''


def collab_python() -> Path:
    """The Python of the collaboration venv (created when missing); it sees the test venv's
    packages through a ``.pth`` file, rewritten each time (the test venv may move)."""
    python = COLLAB_VENV / "bin" / "python"
    if not python.exists():
        base = getattr(sys, "_base_executable", None) or sys.executable
        subprocess.run([base, "-m", "venv", "--clear", str(COLLAB_VENV)], check=True, timeout=120)
    site = Path(subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True, timeout=60).stdout.strip())
    (site / "_oi_test_venv.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    probe = subprocess.run([str(python), "-c", "import jupyter_collaboration"],
                           capture_output=True, timeout=60)
    if probe.returncode != 0:
        subprocess.run([str(python), "-m", "pip", "install", "-q",
                        f"jupyter-collaboration=={COLLAB_VERSION}"], check=True, timeout=700)
    return python


@pytest.fixture(scope="module")
def llm() -> Iterator[S.ScriptedLLMServer]:
    with S.ScriptedLLMServer() as server:
        yield server


@pytest.fixture(scope="module")
def collab_server(llm: S.ScriptedLLMServer, tmp_path_factory: pytest.TempPathFactory):
    python = collab_python()
    base = tmp_path_factory.mktemp("collab-lab")
    (base / "oi_test_identity.py").write_text(IDENTITY)
    ours = base / "jupyter-path" / "labextensions"
    ours.mkdir(parents=True)
    (ours / "oi-kernel").symlink_to(REPO / "oi_kernel" / "labextension")  # this worktree's
    venv_data = Path(sys.prefix) / "share" / "jupyter"
    env = oi_env(llm, base, OI_LOG_DIR=str(base / "oi-logs"), OI_AUTO_RUN="0",
                 OI_APPROVAL="always",
                 PYTHONPATH=os.pathsep.join([str(base), str(REPO),
                                             os.environ.get("PYTHONPATH", "")]),
                 JUPYTER_PATH=os.pathsep.join([str(base / "jupyter-path"), str(venv_data)]),
                 JUPYTER_CONFIG_PATH=str(Path(sys.prefix) / "etc" / "jupyter"),
                 JUPYTER_DATA_DIR=str(base / "data"))
    server = LabServer(base, env, {"oi-kernel:plugin": {"autoInsertCells": False}})
    server.args[0] = str(python)
    server.args.append("--ServerApp.identity_provider_class=oi_test_identity.CookieUsers")
    server.start(timeout=180)
    try:
        log = server.log_path.read_text(errors="replace")
        assert "jupyter_server_ydoc | extension was successfully loaded" in log, log[-3000:]
        yield server
    finally:
        server.stop()


class People:
    """A browser context per person, each signed in by its cookie."""

    def __init__(self, browser: Any, server: LabServer) -> None:
        self.browser = browser
        self.server = server
        self.contexts: list[Any] = []
        self.labs: dict[str, Lab] = {}

    def sign_in(self, name: str) -> Lab:
        context = self.browser.new_context(viewport={"width": 1300, "height": 900})
        context.add_cookies([{"name": USER_COOKIE, "value": name, "url": self.server.url}])
        self.contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(UI_TIMEOUT)
        # jupyter-collaboration asks after 5 s whether to keep waiting for a document that is
        # still loading (a loaded machine): answer as a user would, keep waiting
        slow = page.locator(".jp-Dialog", has_text="taking some time to load")
        page.add_locator_handler(
            slow, lambda dialog: dialog.get_by_role("button", name="Continue waiting").click())
        self.labs[name] = Lab(page, self.server)
        return self.labs[name]

    def close(self) -> None:
        for context in self.contexts:
            context.close()


@pytest.fixture
def people(browser: Any, collab_server: LabServer, llm: S.ScriptedLLMServer) -> Iterator[People]:
    llm.reset()
    crowd = People(browser, collab_server)
    yield crowd
    for name, lab in crowd.labs.items():
        lab.screenshot(f"collab-last-{name}.png")
    crowd.close()
    collab_server.shutdown_kernels()


def open_shared(lab: Lab, path: str, busy: bool = False) -> None:
    """Open ``path`` (no ``?reset``: a collaborator joins the same document); ``busy``: the
    kernel is in a cell (a card waits), so wait for our status item instead of Idle."""
    lab.page.goto(f"{lab.server.url}/lab/tree/{path}")
    lab.page.wait_for_function(
        "p => window.jupyterapp && window.jupyterapp.shell.currentWidget"
        " && window.jupyterapp.shell.currentWidget.context"
        " && window.jupyterapp.shell.currentWidget.context.path === p", arg=path)
    if busy:
        lab.page.wait_for_function(
            "() => (document.querySelector('.oi-StatusItem') || {}).textContent?.startsWith("
            "'openai/scripted')")
    else:
        lab.wait_kernel_idle()


def pending(lab: Lab) -> Any:
    return lab.current_panel().locator(".oi-card.oi-card-pending")


def decided(lab: Lab, cell: int) -> Any:
    return lab.cell(cell).locator(".oi-card-decided")


def decisions(server: LabServer) -> list[dict[str, Any]]:
    found = []
    for path in sorted((server.base / "oi-logs").rglob("*.jsonl")):
        for line in path.read_text().splitlines():
            event = json.loads(line)
            if event.get("event") == "decision":
                found.append(event)
    return found


def run_in_cell(lab: Lab, cell: int, text: str) -> None:
    lab.cell(cell).locator(".jp-InputArea-editor").click()
    lab.page.keyboard.type(text)
    lab.page.keyboard.press("Control+Enter")


def test_a_late_collaborator_sees_the_card_and_approves_and_everyone_sees_who(
        people: People, collab_server: LabServer, llm: S.ScriptedLLMServer):
    write_notebook(collab_server.root / "shared.ipynb", *OI_KERNEL, [""])
    llm.enqueue(S.tool_call(CODE), S.text("Printed it."))
    alice = people.sign_in("alice")
    open_shared(alice, "shared.ipynb")
    assert alice.page.evaluate(
        "window.jupyterapp.serviceManager.user.identity.username") == "alice"
    run_in_cell(alice, 0, "say hello")
    card = pending(alice)
    card.wait_for()
    assert card.locator(".oi-code textarea").input_value() == CODE

    bob = people.sign_in("bob")  # joins after the card appeared
    open_shared(bob, "shared.ipynb", busy=True)
    bobs = pending(bob)
    bobs.wait_for()
    assert bobs.locator(".oi-code textarea").input_value() == CODE
    for button in ("oi-run", "oi-edit", "oi-skip", "oi-run-all", "oi-stop"):
        assert bobs.locator(f"button.{button}").is_visible(), button
    alice.screenshot("collab-1-alice-pending.png")
    bob.screenshot("collab-1-bob-late-pending.png")

    bobs.locator("button.oi-run").click()
    for lab in (alice, bob):
        record = decided(lab, 0)
        record.wait_for()
        assert "approved by bob" in record.inner_text()
        lab.cell(0).locator('.jp-RenderedText[data-mime-type="application/vnd.jupyter.stdout"]',
                            has_text="hello from the shared kernel").wait_for()
    assert [(d["action"], d["by"]) for d in decisions(collab_server)] == [("approved", "bob")]
    status = alice.page.locator(".oi-StatusItem")
    alice.page.wait_for_function(
        "() => (document.querySelector('.oi-StatusItem') || {}).title?.includes("
        "'Last decision: step 1 · approved by bob')")
    assert "Last decision: step 1 · approved by bob" in status.get_attribute("title")
    alice.screenshot("collab-2-alice-decided-by-bob.png")
    bob.screenshot("collab-2-bob-decided.png")


def test_four_eyes_refuses_the_authors_own_click_and_takes_the_collaborators(
        people: People, collab_server: LabServer, llm: S.ScriptedLLMServer):
    write_notebook(collab_server.root / "four-eyes.ipynb", *OI_KERNEL, ["", ""])
    alice, bob = people.sign_in("alice"), people.sign_in("bob")
    open_shared(alice, "four-eyes.ipynb")
    open_shared(bob, "four-eyes.ipynb")
    run_in_cell(alice, 0, "%approval four-eyes")
    alice.cell(0).get_by_text("high risk flag").first.wait_for()
    before = len(decisions(collab_server))
    llm.enqueue(S.tool_call(RISKY), S.text("Cleaned up."))
    run_in_cell(alice, 1, "clean up the scratch folder")
    for lab in (alice, bob):
        card = pending(lab)
        card.wait_for()
        assert "Waiting for a collaborator" in card.locator(".oi-four-eyes").inner_text()
        assert "high" in card.locator(".oi-flags").inner_text()
        assert card.locator(".oi-code textarea").input_value() == RISKY
    pending(alice).locator("button.oi-run").click()
    refusal = pending(alice).locator(".oi-card-message")
    refusal.get_by_text("alice sent this instruction").wait_for()
    alice.screenshot("collab-3-alice-refused.png")
    assert pending(bob).is_visible()  # still pending for bob
    pending(bob).locator("button.oi-run").click()
    for lab in (alice, bob):
        record = decided(lab, 1)
        record.wait_for()
        assert "approved by bob" in record.inner_text()
    bob.screenshot("collab-4-bob-approved-four-eyes.png")
    new = decisions(collab_server)[before:]
    assert [(d["action"], d["by"], d["author"]) for d in new] == [("approved", "bob", "alice")]


def test_the_author_leaving_mid_card_leaves_the_collaborator_able_to_decide(
        people: People, collab_server: LabServer, llm: S.ScriptedLLMServer):
    write_notebook(collab_server.root / "leaving.ipynb", *OI_KERNEL, [""])
    llm.enqueue(S.tool_call(CODE), S.text("Printed it."))
    alice, bob = people.sign_in("alice"), people.sign_in("bob")
    open_shared(alice, "leaving.ipynb")
    open_shared(bob, "leaving.ipynb")
    run_in_cell(alice, 0, "say hello")
    pending(bob).wait_for()
    before = len(decisions(collab_server))
    alice.screenshot("collab-5-alice-before-leaving.png")
    people.contexts[0].close()  # alice's browser goes away while the card waits
    people.labs.pop("alice")
    pending(bob).locator("button.oi-run").click()
    record = decided(bob, 0)
    record.wait_for()
    assert "approved by bob" in record.inner_text()
    assert [(d["action"], d["by"]) for d in decisions(collab_server)[before:]] == [
        ("approved", "bob")]
    bob.screenshot("collab-6-bob-decided-after-alice-left.png")
