"""Provider errors through each official SDK against the fake server: what is retried, what is a context
overflow, what ends the turn at once, and that every message is one clear line.

The wordings are the providers' and servers' own (Anthropic, OpenAI and OpenAI-compatible servers: vLLM,
llama.cpp, TGI; Gemini; Bedrock). Classification goes by status and error type first, so a throttle
that mentions tokens is retried, and a quota error sent as a 429 is not.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any, Literal

import pytest
from tests.llm.conftest import MODELS

from turnmemory.llm import Client, Event, RetryPolicy, open_client
from turnmemory.llm._retry import connection_failure, http_failure
from turnmemory.testing import Failure, FakeProviderServer, Reply

Outcome = Literal["retry", "overflow", "final"]
MakeClient = Callable[..., Client]

CASES: list[tuple[str, int, str | None, str, bool, Outcome]] = [
    # provider, status, error type/code/exception, message, in the stream, expected outcome
    (
        "anthropic",
        429,
        "rate_limit_error",
        "Number of request tokens has exceeded your per-minute rate limit "
        "(https://docs.anthropic.com/en/api/rate-limits); see the response headers for current usage. "
        "Please reduce the prompt length or the maximum tokens requested, or try again later.",
        False,
        "retry",
    ),
    ("anthropic", 529, "overloaded_error", "Overloaded", False, "retry"),
    ("anthropic", 529, "overloaded_error", "Overloaded", True, "retry"),
    ("anthropic", 500, "api_error", "Internal server error", False, "retry"),
    ("anthropic", 400, None, "prompt is too long: 208310 tokens > 200000 maximum", False, "overflow"),
    (
        "anthropic",
        400,
        None,
        "input length and `max_tokens` exceed context limit: 197202 + 21333 > 200000, "
        "decrease input length or `max_tokens` and try again",
        False,
        "overflow",
    ),
    (
        "anthropic",
        413,
        "request_too_large",
        "Request exceeds the maximum allowed number of bytes.",
        False,
        "overflow",
    ),
    (
        "anthropic",
        400,
        None,
        "max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens for claude-sonnet-4-5",
        False,
        "final",
    ),
    ("anthropic", 401, "authentication_error", "invalid x-api-key", False, "final"),
    (
        "anthropic",
        402,
        "billing_error",
        "Your credit balance is too low to access the Anthropic API.",
        False,
        "final",
    ),
    (
        "openai_chat",
        429,
        None,
        "Rate limit reached for gpt-4o in organization org-abc on tokens per min (TPM): Limit 30000, "
        "Used 25000, Requested 8000. Please try again in 6s.",
        False,
        "retry",
    ),
    (
        "openai_chat",
        429,
        "insufficient_quota",
        "You exceeded your current quota, please check your plan and billing details.",
        False,
        "final",
    ),
    ("openai_chat", 400, "context_overflow", "", False, "overflow"),
    (
        "openai_chat",
        400,
        None,
        "This model's maximum context length is 32768 tokens. However, you requested 33000 tokens "
        "(31000 in the messages, 2000 in the completion). Please reduce the length of the messages or completion.",
        False,
        "overflow",
    ),
    (
        "openai_chat",
        400,
        "exceed_context_size_error",
        "the request exceeds the available context size, try increasing it",
        False,
        "overflow",
    ),
    (
        "openai_chat",
        422,
        None,
        "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. "
        "Given: 4000 `inputs` tokens and 200 `max_new_tokens`",
        False,
        "overflow",
    ),
    (
        "openai_chat",
        500,
        None,
        "The server had an error while processing your request. Sorry about that!",
        False,
        "retry",
    ),
    ("openai_chat", 503, None, "The engine is currently overloaded, please try again later", False, "retry"),
    ("openai_chat", 500, None, "upstream failed", True, "retry"),
    (
        "openai_chat",
        404,
        None,
        "The model `gpt-5-nano` does not exist or you do not have access to it.",
        False,
        "final",
    ),
    (
        "openai_responses",
        429,
        None,
        "Rate limit reached for gpt-5 on requests per min (RPM).",
        False,
        "retry",
    ),
    ("openai_responses", 429, "rate_limit_exceeded", "Rate limit reached for gpt-5.", True, "retry"),
    ("openai_responses", 500, None, "An error occurred while processing your request.", True, "retry"),
    ("openai_responses", 400, "context_overflow", "", False, "overflow"),
    ("openai_responses", 400, "context_overflow", "", True, "overflow"),
    (
        "openai_responses",
        429,
        "insufficient_quota",
        "You exceeded your current quota, please check your plan and billing details.",
        False,
        "final",
    ),
    ("openai_responses", 400, None, "Invalid 'input[2].call_id': empty string.", False, "final"),
    (
        "gemini",
        429,
        None,
        "You exceeded your current quota, please check your plan and billing details. For more information "
        "on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.",
        False,
        "retry",
    ),
    ("gemini", 503, None, "The model is overloaded. Please try again later.", False, "retry"),
    ("gemini", 500, None, "An internal error has occurred. Please retry or report it.", False, "retry"),
    ("gemini", 504, None, "Deadline expired before operation could complete.", False, "retry"),
    (
        "gemini",
        400,
        None,
        "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
        False,
        "overflow",
    ),
    ("gemini", 400, None, "API key not valid. Please pass a valid API key.", False, "final"),
    ("gemini", 403, None, "Permission denied on resource project demo.", False, "final"),
    (
        "bedrock",
        429,
        "ThrottlingException",
        "Too many tokens, please wait before trying again.",
        False,
        "retry",
    ),
    (
        "bedrock",
        429,
        "ThrottlingException",
        "Too many tokens, please wait before trying again.",
        True,
        "retry",
    ),
    (
        "bedrock",
        429,
        "ThrottlingException",
        "Too many requests, please wait before trying again. You have sent too many requests.  "
        "Wait before trying again.",
        False,
        "retry",
    ),
    ("bedrock", 400, "ValidationException", "Input is too long for requested model.", False, "overflow"),
    ("bedrock", 400, "validationException", "Input is too long for requested model.", True, "overflow"),
    (
        "bedrock",
        400,
        "ValidationException",
        "The model returned the following errors: prompt is too long: 210000 tokens > 200000 maximum",
        False,
        "overflow",
    ),
    (
        "bedrock",
        400,
        "ValidationException",
        "The model returned the following errors: input length and `max_tokens` exceed context limit: "
        "197202 + 21333 > 200000, decrease input length or `max_tokens` and try again",
        False,
        "overflow",
    ),
    (
        "bedrock",
        400,
        "ValidationException",
        "A conversation must start with a user message. Try again with a conversation that starts with a "
        "user message.",
        False,
        "final",
    ),
    (
        "bedrock",
        503,
        "ServiceUnavailableException",
        "Bedrock is unable to process your request.",
        False,
        "retry",
    ),
    ("bedrock", 424, "modelStreamErrorException", "The model stream failed.", True, "retry"),
    (
        "bedrock",
        500,
        "InternalServerException",
        "The system encountered an unexpected error during processing. Try your request again.",
        False,
        "retry",
    ),
    (
        "bedrock",
        408,
        "ModelTimeoutException",
        "Model has timed out in processing the request.",
        False,
        "retry",
    ),
    (
        "bedrock",
        403,
        "AccessDeniedException",
        "You don't have access to the model with the specified model ID.",
        False,
        "final",
    ),
]


def _case_id(case: tuple[Any, ...]) -> str:
    provider, status, kind, _, mid_stream, outcome = case
    return f"{provider}-{status}-{kind or 'default'}{'-stream' if mid_stream else ''}-{outcome}"


def _terminal(events: list[Event]) -> Event:
    ends = [event for event in events if event.terminal]
    assert len(ends) == 1 and events[-1] is ends[0], [event.kind for event in events]
    return ends[0]


@pytest.mark.parametrize(
    ("provider", "status", "kind", "message", "mid_stream", "outcome"), CASES, ids=map(_case_id, CASES)
)
def test_real_error_bodies_are_classified_by_status_and_type_first(
    provider: str,
    status: int,
    kind: str | None,
    message: str,
    mid_stream: bool,
    outcome: Outcome,
    server: FakeProviderServer,
    make_client: MakeClient,
) -> None:
    client = make_client(provider, attempts=2)
    server.push(Failure(status, message, kind=kind, mid_stream=mid_stream))
    if outcome == "retry":
        server.push(Reply(text="Recovered."))
    events = list(client.run_turn([], "Hello"))
    end = _terminal(events)
    retries = [event for event in events if event.kind == "retry"]
    if outcome == "retry":
        assert len(retries) == 1 and end.kind == "done"
        assert retries[0].error is not None and message[:40] in retries[0].error
    else:
        assert not retries and (end.kind, end.reason) == (
            "error",
            "context_overflow" if outcome == "overflow" else "api_error",
        )
        assert end.error is not None and "\n" not in end.error
        assert message[:40] in end.error
    assert len(server.requests) == (2 if outcome == "retry" else 1)


PROVIDERS = ["anthropic", "openai_chat", "openai_responses", "gemini", "bedrock"]


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(("status", "mid_stream"), [(400, False), (503, False), (400, True), (529, True)])
def test_an_empty_error_message_gets_a_clear_default(
    provider: str, status: int, mid_stream: bool, server: FakeProviderServer, make_client: MakeClient
) -> None:
    client = make_client(provider, attempts=1)
    server.push(Failure(status, "", mid_stream=mid_stream))
    end = _terminal(list(client.run_turn([], "Hello")))
    assert end.kind == "error" and end.error is not None
    assert "no error message" in end.error
    assert "None" not in end.error and "{" not in end.error and "\n" not in end.error


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_response_failed_event_without_error_says_so(
    provider: str, server: FakeProviderServer, make_client: MakeClient
) -> None:
    client = make_client(provider, attempts=1)
    server.push(Failure(500, "   ", mid_stream=True))
    end = _terminal(list(client.run_turn([], "Hello")))
    assert end.error is not None and "no error message" in end.error and "None" not in end.error


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_unresolvable_host_is_one_line_and_never_retried(
    provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Name resolution fails in this process (no resolver is asked): the real SDK stack sees a gaierror."""
    lookups: list[str] = []

    def no_such_host(host: Any, *args: Any, **kwargs: Any) -> Any:
        lookups.append(str(host))
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test-key-id")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test-secret")
    monkeypatch.setattr(socket, "getaddrinfo", no_such_host)
    sleeps: list[float] = []
    client = open_client(
        provider,
        model=MODELS[provider],
        base_url="http://nonexistent.invalid:8080",
        api_key=None if provider == "bedrock" else "test-key",
        region="us-east-1",
        retry=RetryPolicy(attempts=5, sleep=sleeps.append),
    )
    events = list(client.run_turn([], "Hello"))
    end = _terminal(events)
    assert not [event for event in events if event.kind == "retry"] and not sleeps
    assert end.error == "cannot resolve host nonexistent.invalid (check the base URL and the network)"
    assert lookups == ["nonexistent.invalid"]  # one attempt: neither we nor the SDK retried


def test_name_resolution_failures_are_classified_through_any_chain() -> None:
    httpx2 = pytest.importorskip("httpx2")
    botocore_exceptions = pytest.importorskip("botocore.exceptions")

    def chained(outer: BaseException, inner: BaseException) -> BaseException:
        try:
            try:
                raise inner
            except BaseException as cause:
                raise outer from cause
        except BaseException as error:
            return error

    request = httpx2.Request("POST", "https://api.example.test/v1/messages")
    gai = socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
    httpx_error = chained(httpx2.ConnectError("[Errno -3] Temporary failure", request=request), gai)
    wrapped = chained(ConnectionError("Connection error."), httpx_error)
    boto = chained(
        botocore_exceptions.EndpointConnectionError(endpoint_url="https://bedrock.example.test/model/x"), gai
    )
    for error, host in (
        (httpx_error, "api.example.test"),
        (wrapped, "api.example.test"),
        (boto, "bedrock.example.test"),
    ):
        failure = connection_failure(error)
        assert not failure.retryable
        assert failure.message == f"cannot resolve host {host} (check the base URL and the network)"
    assert connection_failure(chained(ConnectionError("reset"), OSError("peer reset"))).retryable
    assert connection_failure(gai).message.startswith("cannot resolve the provider's host name")


@pytest.mark.parametrize(
    ("status", "kind", "message", "retryable", "overflow"),
    [
        (429, "ThrottlingException", "Too many tokens, please wait before trying again.", True, False),
        (429, None, "too many input tokens", True, False),
        (500, None, "context length exceeded", True, False),
        (400, "ValidationException", "Too many input tokens: 250000 > 200000", False, True),
        (429, "insufficient_quota", "quota", False, False),
        (400, "context_length_exceeded", "", False, True),
        (None, "context_length_exceeded", "", False, True),
        (None, "throttlingException", "Too many tokens, please wait before trying again.", True, False),
        (None, "validationException", "Input is too long for requested model.", False, True),
        (None, "RESOURCE_EXHAUSTED", "quota", True, False),
    ],
)
def test_status_and_type_come_before_the_message(
    status: int | None, kind: str | None, message: str, retryable: bool, overflow: bool
) -> None:
    failure = http_failure(status, message, kind=kind)
    assert (failure.retryable, failure.overflow) == (retryable, overflow)
