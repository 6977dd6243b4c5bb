"""What you see is what runs, through a real Open Interpreter kernel (stdin approval, as
jupyter console asks) with the scripted model over HTTP: under ``%approval risky`` a block
hiding characters (Trojan Source bidi controls, a terminal escape sequence, a zero-width
space, a look-alike name) asks, and the question shows each one as a marker; no raw
control character reaches the frontend; what runs is byte for byte what the log's decision
hashed; ``%history`` and ``%log`` show the markers too; an MCP tool's JSON arguments get
the same flag."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from oi_kernel.core import identity
from oi_kernel.core.types import code_hash
from oi_kernel.record.session_log import read_log
from tests import llm_server as S
from tests.env import oi_env
from tests.kernel_client import CellResult, KernelSession

pytestmark = [pytest.mark.kernel, pytest.mark.timeout(240)]
ROOT = Path(__file__).resolve().parents[1]

# Each attack: (id, code, markers the question must show). Every block prints the repr of
# what it holds, so the output proves the hidden characters reached Python unchanged.
TROJAN = ('access_level = "user\u202e \u2066# Check if admin\u2069 \u2066"\n'
          'print(ascii(access_level))')
ESCAPES = ("# tidy the output\x1b[2K\x1b[1A\x1b[2K\x1b[1A\n"
           "note = 'harmless'\nprint(ascii(note))")
ZERO_WIDTH = 'name = "adm\u200bin"\nprint(ascii(name))'
LOOKALIKE = "pаth = 'x'\nprint(ascii(pаth))"  # Cyrillic а in the name
ATTACKS = [
    ("bidi", TROJAN, ["⟦U+202E RLO⟧", "⟦U+2066 LRI⟧", "⟦U+2069 PDI⟧"],
     "U+202E RIGHT-TO-LEFT OVERRIDE (RLO) in a string", "'user\\u202e \\u2066"),
    ("escape", ESCAPES, ["⟦U+001B ESC⟧[2K⟦U+001B ESC⟧[1A"],
     "U+001B ESCAPE (ESC) in a comment", "'harmless'"),
    ("zero-width", ZERO_WIDTH, ["adm⟦U+200B ZWSP⟧in"],
     "U+200B ZERO WIDTH SPACE (ZWSP) in a string", "'adm\\u200bin'"),
    ("mixed-script", LOOKALIKE, [],
     "the identifier 'pаth' mixes scripts (Cyrillic, Latin)", "'x'"),
]
RAW = ("\x1b", "\u202e", "\u2066", "\u2069", "\u200b")


@pytest.fixture(scope="module")
def kernel(_server, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("visible")
    env = oi_env(_server, tmp, OI_AUTO_RUN="0", OI_APPROVAL_UI="stdin")
    with KernelSession(env=env, cwd=str(tmp)) as ks:
        ks.tmp = tmp
        yield ks


@pytest.fixture
def oi(kernel, _server):
    _server.reset()
    assert kernel.execute("%reset").status == "ok"
    assert kernel.execute("%approval risky").status == "ok"
    return kernel


def shown_text(result: CellResult) -> str:
    """Everything the kernel sent the frontend for this cell except the child's own output:
    displays (every representation), the reply's stream and errors."""
    parts, stream = [], ""
    for m in result.messages:
        c = m["content"]
        if m["header"]["msg_type"] in ("display_data", "update_display_data"):
            parts += [v for v in c["data"].values() if isinstance(v, str)]
        elif m["header"]["msg_type"] == "stream" and c["name"] == "stdout":
            stream += c["text"]  # (the child's prints are in it too: ascii() only)
    return "\n".join([stream, *parts])


def log_path(ks: KernelSession) -> Path:
    return Path(ks.execute("%log").text.split("`")[1])


@pytest.mark.parametrize(("name", "code", "markers", "finding", "printed"), ATTACKS,
                         ids=[a[0] for a in ATTACKS])
def test_risky_asks_for_a_block_hiding_characters_and_shows_them(oi, _server, name, code,
                                                                  markers, finding, printed):
    _server.enqueue(S.tool_call(code), S.text("done"))
    result = oi.execute("show the access level", stdin=["y"])
    assert result.status == "ok"
    assert len(result.prompts) == 1, "a block hiding characters ran without asking"
    prompt = result.prompts[0]
    for mark in markers:
        assert mark in prompt, prompt
    assert "[high]" in prompt and finding in prompt, prompt
    assert not any(ch in prompt for ch in RAW), ascii(prompt)
    assert prompt.index(finding) < prompt.index("Run this code?")
    assert printed in result.stdout  # it ran, as it was written
    assert not any(ch in shown_text(result) for ch in RAW), ascii(shown_text(result))


def test_a_clean_block_still_runs_without_asking(oi, _server):
    _server.enqueue(S.tool_call("total = sum([3, 4, 5])\nprint('total', total)"), S.text("ok"))
    result = oi.execute("add them up", stdin=["n"])
    assert result.prompts == [] and "total 12" in result.stdout


def test_what_runs_is_what_the_decision_hashed(oi, _server):
    _server.enqueue(S.tool_call(TROJAN), S.text("done"))
    result = oi.execute("check the access level", stdin=["y"])
    assert "'user\\u202e \\u2066# Check if admin\\u2069 \\u2066'" in result.stdout
    records = read_log(log_path(oi))
    step = [r for r in records if r.get("code") == TROJAN]
    proposed, decision, execution = (next(r for r in step if r["event"] == e)
                                     for e in ("code_proposed", "decision", "execution"))
    assert decision["sha256"] == execution["sha256"] == code_hash(TROJAN)
    assert proposed["sha256"] == code_hash(TROJAN) and execution["code"] == TROJAN
    assert {f["category"] for f in proposed["flags"]} == {"hidden-characters"}
    assert proposed["flags"][0]["severity"] == "high"


def test_a_fenced_reply_with_an_escape_sequence_never_reaches_the_terminal_raw(oi, _server):
    reply = ("Here you go.\x1b[2K\x1b[1A\n```python\n# fine\x1b[2K\x1b[1A\n"
             "print('fenced ran')\n```\n")
    _server.enqueue(S.text(reply, chunk_size=5), S.text("done"))
    result = oi.execute("print something", stdin=["y"])
    assert len(result.prompts) == 1 and "fenced ran" in result.stdout
    shown = shown_text(result)
    assert "\x1b" not in shown and "\x1b" not in result.prompts[0]
    assert "Here you go.⟦U+001B ESC⟧[2K⟦U+001B ESC⟧[1A" in shown
    assert "    # fine⟦U+001B ESC⟧[2K⟦U+001B ESC⟧[1A" in result.prompts[0]


def test_auto_run_shows_the_step_with_markers(oi, _server):
    assert oi.execute("%approval never").status == "ok"
    _server.enqueue(S.tool_call(ZERO_WIDTH), S.text("done"))
    result = oi.execute("show the name")
    assert result.prompts == [] and "'adm\\u200bin'" in result.stdout
    shown = shown_text(result)
    assert "adm⟦U+200B ZWSP⟧in" in shown and "\u200b" not in shown


def test_history_and_log_show_markers_not_raw_characters(oi, _server):
    _server.enqueue(S.tool_call(ESCAPES), S.text("done"))
    oi.execute("tidy", stdin=["y"])
    history = oi.execute("%history").text
    who = identity.person(oi.kc.session.username)  # the stdin answer names who typed it
    assert f"step 1 (python): approved by {who}, ok · # tidy the output⟦U+001B ESC⟧[2K" in history
    log = oi.execute("%log 12").text
    assert "code_proposed" in log and "# tidy the output⟦U+001B ESC⟧[2K" in log
    assert f"approved by {who} · sha256 " + code_hash(ESCAPES)[:12] in log
    assert "\x1b" not in history + log
    assert "Usage: %log [N]" in oi.execute("%log lots").text


def test_export_keeps_the_real_code_and_marks_it(oi, _server, tmp_path):
    import nbformat

    _server.enqueue(S.tool_call(ZERO_WIDTH), S.text("done"))
    oi.execute("show the name", stdin=["y"])
    out = tmp_path / "hidden.ipynb"
    assert oi.execute(f"%export {out}").status == "ok"
    nb = nbformat.read(out, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"][-1:]  # (the session's last step)
    assert [c.source for c in code] == [ZERO_WIDTH]
    assert code[0].metadata.oi_kernel.hidden_characters == [
        "line 1: U+200B ZERO WIDTH SPACE (ZWSP) in a string"]
    note = nb.cells[nb.cells.index(code[0]) - 1].source
    assert "adm⟦U+200B ZWSP⟧in" in note and "\u200b" not in note


@pytest.fixture(scope="module")
def tools_kernel(_server, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("visible-tools")
    config = tmp / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"prices": {
        "command": sys.executable, "args": ["-m", "tests.mcp_server"], "cwd": str(ROOT)}}}))
    env = oi_env(_server, tmp, OI_AUTO_RUN="0", OI_MCP_CONFIG=str(config))
    with KernelSession(env=env, cwd=str(tmp)) as ks:
        # the MCP server up before the first instruction (an instruction waits for it at most
        # 2 s, and with a warm model host it can come before a loaded machine started it)
        listing = ks.mcp_listing()
        assert "prices" in listing and "still starting" not in listing, listing
        yield ks


def test_a_read_only_tool_with_hidden_characters_in_its_arguments_asks(tools_kernel, _server):
    _server.reset()
    assert tools_kernel.execute("%approval risky").status == "ok"
    args = json.dumps({"item": "app\u202ele"}, ensure_ascii=False)
    _server.enqueue(S.tool_calls([S.Call(args, "prices__lookup_price")]), S.text("ok"))
    result = tools_kernel.execute("price of an apple?", stdin=["n"], timeout=90)
    assert len(result.prompts) == 1, "a read-only tool with hidden arguments ran unasked"
    assert "app⟦U+202E RLO⟧le" in result.prompts[0] and "\u202e" not in result.prompts[0]
    assert "[high] hidden-characters: line" in result.prompts[0]
