"""The retry policy, and the classification of provider failures shared by every wire format.

Only what can succeed when sent again is retried: connection failures and timeouts (not a host name
that does not resolve), HTTP 408, 409, 425, 429, 5xx and 529, and the in-stream errors that mean the
same (overloaded, throttled, unavailable). Anything else, a rejected request or a malformed response
above all, is surfaced at once with the provider's message. Errors are classified by status and
error type first (a quota error is final even as a 429), by message text last.
"""

from __future__ import annotations

import json
import random
import re
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from turnmemory._text import one_line

__all__ = [
    "MalformedError",
    "RequestFailure",
    "RetryPolicy",
    "connection_failure",
    "error_fields",
    "http_failure",
    "is_overflow",
    "malformed_failure",
    "retry_after_seconds",
]

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 529})

_RETRYABLE_KIND = re.compile(
    r"overload|rate.?limit|throttl|unavailable|internal|server.?error|timeout|api_error|model.?stream.?error"
    r"|resource.?exhausted|deadline.?exceeded|aborted|too.?many.?requests",
    re.IGNORECASE,
)

_OVERFLOW_KINDS = frozenset(
    {
        "context_length_exceeded",
        "context_window_exceeded",
        "exceed_context_size_error",
        "request_too_large",
        "string_above_max_length",
    }
)
"""Provider error types and codes that mean the request does not fit, whatever the status."""

_FINAL_KINDS = frozenset({"insufficient_quota", "billing_error", "billing_hard_limit_reached"})
"""Error types and codes that no retry can fix, whatever the status (OpenAI sends quota as a 429)."""

_OVERFLOW = re.compile(
    r"context[ _-]?(?:length|window|limit|size)|prompt is too long|input is too long|too many input tokens"
    r"|maximum context|exceeds the maximum number of tokens|input token count.*exceeds"
    r"|reduce the length of the messages|maximum model length|longer than the model's context"
    r"|`inputs` tokens \+ `max_new_tokens`",
    re.IGNORECASE,
)
"""What context-length errors say, for the providers and servers whose error type does not."""

_REASONS = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    408: "Request Timeout",
    409: "Conflict",
    413: "Payload Too Large",
    422: "Unprocessable Entity",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
    529: "Overloaded",
}


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
class RequestFailure:
    """A failed provider request, classified: its one-line message and what to do about it."""

    message: str
    retryable: bool = False
    overflow: bool = False
    retry_after: float | None = None
    expired: bool = False
    """The turn's deadline passed."""


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
) -> RequestFailure:
    """Classify a provider error: by its status and error type first, by its message last.

    ``status`` is the HTTP status of an error response; ``None`` (or 200) means an error reported
    inside a stream, classified by its ``kind`` (the provider's error type or code) instead. A
    retryable status or kind (a 429, a throttle) is never a context overflow, whatever its message
    says ("Too many tokens, please wait" is Bedrock's throttle).
    """
    in_stream = status is None or status == 200
    message = message.strip()
    kind = kind.strip() if kind else None
    text = message or _default_message(None if in_stream else status)
    if kind and kind not in text:
        text = f"{kind}: {text}"
    if not in_stream:
        text = f"HTTP {status}: {text}"
    code = (kind or "").lower()
    if code in _OVERFLOW_KINDS:
        overflow, retryable = True, False
    elif code in _FINAL_KINDS:
        overflow, retryable = False, False
    else:
        if in_stream:
            retryable = bool(code and _RETRYABLE_KIND.search(code))
        else:
            assert status is not None
            retryable = status in RETRYABLE_STATUS or status >= 500
        overflow = not retryable and is_overflow(message)
    return RequestFailure(
        one_line(text), retryable=retryable, overflow=overflow, retry_after=retry_after_seconds(headers)
    )


def error_fields(body: object) -> tuple[str, str | None]:
    """The ``message`` and ``type`` of a JSON error body (``{"error": {...}}`` or the object itself).

    SDKs fall back to printing the whole body when its message is empty; this keeps it empty, so
    :func:`http_failure` says so in words.
    """
    inner = body.get("error", body) if isinstance(body, Mapping) else None
    if not isinstance(inner, Mapping):
        return "", None
    message, kind = inner.get("message"), inner.get("type")
    return (message if isinstance(message, str) else "", kind if isinstance(kind, str) and kind else None)


def _default_message(status: int | None) -> str:
    reason = _REASONS.get(status or 0)
    return (
        f"{reason} (the provider sent no error message)" if reason else "the provider sent no error message"
    )


def connection_failure(error: BaseException) -> RequestFailure:
    """A connection that failed, dropped or timed out: worth another attempt, unless the host's name
    does not resolve (that fails the same way every time: one clear line, no retries)."""
    chain = _chain(error)
    if any(isinstance(cause, socket.gaierror) for cause in chain):
        host = next((name for name in map(_host, chain) if name), None)
        where = f"host {host}" if host else "the provider's host name"
        return RequestFailure(f"cannot resolve {where} (check the base URL and the network)")
    timeouts = [type(cause).__name__ for cause in chain if _is_timeout(cause)]
    if timeouts:
        phase = (
            "connecting" if any("Connect" in name for name in timeouts) else "no data within the read timeout"
        )
        return RequestFailure(f"timed out waiting for the provider ({phase})", retryable=True)
    detail = str(error) or type(error).__name__
    cause = error.__cause__
    if cause is not None and str(cause) and str(cause) not in detail:
        detail = f"{detail} ({cause})"
    return RequestFailure(f"connection failed: {one_line(detail)}", retryable=True)


def malformed_failure(error: BaseException) -> RequestFailure:
    """A response the client could not read (bad JSON, events out of order, blocks never opened).

    Only the error's type (and a JSON error's position) is kept: SDK parse errors quote the raw
    response, which can hold tool arguments.
    """
    detail = f"{error.msg} at character {error.pos}" if isinstance(error, json.JSONDecodeError) else ""
    if isinstance(error, MalformedError):
        detail = str(error)
    name = type(error).__name__
    return RequestFailure(f"malformed response from the provider ({name}{': ' + detail if detail else ''})")


class MalformedError(ValueError):
    """The response stream said something impossible (a call without a name, a block never opened).

    Its message is ours, safe to show: it never quotes the response.
    """


def _chain(error: BaseException) -> list[BaseException]:
    """``error`` and its causes and contexts, outermost first."""
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _is_timeout(error: BaseException) -> bool:
    """A timeout of any HTTP stack: ``TimeoutError`` (sockets), or a class named so (httpx, botocore, SDKs)."""
    return isinstance(error, TimeoutError) or "Timeout" in type(error).__name__


def _host(error: BaseException) -> str | None:
    """The host an HTTP client error was about (httpx requests, botocore endpoints), if it says."""
    try:
        request = getattr(error, "request", None)
        host = getattr(getattr(request, "url", None), "host", None)
    except RuntimeError:
        host = None
    if isinstance(host, str) and host:
        return host
    kwargs = getattr(error, "kwargs", None)
    endpoint = kwargs.get("endpoint_url") if isinstance(kwargs, Mapping) else None
    return urlsplit(endpoint).hostname if isinstance(endpoint, str) else None
