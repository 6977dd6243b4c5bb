"""What a cell of the Open Interpreter kernel is, and when a terminal stops reading it
(``is_complete``): a table, as jupyter console asks it line by line."""

from __future__ import annotations

import pytest

from oi_kernel.kernel.cells import classify, is_complete, is_exit


@pytest.mark.parametrize(
    ("code", "status", "indent"),
    [
        # prose is complete as typed, whatever it looks like
        ("plot revenue by month", "complete", None),
        ("what is 2+2?", "complete", None),
        ("for each file in data/, count the lines:", "complete", None),
        ("make a list (of primes", "complete", None),
        ("", "complete", None),
        # commands and shell lines
        ("%model", "complete", None),
        ("%approval never\n%max_steps 3", "complete", None),
        ("!ls -l", "complete", None),
        # a cell magic with no body waits for it, without indenting
        ("%%python", "incomplete", ""),
        ("%%python\n", "incomplete", ""),
        ("  %%python", "incomplete", ""),
        ("%%bash", "incomplete", ""),
        ("%%javascript", "incomplete", ""),
        ("%%html", "incomplete", ""),
        ("%%writefile out.txt", "incomplete", ""),
        ("%%script node", "incomplete", ""),
        # a %%python body is judged as Python
        ("%%python\nx = 1", "complete", None),
        ("%%python\nfor i in range(3):", "incomplete", "    "),
        ("%%python\nx = (1,", "incomplete", ""),
        ("%%python\nfor i in range(3):\n    print(i)\n", "complete", None),
        ("%%python\n\n", "complete", None),  # a blank line under it ends an empty cell
        # other cell magics as IPython judges them: complete after a blank line
        ("%%bash\nls", "incomplete", ""),
        ("%%bash\nls\n\n", "complete", None),
    ],
)
def test_is_complete(code: str, status: str, indent: str | None) -> None:
    reply = is_complete(code)
    assert reply["status"] == status
    assert reply.get("indent") == indent


@pytest.mark.parametrize(
    ("code", "kind", "text"),
    [
        ("%%python\nx = 1", "python", "x = 1"),
        ("%%python", "python", ""),
        ("%%pythonic\nx", "magic", "%%pythonic\nx"),
        ("%%bash\nls", "magic", "%%bash\nls"),
        ("  %%script node\nconsole.log(1)", "magic", "%%script node\nconsole.log(1)"),
        ("!ls\n  !pwd", "shell", "!ls\n!pwd"),
        ("%model x\n\n%max_steps 2", "commands", "%model x\n%max_steps 2"),
        ("%% not a magic", "commands", "%% not a magic"),
        ("  load data.csv and plot it  ", "instruction", "load data.csv and plot it"),
        ("%model x\nthen plot", "instruction", "%model x\nthen plot"),
    ],
)
def test_classify(code: str, kind: str, text: str) -> None:
    assert classify(code) == (kind, text)


@pytest.mark.parametrize(("code", "leaves"), [
    ("exit", True), ("quit", True), ("exit()", True), ("quit()", True), ("  exit \n", True),
    ("exit the loop when the total passes 100", False), ("Exit", False), ("exit(1)", False),
    ("%exit", False), ("quit()\nprint(1)", False), ("", False),
])
def test_is_exit(code: str, leaves: bool) -> None:
    assert is_exit(code) is leaves
