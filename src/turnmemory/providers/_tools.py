"""A tool call and its result as every wire carries them: the call a model made, the result's text both ways.

Providers whose results are strings (Anthropic, Chat Completions, Responses) carry a result as
:func:`result_text` writes it and :func:`parse_output` reads it back; Gemini and Bedrock carry JSON
values and use the same reading for what they hold as text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from turnmemory._text import compact_json

__all__ = [
    "NO_OUTPUT",
    "Call",
    "ToolResult",
    "is_error_text",
    "object_result",
    "parse_arguments",
    "parse_output",
    "plain",
    "result_text",
]

NO_OUTPUT = "(no output)"
"""What an empty result reads as: providers reject empty result text."""


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What running a tool gave: ``output`` (any JSON value) on success, or ``error`` on failure."""

    output: Any = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Call:
    """A tool call the model made in one response.

    ``arguments`` is ``None`` when the provider sent arguments that are not a JSON object;
    ``raw_arguments`` then holds what it sent. ``native`` is whatever the wire format needs to
    answer the call (Gemini: the call's own id, or ``None`` when it came without one).
    ``dropped_bytes`` is the size of arguments too large to keep (the client's argument cap): none of
    their text is kept (``arguments`` ``None``, ``raw_arguments`` empty); 0 when they were kept.
    """

    id: str
    name: str
    arguments: dict[str, Any] | None
    raw_arguments: str = ""
    native: Any = None
    dropped_bytes: int = 0


def parse_arguments(raw: str) -> dict[str, Any] | None:
    """Argument text as an object; an empty text is ``{}``, anything but an object ``None``."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def result_text(result: ToolResult, *, flagged: bool) -> str:
    """A result as text, for providers whose results are strings.

    Output that is not a string is compact JSON. An error is its message where the provider
    ``flagged`` errors itself (``is_error``), and ``{"error": message}`` where it has no such flag.
    Empty text becomes ``(no output)``, since providers reject empty result text.
    """
    if result.error is not None:
        text = result.error if flagged else compact_json({"error": result.error})
    else:
        text = result.output if isinstance(result.output, str) else compact_json(plain(result.output))
    return text or NO_OUTPUT


def parse_output(text: str, *, is_error: bool = False) -> ToolResult:
    """Read back a result that :func:`result_text` wrote (``is_error``: the provider flagged it)."""
    try:
        value = json.loads(text)
    except ValueError:
        return ToolResult(error=text) if is_error else ToolResult(output=text)
    result = object_result(value)
    return ToolResult(error=text) if is_error and result.error is None else result


def is_error_text(text: str) -> bool:
    """Whether a result's text is a failure as :func:`result_text` writes one without a flag."""
    return text.startswith("{") and parse_output(text).error is not None


def object_result(value: Any) -> ToolResult:
    """A result from a decoded JSON value: ``{"error": "..."}`` alone reads as an error."""
    if isinstance(value, dict) and len(value) == 1 and isinstance(value.get("error"), str):
        return ToolResult(error=value["error"])
    return ToolResult(output=value)


def plain(value: Any) -> Any:
    """``value`` with every mapping turned into a new dict and every sequence into a new list."""
    if isinstance(value, Mapping):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return value
