"""Server-sent events framing (the streams of the four HTTP+JSON protocols)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from turnmemory._text import compact_json

__all__ = ["DONE", "sse"]

DONE = b"data: [DONE]\n\n"
"""OpenAI's stream terminator."""


def sse(data: Mapping[str, Any], event: str | None = None) -> bytes:
    """One event: an optional ``event:`` line, one ``data:`` line of compact JSON, a blank line."""
    line = b"data: " + compact_json(data).encode() + b"\n\n"
    return line if event is None else f"event: {event}\n".encode() + line
