"""The retry policy, and the classification of provider failures shared by every wire format.

Only what can succeed when sent again is retried: connection failures and timeouts, HTTP 408, 409,
429, 5xx and 529, and the in-stream errors that mean the same (overloaded, throttled, unavailable).
Anything else, a rejected request above all, is surfaced at once with the provider's message.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

__all__ = [
    "Failure",
    "RetryPolicy",
    "connection_failure",
    "http_failure",
    "is_overflow",
    "one_line",
    "retry_after_seconds",
]

RETRYABLE_STATUS = frozenset({408, 409, 429, 529})

_RETRYABLE_KIND = re.compile(
    r"overload|rate.?limit|throttl|unavailable|internal|server.?error|timeout|api_error|model.?stream.?error",
    re.IGNORECASE,
)

_OVERFLOW = re.compile(
    r"context[ _-]?(?:length|window)|prompt is too long|input is too long|too many (?:input )?tokens"
    r"|maximum context|exceeds the maximum number of tokens|input token count.*exceeds"
    r"|reduce the length of the messages|token limit",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how patiently a failed provider request is sent again.

    ``attempts`` counts every request of one loop iteration (1 means never retry). The wait before
    retry ``n`` (1-based) is ``base_delay * 2**(n-1)``, capped at ``max_delay``, scaled by a random
    factor in ``[1 - jitter, 1]``; a server's ``retry-after`` replaces it, capped at ``max_delay``.
    ``sleep`` and ``random`` are injectable for tests.
    """

    attempts: int = 5
    base_delay: float = 1.0
    max_delay: float = 30.0
    jitter: float = 0.5
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False, repr=False)
    random: Callable[[], float] = field(default=random.random, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("retry.attempts: expected at least 1")
        if self.base_delay < 0 or self.max_delay < 0 or not 0 <= self.jitter <= 1:
            raise ValueError("retry: delays must be non-negative and jitter within [0, 1]")

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (1 for the first retry)."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_delay)
        backoff: float = min(self.base_delay * 2.0 ** (retry - 1), self.max_delay)
        return backoff * (1 - self.jitter * self.random())


@dataclass(frozen=True, slots=True)
class Failure:
    """A failed provider request, classified: its one-line message and what to do about it."""

    message: str
    retryable: bool = False
    overflow: bool = False
    retry_after: float | None = None


def one_line(text: str, limit: int = 500) -> str:
    """``text`` with whitespace collapsed to single spaces, cut to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def is_overflow(message: str) -> bool:
    """Whether a provider's error message says the request does not fit the context window."""
    return bool(_OVERFLOW.search(message))


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """The wait a ``retry-after`` (or ``retry-after-ms``) header asks for, in seconds."""
    if not headers:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(float(value) * scale, 0.0)
        except ValueError:
            continue
    return None


def http_failure(
    status: int | None, message: str, *, kind: str | None = None, headers: Mapping[str, str] | None = None
) -> Failure:
    """Classify a provider error.

    ``status`` is the HTTP status of an error response; ``None`` (or 200) means an error reported
    inside a stream, classified by its ``kind`` (the provider's error type or code) instead.
    """
    in_stream = status is None or status == 200
    text = message or kind or f"HTTP {status}"
    if kind and kind not in text:
        text = f"{kind}: {text}"
    if not in_stream:
        text = f"HTTP {status}: {text}"
    overflow = is_overflow(message) or is_overflow(kind or "")
    if in_stream:
        retryable = bool(kind and _RETRYABLE_KIND.search(kind))
    else:
        assert status is not None
        retryable = status in RETRYABLE_STATUS or status >= 500
    return Failure(
        one_line(text),
        retryable=retryable and not overflow,
        overflow=overflow,
        retry_after=retry_after_seconds(headers),
    )


def connection_failure(error: BaseException) -> Failure:
    """A connection that failed, dropped or timed out: always worth another attempt."""
    detail = str(error) or type(error).__name__
    cause = error.__cause__
    if cause is not None and str(cause) and str(cause) not in detail:
        detail = f"{detail} ({cause})"
    return Failure(f"connection failed: {one_line(detail)}", retryable=True)
