"""Sizes of request blocks: o200k tokens where the BPE file is available offline, else UTF-8 bytes.

tiktoken does not bundle its encoding files; it downloads them on first use and caches them under
``$TIKTOKEN_CACHE_DIR`` (or ``$DATA_GYM_CACHE_DIR``, or ``<tmp>/data-gym-cache``) by the SHA-1 of
their URL. :func:`open_meter` looks for ``o200k_base`` in that cache, verifies its SHA-256 itself and
only then asks tiktoken for the encoding, so nothing is ever fetched. When the cache lacks the file, it
is seeded from the copy the ``bpe-openai`` package ships (the same file, gzipped; the SHA-256 is checked
after decompression). The choice is :func:`turnmemory.llm.open_counter`'s, the LLM clients' own
estimate's: with neither, sizes fall back to UTF-8 bytes with a one-line note.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, NamedTuple

from turnmemory.llm import open_counter

__all__ = ["THRESHOLD_BYTES_PER_TOKEN", "Block", "Meter", "Tokenizer", "Unit", "open_meter"]

Tokenizer = Literal["bytes", "o200k"]
"""What the caller asks for."""

Unit = Literal["o200k", "bytes"]
"""What sizes are measured in."""

THRESHOLD_BYTES_PER_TOKEN = 4
"""Bytes per token assumed where a strategy's threshold is in tokens but sizes are in bytes."""


class Block(NamedTuple):
    """One message of a request: its compact JSON text and its size in the meter's unit."""

    text: str
    size: int


class Meter:
    """Measures texts in one unit and interns the blocks it makes, so equal blocks are one object."""

    def __init__(self, unit: Unit, count: Callable[[str], int], note: str | None = None) -> None:
        self.unit: Unit = unit
        self.note = note
        self._count = count
        self._blocks: dict[str, Block] = {}

    def block(self, text: str) -> Block:
        """The block for ``text`` (the same object for the same text)."""
        found = self._blocks.get(text)
        if found is None:
            found = self._blocks[text] = Block(text, self._count(text))
        return found

    def fresh(self) -> Meter:
        """A meter in the same unit with nothing interned yet (one per session keeps memory bounded)."""
        return Meter(self.unit, self._count, self.note)

    def tokens(self, size: int) -> float:
        """``size`` in tokens: itself for o200k, bytes divided by :data:`THRESHOLD_BYTES_PER_TOKEN` otherwise."""
        return float(size) if self.unit == "o200k" else size / THRESHOLD_BYTES_PER_TOKEN


def _utf8_size(text: str) -> int:
    return len(text.encode("utf-8"))


def open_meter(tokenizer: Tokenizer = "o200k") -> Meter:
    """A meter in o200k tokens when asked for and available offline, else in UTF-8 bytes.

    The returned meter's ``note`` says why bytes were used when o200k was asked for.
    """
    counter = open_counter(tokenizer, fallback=_utf8_size, fallback_note="sizes are UTF-8 bytes")
    return Meter(counter.unit, counter.text, counter.note)
