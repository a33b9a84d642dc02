"""The prompt-cache cost model: what a sequence of requests costs in uncached-input units.

Every request writes its whole prompt to the cache (a breakpoint on its last block, as agents on
Anthropic's API do; OpenAI and Gemini cache prefixes implicitly) and reads the longest prefix of
blocks it shares with the request before it, while that one is still in the cache. Read blocks cost
``read`` times the base input price, the rest ``write`` times it. So:

- inside a turn, each loop iteration's request re-reads everything the previous one sent and writes
  only what was added since (the model's last output and the tool results);
- a rewrite of history (masking, clearing, pruning, turn-boundary compaction) invalidates the cache
  from the first changed block: everything after it is written again;
- after a pause longer than the cache lifetime (``ttl``, from the sessions' own timestamps) the cache
  is cold and the whole prompt is written again; where a log has no times the cache stays warm;
- a prompt smaller than the provider's minimum cacheable size is not cached: it costs the base price
  and leaves nothing for the next request to read; a shared prefix below that size is not read.

Not priced: output tokens, and the system prompt and tool definitions, which every strategy sends
alike and the logs do not hold. They do count toward the minimum size: ``system_tokens`` says how
large they are (0 by default: the history alone must reach the minimum, the pessimistic case).
The default :class:`CacheModel` is the idealised cache of earlier versions: it never expires and
caches any size, at Anthropic's 5-minute prices.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from turnmemory.analysis._measure import Block

__all__ = [
    "CACHE_READ",
    "CACHE_TTLS",
    "CACHE_WRITE",
    "PRICING",
    "Bill",
    "Cache",
    "CacheModel",
    "CacheTtl",
    "Pricing",
    "PricingName",
    "request_cost",
    "shared_prefix",
]

CACHE_READ = 0.1
"""Price of a cache read, as a fraction of the base input price."""

CACHE_WRITE = 1.25
"""Price of a cache write (5-minute TTL), as a multiple of the base input price."""

PricingName = Literal["anthropic", "openai", "gemini"]
CacheTtl = Literal["5m", "1h", "none"]

CACHE_TTLS: Mapping[CacheTtl, float | None] = {"5m": 300.0, "1h": 3600.0, "none": None}
"""Cache lifetimes in seconds; ``none``: the idealised cache that never expires and caches any size."""

_HOUR = 3600.0
_PROVIDERS: Mapping[PricingName, str] = {"anthropic": "Anthropic", "openai": "OpenAI", "gemini": "Gemini"}


@dataclass(frozen=True, slots=True)
class Pricing:
    """A provider's prompt-cache prices, as multiples of its base input price, with their source.

    ``write`` is a write that lives the default lifetime (5 minutes), ``write_hour`` one that lives an
    hour; ``minimum`` is the smallest cacheable prompt in tokens.
    """

    read: float
    write: float
    write_hour: float
    minimum: int
    source: str


PRICING: Mapping[PricingName, Pricing] = {
    "anthropic": Pricing(
        read=0.1,
        write=1.25,
        write_hour=2.0,
        minimum=1024,
        source="platform.claude.com/docs/en/build-with-claude/prompt-caching: 5-minute writes 1.25x, "
        "1-hour writes 2x, hits 0.1x; at least 1,024 tokens (Sonnet 4.5, Opus 4.1; 2,048-4,096 on others)",
    ),
    "openai": Pricing(
        read=0.1,
        write=1.25,
        write_hour=1.25,
        minimum=1024,
        source="developers.openai.com/api/docs/guides/prompt-caching: writes 1.25x from GPT-5.6 on "
        "(free before), cached input 0.1x on the GPT-5 family; prompts of 1,024 tokens or more; one "
        "price for in-memory and 24h retention",
    ),
    "gemini": Pricing(
        read=0.1,
        write=1.0,
        write_hour=1.0,
        minimum=4096,
        source="ai.google.dev/gemini-api/docs/caching: implicit caching from 4,096 tokens (Gemini 3.x, "
        "2,048 on 2.5); docs.cloud.google.com context-cache-overview: hits 90% off, the cache "
        "written at the standard input price, no storage cost for implicit caching",
    ),
}
"""Each provider's prices (December 2026)."""


@dataclass(frozen=True, slots=True)
class CacheModel:
    """How requests are priced: read and write prices, the lifetime in seconds (``None``: never
    expires), the minimum cacheable prompt in tokens, and the tokens every request sends before the
    history that the logs do not hold (they count toward the minimum). The default is the idealised
    cache."""

    read: float = CACHE_READ
    write: float = CACHE_WRITE
    ttl: float | None = None
    minimum: int = 0
    pricing: PricingName = "anthropic"
    lifetime: CacheTtl = "none"
    system_tokens: int = 0

    @classmethod
    def of(
        cls, pricing: PricingName = "anthropic", ttl: CacheTtl = "5m", system_tokens: int = 0
    ) -> CacheModel:
        """A provider's prices at a lifetime; ``none`` keeps the idealised cache at its prices."""
        prices = PRICING[pricing]
        seconds = CACHE_TTLS[ttl]
        if seconds is None:
            return cls(prices.read, prices.write, pricing=pricing, system_tokens=system_tokens)
        write = prices.write_hour if seconds >= _HOUR else prices.write
        return cls(prices.read, write, seconds, prices.minimum, pricing, ttl, system_tokens)

    def cacheable(self, tokens: float) -> bool:
        """Whether a prompt (or prefix) of ``tokens`` history tokens reaches the minimum size."""
        return tokens + self.system_tokens >= self.minimum

    def describe(self) -> str:
        """The model in a few words, for a person."""
        prices = f"{_PROVIDERS[self.pricing]} prices (read {self.read:g}x, write {self.write:g}x"
        if self.ttl is None:
            return prices + "), a cache that never expires"
        lifetime = {"5m": "5-minute", "1h": "1-hour"}.get(self.lifetime, f"{self.ttl:g}-second")
        system = f" with {self.system_tokens:,} system tokens" if self.system_tokens else ""
        return f"{prices}, from {self.minimum:,} tokens{system}), {lifetime} cache lifetime"


@dataclass(slots=True)
class Bill:
    """What a conversation's requests cost: tokens read from and written to the cache, tokens sent
    uncached (below the minimum size), and the requests that found the cache expired."""

    read: int = 0
    written: int = 0
    uncached: int = 0
    expired: int = 0
    cost: float = 0.0


class Cache:
    """The prompt cache of one conversation under a model: prices its requests in order.

    ``tokens`` converts a size in the meter's unit to tokens (for the minimum cacheable size).
    """

    def __init__(self, model: CacheModel | None = None, tokens: Callable[[int], float] = float) -> None:
        self.model = model or CacheModel()
        self.bill = Bill()
        self._tokens = tokens
        self._previous: Sequence[Block] = ()
        self._cached = False
        self._at: float | None = None

    def send(self, blocks: Sequence[Block], at: float | None = None) -> float:
        """The cost of sending ``blocks`` at time ``at`` (seconds; ``None`` when unknown)."""
        model, bill = self.model, self.bill
        expired = (
            model.ttl is not None
            and at is not None
            and self._at is not None
            and at - self._at > model.ttl
            and self._cached
        )
        bill.expired += expired
        read = shared_prefix(self._previous, blocks) if self._cached and not expired else 0
        if not model.cacheable(self._tokens(read)):
            read = 0
        size = sum(block.size for block in blocks)
        self._cached = model.cacheable(self._tokens(size))
        if self._cached:
            cost = model.read * read + model.write * (size - read)
            bill.read += read
            bill.written += size - read
        else:
            cost = float(size)
            bill.uncached += size
        bill.cost += cost
        self._previous = blocks
        self._at = at
        return cost


def shared_prefix(previous: Sequence[Block], current: Sequence[Block]) -> int:
    """The size of the longest run of equal leading blocks."""
    size = 0
    for before, now in zip(previous, current, strict=False):
        if before is not now and before != now:
            break
        size += now.size
    return size


def request_cost(previous: Sequence[Block], current: Sequence[Block]) -> float:
    """The input cost of ``current`` sent after ``previous`` (empty for the first request), in the
    idealised cache."""
    cache = Cache()
    cache.send(previous)
    return cache.send(current)
