"""The fake server's Bedrock Converse protocol, driven by the real ``boto3`` client."""

from __future__ import annotations

import functools
import json
from typing import Any

import boto3
import botocore.config
import botocore.exceptions
import pytest
import urllib3.exceptions
from hypothesis import given, settings
from hypothesis import strategies as st

from turnmemory.providers.check import check_request
from turnmemory.testing import Failure, FakeProviderServer, Reply, ToolCall, Usage

MODEL = "anthropic.claude-test-v1:0"
MESSAGES: list[Any] = [{"role": "user", "content": [{"text": "Fix the failing test"}]}]
# botocore counts ``max_attempts`` as retries (1 means two attempts); ``total_max_attempts`` counts requests.
NO_RETRIES = botocore.config.Config(retries={"total_max_attempts": 1}, connect_timeout=5, read_timeout=5)


@functools.cache
def client(server: FakeProviderServer) -> Any:
    return boto3.client(
        "bedrock-runtime",
        endpoint_url=server.base_url("bedrock"),
        region_name="us-east-1",
        aws_access_key_id="test-key",
        aws_secret_access_key="test-secret",
        config=NO_RETRIES,
    )


def stream(server: FakeProviderServer, events: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    seen = [] if events is None else events
    for event in client(server).converse_stream(modelId=MODEL, messages=MESSAGES)["stream"]:
        seen.append(event)
    return seen


def deltas(events: list[dict[str, Any]], kind: str) -> list[Any]:
    return [
        e["contentBlockDelta"]["delta"][kind]
        for e in events
        if kind in e.get("contentBlockDelta", {}).get("delta", {})
    ]


def test_text_streams_as_content_block_deltas(server: FakeProviderServer) -> None:
    server.push(Reply(text="Let me look."))
    events = stream(server)
    assert events[0] == {"messageStart": {"role": "assistant"}}
    assert deltas(events, "text") == ["Let ", "me ", "look."]
    assert {"messageStop": {"stopReason": "end_turn"}} in events
    assert "metadata" in events[-1]


def test_tool_use_opens_with_id_and_name_then_streams_input(server: FakeProviderServer) -> None:
    arguments = {"path": "src/app.py", "lines": [1, 2]}
    server.push(
        Reply(text="Reading.", tool_calls=[ToolCall("read_file", arguments), ToolCall("ls", {}, id="mine")])
    )
    events = stream(server)
    starts = [e["contentBlockStart"] for e in events if "contentBlockStart" in e]
    assert [s["start"]["toolUse"]["name"] for s in starts] == ["read_file", "ls"]
    assert starts[0]["start"]["toolUse"]["toolUseId"].startswith("tooluse_")
    assert starts[1]["start"]["toolUse"]["toolUseId"] == "mine"
    first = [
        e["contentBlockDelta"]["delta"]["toolUse"]["input"]
        for e in events
        if e.get("contentBlockDelta", {}).get("contentBlockIndex") == starts[0]["contentBlockIndex"]
    ]
    assert len(first) > 1 and json.loads("".join(first)) == arguments
    assert {"messageStop": {"stopReason": "tool_use"}} in events


def test_reasoning_streams_text_then_signature(server: FakeProviderServer) -> None:
    server.push(Reply(reasoning="Think it over.", text="Done."))
    reasoning = deltas(stream(server), "reasoningContent")
    assert "".join(r.get("text", "") for r in reasoning) == "Think it over."
    assert list(reasoning[-1]) == ["signature"] and reasoning[-1]["signature"]


def test_usage_reports_uncached_input_and_cache_reads(server: FakeProviderServer) -> None:
    server.push(Reply(text="ok", usage=Usage(input_tokens=100, output_tokens=7, cached_tokens=60)))
    usage = stream(server)[-1]["metadata"]["usage"]
    assert (usage["inputTokens"], usage["cacheReadInputTokens"], usage["outputTokens"]) == (40, 60, 7)


def test_converse_answers_the_whole_message(server: FakeProviderServer) -> None:
    server.push(Reply(text="Done.", reasoning="r", tool_calls=[ToolCall("ls", {"path": "."})]))
    answer = client(server).converse(modelId=MODEL, messages=MESSAGES)
    reasoning, text, tool = answer["output"]["message"]["content"]
    assert reasoning["reasoningContent"]["reasoningText"]["text"] == "r"
    assert reasoning["reasoningContent"]["reasoningText"]["signature"]
    assert text == {"text": "Done."}
    assert tool["toolUse"]["input"] == {"path": "."} and tool["toolUse"]["name"] == "ls"
    assert answer["stopReason"] == "tool_use" and answer["usage"]["totalTokens"] == 15
    assert server.requests[-1].stream is False


@pytest.mark.parametrize(
    "stop, wire",
    [
        ("max_tokens", "max_tokens"),
        ("content_filter", "content_filtered"),
        ("guardrail_intervened", "guardrail_intervened"),
    ],
)
def test_stop_reasons_map_to_bedrock_wording(server: FakeProviderServer, stop: str, wire: str) -> None:
    server.push(Reply(text="cut", stop=stop))
    assert {"messageStop": {"stopReason": wire}} in stream(server)


def test_empty_reply_has_no_content_blocks(server: FakeProviderServer) -> None:
    server.push(Reply(), Reply())
    assert [next(iter(e)) for e in stream(server)] == ["messageStart", "messageStop", "metadata"]
    assert client(server).converse(modelId=MODEL, messages=MESSAGES)["output"]["message"]["content"] == []


@pytest.mark.parametrize(
    "status, exception",
    [
        (400, "ValidationException"),
        (403, "AccessDeniedException"),
        (404, "ResourceNotFoundException"),
        (408, "ModelTimeoutException"),
        (429, "ThrottlingException"),
        (500, "InternalServerException"),
        (503, "ServiceUnavailableException"),
    ],
)
def test_http_failures_raise_the_modeled_exceptions(
    server: FakeProviderServer, status: int, exception: str
) -> None:
    server.push(Failure(status, "scripted failure"), Failure(status, "scripted failure"))
    bedrock = client(server)
    for call in (bedrock.converse, bedrock.converse_stream):
        with pytest.raises(getattr(bedrock.exceptions, exception)) as caught:
            call(modelId=MODEL, messages=MESSAGES)
        error = caught.value.response
        assert error["Error"] == {"Code": exception, "Message": "scripted failure"}
        assert error["ResponseMetadata"]["HTTPStatusCode"] == status


def test_context_overflow_is_input_is_too_long(server: FakeProviderServer) -> None:
    server.push(Failure(400, kind="context_overflow"))
    bedrock = client(server)
    with pytest.raises(bedrock.exceptions.ValidationException, match="Input is too long"):
        bedrock.converse(modelId=MODEL, messages=MESSAGES)


@pytest.mark.parametrize(
    "failure, code",
    [
        (Failure(429, "Too many tokens", mid_stream=True, partial_text="Half done"), "throttlingException"),
        (
            Failure(500, "Too many tokens", mid_stream=True, partial_text="Half done"),
            "internalServerException",
        ),
        (Failure(400, "Too many tokens", mid_stream=True, partial_text="Half done"), "validationException"),
        (
            Failure(500, "Too many tokens", "ServiceUnavailableException", True, None, "Half done"),
            "serviceUnavailableException",
        ),
    ],
)
def test_mid_stream_failure_is_an_exception_message_after_partial_text(
    server: FakeProviderServer, failure: Failure, code: str
) -> None:
    server.push(failure)
    events: list[dict[str, Any]] = []
    with pytest.raises(botocore.exceptions.EventStreamError) as caught:
        stream(server, events)
    assert deltas(events, "text") == ["Half ", "done"]
    assert caught.value.response["Error"] == {"Code": code, "Message": "Too many tokens"}


def test_break_after_drops_the_connection_after_partial_content(server: FakeProviderServer) -> None:
    server.push(Reply(text="one two three", break_after=2), Reply(text="x", break_after=0))
    events: list[dict[str, Any]] = []
    with pytest.raises((urllib3.exceptions.ProtocolError, botocore.exceptions.ResponseStreamingError)):
        stream(server, events)
    assert deltas(events, "text") == ["one ", "two "]
    with pytest.raises(botocore.exceptions.ConnectionClosedError):
        client(server).converse(modelId=MODEL, messages=MESSAGES)


def test_requests_are_recorded_with_the_decoded_model_id(server: FakeProviderServer) -> None:
    server.push(Reply(text="ok"))
    stream(server)
    (request,) = server.requests
    assert (request.provider, request.model, request.stream) == ("bedrock", MODEL, True)
    assert request.path == "/model/anthropic.claude-test-v1%3A0/converse-stream"
    assert request.headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=test-key/")
    assert request.body == {"messages": MESSAGES}


def test_exhausted_script_answers_500(server: FakeProviderServer) -> None:
    bedrock = client(server)
    with pytest.raises(bedrock.exceptions.InternalServerException, match="fake server: script exhausted"):
        stream(server)


def test_broken_history_is_rejected_with_the_checker_message(server: FakeProviderServer) -> None:
    server.push(Reply(text="unused"))
    broken: list[Any] = [
        {"role": "user", "content": [{"text": "go"}]},
        {"role": "user", "content": [{"text": "again"}]},
    ]
    bedrock = client(server)
    with pytest.raises(bedrock.exceptions.ValidationException) as caught:
        bedrock.converse(modelId=MODEL, messages=broken)
    problems = check_request("bedrock", server.requests[-1].body)
    assert problems
    assert caught.value.response["Error"]["Message"] == "; ".join(problems)
    assert server.remaining == 1
    assert bedrock.converse(modelId=MODEL, messages=MESSAGES)["output"]["message"]["content"] == [
        {"text": "unused"}
    ]


@settings(max_examples=20, deadline=None)
@given(
    text=st.text(max_size=60),
    arguments=st.dictionaries(st.text(max_size=8), st.integers() | st.text(max_size=20), max_size=4),
)
def test_the_stream_reassembles_exactly_the_scripted_content(
    module_server: FakeProviderServer, text: str, arguments: dict[str, Any]
) -> None:
    module_server.reset()
    module_server.push(Reply(text=text, tool_calls=[ToolCall("tool", arguments)]))
    events = stream(module_server)
    assert "".join(deltas(events, "text")) == text
    assert json.loads("".join(d["input"] for d in deltas(events, "toolUse"))) == arguments
