"""The Python API: ``Interpreter`` and the chunks its ``chat()`` yields."""

from __future__ import annotations

from oi_kernel.api.chunks import (
    ApprovalChunk,
    Chunk,
    ClaimsChunk,
    CodeChunk,
    MessageChunk,
    NoticeChunk,
    OutputChunk,
    TextChunk,
    ThinkingChunk,
    UsageChunk,
)
from oi_kernel.api.interpreter import Interpreter

__all__ = [
    "ApprovalChunk",
    "Chunk",
    "CodeChunk",
    "Interpreter",
    "ClaimsChunk",
    "MessageChunk",
    "NoticeChunk",
    "OutputChunk",
    "TextChunk",
    "ThinkingChunk",
    "UsageChunk",
]
