"""The JupyterLab extension end to end: a real JupyterLab, headless system Chromium,
real kernels, and the scripted LLM server over HTTP.

One lab server and one browser serve the whole module. Each test opens its own
notebook and leaves a screenshot in test-artifacts/ that shows what it asserts.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import llm_server as S
from tests.browser_support import NB, Lab, LabServer, write_notebook
from tests.env import oi_env

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

OI_KERNEL = ("open-interpreter", "Open Interpreter")
PY_KERNEL = ("python3", "Python 3 (ipykernel)")
CODE = "print(6 * 7)"
FINAL = "Done: the product is printed above."
UI_TIMEOUT = 60_000  # ms; generous, for a loaded 2-core machine


@pytest.fixture(scope="module")
def llm() -> Iterator[S.ScriptedLLMServer]:
    with S.ScriptedLLMServer() as server:
        yield server


@pytest.fixture(scope="module")
def lab_server(llm: S.ScriptedLLMServer, tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("lab")
    env = oi_env(llm, base, OI_LOG_DIR=str(base / "oi-logs"), OI_AUTO_RUN="0",
                 OI_APPROVAL="always")
    settings = {"oi-kernel:plugin": {"autoInsertCells": True}}
    server = LabServer(base, env, settings)
    server.start()
    if not server.has_labextension("oi-kernel:plugin"):
        server.stop()
        pytest.fail(
            "The oi-kernel JupyterLab extension is not installed in this environment "
            "(`jupyter labextension list` lacks oi-kernel): run `pip install -e .` again, or "
            "`jupyter labextension develop --overwrite .`.",
            pytrace=False,
        )
    yield server
    server.stop()


@pytest.fixture
def lab(
    browser: Any, lab_server: LabServer, llm: S.ScriptedLLMServer, request: pytest.FixtureRequest
) -> Iterator[Lab]:
    llm.reset()
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.set_default_timeout(UI_TIMEOUT)
    lab = Lab(page, lab_server)
    yield lab
    lab.screenshot(f"last-{request.node.name}.png")  # the state at the end, to debug failures
    context.close()
    lab_server.shutdown_kernels()
    ours = [e for e in lab.errors if "oi-kernel" in e or "oi_kernel" in e]
    assert ours == [], ours  # the extension logged no errors


def pending_card(lab: Lab) -> Any:
    return lab.current_panel().locator(".oi-card.oi-card-pending")


def stdout_with(lab: Lab, cell: int, text: str) -> Any:
    return lab.cell(cell).locator(
        '.jp-RenderedText[data-mime-type="application/vnd.jupyter.stdout"]', has_text=text
    )


def run_instruction_until_card(lab: Lab, instruction: str) -> Any:
    """Type an instruction in the first cell, run it, return the pending approval card."""
    lab.type_in_cell(0, instruction)
    lab.page.keyboard.press("Control+Enter")
    card = pending_card(lab)
    card.wait_for()
    assert card_code(card) == CODE
    return card


def card_code(card: Any) -> str:
    """The proposed code, as the card's (read-only) text area shows it."""
    return card.locator(".oi-code textarea").input_value()


def expect_step_ran(lab: Lab, cell: int) -> None:
    stdout_with(lab, cell, "42").wait_for()
    decided = lab.cell(cell).locator(".oi-card-decided pre.oi-code-ran")
    decided.wait_for()
    assert decided.inner_text().strip() == CODE
    assert pending_card(lab).count() == 0


def expected_tokens(llm: S.ScriptedLLMServer) -> tuple[int, int]:
    """Token totals as the scripted server computes them for the requests it got."""
    prompt = sum(len(json.dumps(body.get("messages", []))) // 4 for body in llm.requests)
    completion = sum(len(r.output) // 4 for r in (S.tool_call(CODE), S.text(FINAL)))
    return prompt, completion


def format_tokens(n: int) -> str:
    """The extension's formatTokens (protocol.ts) for the sizes used here."""
    if n < 1000:
        return str(n)
    value = n / 1000
    return (f"{value:.1f}".removesuffix(".0") if value < 10 else str(round(value))) + "k"


# ---------------------------------------------------------------- issue 3


def test_instruction_card_run_and_output(lab: Lab, lab_server: LabServer, llm):
    write_notebook(lab_server.root / "approve.ipynb", *OI_KERNEL, [])
    llm.enqueue(S.tool_call(CODE), S.text(FINAL))
    lab.open_notebook("approve.ipynb")

    card = run_instruction_until_card(lab, "multiply six by seven")
    assert stdout_with(lab, 0, "42").count() == 0  # nothing ran before the click
    lab.screenshot("browser-approve-card.png")
    card.locator("button.oi-run").click()

    expect_step_ran(lab, 0)
    lab.cell(0).get_by_text(FINAL).wait_for()
    lab.wait_kernel_idle()
    shot = lab.screenshot("browser-approve-click.png")
    assert shot.stat().st_size > 10_000
    assert len(llm.requests) == 2  # the output went back, the model answered once more


def test_fenced_reply_shows_each_proposal_once(lab: Lab, lab_server: LabServer, llm):
    """A markdown-style reply: its fenced copy folds to one line once the card shows the
    block; after Run, the decided record keeps the code: on screen once (issue 19)."""
    write_notebook(lab_server.root / "fenced.ipynb", *OI_KERNEL, [])
    llm.enqueue(S.text(f"I will multiply them.\n```python\n{CODE}\n```\n", chunk_size=6),
                S.text(FINAL))
    lab.open_notebook("fenced.ipynb")
    card = run_instruction_until_card(lab, "multiply six by seven")
    lab.cell(0).get_by_text("▸ python, 1 line: step 1, below").wait_for()
    lab.screenshot("browser-fenced-card.png")
    card.locator("button.oi-run").click()
    expect_step_ran(lab, 0)
    lab.cell(0).get_by_text(FINAL).wait_for()
    shown = lab.cell(0).locator(".jp-OutputArea").inner_text()
    assert shown.count(CODE) == 1, shown
    lab.screenshot("browser-fenced-ran.png")


# ---------------------------------------------------------------- issue 7


def test_shortcut_status_item_and_export(lab: Lab, lab_server: LabServer, llm):
    import nbformat

    write_notebook(lab_server.root / "shortcut.ipynb", *OI_KERNEL, [])
    llm.enqueue(S.tool_call(CODE), S.text(FINAL))
    lab.open_notebook("shortcut.ipynb")
    status = lab.page.locator(".oi-StatusItem")
    status.wait_for()
    assert status.inner_text().startswith("openai/scripted · 0 in / 0 out · ask each")

    run_instruction_until_card(lab, "multiply six by seven")
    lab.page.keyboard.press("Control+Alt+Enter")  # oi-kernel:approve-run
    expect_step_ran(lab, 0)
    lab.cell(0).get_by_text(FINAL).wait_for()

    prompt, completion = expected_tokens(llm)
    want = f"openai/scripted · {format_tokens(prompt)} in / {format_tokens(completion)} out"
    lab.page.wait_for_function(
        "want => (document.querySelector('.oi-StatusItem') || {}).textContent?.startsWith(want)",
        arg=want,
    )
    assert "Turns: 1" in status.get_attribute("title")
    lab.screenshot("browser-shortcut-status.png")

    lab.current_panel().locator(".oi-ExportButton").click()
    path_input = lab.page.locator(".jp-Dialog input")
    path_input.wait_for()
    assert path_input.input_value() == "shortcut-export.ipynb"
    lab.page.keyboard.press("Enter")
    lab.page.locator(".jp-Dialog", has_text="Export complete").wait_for()
    lab.page.locator(".jp-Dialog button", has_text="Open").click()

    exported = lab_server.root / "shortcut-export.ipynb"
    nb = nbformat.read(exported, as_version=4)
    nbformat.validate(nb)
    assert [c.source for c in nb.cells if c.cell_type == "code"] == [CODE]
    lab.page.locator(".lm-TabBar-tab", has_text="shortcut-export.ipynb").wait_for()
    lab.page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget?.context?.path === 'shortcut-export.ipynb'"
    )
    lab.current_panel().locator(".jp-Cell .jp-InputArea-editor", has_text=CODE).wait_for()
    lab.wait_kernel_idle()
    lab.screenshot("browser-shortcut-export.png")


# ---------------------------------------------------------------- issue 4 / 7


def open_magic_notebook(lab: Lab, root: Path, name: str, sources: list[str]) -> None:
    """A python3 notebook; run its cells top to bottom with Shift+Enter."""
    write_notebook(root / name, *PY_KERNEL, sources)
    lab.open_notebook(name)
    lab.cell(0).locator(".jp-InputArea-editor").click()
    for _ in sources:
        lab.page.keyboard.press("Shift+Enter")


def test_oi_magic_card_run_output_and_inserted_cell(lab: Lab, lab_server: LabServer, llm):
    llm.enqueue(S.tool_call(CODE), S.text(FINAL))
    sources = ["%load_ext oi_kernel", "%%oi\nmultiply six by seven"]
    open_magic_notebook(lab, lab_server.root, "magic.ipynb", sources)

    card = pending_card(lab)
    card.wait_for()
    assert lab.cell(1).locator(".oi-card.oi-card-pending").count() == 1  # in the %%oi cell
    assert card_code(card) == CODE
    assert stdout_with(lab, 1, "42").count() == 0
    # the comm opened once %load_ext ran: the status item shows the magic's session
    status = lab.page.locator(".oi-StatusItem")
    status.wait_for()
    assert "%%oi magic" in status.get_attribute("title")
    card.locator("button.oi-run").click()

    expect_step_ran(lab, 1)
    lab.cell(1).get_by_text(FINAL).wait_for()
    lab.wait_kernel_idle()
    # autoInsertCells is on (server settings): the code that ran became a cell below
    lab.page.wait_for_function(f"() => {NB}.widgets.length >= 3")
    sources_now = lab.cell_sources()
    assert sources_now[:3] == [*sources, CODE]
    assert "oi-generated" in lab.cell_tags(2)
    assert status.inner_text().startswith("openai/scripted · ")
    assert "0 in / 0 out" not in status.inner_text()  # the turn's tokens were pushed
    lab.screenshot("browser-magic-insert.png")


# ---------------------------------------------------------------- issue 24


def test_sandbox_grants_show_in_the_status_item(lab: Lab, lab_server: LabServer, tmp_path):
    from oi_kernel.execution import sandbox

    if sandbox.unavailable():
        pytest.skip(f"no sandbox here: {sandbox.unavailable()}")
    data = tmp_path / "granted-data"
    data.mkdir()
    (data / "table.csv").write_text("a,b\n1,2\n")
    cells = ["%sandbox on", f"%sandbox allow {data}",
             f"%%python\nprint(open({str(data / 'table.csv')!r}).read())"]
    write_notebook(lab_server.root / "sandbox.ipynb", *OI_KERNEL, cells)
    lab.open_notebook("sandbox.ipynb")
    status = lab.page.locator(".oi-StatusItem")
    status.wait_for()
    assert "sandbox" not in status.inner_text()
    lab.command("notebook:run-all-cells")
    stdout_with(lab, 2, "1,2").wait_for()
    lab.page.wait_for_function(
        "() => (document.querySelector('.oi-StatusItem') || {}).textContent?.endsWith('sandbox +1')"
    )
    assert f"Sandbox: on\n  may read: {data}" in status.get_attribute("title")
    lab.cell(1).get_by_text("read-only grants").wait_for()
    assert "variables from before are gone" in lab.cell(1).inner_text()
    lab.wait_kernel_idle()
    lab.screenshot("browser-sandbox-grants.png")


# ---------------------------------------------------------------- issue 23


def test_thinking_collapsed_and_a_recognised_bare_reply(lab: Lab, lab_server: LabServer, llm):
    """A small model (the server reports 1.5B parameters) thinks, then answers with bare
    code: the thinking is collapsed, the card says the code was recognised."""
    llm.model_meta = {"n_params": 1_543_714_304}
    thought = "The user wants six times seven. I will print 6 * 7."
    llm.enqueue(S.text(CODE, reasoning=thought))
    write_notebook(lab_server.root / "small.ipynb", *OI_KERNEL, [])
    lab.open_notebook("small.ipynb")

    card = run_instruction_until_card(lab, "What is six times seven?")
    assert "recognised as code" in card.locator(".oi-recognised").inner_text()
    thinking = lab.cell(0).locator("details.oi-thinking")
    thinking.wait_for()
    assert thinking.get_attribute("open") is None  # collapsed
    assert thinking.locator("summary").inner_text().startswith("thinking · 12 words")
    assert not thinking.locator("pre").is_visible()
    assert lab.cell(0).get_by_text("Small-model mode is on").count() == 1
    lab.screenshot("browser-small-model-card.png")
    card.locator("button.oi-run").click()
    expect_step_ran(lab, 0)
    assert "recognised as code" in lab.cell(0).locator(".oi-card-decided").inner_text()
    lab.wait_kernel_idle()
    thinking.locator("summary").click()  # opened on demand
    assert thinking.locator("pre").inner_text() == thought
    lab.screenshot("browser-small-model-thinking-open.png")
    # the code printed a result: a small model's turn ends after one LLM call (the other
    # requests are its 12 samples, the scripted fallback's "Done.", which has no code)
    lab.cell(0).get_by_text("1 LLM call + 12 samples").wait_for()
    assert len(llm.requests) == 13


# ---------------------------------------------------------------- issue 23


def test_small_model_card_shows_the_code_the_samples_agree_on(lab: Lab, lab_server: LabServer,
                                                             llm):
    """Small-model mode samples more drafts: the reply streams the first one, a notice says
    the card holds the code most drafts agree on, and Run runs that code."""
    floor, remainder = "a = 100\nb = 7\nprint(a // b)", "a = 100\nb = 7\nprint(a % b)"
    write_notebook(lab_server.root / "samples.ipynb", *OI_KERNEL,
                   ["%model smollm2", "What is the remainder when 100 is divided by 7?"])
    llm.enqueue(*(S.text(f"```python\n{code}\n```\n", chunk_size=6)
                  for code in (floor, remainder, remainder)))  # later samples: "Done." (no code)
    lab.open_notebook("samples.ipynb")
    # not awaited: the command's promise ends with the cells, and the second waits for Run
    lab.page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    card = pending_card(lab)
    card.wait_for()
    assert card_code(card) == remainder
    lab.cell(1).get_by_text("Proposing the code 2 of 13 drafts agree on").wait_for()
    lab.screenshot("browser-small-model-consensus.png")
    card.locator("button.oi-run").click()
    stdout_with(lab, 1, "2").wait_for()
    lab.cell(1).get_by_text("1 LLM call + 12 samples").wait_for()
    lab.wait_kernel_idle()
    assert len(llm.requests) == 13
    lab.screenshot("browser-small-model-ran.png")
