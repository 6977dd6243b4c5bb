"""Context budget, images, languages and stdin through the real kernel (issue 8)."""

from __future__ import annotations

import base64
import json
import shutil
import struct
import zlib

import nbformat
import pytest

from oi_kernel.core.context import SUMMARY_HEAD
from tests import llm_server as S
from tests.kernel_client import KernelSession
from tests.test_kernel import kernel_env, sent_tool_results


def tiny_png(width: int = 3, height: int = 2) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    raw = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def request_tokens(body: dict) -> int:
    from litellm.litellm_core_utils.default_encoding import encoding

    from oi_kernel.core.context import total_tokens

    return total_tokens(body["messages"], lambda t: len(encoding.encode(t, disallowed_special=())))


@pytest.fixture
def server():
    with S.ScriptedLLMServer() as srv:
        yield srv


def test_budget_holds_over_a_30_turn_session_with_50kb_outputs(server, tmp_path):
    env = kernel_env(server, tmp_path, OI_AUTO_RUN="1", OI_CONTEXT_BUDGET="4500")
    with KernelSession(env=env, cwd=str(tmp_path)) as ks:
        for i in range(30):
            server.enqueue(S.tool_call(f"print('row {i} ' + 'x' * 50_000)"), S.text(f"done {i}"))
            assert ks.execute(f"instruction number {i}", timeout=60).status == "ok"
    sizes = [request_tokens(body) for body in server.requests]
    assert len(sizes) == 60
    assert max(sizes) <= 4500, sizes
    last = server.requests[-1]["messages"]
    assert any(SUMMARY_HEAD in str(m.get("content")) for m in last)
    assert last[-3]["content"] == "instruction number 29"  # the current instruction is whole


def test_images_are_described_for_plain_models_and_sent_to_vision_models(server, tmp_path):
    png = base64.b64encode(tiny_png()).decode()
    code = f"from IPython.display import Image, display\ndisplay(Image(data=__import__('base64').b64decode('{png}')))"
    plain = kernel_env(server, tmp_path, OI_AUTO_RUN="1")
    with KernelSession(env=plain, cwd=str(tmp_path)) as ks:
        server.enqueue(S.tool_call(code), S.text("a red image"))
        ks.execute("show an image")
        assert "[image/png 3x2 displayed]" in sent_tool_results(server.requests[1])[0]
    server.reset()
    vision = kernel_env(server, tmp_path, OI_AUTO_RUN="1", OI_MODEL="openai/gpt-4o")
    with KernelSession(env=vision, cwd=str(tmp_path)) as ks:
        server.enqueue(S.tool_call(code), S.text("a red image"))
        ks.execute("show an image")
        parts = server.requests[1]["messages"][-1]["content"]
        assert isinstance(parts, list)
        assert parts[1]["image_url"]["url"] == f"data:image/png;base64,{png}"


def test_shell_and_node_steps_run_and_export(server, tmp_path):
    env = kernel_env(server, tmp_path, OI_AUTO_RUN="1")
    with KernelSession(env=env, cwd=str(tmp_path)) as ks:
        server.enqueue(
            S.tool_call("echo shell-$((1+2))", language="shell"),
            S.tool_call("console.log(6 * 7)", language="javascript"),
            S.tool_call("print('x')", language="cobol"),
            S.text("done"),
        )
        result = ks.execute("use several languages")
        assert "shell-3" in result.stdout
        node = shutil.which("node") is not None
        if node:
            assert "42" in result.stdout
        assert "not available" in sent_tool_results(server.requests[3])[-1]
        out = tmp_path / "langs.ipynb"
        assert ks.execute(f"%export {out}").status == "ok"
    nb = nbformat.read(out, as_version=4)
    sources = [c.source for c in nb.cells if c.cell_type == "code"]
    assert any(s.startswith("%%bash\n") and "shell-" in s for s in sources)
    if node:
        assert any(s.startswith("%%script node\n") for s in sources)
    assert not any("cobol" in s for s in sources)


def test_input_in_generated_code_is_answered_from_the_frontend(server, tmp_path):
    env = kernel_env(server, tmp_path, OI_AUTO_RUN="1")
    with KernelSession(env=env, cwd=str(tmp_path)) as ks:
        server.enqueue(
            S.tool_call("name = input('Your name? ')\nprint('hello', name)"), S.text("greeted")
        )
        result = ks.execute("greet me", stdin=["Ada"])
        assert result.prompts == ["Your name? "]
        assert "hello Ada" in result.stdout


def test_tokens_magic_reports_totals(server, tmp_path):
    env = kernel_env(server, tmp_path, OI_AUTO_RUN="1")
    with KernelSession(env=env, cwd=str(tmp_path)) as ks:
        server.enqueue(S.text("hi"))
        ks.execute("say hi")
        expected = server.requests[0]
        text = ks.execute("%tokens").text
        prompt = json.dumps(expected["messages"])
        assert f"{len(prompt) // 4:,} prompt tokens" in text
