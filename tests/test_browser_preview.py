"""Issue 44 in JupyterLab: the card's Preview button runs the step in a disposable copy and
shows its output and changes in the card, the real file untouched; Run then does it (real
lab, headless Chromium, the scripted LLM server)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import llm_server as S
from tests.browser_support import REPO, Lab, LabServer, write_notebook
from tests.env import oi_env
from tests.test_browser import OI_KERNEL, lab, llm, pending_card  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]



@pytest.fixture(scope="module")
def lab_server(llm: S.ScriptedLLMServer, tmp_path_factory: pytest.TempPathFactory  # noqa: F811
               ) -> Iterator[LabServer]:
    """A lab that loads this checkout's built extension (JUPYTER_PATH comes first), so the
    card's Preview button is the one built from labextension/src here."""
    base = tmp_path_factory.mktemp("lab")
    data = base / "data" / "labextensions"
    data.mkdir(parents=True)
    (data / "oi-kernel").symlink_to(REPO / "oi_kernel" / "labextension")
    env = oi_env(llm, base, OI_LOG_DIR=str(base / "oi-logs"), OI_AUTO_RUN="0",
                 OI_APPROVAL="always", JUPYTER_PATH=str(Path(base / "data")))
    server = LabServer(base, env, {"oi-kernel:plugin": {"autoInsertCells": True}})
    server.start()
    yield server
    server.stop()


STEP = ("import pathlib\npathlib.Path('sales.csv').write_text('month,total\\n' * 200)\n"
        "print('rows written: 200')")


def test_the_preview_shows_in_the_card_before_run(
    lab: Lab, lab_server: LabServer, llm: S.ScriptedLLMServer  # noqa: F811 (the fixtures)
):
    write_notebook(lab_server.root / "preview.ipynb", *OI_KERNEL, [])
    sales = lab_server.root / "sales.csv"
    sales.write_text("month,total\nJan,5\n")
    llm.enqueue(S.tool_call(STEP), S.text("Rewritten."))
    lab.open_notebook("preview.ipynb")
    lab.type_in_cell(0, "rewrite the sales file")
    lab.page.keyboard.press("Control+Enter")
    card = pending_card(lab)
    card.wait_for()
    buttons = card.locator("button").all_inner_texts()
    assert buttons[:4] == ["Run", "Edit", "Preview", "Skip"], buttons
    card.locator("button.oi-preview").click()
    shown = card.locator(".oi-preview-area .oi-preview-network, .oi-preview-area ul")
    shown.first.wait_for()
    text = card.locator(".oi-preview-area").inner_text()
    assert "nothing real changed" in text and "rows written: 200" in text
    assert "sales.csv (modified, 18 bytes → 2.4 kB)" in text, text
    assert sales.read_text() == "month,total\nJan,5\n"  # the real file is untouched
    lab.screenshot("browser-preview-card.png")
    card.locator("button.oi-run").click()
    lab.cell(0).get_by_text("Rewritten.").wait_for()
    lab.wait_kernel_idle()
    assert sales.read_text() == "month,total\n" * 200
