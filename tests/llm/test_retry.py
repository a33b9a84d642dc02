"""The retry policy's waits, and which failures are worth another attempt."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from turnmemory.llm import RetryPolicy
from turnmemory.llm._retry import connection_failure, http_failure, is_overflow, retry_after_seconds


@given(
    retry=st.integers(1, 30),
    base=st.floats(0, 10),
    cap=st.floats(0, 60),
    jitter=st.floats(0, 1),
    roll=st.floats(0, 1),
    after=st.none() | st.floats(-5, 1000),
)
def test_waits_are_bounded(
    retry: int, base: float, cap: float, jitter: float, roll: float, after: float | None
) -> None:
    policy = RetryPolicy(base_delay=base, max_delay=cap, jitter=jitter, random=lambda: roll)
    delay = policy.delay(retry, after)
    assert 0 <= delay <= cap
    if after is None:
        assert delay >= min(base * 2 ** (retry - 1), cap) * (1 - jitter) - 1e-9
    else:
        assert delay == min(max(after, 0), cap)


def test_policy_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="attempts"):
        RetryPolicy(attempts=0)
    with pytest.raises(ValueError, match="jitter"):
        RetryPolicy(jitter=2)


@pytest.mark.parametrize(
    ("status", "kind", "message", "retryable", "overflow"),
    [
        (400, "invalid_request_error", "messages.0: bad", False, False),
        (401, "authentication_error", "bad key", False, False),
        (404, None, "no such model", False, False),
        (408, None, "timeout", True, False),
        (409, None, "conflict", True, False),
        (429, "rate_limit_error", "slow down", True, False),
        (500, None, "oops", True, False),
        (503, None, "busy", True, False),
        (529, "overloaded_error", "Overloaded", True, False),
        (400, "invalid_request_error", "prompt is too long: 250000 tokens > 200000 maximum", False, True),
        (400, "context_length_exceeded", "too long", False, True),
        (400, "ValidationException", "Input is too long for requested model.", False, True),
        (None, "overloaded_error", "Overloaded", True, False),
        (None, "throttlingException", "slow", True, False),
        (None, "serviceUnavailableException", "down", True, False),
        (None, "modelStreamErrorException", "broken", True, False),
        (None, "internalServerException", "broken", True, False),
        (None, "server_error", "broken", True, False),
        (None, "validationException", "bad", False, False),
        (200, "invalid_request_error", "bad", False, False),
    ],
)
def test_classification(
    status: int | None, kind: str | None, message: str, retryable: bool, overflow: bool
) -> None:
    failure = http_failure(status, message, kind=kind)
    assert (failure.retryable, failure.overflow) == (retryable, overflow)
    assert message in failure.message and "\n" not in failure.message


def test_messages_are_one_readable_line() -> None:
    failure = http_failure(400, "line one\n   line two\t" + "x" * 1000, kind="invalid_request_error")
    assert failure.message.startswith("HTTP 400: invalid_request_error: line one line two x")
    assert len(failure.message) == 500 and failure.message.endswith("...")


def test_retry_after_headers() -> None:
    assert retry_after_seconds({"retry-after": "3"}) == 3.0
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "3"}) == 0.25
    assert retry_after_seconds({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) is None
    assert retry_after_seconds(None) is None
    assert http_failure(429, "slow", headers={"retry-after": "7"}).retry_after == 7.0


def test_connection_failures_are_retried_and_say_why() -> None:
    try:
        try:
            raise OSError("connection reset by peer")
        except OSError as cause:
            raise ConnectionError("Connection error.") from cause
    except ConnectionError as error:
        failure = connection_failure(error)
    assert (
        failure.retryable
        and failure.message == "connection failed: Connection error. (connection reset by peer)"
    )


@pytest.mark.parametrize(
    "message",
    [
        "This model's maximum context length is 128000 tokens.",
        "The input token count (250000) exceeds the maximum number of tokens allowed (200000).",
        "Your input exceeds the context window of this model.",
    ],
)
def test_overflow_wordings(message: str) -> None:
    assert is_overflow(message)
