"""``%%oi`` knows the notebook it runs in (issue 46 item 1): a real python3 kernel started by
jupyter_client, litellm talking HTTP to the scripted server, whose recorded requests show what
the model was told."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from oi_kernel.magics.notebook_context import (
    CellErrors,
    NotebookContext,
    _is_oi_cell,
    compact_error_text,
    prepare,
)
from tests import llm_server as S
from tests import test_magics
from tests.env import TEST_KEY
from tests.test_magics import user_texts

kernel, ip = test_magics.kernel, test_magics.ip  # the python3 kernel with %load_ext oi_kernel

FAKE_KEY = "sk-proj-" + "a1b2c3d4e5f6g7h8i9j0k1l2"  # key-shaped: the pattern masks it


def run(ks, code: str) -> tuple[str, int]:
    result = ks.execute(code)
    return result.status, result.reply["content"]["execution_count"]


def sent_instruction(server) -> str:
    return user_texts(server.requests[0])[-1]


def test_fix_the_error_above_carries_the_failing_cell_and_its_error(ip, _server):
    status, leaked = run(ip, f"import os\nkey = {FAKE_KEY!r}\n(key, os.environ['OI_API_KEY'])")
    assert status == "ok"
    assert run(ip, "data = {'sales': [3, 4]}")[0] == "ok"
    status, failing = run(ip, "def total(d):\n    return sum(d['revenue'])\n\ntotal(data)")
    assert status == "error"
    _server.enqueue(S.text("The key is 'sales', not 'revenue'."))
    result = ip.execute("%%oi\nfix the error above")
    assert result.status == "ok", result.text
    sent = sent_instruction(_server)
    assert sent.startswith("fix the error above")
    assert f"In [{failing}]:\ndef total(d):\n    return sum(d['revenue'])" in sent
    assert f"Err[{failing}] (the last cell before this instruction failed):" in sent
    assert "KeyError: 'revenue'" in sent
    assert "return sum(d['revenue'])" in sent.split(f"Err[{failing}]")[1]  # the user's frame
    assert f"Out[{leaked}]:" in sent  # the earlier cell's output is there, masked
    assert FAKE_KEY not in sent and TEST_KEY not in sent
    assert sent.count("[REDACTED]") >= 2


def test_err_reference_is_replaced_and_no_context_leaves_the_cells_out(ip, _server):
    status, failing = run(ip, "rows = []\nrows[3]")
    assert status == "error"
    assert run(ip, "x = 41")[0] == "ok"
    _server.enqueue(S.text("An empty list has no index 3."))
    result = ip.execute(f"%%oi --no-context\nwhy did this fail: {{Err[{failing}]}} in "
                        f"{{In[{failing}]}}; then {{In[-1]}}")
    assert result.status == "ok", result.text
    sent = sent_instruction(_server)
    assert "IndexError: list index out of range" in sent
    assert "in rows = []\nrows[3]; then x = 41" in sent
    assert "recent cells" not in sent  # --no-context: only what the user referred to
    shown = ip.execute("%oi help").text  # where a user finds both
    assert "--no-context" in shown and "{Err[3]}" in shown


def test_reference_to_a_cell_that_does_not_exist_says_so_and_sends_nothing(ip, _server):
    result = ip.execute("%%oi\nexplain {In[99]}")
    assert result.status == "error"
    assert "UsageError: {In[99]}: there is no cell 99" in result.stderr
    assert "{In[-1]} is the cell just before" in result.stderr
    status, fine = run(ip, "y = 1")
    result = ip.execute(f"%%oi\nshow {{Err[{fine}]}}")
    assert result.status == "error"
    assert f"cell {fine} did not fail" in result.stderr
    assert _server.requests == []  # refused before anything was sent


def test_notebook_context_cells_setting_limits_the_cells(ip, _server):
    for n in range(3):
        assert run(ip, f"step_{n} = {n}")[0] == "ok"
    assert ip.execute("%config Engine.notebook_context_cells = 1").status == "ok"
    try:
        _server.enqueue(S.text("ok"))
        assert ip.execute("%%oi\nwhat did I just do").status == "ok"
    finally:
        assert ip.execute("%config Engine.notebook_context_cells = 3").status == "ok"
    sent = sent_instruction(_server)
    assert "step_2 = 2" not in sent  # the %config cell is the one just before
    assert "%config Engine.notebook_context_cells = 1" in sent


# ---------------------------------------------------------------------- pure parts
@pytest.mark.parametrize(("source", "expected"), [
    ("%%oi -y\nplot it", True),
    ("%oi reset\n%oi model x", True),
    ("  %%oi\nhi", True),
    ("%oil = 3", False),
    ("x = 1\n%oi reset", False),
    ("print('%%oi')", False),
    ("", False),
])
def test_oi_cells_are_left_out_of_the_note(source, expected):
    assert _is_oi_cell(source) is expected


def test_compact_error_keeps_the_user_frame_and_counts_the_rest():
    output = {"ename": "KeyError", "evalue": "'revenue'", "traceback": [
        "Cell In[3], line 2\n      1 d = {}\n----> 2 d['revenue']\n",
        "File /usr/lib/python3/dist-packages/pandas/core/frame.py:100, in get\n  ...\n",
        "KeyError: 'revenue'"]}
    text = compact_error_text(output)
    assert text.splitlines()[0] == "KeyError: 'revenue'"
    assert "----> 2 d['revenue']" in text
    assert text.endswith("[1 library frame left out]")


def test_without_a_shell_the_instruction_is_unchanged():
    assert prepare(None, "fix {In[3]}", use=True, cells=3, budget_tokens=0) == ("fix {In[3]}", "")


def fake_shell(sources: list[str]) -> SimpleNamespace:
    """Just what the context reads of an IPython shell: its input and output history."""
    manager = SimpleNamespace(input_hist_raw=["", *sources], output_hist={}, outputs={})
    return SimpleNamespace(history_manager=manager)


def test_a_small_budget_keeps_the_newest_cells():
    shell = fake_shell(["a = 1", "b = 2", "c = '" + "x" * 300 + "'", "%%oi\nnow"])
    context = NotebookContext(shell, CellErrors(shell), lambda text: text.replace("x", "*"))
    note = context.note(cells=3, limit=320)
    assert "In [3]:" in note and "In [2]:" not in note  # the newest first; the rest left out
    assert "x" not in note.split("]\n", 1)[1]  # the redaction applies to the cells
    assert context.note(cells=3).index("In [1]:") < context.note(cells=3).index("In [3]:")
    assert context.note(cells=0) == ""
