"""Replacing the first items of a JSON body's array while every other character stays as it came.

The body is re-encoded only where the history was compacted: the rest of the text (the system prompt,
the tool definitions, fields the proxy does not know, the turn in progress) is copied through, so the
upstream receives those bytes exactly as the client sent them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

__all__ = ["encode", "item_spans", "splice"]

_SPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def _skip(text: str, at: int) -> int:
    match = _SPACE.match(text, at)
    return match.end() if match else at


def _items(text: str, at: int) -> tuple[list[tuple[int, int]], int]:
    """The spans of the items of the array starting at ``at``, and where the array ends."""
    spans: list[tuple[int, int]] = []
    at = _skip(text, at + 1)
    if text.startswith("]", at):
        return spans, at + 1
    while True:
        _, end = _DECODER.raw_decode(text, at)
        spans.append((at, end))
        at = _skip(text, end)
        if text.startswith("]", at):
            return spans, at + 1
        at = _skip(text, at + 1)  # past the comma


def item_spans(text: str, key: str) -> list[tuple[int, int]] | None:
    """Where each item of the array under the top-level ``key`` of the JSON object ``text`` lies.

    ``text`` must be valid JSON (it was parsed already). Of duplicate keys the last counts, as in
    :func:`json.loads`; ``None`` when the key is absent or not an array.
    """
    at = _skip(text, 0)
    if not text.startswith("{", at):
        return None
    at = _skip(text, at + 1)
    found: list[tuple[int, int]] | None = None
    while not text.startswith("}", at):
        name, at = _DECODER.raw_decode(text, at)
        at = _skip(text, _skip(text, at) + 1)  # past the colon
        if name == key:
            found, at = (
                _items(text, at) if text.startswith("[", at) else (None, _DECODER.raw_decode(text, at)[1])
            )
        else:
            _, at = _DECODER.raw_decode(text, at)
        at = _skip(text, at)
        if text.startswith(",", at):
            at = _skip(text, at + 1)
    return found


def encode(item: Any) -> str:
    """One item as the proxy writes it: compact JSON, non-ASCII characters as they are."""
    return json.dumps(item, ensure_ascii=False, separators=(",", ":"))


def splice(text: str, spans: Sequence[tuple[int, int]], replaced: int, items: Sequence[Any]) -> str:
    """``text`` with the array items at ``spans[:replaced]`` replaced by ``items``."""
    if not 0 < replaced <= len(spans) or not items:
        raise ValueError("splice: replace at least one item of the array by at least one")
    start, end = spans[0][0], spans[replaced - 1][1]
    return text[:start] + ",".join(encode(item) for item in items) + text[end:]
