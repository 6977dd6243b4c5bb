"""Tests of output collection (iopub → nbformat) and of output text for the LLM."""

from __future__ import annotations

import base64
import re
import struct
import zlib
from typing import Any

import nbformat
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oi_kernel.core.output_text import (
    html_to_text,
    image_size,
    outputs_to_text,
    strip_ansi,
    truncate_middle,
)
from oi_kernel.core.outputs import OutputCollector

Msg = tuple[str, dict[str, Any]]


def out(text: str, name: str = "stdout") -> Msg:
    return ("stream", {"name": name, "text": text})


def display(data: dict[str, Any], display_id: str | None = None) -> Msg:
    content: dict[str, Any] = {"data": data, "metadata": {}}
    if display_id:
        content["transient"] = {"display_id": display_id}
    return ("display_data", content)


def update(data: dict[str, Any], display_id: str) -> Msg:
    return (
        "update_display_data",
        {"data": data, "metadata": {}, "transient": {"display_id": display_id}},
    )


def clear(wait: bool) -> Msg:
    return ("clear_output", {"wait": wait})


ERROR: Msg = (
    "error",
    {"ename": "ZeroDivisionError", "evalue": "division by zero", "traceback": ["tb"]},
)


def stream(text: str, name: str = "stdout") -> dict[str, Any]:
    return {"output_type": "stream", "name": name, "text": text}


def shown(text: str) -> dict[str, Any]:
    return {"output_type": "display_data", "data": {"text/plain": text}, "metadata": {}}


def collect(messages: list[Msg], max_chars: int = 2_000_000) -> OutputCollector:
    collector = OutputCollector(max_chars=max_chars)
    for msg_type, content in messages:
        collector.add(msg_type, content)
    return collector


COLLECTOR_CASES = [
    ("consecutive chunks merge", [out("a"), out("b\n"), out("c\n")], [stream("ab\nc\n")]),
    (
        "different streams stay apart",
        [out("a\n"), out("w\n", "stderr"), out("b\n")],
        [stream("a\n"), stream("w\n", "stderr"), stream("b\n")],
    ),
    (
        "carriage return overwrites a progress bar",
        [out("  0%|"), out("\r 50%|##"), out("\r100%|####|"), out("\n"), out("done\n")],
        [stream("100%|####|\ndone\n")],
    ),
    ("carriage return overwrites in place", [out("abcdef\rXY\n")], [stream("XYcdef\n")]),
    ("CRLF is a newline", [out("a\r\nb\r\n")], [stream("a\nb\n")]),
    ("trailing carriage return then text", [out("12345\r"), out("ab")], [stream("ab345")]),
    ("backspace moves back", [out("50%\b\b\b51%\n")], [stream("51%\n")]),
    ("backspace at line start stays", [out("\b\bab\n")], [stream("ab\n")]),
    ("spinner", [out("|\b/\b-\b\\")], [stream("\\")]),
    ("clear now", [out("old\n"), clear(False), out("new\n")], [stream("new\n")]),
    ("clear now then nothing", [out("old\n"), clear(False)], []),
    ("clear wait keeps until next output", [out("old\n"), clear(True)], [stream("old\n")]),
    (
        "clear wait clears on next output",
        [out("old\n"), clear(True), display({"text/plain": "x"})],
        [shown("x")],
    ),
    (
        "update display by id",
        [display({"text/plain": "1"}, "d"), out("s\n"), update({"text/plain": "2"}, "d")],
        [shown("2"), stream("s\n")],
    ),
    (
        "update only matching id",
        [
            display({"text/plain": "1"}, "d"),
            display({"text/plain": "2"}, "e"),
            update({"text/plain": "3"}, "e"),
        ],
        [shown("1"), shown("3")],
    ),
    ("update of unknown id ignored", [update({"text/plain": "3"}, "zz")], []),
    (
        "update does not trigger a pending clear",
        [display({"text/plain": "1"}, "d"), clear(True), update({"text/plain": "2"}, "d")],
        [shown("2")],
    ),
    (
        "execute result",
        [("execute_result", {"execution_count": 3, "data": {"text/plain": "4"}, "metadata": {}})],
        [
            {
                "output_type": "execute_result",
                "execution_count": 3,
                "data": {"text/plain": "4"},
                "metadata": {},
            }
        ],
    ),
    (
        "error",
        [out("x\n"), ERROR],
        [
            stream("x\n"),
            {
                "output_type": "error",
                "ename": "ZeroDivisionError",
                "evalue": "division by zero",
                "traceback": ["tb"],
            },
        ],
    ),
    (
        "other messages ignored",
        [("status", {"execution_state": "busy"}), ("execute_input", {"code": "x"})],
        [],
    ),
]


@pytest.mark.parametrize(
    ("messages", "expected"), [c[1:] for c in COLLECTOR_CASES], ids=[c[0] for c in COLLECTOR_CASES]
)
def test_collector(messages: list[Msg], expected: list[dict[str, Any]]) -> None:
    assert collect(messages).outputs == expected


def test_transient_never_reaches_outputs() -> None:
    collector = collect([display({"text/plain": "1"}, "d"), update({"text/plain": "2"}, "d")])
    assert all("transient" not in output for output in collector.outputs)


def test_error_capture() -> None:
    assert not collect([out("fine\n")]).has_error
    assert collect([out("fine\n")]).error is None
    collector = collect([ERROR, clear(False), out("after\n")])
    assert collector.has_error
    assert collector.error is not None and collector.error["ename"] == "ZeroDivisionError"


def test_collected_outputs_are_valid_nbformat() -> None:
    png = base64.b64encode(make_png(3, 2)).decode()
    messages = [
        out("a\rb\n"),
        out("warn\n", "stderr"),
        display({"text/plain": "<Figure>", "image/png": png}, "fig"),
        update({"text/plain": "<Figure 2>", "image/png": png}, "fig"),
        ("execute_result", {"execution_count": 1, "data": {"text/plain": "1"}, "metadata": {}}),
        (
            "execute_result",
            {"execution_count": None, "data": {"text/html": "<b>x</b>"}, "metadata": {}},
        ),
        ERROR,
    ]
    collector = collect(messages)
    notebook = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("x", outputs=collector.outputs)]
    )
    nbformat.validate(notebook)
    assert len(collector.outputs) == 6


def test_memory_bound_on_a_huge_stream() -> None:
    collector = OutputCollector(max_chars=100_000)
    line = "x" * 99 + "\n"
    chunk = line * 655  # about 64 KB
    collector.add("stream", {"name": "stdout", "text": "FIRST LINE\n"})
    total = 11
    while total < 50_000_000:
        collector.add("stream", {"name": "stdout", "text": chunk})
        total += len(chunk)
    collector.add("stream", {"name": "stdout", "text": "LAST LINE\n"})
    total += 10
    [output] = collector.outputs
    text = output["text"]
    assert len(text) <= 100_000 + 100
    assert text.startswith("FIRST LINE\n")
    assert text.endswith("LAST LINE\n")
    marker = re.search(r"\[\.\.\. ([\d,]+) characters cut \.\.\.\]", text)
    assert marker is not None
    assert int(marker[1].replace(",", "")) == collector.dropped_chars
    # 50,000 head characters end mid-line, so the marker line gets a leading newline too
    assert collector.dropped_chars + len(text) - len(marker[0]) - 2 == total
    assert text.count("characters cut") == 1


def test_memory_bound_on_one_endless_line() -> None:
    collector = OutputCollector(max_chars=1000)
    for _ in range(1000):
        collector.add("stream", {"name": "stdout", "text": "y" * 1000})
    text = collector.outputs[0]["text"]
    assert len(text) <= 1000 + 500 + 60
    assert collector.dropped_chars > 990_000


@pytest.mark.parametrize("line", ["", "\n"], ids=["one line", "many lines"])
def test_one_huge_message_costs_little_extra_memory(line: str) -> None:
    """A child that prints 20 MB at once sends it as one message: taking it in must not
    copy it (the wrapper kernel's memory would grow by several times the output)."""
    import tracemalloc

    text = ("z" * 999 + line) * 20_000
    collector = OutputCollector(max_chars=100_000)
    tracemalloc.start()
    try:
        collector.add("stream", {"name": "stdout", "text": text})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2_000_000, peak
    [output] = collector.outputs
    assert len(output["text"]) < 100_000 + 8192 + 100  # head + tail + the unfinished line
    assert collector.dropped_chars >= len(text) - 100_000 - 8192


def test_dropped_chars_survive_a_clear() -> None:
    collector = collect([out("z" * 500), clear(False), out("ok\n")], max_chars=100)
    assert collector.dropped_chars >= 400
    assert collector.outputs == [stream("ok\n")]


@settings(max_examples=200, deadline=None)
@given(chunks=st.lists(st.text(alphabet="ab\n", max_size=30), max_size=30))
def test_stream_merge_without_control_characters_is_concatenation(chunks: list[str]) -> None:
    collector = collect([out(chunk) for chunk in chunks])
    text = "".join(chunks)
    assert collector.outputs == ([stream(text)] if text else [])


@pytest.mark.parametrize("max_chars", [1, 0, -5])
def test_collector_rejects_tiny_limits(max_chars: int) -> None:
    with pytest.raises(ValueError):
        OutputCollector(max_chars=max_chars)


# --- truncate_middle -----------------------------------------------------------------

MARKER_RE = re.compile(r"\[\.\.\. ([\d,]+) characters \(([\d,]+) lines\) cut \.\.\.\]\n")


def split_truncated(text: str, result: str) -> tuple[str, str, re.Match[str]]:
    """Head and tail of ``truncate_middle(text, ...)``, checked to be a prefix and suffix."""
    marker = MARKER_RE.search(result)
    assert marker is not None
    tail = result[marker.end() :]
    cut = int(marker[1].replace(",", ""))
    head = result[: len(text) - cut - len(tail)]
    assert result[len(head) : marker.start()] in ("", "\n")  # the marker is a line of its own
    assert text.startswith(head) and text.endswith(tail)
    assert int(marker[2].replace(",", "")) == text[len(head) : len(text) - len(tail)].count("\n")
    return head, tail, marker


def test_truncate_middle_cuts_at_lines() -> None:
    text = "".join(f"line {i:05d}\n" for i in range(1000))  # 11 characters a line
    result = truncate_middle(text, 500)
    head, tail, marker = split_truncated(text, result)
    assert head.endswith("\n") and tail.startswith("line ")
    assert len(head) + len(tail) <= 500
    assert 0.3 < len(head) / 500 <= 0.4
    assert marker.start() == len(head)
    assert MARKER_RE.fullmatch(result.splitlines(keepends=True)[len(head) // 11])


def test_truncate_middle_without_newlines() -> None:
    result = truncate_middle("a" * 100 + "b" * 100, 50)
    assert result == "a" * 20 + "\n[... 150 characters (0 lines) cut ...]\n" + "b" * 30


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet="ab \n", max_size=500), max_chars=st.integers(-5, 600))
def test_truncate_middle_properties(text: str, max_chars: int) -> None:
    result = truncate_middle(text, max_chars)
    if len(text) <= max(max_chars, 0):
        assert result == text
        return
    head, tail, marker = split_truncated(text, result)
    assert len(head) + len(tail) <= max(max_chars, 0)
    assert len(result) <= max(max_chars, 0) + len(marker[0]) + 1


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=300), max_chars=st.integers(0, 400))
def test_truncate_middle_changes_exactly_the_long_texts(text: str, max_chars: int) -> None:
    result = truncate_middle(text, max_chars)
    assert (result == text) == (len(text) <= max_chars)


# --- small text helpers ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\x1b[31mred\x1b[0m", "red"),
        ("\x1b[1;32mbold green\x1b[39;49m!", "bold green!"),
        ("\x1b[2K\x1b[1Gprogress", "progress"),
        ("\x1b]0;title\x07text", "text"),
        ("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"),
        ("\x1b(Bplain\x1b[m", "plain"),
        ("no escapes [31m", "no escapes [31m"),
    ],
)
def test_strip_ansi(text: str, expected: str) -> None:
    assert strip_ansi(text) == expected


DATAFRAME_HTML = """<div>
<style scoped>
    .dataframe tbody tr th:only-of-type { vertical-align: middle; }
</style>
<table border="1" class="dataframe">
  <thead>
    <tr style="text-align: right;">
      <th></th>
      <th>city</th>
      <th>sales</th>
    </tr>
  </thead>
  <tbody>
    <tr>
      <th>0</th>
      <td>New   York</td>
      <td>1,200</td>
    </tr>
    <tr>
      <th>1</th>
      <td>Paris &amp; Lyon</td>
      <td>800</td>
    </tr>
  </tbody>
</table>
<p>2 rows × 2 columns</p>
</div>"""


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        (
            DATAFRAME_HTML,
            "\tcity\tsales\n0\tNew York\t1,200\n1\tParis & Lyon\t800\n2 rows × 2 columns",
        ),
        ("<p>Hello <b>world</b></p><p>again</p>", "Hello world\nagain"),
        ("<script>alert(1)</script><style>p{}</style>visible", "visible"),
        ("line one<br>line two", "line one\nline two"),
        ("<ul><li>a</li><li>b</li></ul>", "a\nb"),
        ("  lots   of\n\n  space  ", "lots of space"),
        ("", ""),
    ],
)
def test_html_to_text(html: str, expected: str) -> None:
    assert html_to_text(html) == expected


# --- image sizes -------------------------------------------------------------------------


def make_png(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    pixels = zlib.compress(b"".join(b"\x00" + b"\x80" * width for _ in range(height)))
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


def make_gif(width: int, height: int) -> bytes:
    screen = struct.pack("<HHBBB", width, height, 0, 0, 0)
    image = b"\x2c" + struct.pack("<HHHHB", 0, 0, width, height, 0) + b"\x02\x02\x44\x01\x00"
    return b"GIF89a" + screen + image + b"\x3b"


def make_jpeg(width: int, height: int, padding: int = 0) -> bytes:
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    comment = b"\xff\xfe" + struct.pack(">H", padding + 2) + b"c" * padding
    sof = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    return (
        b"\xff\xd8"
        + app0
        + comment
        + sof
        + b"\xff\xda\x00\x08\x01\x01\x00\x00\x3f\x00"
        + b"\xff\xd9"
    )


def b64(data: bytes, wrap: bool = False) -> str:
    text = base64.b64encode(data).decode()
    return "\n".join(text[i : i + 76] for i in range(0, len(text), 76)) if wrap else text


@pytest.mark.parametrize(
    ("mime", "data", "expected"),
    [
        ("image/png", b64(make_png(640, 480)), (640, 480)),
        ("image/png", b64(make_png(1, 70000)), (1, 70000)),
        ("image/gif", b64(make_gif(33, 17)), (33, 17)),
        ("image/jpeg", b64(make_jpeg(320, 200)), (320, 200)),
        ("image/jpeg", b64(make_jpeg(12, 34, padding=60_000)), (12, 34)),
        ("image/jpeg", b64(make_jpeg(12, 34, padding=60_000), wrap=True), (12, 34)),
        ("image/png", b64(make_gif(3, 3)), None),
        ("image/jpeg", b64(b"\xff\xd8\xff\xe0\x00"), None),
        ("image/jpeg", b64(b"not a jpeg at all"), None),
        ("image/png", "!!!not base64!!!", None),
        ("image/png", "", None),
        ("image/webp", b64(make_png(2, 2)), None),
    ],
)
def test_image_size(mime: str, data: str, expected: tuple[int, int] | None) -> None:
    assert image_size(mime, data) == expected


def test_image_size_checks_the_png_header() -> None:
    png = make_png(5, 6)
    assert image_size("image/png", b64(png)) == (5, 6)
    assert image_size("image/png", b64(png[:24])) == (5, 6)
    assert image_size("image/png", b64(png[:20])) is None


# --- outputs_to_text -----------------------------------------------------------------------

PNG_640 = b64(make_png(640, 480))


def error_output(evalue: str = "boom", traceback: list[str] | None = None) -> dict[str, Any]:
    tb = ["\x1b[31mTraceback (most recent call last)\x1b[0m", "ValueError: boom"]
    return {
        "output_type": "error",
        "ename": "ValueError",
        "evalue": evalue,
        "traceback": traceback or tb,
    }


def bundle(data: dict[str, Any], kind: str = "display_data") -> dict[str, Any]:
    output: dict[str, Any] = {"output_type": kind, "data": data, "metadata": {}}
    if kind == "execute_result":
        output["execution_count"] = 1
    return output


TEXT_CASES = [
    ("nothing", [], ""),
    ("stdout", [stream("hello\n")], "hello"),
    ("stderr alone unmarked", [stream("warning\n", "stderr")], "warning"),
    ("stderr marked next to stdout", [stream("a\n"), stream("w\n", "stderr")], "a\n[stderr]\nw"),
    ("ansi stripped from streams", [stream("\x1b[32mok\x1b[0m\n")], "ok"),
    (
        "text/plain preferred",
        [bundle({"text/plain": "4", "text/html": "<b>4</b>"}, "execute_result")],
        "4",
    ),
    ("markdown next", [bundle({"text/markdown": "# T", "text/html": "<h1>T</h1>"})], "# T"),
    ("html last", [bundle({"text/html": "<table><tr><td>1</td><td>2</td></tr></table>"})], "1\t2"),
    (
        "figure with image",
        [bundle({"text/plain": "<Figure size 640x480 with 1 Axes>", "image/png": PNG_640})],
        "<Figure size 640x480 with 1 Axes>\n[image/png 640x480 displayed]",
    ),
    ("svg", [bundle({"image/svg+xml": "<svg/>"})], "[image/svg+xml displayed]"),
    ("unreadable png", [bundle({"image/png": "xxxx"})], "[image/png displayed]"),
    (
        "widget",
        [
            bundle(
                {
                    "text/plain": "IntSlider(value=0)",
                    "application/vnd.jupyter.widget-view+json": {"model_id": "1"},
                }
            )
        ],
        "[widget displayed]",
    ),
    ("other mime", [bundle({"application/pdf": "JVBER"})], "[application/pdf displayed]"),
    ("empty stream skipped", [stream(""), stream("x\n", "stderr")], "x"),
    (
        "error after output",
        [stream("step 1\n"), error_output()],
        "step 1\nValueError: boom\nTraceback (most recent call last)\nValueError: boom",
    ),
    ("list-valued text", [bundle({"text/plain": ["a\n", "b"]})], "a\nb"),
]


@pytest.mark.parametrize(
    ("outputs", "expected"), [c[1:] for c in TEXT_CASES], ids=[c[0] for c in TEXT_CASES]
)
def test_outputs_to_text(outputs: list[dict[str, Any]], expected: str) -> None:
    assert outputs_to_text(outputs) == expected


def test_long_output_is_cut_in_the_middle() -> None:
    text = "".join(f"row {i}\n" for i in range(10_000))
    result = outputs_to_text([stream(text)], max_chars=1000)
    assert result.startswith("row 0\nrow 1\n")
    assert result.endswith("row 9999")
    assert "lines) cut ...]" in result
    assert len(result) <= 1000 + 60


def test_error_keeps_priority_over_long_output() -> None:
    noise = "".join(f"noise {i}\n" for i in range(10_000))
    traceback = [f"frame {i}" for i in range(2000)] + ["ValueError: the real cause"]
    result = outputs_to_text([stream(noise), error_output("the real cause", traceback)], 6000, 4000)
    assert "ValueError: the real cause" in result.splitlines()[-1]
    error_part = result[result.index("ValueError: the real cause") :]
    assert len(error_part) > 3500
    assert len(result) <= 6000 + 2 * 60
    assert "noise 0" in result and "noise 9999" in result


def test_short_error_leaves_the_budget_to_output() -> None:
    noise = "x" * 5000
    result = outputs_to_text([stream(noise), error_output()], max_chars=6000)
    assert noise in result
