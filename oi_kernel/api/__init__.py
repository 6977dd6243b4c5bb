"""The Python API: ``Interpreter`` and the chunks its ``chat()`` yields."""

from __future__ import annotations

from oi_kernel.api.interpreter import (
    ApprovalChunk,
    Chunk,
    CodeChunk,
    Interpreter,
    MessageChunk,
    NoticeChunk,
    OutputChunk,
    TextChunk,
    UsageChunk,
)

__all__ = [
    "ApprovalChunk",
    "Chunk",
    "CodeChunk",
    "Interpreter",
    "MessageChunk",
    "NoticeChunk",
    "OutputChunk",
    "TextChunk",
    "UsageChunk",
]
