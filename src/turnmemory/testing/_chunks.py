"""How the fake model's content is cut into the deltas of a stream (every wire cuts it the same way)."""

from __future__ import annotations

import re

__all__ = ["json_pieces", "text_pieces"]

_WORD = re.compile(r"\s*\S+\s*|\s+")


def text_pieces(text: str) -> list[str]:
    """Split text into the deltas a stream sends: one word with its surrounding spaces each."""
    return _WORD.findall(text)


_JSON_PIECE = 16


def json_pieces(text: str) -> list[str]:
    """Split argument JSON into fragments of up to 16 characters (at least one fragment)."""
    return [text[i : i + _JSON_PIECE] for i in range(0, len(text), _JSON_PIECE)] or [""]
