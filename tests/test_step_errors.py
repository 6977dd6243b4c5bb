"""A recovered step's error is compact in the cell (issue 31): the error line and the
user-code frames, the full traceback one click away (HTML) or named by ``%last_error``
(text); an error the instruction ends on is shown in full. The model and the log keep the
full traceback. Pure pieces first, then a real kernel with pandas."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from oi_kernel.core import events as E
from oi_kernel.core.output_text import compact_error
from oi_kernel.core.types import CodeBlock, Decision, StepRecord, Turn
from oi_kernel.session.error_view import compact_bundle, last_error_markdown
from oi_kernel.session.view import TurnView
from tests import llm_server as S
from tests.kernel_client import KernelSession
from tests.test_kernel import kernel_env

RED, CYAN, GREEN, OFF = "\x1b[31m", "\x1b[36m", "\x1b[32m", "\x1b[39m"
LIB = "/venv/lib/python3.11/site-packages/pandas"
PANDAS_KEYERROR = {
    "output_type": "error", "ename": "KeyError", "evalue": "'Month'",
    "traceback": [
        f"{RED}{'-' * 75}{OFF}",
        f"{RED}KeyError{OFF}                                  Traceback (most recent call last)",
        f"{CYAN}File {OFF}{GREEN}{LIB}/core/indexes/base.py:3816{OFF}, in Index.get_loc(self, key)\n"
        "   3815 try:\n-> 3816     return self._engine.get_loc(casted_key)\n",
        "File pandas/_libs/index.pyx:172, in pandas._libs.index.IndexEngine.get_loc()\n"
        "--> 172 'Could not get source'\n",
        f"{RED}KeyError{OFF}: 'Month'",
        "\nThe above exception was the direct cause of the following exception:\n",
        f"{RED}KeyError{OFF}                                  Traceback (most recent call last)",
        f"{CYAN}Cell {OFF}{GREEN}In[3], line 2{OFF}\n      1 import pandas as pd\n"
        "----> 2 df['Month'].sum()\n",
        f"File {LIB}/core/frame.py:4330, in DataFrame.__getitem__(self, key)\n"
        "-> 4330     indexer = self.columns.get_loc(key)\n",
        f"File {LIB}/core/indexes/base.py:3823, in Index.get_loc(self, key)\n"
        "-> 3823     raise KeyError(key) from err\n",
        f"{RED}KeyError{OFF}: 'Month'",
    ],
}


@pytest.mark.unit
@pytest.mark.parametrize(("traceback", "frames", "hidden"), [
    (PANDAS_KEYERROR["traceback"], ["Cell In[3], line 2\n      1 import pandas as pd\n"
                                    "----> 2 df['Month'].sum()"], 4),
    (["  Cell In[2], line 1\n    x = (\n        ^\nSyntaxError: incomplete input\n"],
     ["  Cell In[2], line 1\n    x = (\n        ^"], 0),
    (["Cell In[1], line 3\n----> 3 helper()\n",
      "File /home/ada/project/tools.py:7, in helper()\n----> 7 return 1 / 0\n",
      "ZeroDivisionError: division by zero"],
     ["Cell In[1], line 3\n----> 3 helper()",
      "File /home/ada/project/tools.py:7, in helper()\n----> 7 return 1 / 0"], 0),
])
def test_compact_error_keeps_the_users_frames(traceback, frames, hidden):
    ename = "SyntaxError" if "SyntaxError" in traceback[0] else "KeyError"
    evalue = "incomplete input" if ename == "SyntaxError" else "'Month'"
    line, kept, left_out = compact_error({"ename": ename, "evalue": evalue,
                                          "traceback": traceback})
    assert line == f"{ename}: {evalue}"
    assert kept == frames and left_out == hidden


@pytest.mark.unit
def test_the_compact_form_collapses_the_full_traceback():
    bundle = compact_bundle(PANDAS_KEYERROR, 1)
    plain = bundle["text/plain"]
    assert plain.splitlines()[0] == "KeyError: 'Month'"
    assert "df['Month'].sum()" in plain and "site-packages" not in plain
    assert plain.splitlines()[-1] == "[step 1: 4 library frames left out · full traceback: " \
                                     "%last_error]"
    visible, hidden = bundle["text/html"].split("<details>")
    assert "site-packages" not in visible and "df[&#x27;Month&#x27;]" in visible
    assert "site-packages/pandas/core/frame.py" in hidden and "\x1b" not in hidden


def play(view: TurnView, steps: list[dict[str, Any] | None]) -> Turn:
    """Steps with (or without) an error output, then the end of the turn."""
    turn = Turn(1, "analyse sales")

    async def run() -> None:
        for i, error in enumerate(steps, 1):
            record = StepRecord(i, CodeBlock("python", "df['Month']"), Decision("run"),
                                status="error" if error else "ok",
                                outputs=[error] if error else [])
            turn.steps.append(record)
            view(E.StepDone(record))
        view(E.TurnDone(turn))

    asyncio.run(run())
    return turn


class Screen(list):
    def __call__(self, msg_type: str, content: dict[str, Any]) -> None:
        self.append((msg_type, content))

    def kinds(self) -> list[str]:
        return [kind for kind, _ in self]


@pytest.mark.unit
@pytest.mark.parametrize("live", [True, False])
def test_a_recovered_error_stays_compact(live):
    screen = Screen()
    play(TurnView(screen, live=live, compact_errors=True), [PANDAS_KEYERROR, None])
    assert screen.kinds() == ["display_data"]
    assert "%last_error" in screen[0][1]["data"]["text/plain"]


@pytest.mark.unit
def test_an_error_the_turn_ends_on_is_expanded_in_place_live():
    screen = Screen()
    play(TurnView(screen, live=True, compact_errors=True), [PANDAS_KEYERROR])
    assert screen.kinds() == ["display_data", "update_display_data"]
    shown, expanded = screen[0][1], screen[1][1]
    assert shown["transient"] == expanded["transient"]
    assert "site-packages/pandas/core/frame.py" in expanded["data"]["text/plain"]
    assert "<details" not in expanded["data"]["text/html"]


@pytest.mark.unit
def test_an_error_the_turn_ends_on_is_printed_in_full_for_text_frontends():
    """jupyter console never renders updates: the full error comes as an error message."""
    screen = Screen()
    play(TurnView(screen, live=False, compact_errors=True), [None, PANDAS_KEYERROR])
    assert screen.kinds() == ["display_data", "error"]
    assert list(screen[1][1]["traceback"]) == PANDAS_KEYERROR["traceback"]


@pytest.mark.unit
def test_without_compact_errors_the_view_shows_none():
    screen = Screen()
    play(TurnView(screen, live=True), [PANDAS_KEYERROR])  # the executor showed it (%%oi)
    assert screen.kinds() == []


@pytest.mark.unit
def test_last_error_shows_the_full_traceback():
    turn = play(TurnView(Screen(), compact_errors=True), [PANDAS_KEYERROR, None])
    text = last_error_markdown([turn])
    assert text.startswith("Step 1 of instruction 1 (“analyse sales”)")
    assert "site-packages/pandas/core/frame.py" in text
    assert last_error_markdown([]) == "No step has failed in this session."


# ----------------------------------------------------------------------------- a real kernel
LOAD = ("import pandas as pd\n"
        "sales = pd.DataFrame({'month': [1, 2, 3], 'total': [10, 20, 30]})\n"
        "by_month = sales.groupby('Month')['total'].sum()")
FIXED = "by_month = sales.groupby('month')['total'].sum()\nprint(by_month.to_dict())"


@pytest.fixture(scope="module")
def ek(_server, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("errors")
    with KernelSession(env=kernel_env(_server, tmp, OI_AUTO_RUN="1"), cwd=str(tmp)) as ks:
        yield ks


@pytest.mark.kernel
@pytest.mark.timeout(180)
def test_a_recovered_pandas_error_is_compact_and_last_error_shows_it(ek, _server):
    _server.reset()
    _server.enqueue(S.tool_call(LOAD), S.tool_call(FIXED), S.text("Totals by month."))
    cell = ek.execute("total the sales by month", timeout=120)
    assert cell.status == "ok", cell.text
    assert cell.of_type("error") == []  # the child's full traceback was held back
    assert "{1: 10, 2: 20, 3: 30}" in cell.stdout
    assert "KeyError: 'Month'" in cell.text and "groupby('Month')" in cell.text
    assert "site-packages" not in cell.text and "%last_error" in cell.text
    told = [m["content"] for m in _server.requests[1]["messages"] if m["role"] == "tool"]
    assert "KeyError" in told[0] and "site-packages" in told[0]  # the model's view: as before
    shown = ek.execute("%last_error").text
    assert "site-packages/pandas" in shown and "groupby('Month')" in shown


@pytest.mark.kernel
@pytest.mark.timeout(180)
def test_an_error_the_instruction_ends_on_is_shown_in_full(ek, _server):
    _server.reset()
    _server.enqueue(S.tool_call(LOAD), S.text("There is no Month column; I stop here."))
    cell = ek.execute("total the sales by Month", timeout=120)
    [error] = cell.of_type("error")
    assert error["content"]["ename"] == "KeyError"
    assert any("site-packages" in line for line in error["content"]["traceback"])
