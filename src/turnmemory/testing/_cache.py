"""A prompt cache for the fake server: Anthropic's rules, so that tests see what a real bill would show.

Anthropic caches a request's prefix (tools, then system, then messages, block by block) at each block
that carries ``cache_control``. A breakpoint reads the longest prefix an earlier request wrote at one
of the :data:`~turnmemory.providers.anthropic.LOOKBACK` blocks before it (itself included), and writes
the prefix up to itself; entries live ``ttl`` seconds from their last use, per model. A block costs
one token per four bytes of its compact JSON (at least one), which is all a test needs to compare
reads with writes.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from turnmemory._text import compact_json
from turnmemory.providers.anthropic import LOOKBACK, blocks
from turnmemory.testing._script import Usage

__all__ = ["PromptCache"]


def _tokens(block: object) -> int:
    return max(1, len(compact_json(block).encode()) // 4)


def _prefix(body: Mapping[str, Any]) -> list[tuple[object, bool]]:
    """Every cacheable unit of a Messages body in cache order, without its marker, and whether it has one."""
    units: list[tuple[object, bool]] = []

    def add(unit: object, role: str) -> None:
        marked = isinstance(unit, Mapping) and "cache_control" in unit
        bare = {k: v for k, v in unit.items() if k != "cache_control"} if isinstance(unit, Mapping) else unit
        units.append(((role, bare), marked))

    for tool in body.get("tools") or ():
        add(tool, "tool")
    system = body.get("system")
    for block in [{"type": "text", "text": system}] if isinstance(system, str) else system or ():
        add(block, "system")
    for message in body.get("messages") or ():
        if isinstance(message, Mapping):
            for block in blocks(message):
                add(block, str(message.get("role")))
    return units


class PromptCache:
    """The cache entries of one fake server; :meth:`usage` prices a request and records what it wrote."""

    def __init__(self, ttl: float = 300.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self._clock = clock
        self._entries: dict[tuple[str, bytes], float] = {}
        self._lock = threading.Lock()

    def usage(self, body: Mapping[str, Any], model: str, output_tokens: int) -> Usage:
        """The usage a Messages request reports: its reads, its writes and its uncached input."""
        units = _prefix(body)
        digest = hashlib.sha256()
        keys: list[bytes] = []
        sizes: list[int] = []
        for unit, _ in units:
            digest.update(compact_json(unit).encode())
            keys.append(digest.copy().digest())
            sizes.append(_tokens(unit))
        ends = [sum(sizes[: i + 1]) for i in range(len(sizes))]
        points = [i for i, (_, marked) in enumerate(units) if marked]
        now = self._clock()
        with self._lock:
            live = {key for key, expiry in self._entries.items() if expiry > now}
            read_at = max(
                (
                    q
                    for point in points
                    for q in range(point, max(point - LOOKBACK, 0) - 1, -1)
                    if (model, keys[q]) in live
                ),
                default=-1,
            )
            for index in [*points, read_at] if read_at >= 0 else points:
                self._entries[(model, keys[index])] = now + self.ttl
        read = ends[read_at] if read_at >= 0 else 0
        written = max((ends[points[-1]] if points else 0) - read, 0)
        total = ends[-1] if ends else 0
        return Usage(
            input_tokens=total, output_tokens=output_tokens, cached_tokens=read, cache_write_tokens=written
        )
