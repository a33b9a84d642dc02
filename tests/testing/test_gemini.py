"""The fake server's Gemini protocol, driven by the real ``google-genai`` SDK."""

from __future__ import annotations

import functools
import json
import urllib.request
from typing import Any

import httpx2
import pytest
from google import genai
from google.genai import errors, types
from hypothesis import given, settings
from hypothesis import strategies as st

from turnmemory.providers.check import check_request
from turnmemory.testing import Failure, FakeProviderServer, Reply, ToolCall, Usage

MODEL = "gemini-test"


@functools.cache
def client(server: FakeProviderServer) -> genai.Client:
    """One client per server, kept alive: a collected ``genai.Client`` closes its connection pool."""
    options = types.HttpOptions(
        base_url=server.base_url("gemini"), timeout=5000, retry_options=types.HttpRetryOptions(attempts=1)
    )
    return genai.Client(api_key="test-key", http_options=options)


def stream(
    server: FakeProviderServer, contents: Any = "Fix the failing test"
) -> list[types.GenerateContentResponse]:
    return list(client(server).models.generate_content_stream(model=MODEL, contents=contents))


def parts_of(chunks: list[types.GenerateContentResponse]) -> list[types.Part]:
    return [part for chunk in chunks for part in (chunk.candidates[0].content.parts or [])]  # type: ignore[index, union-attr]


def test_text_streams_as_text_parts(server: FakeProviderServer) -> None:
    server.push(Reply(text="Let me look."))
    chunks = stream(server)
    assert [chunk.text for chunk in chunks[:-1]] == ["Let ", "me ", "look."]
    assert chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP  # type: ignore[index]
    assert chunks[-1].model_version == MODEL


def test_tool_calls_are_function_call_parts_and_the_first_is_signed(server: FakeProviderServer) -> None:
    arguments = {"path": "src/app.py", "lines": [1, 2]}
    server.push(
        Reply(text="Reading.", tool_calls=[ToolCall("read_file", arguments), ToolCall("ls", {}, id="mine")])
    )
    parts = parts_of(stream(server))
    first, second = (part for part in parts if part.function_call is not None)
    assert (first.function_call.name, first.function_call.args) == ("read_file", arguments)  # type: ignore[union-attr]
    assert first.function_call.id  # type: ignore[union-attr]
    assert isinstance(first.thought_signature, bytes) and first.thought_signature
    assert (second.function_call.id, second.function_call.args, second.thought_signature) == (
        "mine",
        {},
        None,
    )  # type: ignore[union-attr]


def test_reasoning_is_thought_parts_with_a_signature(server: FakeProviderServer) -> None:
    server.push(Reply(reasoning="Think it over.", text="Done."))
    parts = parts_of(stream(server))
    thoughts = [part for part in parts if part.thought]
    assert "".join(part.text or "" for part in thoughts) == "Think it over."
    assert thoughts[-1].thought_signature and not any(part.thought_signature for part in thoughts[:-1])
    assert "".join(part.text or "" for part in parts if not part.thought) == "Done."


def test_non_stream_answer_and_usage(server: FakeProviderServer) -> None:
    server.push(
        Reply(text="Done.", reasoning="r", tool_calls=[ToolCall("ls", {"path": "."})], usage=Usage(30, 4, 20))
    )
    response = client(server).models.generate_content(model=MODEL, contents="hi")
    thought, text, _ = response.candidates[0].content.parts  # type: ignore[index, union-attr, misc]
    assert (thought.thought, thought.text, text.text) == (True, "r", "Done.")
    assert response.function_calls is not None and response.function_calls[0].args == {"path": "."}
    usage = response.usage_metadata
    assert usage is not None
    assert (usage.prompt_token_count, usage.candidates_token_count, usage.total_token_count) == (30, 4, 34)
    assert usage.cached_content_token_count == 20
    assert server.requests[-1].stream is False


@pytest.mark.parametrize(
    "stop, reason", [("max_tokens", "MAX_TOKENS"), ("content_filter", "SAFETY"), ("RECITATION", "RECITATION")]
)
def test_stop_reasons_map_to_finish_reasons(server: FakeProviderServer, stop: str, reason: str) -> None:
    server.push(Reply(text="cut", stop=stop))
    assert stream(server)[-1].candidates[0].finish_reason == reason  # type: ignore[index]


def test_empty_reply_is_a_candidate_without_parts(server: FakeProviderServer) -> None:
    server.push(Reply(), Reply())
    (chunk,) = stream(server)
    assert chunk.candidates[0].content.parts is None  # type: ignore[index, union-attr]
    assert chunk.text is None
    response = client(server).models.generate_content(model=MODEL, contents="hi")
    assert response.candidates[0].content.parts is None  # type: ignore[index, union-attr]


@pytest.mark.parametrize(
    "status, error_class, grpc_status",
    [
        (400, errors.ClientError, "INVALID_ARGUMENT"),
        (403, errors.ClientError, "PERMISSION_DENIED"),
        (404, errors.ClientError, "NOT_FOUND"),
        (429, errors.ClientError, "RESOURCE_EXHAUSTED"),
        (500, errors.ServerError, "INTERNAL"),
        (503, errors.ServerError, "UNAVAILABLE"),
    ],
)
def test_http_failures_raise_the_sdk_error_for_the_status(
    server: FakeProviderServer, status: int, error_class: type[errors.APIError], grpc_status: str
) -> None:
    server.push(Failure(status, "scripted failure"))
    with pytest.raises(error_class) as caught:
        stream(server)
    assert (caught.value.code, caught.value.status, caught.value.message) == (
        status,
        grpc_status,
        "scripted failure",
    )


def test_context_overflow_uses_the_token_count_wording(server: FakeProviderServer) -> None:
    server.push(Failure(400, kind="context_overflow"))
    with pytest.raises(errors.ClientError) as caught:
        client(server).models.generate_content(model=MODEL, contents="hi")
    assert caught.value.status == "INVALID_ARGUMENT"
    assert "exceeds the maximum number of tokens" in (caught.value.message or "")


def test_mid_stream_failure_is_an_error_chunk_after_partial_text(server: FakeProviderServer) -> None:
    server.push(Failure(503, "The model is overloaded", mid_stream=True, partial_text="Half done"))
    texts: list[str | None] = []
    with pytest.raises(errors.ServerError) as caught:
        for chunk in client(server).models.generate_content_stream(model=MODEL, contents="hi"):
            texts.append(chunk.text)
    assert texts == ["Half ", "done"]
    assert (caught.value.code, caught.value.status, caught.value.message) == (
        503,
        "UNAVAILABLE",
        "The model is overloaded",
    )


def test_break_after_drops_the_connection_after_partial_content(server: FakeProviderServer) -> None:
    server.push(Reply(text="one two three", break_after=2))
    texts: list[str | None] = []
    with pytest.raises(httpx2.RemoteProtocolError):
        for chunk in client(server).models.generate_content_stream(model=MODEL, contents="hi"):
            texts.append(chunk.text)
    assert texts == ["one ", "two "]


def test_requests_are_recorded_with_the_model_from_the_path(server: FakeProviderServer) -> None:
    server.push(Reply(text="ok"))
    stream(server)
    (request,) = server.requests
    assert request.provider == "gemini"
    assert request.path == f"/v1/models/{MODEL}:streamGenerateContent?alt=sse"
    assert (request.model, request.stream) == (MODEL, True)
    assert request.headers["x-goog-api-key"] == "test-key"
    assert request.body["contents"] == [{"role": "user", "parts": [{"text": "Fix the failing test"}]}]


@pytest.mark.parametrize("prefix", ["/v1beta", ""])
def test_v1beta_and_unversioned_routes_answer_too(server: FakeProviderServer, prefix: str) -> None:
    server.push(Reply(text="ok"))
    body = json.dumps({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}).encode()
    url = f"{server.url}{prefix}/models/{MODEL}:generateContent?key=k"
    with urllib.request.urlopen(urllib.request.Request(url, data=body, method="POST"), timeout=5) as answer:
        payload = json.loads(answer.read())
    assert payload["candidates"][0]["content"]["parts"] == [{"text": "ok"}]
    assert server.requests[-1].path.startswith(f"{prefix}/models/")


def test_exhausted_script_answers_500(server: FakeProviderServer) -> None:
    with pytest.raises(errors.ServerError) as caught:
        stream(server)
    assert (caught.value.code, caught.value.message) == (500, "fake server: script exhausted")


def test_broken_history_is_rejected_with_the_checker_message(server: FakeProviderServer) -> None:
    server.push(Reply(text="unused"))
    broken = [
        types.Content(role="user", parts=[types.Part(text="go")]),
        types.Content(
            role="model", parts=[types.Part(function_call=types.FunctionCall(name="bash", args={}))]
        ),
        types.Content(role="user", parts=[types.Part(text="no function response")]),
    ]
    with pytest.raises(errors.ClientError) as caught:
        client(server).models.generate_content(model=MODEL, contents=broken)
    problems = check_request("gemini", server.requests[-1].body)
    assert problems
    assert (caught.value.code, caught.value.message) == (400, "; ".join(problems))
    assert server.remaining == 1
    assert client(server).models.generate_content(model=MODEL, contents="hi").text == "unused"


@settings(max_examples=25, deadline=None)
@given(
    text=st.text(max_size=60),
    arguments=st.dictionaries(st.text(max_size=8), st.integers() | st.text(max_size=20), max_size=4),
)
def test_the_sdk_reassembles_exactly_the_scripted_content(
    module_server: FakeProviderServer, text: str, arguments: dict[str, Any]
) -> None:
    module_server.reset()
    module_server.push(Reply(text=text, tool_calls=[ToolCall("tool", arguments)]))
    parts = parts_of(stream(module_server))
    assert "".join(part.text or "" for part in parts) == text
    assert [part.function_call.args for part in parts if part.function_call] == [arguments]  # type: ignore[union-attr]
