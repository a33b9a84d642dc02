"""The prompt-cache cost model: what a sequence of requests costs in uncached-input units.

Every request writes its whole prompt to the cache (a breakpoint on its last block, as agents on
Anthropic's API do) and reads the longest prefix of blocks it shares with the request before it.
Read blocks cost :data:`CACHE_READ` of the base input price, the rest :data:`CACHE_WRITE`. So:

- inside a turn, each loop iteration's request re-reads everything the previous one sent and writes
  only what was added since (the model's last output and the tool results);
- a rewrite of history (masking, clearing, pruning, turn-boundary compaction) invalidates the cache
  from the first changed block: everything after it is written again at 1.25x.

Not modelled: cache expiry between turns (a warm cache is assumed throughout), minimum cacheable
lengths, output tokens, and the system prompt and tool definitions, which every strategy would read
from the cache alike (``0.1 x`` their size per request).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from turnmemory.analysis._measure import Block

__all__ = ["CACHE_READ", "CACHE_WRITE", "request_cost", "shared_prefix", "total_cost"]

CACHE_READ = 0.1
"""Price of a cache read, as a fraction of the base input price."""

CACHE_WRITE = 1.25
"""Price of a cache write (5-minute TTL), as a multiple of the base input price."""


def shared_prefix(previous: Sequence[Block], current: Sequence[Block]) -> int:
    """The size of the longest run of equal leading blocks."""
    size = 0
    for before, now in zip(previous, current, strict=False):
        if before is not now and before != now:
            break
        size += now.size
    return size


def request_cost(previous: Sequence[Block], current: Sequence[Block]) -> float:
    """The input cost of ``current`` sent after ``previous`` (empty for the first request)."""
    read = shared_prefix(previous, current)
    written = sum(block.size for block in current) - read
    return CACHE_READ * read + CACHE_WRITE * written


def total_cost(requests: Iterable[Sequence[Block]]) -> float:
    """The input cost of a session's requests, in order."""
    cost = 0.0
    previous: Sequence[Block] = ()
    for blocks in requests:
        cost += request_cost(previous, blocks)
        previous = blocks
    return cost
