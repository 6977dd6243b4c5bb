"""What Jupyter AI's chat shows of our steps (oi_kernel/integrations/jupyter_ai_view.py), on
real ACP SDK tool call objects; the persona itself is tested in a real Jupyter AI by
tests/test_browser_jupyter_ai.py."""

from __future__ import annotations

import pytest
from acp import helpers as H

from oi_kernel.integrations.jupyter_ai_view import as_shown, mcp_sdk_problem, plain_text

pytestmark = pytest.mark.unit


def text(s: str):
    return H.tool_content(H.text_block(s))


def test_a_fenced_block_loses_only_its_own_fences():
    code = "s = '''\n```\nnot a fence of ours\n```\n'''\nprint(s)"
    shown = plain_text([text(f"```python\n{code}\n```"), text("⚠ high: deletes files")])
    assert shown == f"{code}\n\n⚠ high: deletes files"  # the code exactly, flags after it
    assert plain_text([text("Call the tool **prices** with:\n```json\n{}\n```")]).startswith(
        "Call the tool")  # not one fenced block: as written


def test_a_pending_step_shows_its_code_as_the_command():
    call = H.start_tool_call("oi-1-1", "Step 1: run python", kind="execute", status="pending",
                             content=[text("```python\nprint(6 * 7)\n```")],
                             raw_input={"language": "python", "code": "print(6 * 7)"})
    shown = as_shown(call)
    assert shown.raw_input == {"language": "python", "code": "print(6 * 7)",
                               "command": "print(6 * 7)"}
    assert call.raw_input == {"language": "python", "code": "print(6 * 7)"}  # not changed


def test_a_finished_step_shows_its_output_text_as_raw_output():
    update = H.update_tool_call("oi-1-1", status="completed",
                                content=[text("```\n42\n```"), text("Changed:\n- a.csv (created)")],
                                raw_output={"status": "ok", "outputs": []})
    assert as_shown(update).raw_output == "42\n\nChanged:\n- a.csv (created)"
    skipped = H.update_tool_call("oi-1-2", status="failed",
                                 content=[text("Skipped; the code was not run.")])
    assert as_shown(skipped).raw_output == "Skipped; the code was not run."


def test_other_calls_and_calls_without_text_are_left_as_they_are():
    read = H.start_tool_call("r", "Reading a.csv", kind="read", content=[text("a,b")])
    assert as_shown(read) is read
    progress = H.update_tool_call("oi-1-1", status="in_progress")
    assert as_shown(progress) is progress


def test_mcp_servers_need_the_sdk_2(monkeypatch):
    import importlib.metadata as md

    monkeypatch.setattr(md, "version", lambda name: "1.30.0")
    assert "MCP SDK 1.30.0" in mcp_sdk_problem() and "needs 2.x" in mcp_sdk_problem()
    monkeypatch.setattr(md, "version", lambda name: "2.3.0")
    assert mcp_sdk_problem() is None
