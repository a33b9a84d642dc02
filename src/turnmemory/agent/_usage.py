"""Where each token goes: cache reads, cache writes and uncached input of every request, by turn and
session, each cache miss with its cause, and their cost at the configured prices.

A request *misses* when it reads less than the previous request read and wrote (the check
anthropics/claude-code#63930 proposes for a healthy session); the very first request misses when it
writes anything. The cause is what changed:

- ``model_switch``: another provider or model since the last request (each model has its own cache);
- ``tools_changed``: the tool list changed (tools come first in every cached prefix);
- ``compaction``: the oldest turns were summarized or dropped (or, within a turn, the in-turn reducer
  cleared old tool results);
- ``cache_expiry``: the pause since the last request was longer than the cache lifetime;
- ``turn_boundary``: the finished turn was replaced by its TurnMemory (the spec's boundary rewrite);
- ``first_request``: nothing was cached yet in this process.

The request that writes a session compaction's summary (:mod:`turnmemory.agent.compaction`) is
counted too, labelled ``compaction``: in the totals of the turn it was made for and of the session,
and as a miss of cause ``compaction`` when it wrote to the cache. It carries another prefix (the
summary's own system prompt), so the turn's requests are compared with each other, not with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Literal

from turnmemory.boundary import DEFAULT_CACHE_TTL
from turnmemory.llm import Usage

__all__ = ["MISS_CAUSES", "MissCause", "RequestKind", "RequestUsage", "UsageLedger", "cost"]

MissCause = Literal[
    "first_request", "turn_boundary", "cache_expiry", "tools_changed", "compaction", "model_switch"
]
MISS_CAUSES: tuple[MissCause, ...] = (
    "first_request",
    "turn_boundary",
    "cache_expiry",
    "tools_changed",
    "compaction",
    "model_switch",
)


RequestKind = Literal["turn", "compaction"]
"""What a request was for: the turn's own work, or the summary of a session compaction."""


@dataclass(frozen=True, slots=True)
class RequestUsage:
    """One request's reported usage, and the cause of its cache miss (``None``: it read what it could)."""

    usage: Usage
    miss: MissCause | None = None
    kind: RequestKind = "turn"

    def to_dict(self) -> dict[str, object]:
        """The request as ``run --format json`` and the session store give it."""
        return {**usage_dict(self.usage), "miss": self.miss, "kind": self.kind}


def usage_dict(usage: Usage) -> dict[str, int]:
    """A usage's counts by name, uncached input included."""
    return {**asdict(usage), "uncached_tokens": usage.uncached_tokens}


def cost(usage: Usage, prices: Mapping[str, float]) -> float:
    """USD for ``usage`` at ``prices`` per million tokens: ``input``, ``output``, ``cached_input`` (reads;
    default the input price) and ``cache_write`` (default the input price)."""
    per = {key: value / 1_000_000 for key, value in prices.items()}
    base = per.get("input", 0.0)
    return (
        usage.uncached_tokens * base
        + usage.cached_tokens * per.get("cached_input", base)
        + usage.cache_write_tokens * per.get("cache_write", base)
        + usage.output_tokens * per.get("output", 0.0)
    )


@dataclass(slots=True)
class UsageLedger:
    """The requests of one process's session, labelled as they come.

    Call :meth:`turn_started` before a turn with what changed since the last one, then :meth:`add`
    for each reported usage, in order; :meth:`add_compaction` for a compaction summary's request
    (it counts in the next turn).
    """

    ttl: float = DEFAULT_CACHE_TTL
    earlier: Usage = field(default_factory=Usage)
    """What the session's stored turns reported before this process took it up."""
    requests: list[RequestUsage] = field(default_factory=list)
    turn: list[RequestUsage] = field(default_factory=list)
    _boundary: MissCause | None = "first_request"
    _last_time: float | None = None
    _last: Usage | None = None  # the last turn request's usage: what the next one should read
    _in_turn: bool = False
    _summaries: list[RequestUsage] = field(default_factory=list)  # made before the next turn starts

    def turn_started(self, now: float, *, model_switch: bool, tools_changed: bool, compacted: bool) -> None:
        """A turn starts at ``now`` (seconds, monotonic): what its first request's miss would be due to."""
        self.turn, self._summaries, self._in_turn = self._summaries, [], False
        if self._last_time is None:
            self._boundary = "first_request"
        elif model_switch:
            self._boundary = "model_switch"
        elif tools_changed:
            self._boundary = "tools_changed"
        elif compacted:
            self._boundary = "compaction"
        elif now - self._last_time > self.ttl:
            self._boundary = "cache_expiry"
        else:
            self._boundary = "turn_boundary"

    def add(self, usage: Usage, now: float) -> RequestUsage:
        """One request's usage, with its miss cause: a request misses when it reads less than the
        previous request read and wrote (the first one ever, when it writes anything)."""
        miss: MissCause | None = None
        previous = self._last
        if previous is None:
            miss = "first_request" if usage.cache_write_tokens else None
        else:
            if usage.cached_tokens < previous.cached_tokens + previous.cache_write_tokens:
                if self._in_turn:  # within a turn only the in-turn reducer rewrites what was sent
                    expired = self._last_time is not None and now - self._last_time > self.ttl
                    miss = "cache_expiry" if expired else "compaction"
                else:
                    miss = self._boundary
        entry = RequestUsage(usage, miss)
        self.turn.append(entry)
        self.requests.append(entry)
        self._last_time, self._last, self._in_turn = now, usage, True
        return entry

    def add_compaction(self, usage: Usage) -> RequestUsage:
        """The usage of a compaction summary's request: counted in the session now and in the next
        turn's total, a miss of cause ``compaction`` when it wrote to the cache."""
        entry = RequestUsage(usage, "compaction" if usage.cache_write_tokens else None, "compaction")
        self.requests.append(entry)
        self._summaries.append(entry)
        return entry

    @property
    def turn_total(self) -> Usage:
        """The usage of the current (or last) turn's requests."""
        return sum((entry.usage for entry in self.turn), Usage())

    @property
    def session_total(self) -> Usage:
        """The usage of the whole session: its stored turns and every request since."""
        return sum((entry.usage for entry in self.requests), self.earlier)

    def misses(self) -> dict[MissCause, int]:
        """How many requests missed, by cause."""
        counts: dict[MissCause, int] = {}
        for entry in self.requests:
            if entry.miss is not None:
                counts[entry.miss] = counts.get(entry.miss, 0) + 1
        return counts
