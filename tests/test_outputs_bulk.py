"""The collector's bulk path for plain text keeps exactly what the token-by-token path
keeps (head, tail, current line, cut count), however the stream is split into messages;
packed messages wait to be decoded until the collector is read, in order, within a limit."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from oi_kernel.core.outputs import OutputCollector, _StreamText


class _TokensOnly(_StreamText):
    """The reference: every write takes the token-by-token path."""

    def write(self, text: str) -> None:
        self._write_tokens(text)


def state(stream: _StreamText) -> tuple[str, int, str, int]:
    return stream.text(), stream.dropped, stream._line, stream._col


def feed(cls: type[_StreamText], chunks: list[str], limit: int) -> _StreamText:
    stream = cls("stdout", limit)
    for chunk in chunks:
        stream.write(chunk)
    return stream


chunk = st.text(alphabet=st.sampled_from("ab\n\r\bé"), max_size=60)
plain_chunk = st.text(alphabet=st.sampled_from("ab\né"), max_size=60)


@settings(max_examples=400, deadline=None)
@given(st.lists(chunk, max_size=8), st.integers(min_value=2, max_value=40))
def test_bulk_path_equals_tokens(chunks: list[str], limit: int) -> None:
    assert state(feed(_StreamText, chunks, limit)) == state(feed(_TokensOnly, chunks, limit))


@settings(max_examples=200, deadline=None)
@given(st.lists(plain_chunk, max_size=6), st.integers(min_value=2, max_value=30))
def test_bulk_path_equals_tokens_on_plain_text(chunks: list[str], limit: int) -> None:
    assert state(feed(_StreamText, chunks, limit)) == state(feed(_TokensOnly, chunks, limit))


def test_long_runs_are_committed_where_the_token_path_commits() -> None:
    for line in ("", "ab", "x" * 10):
        for size in (1, 9, 10, 11, 20, 21, 35, 40, 41):
            chunks = [line, "y" * size, "z" * 3, "\nend"]
            assert state(feed(_StreamText, chunks, 20)) == state(feed(_TokensOnly, chunks, 20))


def test_twenty_megabytes_keep_head_and_tail() -> None:
    collector = OutputCollector()
    collector.add("stream", {"name": "stdout", "text": "h" + "x" * 20_000_000 + "t\n"})
    [out] = collector.outputs
    assert out["text"].startswith("hxxx") and out["text"].endswith("xt\n")
    assert collector.dropped_chars == 20_000_003 - 2_000_000
    assert len(out["text"]) < 2_000_100


def test_many_lines_in_one_message_match_the_token_path() -> None:
    text = "".join(f"{i}\n" for i in range(100_000))
    bulk = OutputCollector(max_chars=10_000)
    bulk.add("stream", {"name": "stdout", "text": text})
    reference = feed(_TokensOnly, [text], 10_000)
    assert bulk.outputs == [{"output_type": "stream", "name": "stdout", "text": reference.text()}]
    assert bulk.dropped_chars == reference.dropped > 0
    assert bulk.outputs[0]["text"].startswith("0\n1\n")
    assert bulk.outputs[0]["text"].endswith("99999\n")


def packed(content: dict) -> bytes:
    return json.dumps(content).encode()


def test_packed_messages_are_decoded_when_read_and_in_order() -> None:
    decoded: list[bytes] = []

    def unpack(data: bytes) -> dict:
        decoded.append(data)
        return json.loads(data)

    collector = OutputCollector()
    collector.add_packed("stream", packed({"name": "stdout", "text": "a\n"}), unpack)
    collector.add_packed("clear_output", packed({"wait": True}), unpack)
    assert decoded == []  # nothing read yet
    collector.add("stream", {"name": "stdout", "text": "b\n"})  # a decoded add keeps the order
    assert len(decoded) == 2
    collector.add_packed("error", packed({"ename": "E", "evalue": "v", "traceback": []}), unpack)
    assert collector.has_error and len(decoded) == 3
    assert [o["output_type"] for o in collector.outputs] == ["stream", "error"]
    assert collector.outputs[0]["text"] == "b\n"  # the clear (wait=True) took "a"


def test_packed_messages_wait_only_up_to_the_limit() -> None:
    decoded: list[bytes] = []

    def unpack(data: bytes) -> dict:
        decoded.append(data)
        return json.loads(data)

    message = packed({"name": "stdout", "text": "x" * 1000})
    collector = OutputCollector(pending_limit=2500)
    collector.add_packed("stream", message, unpack)
    collector.add_packed("stream", message, unpack)
    assert decoded == []
    collector.add_packed("stream", message, unpack)  # over the limit: all three decoded
    assert len(decoded) == 3
    assert collector.outputs[0]["text"] == "x" * 3000
