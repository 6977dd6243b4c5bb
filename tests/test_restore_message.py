"""What an undo or restore says it did (``core.changes.restore_message``): each variable is
counted once, as put back, left as it is now, or removed."""

from __future__ import annotations

import pytest

from oi_kernel.core.changes import restore_message

pytestmark = pytest.mark.unit


def _held(name: str) -> dict:
    return {"name": name, "type": "Thing", "why": "the checkpoint's copy did not answer"}


def _gone(name: str) -> dict:
    return {"name": name, "type": "?", "why": "the checkpoint's copy did not answer; the "
            "original object is gone or was not held, so the name was removed"}


def test_everything_put_back():
    said = restore_message({"variables": ["a", "b"], "removed_variables": ["c"],
                            "restored": ["f.txt"]}, "before instruction 1")
    assert said == ("Rolled back to before instruction 1. Variables are as they were at the "
                    "checkpoint: removed `c`; 2 put back. Files restored: `f.txt`.")


def test_a_variable_not_restored_is_not_counted_as_put_back():
    said = restore_message({"variables": ["a", "n", "thing"],
                            "problems": [_held("thing"), _gone("n")]}, "x")
    assert "1 put back" in said and "3 put back" not in said
    assert "**Not restored** (put back as the same object, whose own changes since cannot " \
           "be undone): `thing` (Thing: the checkpoint's copy did not answer)." in said
    assert "**Not restored, removed**: `n` (the checkpoint's copy did not answer; the " \
           "original object is gone or was not held, so the name was removed)." in said


def test_no_variable_put_back_does_not_say_they_are_as_they_were():
    said = restore_message({"variables": ["n", "thing"], "problems": [_held("thing"),
                                                                       _gone("n")]}, "x")
    assert "as they were" not in said and "put back:" not in said
    assert "Not restored" in said
