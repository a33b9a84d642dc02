"""When to compact at a turn boundary: at every boundary (the spec), or only once it pays for itself.

The spec compacts the finished turn at every turn boundary. Under prompt caching that rewrite has a
price: the compacted turn is written to the cache again (1.25x the input price at Anthropic, against
0.1x for reading the raw turn that is already cached), and only the requests after it gain from the
smaller history. ``"when_it_pays"`` defers the compaction of the turns since the last one until it
pays, decided from what is known when the new user message arrives::

    from turnmemory.boundary import Boundary, should_compact

    boundary = Boundary(raw=48_000, compacted=6_000, idle=40.0, ttl=300.0, requests_ahead=12.0)
    if should_compact(boundary, "when_it_pays"):
        ...  # replace the raw turns by their TurnMemory before sending the new user message

It compacts when the cache has gone cold anyway (the pause since the last request exceeds the cache
lifetime, so every token is written again whatever is sent) and the compacted turns are smaller, or
when the expected saving on the requests ahead exceeds the rewrite. Deferred turns are sent as they
were, so a policy that never compacts sends exactly the full trace. Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "BOUNDARY_POLICIES",
    "DEFAULT_CACHE_TTL",
    "DEFAULT_POLICY",
    "Boundary",
    "BoundaryPolicy",
    "should_compact",
]

BoundaryPolicy = Literal["every_turn", "when_it_pays", "never"]
"""``every_turn``: compact at every turn boundary (the spec); ``when_it_pays``: defer until it pays;
``never``: keep the raw trace of every turn (the full trace, while it fits)."""

BOUNDARY_POLICIES: tuple[BoundaryPolicy, ...] = ("every_turn", "when_it_pays", "never")

DEFAULT_POLICY: BoundaryPolicy = "every_turn"
"""The spec's behaviour."""

DEFAULT_CACHE_TTL = 300.0
"""Seconds a prompt-cache entry lives unused (Anthropic's and OpenAI's in-memory default, 5 minutes)."""


@dataclass(frozen=True, slots=True)
class Boundary:
    """What is known at a turn boundary, before the new user message is sent.

    ``raw`` is the size of the turns not compacted yet as they were sent, ``compacted`` the size of
    the same turns as TurnMemory (in tokens, or any unit both share); ``idle`` the seconds since the
    last request (``None`` when unknown), ``ttl`` the cache lifetime in seconds (``None``: it never
    expires); ``requests_ahead`` the number of requests expected to carry the history before the
    next boundary, the new turn's first included. Turn lengths are heavy-tailed (a chat of one-request
    turns suddenly has one of 80), and every request of the turn ahead pays for a deferral, so the
    longest earlier turn of the session is a safer online estimate than their mean. ``read`` and
    ``write`` are the cache prices as multiples of the input price.
    """

    raw: int
    compacted: int
    idle: float | None = None
    ttl: float | None = None
    requests_ahead: float = 1.0
    read: float = 0.1
    write: float = 1.25

    def cost(self, size: int, *, written: bool) -> float:
        """What carrying ``size`` over the requests ahead costs: the first request writes it to the
        cache (``written``) or reads it from there, every later one reads it."""
        later = max(self.requests_ahead, 1.0) - 1.0
        return (self.write if written else self.read) * size + later * self.read * size

    @property
    def cold(self) -> bool:
        """Whether the cache has expired since the last request."""
        return self.idle is not None and self.ttl is not None and self.idle > self.ttl


def should_compact(boundary: Boundary, policy: BoundaryPolicy = DEFAULT_POLICY) -> bool:
    """Whether to compact the turns not compacted yet before the new user message is sent.

    Under ``"when_it_pays"``: when compacting costs less than keeping the raw turns over the
    requests ahead. The first of them writes the compacted turns where it would have read the raw
    ones from the cache (or written them again, when the cache is cold); every later one reads the
    compacted turns instead of the raw ones. A tie keeps the raw turns (nothing to gain).
    """
    if policy != "when_it_pays":
        return policy == "every_turn"
    keep = boundary.cost(boundary.raw, written=boundary.cold)
    return boundary.cost(boundary.compacted, written=True) < keep
