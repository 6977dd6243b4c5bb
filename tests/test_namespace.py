"""The namespace summary the model gets before each ``%%oi`` turn (pure, table-tested)."""

from __future__ import annotations

import datetime
import os
import pathlib
import time
from collections.abc import Iterator
from typing import Any

import pytest

from oi_kernel.core.namespace import HIDDEN, MAX_LINE, brief, describe, summarize


class FakeFrame:
    """Quacks like a pandas DataFrame: shape, columns, dtypes (a Series with .items())."""

    def __init__(self, columns: dict[str, str], rows: int) -> None:
        self.columns = list(columns)
        self.shape = (rows, len(columns))
        self.dtypes = FakeSeries(columns)

    def __repr__(self) -> str:
        raise AssertionError("the summary must not repr a table")


class FakeSeries:
    def __init__(self, items: dict[str, str]) -> None:
        self._items = items

    def items(self) -> Iterator[tuple[str, str]]:
        return iter(self._items.items())


class FakeArray:
    shape = (3, 4)
    dtype = "float64"

    def __len__(self) -> int:
        raise AssertionError("the summary must not call len() on unknown objects")


class FakeScalar:
    shape = ()
    dtype = "float64"

    def __str__(self) -> str:
        return "3.5"


class Exploding:
    """Every attribute access raises something other than AttributeError."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError("no")

    def __repr__(self) -> str:
        raise RuntimeError("no repr either")


def sample(a: int, b: str = "x") -> None:
    """A user function."""


class UserClass:
    pass


DESCRIBE_CASES = [
    ("int", 5, "int = 5"),
    ("bool", True, "bool = True"),
    ("none", None, "NoneType = None"),
    ("float", 2.5, "float = 2.5"),
    ("short str", "hello", "str[5] = 'hello'"),
    ("long str is cut", "ab" * 100, "str[200] = '" + "ab" * 30 + "'..."),
    ("bytes", b"\x00ab", "bytes[3] = b'\\x00ab'"),
    ("huge int", 10**500, "int = <int of about 501 digits>"),
    ("list", [1, 2, 3], "list[3] = [1, 2, 3]"),
    ("long list", list(range(100)), "list[100] = [0, 1, 2, 3, 4, 5, ...]"),
    ("one tuple", (1,), "tuple[1] = (1,)"),
    ("empty set", set(), "set[0] = set()"),
    ("dict", {"a": 1, "b": [1, 2]}, "dict[2] = {'a': 1, 'b': [1, 2]}"),
    ("nested is cut", [[[1]]], "list[1] = [[[...]]]"),
    ("objects inside containers", [object()], "list[1] = [<object>]"),
    (
        "table",
        FakeFrame({"month": "object", "revenue": "int64"}, 120),
        "FakeFrame shape (120, 2) columns: month (object), revenue (int64)",
    ),
    ("array", FakeArray(), "FakeArray shape (3, 4) dtype float64"),
    ("numpy-like scalar", FakeScalar(), "FakeScalar = 3.5"),
    ("function", sample, "function(a, b='x')"),
    ("star arguments", lambda *args, k=[1], **kw: 0, "function(*args, k=[...], **kw)"),
    ("lambda", lambda x, y=2: x, "function(x, y=2)"),
    ("class", UserClass, "class UserClass"),
    ("date", datetime.date(2024, 1, 2), "date = datetime.date(2024, 1, 2)"),
    (
        "path",
        pathlib.PurePosixPath("/data/sales.csv"),
        "PurePosixPath = PurePosixPath('/data/sales.csv')",
    ),
    ("range", range(3), "range = range(0, 3)"),
    ("unknown object", object(), "object"),
    ("callable object", type("Tool", (), {"__call__": lambda self: 1})(), "Tool (callable)"),
]


@pytest.mark.parametrize(
    ("name", "value", "expected"), DESCRIBE_CASES, ids=[c[0] for c in DESCRIBE_CASES]
)
def test_describe(name: str, value: Any, expected: str) -> None:
    assert describe(value) == expected


def test_wide_table_lists_a_few_columns_and_counts_the_rest() -> None:
    frame = FakeFrame({f"c{i}": "int64" for i in range(40)}, 5)
    text = describe(frame)
    assert "c0 (int64)" in text and "c11 (int64)" in text and "c12" not in text
    assert text.endswith("... (+28 more)")


def test_summary_lines_in_definition_order_skipping_private_modules_and_ipython() -> None:
    ns = {
        "In": [],
        "Out": {},
        "get_ipython": lambda: None,
        "os": os,
        "_private": 1,
        "__builtins__": {},
        "sales": [3, 4, 5],
        "df": FakeFrame({"month": "object"}, 2),
    }
    assert summarize(ns) == (
        "sales: list[3] = [3, 4, 5]\ndf: FakeFrame shape (2, 1) columns: month (object)"
    )
    assert HIDDEN >= {"In", "Out", "get_ipython"}


def test_empty_namespace_gives_empty_text() -> None:
    assert summarize({}) == ""
    assert summarize({"_": 1, "math": os}) == ""


def test_secret_looking_names_never_show_their_value() -> None:
    text = summarize({"OPENAI_API_KEY": "sk-live-123", "db_password": "hunter2", "n": 1})
    assert "sk-live-123" not in text and "hunter2" not in text
    assert "OPENAI_API_KEY: str (value not shown" in text
    assert "n: int = 1" in text


def test_a_broken_object_does_not_break_the_summary() -> None:
    text = summarize({"bad": Exploding(), "good": 1})
    assert text == "bad: Exploding\ngood: int = 1"


def test_long_lines_are_cut() -> None:
    frame = FakeFrame({"x" * 50 + str(i): "int64" for i in range(12)}, 1)
    line = summarize({"wide": frame})
    assert len(line) == MAX_LINE and line.endswith("...")


@pytest.mark.parametrize("max_chars", [0, 30, 100, 500, 2000])
def test_summary_is_bounded_and_keeps_the_newest(max_chars: int) -> None:
    ns = {f"var{i}": i for i in range(500)}
    text = summarize(ns, max_chars=max_chars)
    assert len(text) <= max_chars
    if max_chars >= 100:
        lines = text.splitlines()
        assert lines[-2] == "var499: int = 499"  # the newest fit; shown in definition order
        assert lines[-1].startswith("... and ") and lines[-1].endswith("more variables not listed")
        shown = len(lines) - 1
        assert lines[-1] == f"... and {500 - shown:,} more variables not listed"


def test_ten_thousand_variables_are_summarized_quickly() -> None:
    ns: dict[str, Any] = {f"v{i}": [i] * 50 for i in range(10_000)}
    ns["frame"] = FakeFrame({"a": "int64"}, 3)
    started = time.perf_counter()
    text = summarize(ns)
    elapsed = time.perf_counter() - started
    assert len(text) <= 2000
    assert "frame: FakeFrame" in text
    assert elapsed < 1.0  # a hang/quadratic check, not a benchmark (about 10 ms here)


def test_brief_never_sorts_or_walks_a_huge_dict() -> None:
    class NoSort:
        def __lt__(self, other: object) -> bool:
            raise AssertionError("sorted")

        def __repr__(self) -> str:
            return "NoSort"

    big = {NoSort(): i for i in range(10_000)}
    assert brief(big).endswith(", ...}")
