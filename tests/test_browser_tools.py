"""The approval card for an MCP tool call in real JupyterLab (headless Chromium): the card
shows the server, tool and JSON arguments; Run, Edit (the JSON) and Skip each do what they
say, and the result shows in the cell. Screenshots go to test-artifacts/."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from tests import llm_server as S
from tests.browser_support import Lab, LabServer, write_notebook
from tests.env import oi_env
from tests.test_browser import (  # noqa: F401  (fixtures)
    OI_KERNEL,
    UI_TIMEOUT,
    lab,
    llm,
    pending_card,
)
from tests.test_tools import tool_messages

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]
ROOT = Path(__file__).resolve().parents[1]
FINAL = "All three tool calls were decided."


@pytest.fixture(scope="module")
def lab_server(llm: S.ScriptedLLMServer, tmp_path_factory: pytest.TempPathFactory):  # noqa: F811
    base = tmp_path_factory.mktemp("labtools")
    config = base / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"prices": {
        "command": sys.executable, "args": ["-m", "tests.mcp_server"], "cwd": str(ROOT)}}}))
    env = oi_env(llm, base, OI_LOG_DIR=str(base / "oi-logs"), OI_AUTO_RUN="0",
                 OI_APPROVAL="always", OI_MCP_CONFIG=str(config))
    server = LabServer(base, env, {"oi-kernel:plugin": {"autoInsertCells": False}})
    server.start()
    yield server
    server.stop()


def call(name: str, args: dict) -> S.Response:
    return S.tool_calls([S.Call(json.dumps(args), name)])


def wait_for_mcp_server(ui: Lab, timeout: float = 90) -> None:
    """Run cell 0 (`%mcp`) until the MCP server is up, as a user would look before asking:
    an instruction waits at most 2 s for servers still starting, and with a warm model host
    the first instruction can come before a loaded machine has started this one."""
    deadline = time.monotonic() + timeout
    while True:
        ui.cell(0).locator(".jp-InputArea-editor").click()
        ui.page.keyboard.press("Control+Enter")
        ui.wait_kernel_idle()
        text = ui.cell(0).locator(".jp-OutputArea").inner_text()
        if "prices" in text and "starting" not in text:
            return
        assert time.monotonic() < deadline, f"the MCP server did not start: {text}"
        time.sleep(0.5)


def card_json(card) -> dict:
    return json.loads(card.locator(".oi-code textarea").input_value())


def test_tool_call_cards_run_edit_skip(lab: Lab, lab_server: LabServer, llm):  # noqa: F811
    write_notebook(lab_server.root / "tools.ipynb", *OI_KERNEL, ["%mcp", ""])
    llm.enqueue(call("prices__add", {"a": 2, "b": 3}),
                call("prices__lookup_price", {"item": "kiwi"}),
                call("prices__delete_item", {"item": "apple"}),
                S.text(FINAL))
    lab.open_notebook("tools.ipynb")
    wait_for_mcp_server(lab)
    lab.type_in_cell(1, "use the price tools")
    lab.page.keyboard.press("Control+Enter")
    cell = lab.cell(1)

    card = pending_card(lab)
    card.wait_for(timeout=UI_TIMEOUT * 2)
    assert "prices › add" in card.inner_text() and card_json(card) == {"a": 2, "b": 3}
    assert "runs on its MCP server" in card.inner_text()
    lab.screenshot("browser-tool-card.png")
    card.locator("button.oi-run").click()
    cell.get_by_text("5.0", exact=True).wait_for()

    card = pending_card(lab)
    card.wait_for()
    assert "prices › lookup_price" in card.inner_text()
    card.locator("button.oi-edit").click()
    card.locator(".oi-code textarea").fill('{"item": "pear"}')
    card.locator("button.oi-run").click()
    cell.get_by_text("pear: 2.5 EUR").first.wait_for()

    card = pending_card(lab)
    card.wait_for()
    assert "destructive" in card.inner_text()
    lab.screenshot("browser-tool-card-destructive.png")
    card.locator("input[placeholder^='why skip']").fill("keep the apples")
    card.locator("button.oi-skip").click()
    cell.get_by_text(FINAL).wait_for()
    lab.wait_kernel_idle()
    lab.screenshot("browser-tool-cards-decided.png")

    # (each result reaches the model framed as untrusted data: docs/security.md)
    results = tool_messages(llm.requests[-1])
    assert results[0] == "5.0" and results[1] == "pear: 2.5 EUR"
    assert results[2].startswith("The user declined") and "keep the apples" in results[2]
    decided = cell.locator(".oi-card-decided")
    assert decided.count() == 3
    assert "edited" in decided.nth(1).inner_text() and "skipped" in decided.nth(2).inner_text()
