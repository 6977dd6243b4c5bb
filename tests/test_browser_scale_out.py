"""What a user of a shared deployment sees in JupyterLab: the child kernel on a real Kernel
Gateway and an administrator's policy, in the status item, its tooltip and the cells."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests import gateway_support as G
from tests import llm_server as S
from tests.browser_support import Lab, LabServer, launch_chromium, write_notebook
from tests.env import oi_env

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

OI_KERNEL = ("open-interpreter", "Open Interpreter")


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LabServer, Any, Any]]:
    base = tmp_path_factory.mktemp("scale-out")
    admin = base / "admin"
    admin.mkdir()
    policy = admin / "oi_kernel_policy.json"
    policy.write_text(json.dumps({"approval": "risky", "allowed_models": ["openai/scripted"],
                                  "max_steps": 4}, indent=2))
    with S.ScriptedLLMServer() as llm, G.kernel_gateway() as gateway:
        env = oi_env(llm, base, OI_LOG_DIR=str(base / "oi-logs"), OI_AUTO_RUN="0",
                     OI_CHILD_GATEWAY_URL=gateway.url, OI_CHILD_GATEWAY_TOKEN=gateway.token,
                     JUPYTER_CONFIG_PATH=str(admin))
        server = LabServer(base, env, {})
        server.start()
        try:
            yield server, llm, gateway
        finally:
            server.stop()


@pytest.fixture
def lab(setup: tuple[LabServer, Any, Any]) -> Iterator[Lab]:
    from playwright.sync_api import sync_playwright

    server = setup[0]
    with sync_playwright() as p:
        browser = launch_chromium(p)
        page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
        page.set_default_timeout(90_000)
        lab = Lab(page, server)
        yield lab
        lab.screenshot("last-scale-out.png")
        browser.close()
    server.shutdown_kernels()


def test_gateway_and_policy_in_the_status_item_and_the_cells(lab: Lab, setup):
    server, llm, gateway = setup
    llm.reset()
    cells = ["%status", "%%python\nimport os\nprint('child pid', os.getpid())", "%approval never"]
    write_notebook(server.root / "shared.ipynb", *OI_KERNEL, cells)
    lab.open_notebook("shared.ipynb")
    lab.command("notebook:run-all-cells")
    lab.page.wait_for_function(
        "() => (document.querySelector('.oi-StatusItem') || {}).textContent?.endsWith('gateway · policy')"
    )
    status = lab.page.locator(".oi-StatusItem")
    tooltip = status.get_attribute("title")
    assert f"Code runs: in a child kernel on the gateway {gateway.url}" in tooltip, tooltip
    assert "Sandbox: the gateway's job" in tooltip
    assert "Administrator's policy in force" in tooltip and "approval at least risky" in tooltip
    output = lab.cell(1).locator(".jp-OutputArea-output").get_by_text("child pid")
    output.wait_for()
    pid = int(output.inner_text().split()[-1])
    import psutil

    assert psutil.Process(pid).ppid() == gateway.proc.pid  # the gateway started it
    refused = lab.cell(2).locator(".jp-OutputArea-output").filter(has_text="administrator's policy")
    refused.wait_for()
    assert "requires at least" in refused.inner_text() and "risky" in refused.inner_text()
    lab.wait_kernel_idle()
    status.hover()
    lab.screenshot("browser-gateway-policy.png")
    assert "the gateway's job" in lab.cell(0).inner_text()
