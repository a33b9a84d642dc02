"""Server-sent events framing (the streams of the four HTTP+JSON protocols)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["DONE", "sse"]

DONE = b"data: [DONE]\n\n"
"""OpenAI's stream terminator."""


def sse(data: Mapping[str, Any], event: str | None = None) -> bytes:
    """One event: an optional ``event:`` line, one ``data:`` line of compact JSON, a blank line."""
    line = b"data: " + json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode() + b"\n\n"
    return line if event is None else f"event: {event}\n".encode() + line
