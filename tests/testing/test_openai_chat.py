"""The fake server's Chat Completions protocol, driven by the real ``openai`` SDK."""

from __future__ import annotations

import functools
import json
from typing import Any

import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from turnmemory.providers.check import check_request
from turnmemory.testing import Failure, FakeProviderServer, Reply, ToolCall, Usage

MESSAGES: list[Any] = [{"role": "user", "content": "Fix the failing test"}]


@functools.cache
def client(server: FakeProviderServer) -> openai.OpenAI:
    return openai.OpenAI(
        api_key="test-key", base_url=server.base_url("openai_chat"), max_retries=0, timeout=5
    )


def helper_stream(server: FakeProviderServer, **options: Any) -> tuple[list[str], Any]:
    texts: list[str] = []
    with client(server).chat.completions.stream(model="gpt-test", messages=MESSAGES, **options) as events:
        for event in events:
            if event.type == "content.delta":
                texts.append(event.delta)
        return texts, events.get_final_completion()


def raw_chunks(server: FakeProviderServer, **options: Any) -> list[Any]:
    return list(
        client(server).chat.completions.create(model="gpt-test", messages=MESSAGES, stream=True, **options)
    )


def test_text_streams_as_content_deltas(server: FakeProviderServer) -> None:
    server.push(Reply(text="Let me look."))
    texts, completion = helper_stream(server)
    assert texts == ["", "Let ", "me ", "look."]
    choice = completion.choices[0]
    assert (choice.message.content, choice.finish_reason) == ("Let me look.", "stop")
    assert completion.model == "gpt-test"


def test_tool_calls_stream_id_and_name_first_then_argument_fragments(server: FakeProviderServer) -> None:
    arguments = {"path": "src/app.py", "pattern": "def main"}
    server.push(
        Reply(text="Searching.", tool_calls=[ToolCall("grep", arguments), ToolCall("ls", {}, id="call_mine")])
    )
    chunks = raw_chunks(server)
    deltas = [
        chunk.choices[0].delta.tool_calls
        for chunk in chunks
        if chunk.choices and chunk.choices[0].delta.tool_calls
    ]
    first = deltas[0][0]
    assert (first.index, first.type, first.function.name, first.function.arguments) == (
        0,
        "function",
        "grep",
        "",
    )
    assert first.id.startswith("call_")
    fragments = [d[0].function.arguments for d in deltas if d[0].index == 0 and d[0].id is None]
    assert len(fragments) > 1 and json.loads("".join(fragments)) == arguments
    assert all(d[0].function.name is None for d in deltas if d[0].id is None)
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_the_stream_helper_parses_tool_arguments(server: FakeProviderServer) -> None:
    arguments = {"path": "a.py", "lines": [1, 2]}
    server.push(Reply(tool_calls=[ToolCall("read_file", arguments), ToolCall("ls", {}, id="call_mine")]))
    _, completion = helper_stream(server)
    first, second = completion.choices[0].message.tool_calls
    assert (first.function.name, json.loads(first.function.arguments)) == ("read_file", arguments)
    assert (second.id, second.function.arguments) == ("call_mine", "{}")
    assert completion.choices[0].message.content is None
    assert completion.choices[0].finish_reason == "tool_calls"


def test_reasoning_streams_as_reasoning_content_before_the_text(server: FakeProviderServer) -> None:
    server.push(Reply(reasoning="Think first.", text="Answer."))
    chunks = raw_chunks(server)
    extras = [chunk.choices[0].delta.model_extra or {} for chunk in chunks if chunk.choices]
    reasoning = "".join(extra.get("reasoning_content", "") for extra in extras)
    assert reasoning == "Think first."
    first_text = next(i for i, c in enumerate(chunks) if c.choices and c.choices[0].delta.content)
    last_reasoning = max(i for i, extra in enumerate(extras) if extra.get("reasoning_content"))
    assert last_reasoning < first_text


def test_usage_chunk_only_with_include_usage(server: FakeProviderServer) -> None:
    server.push(
        Reply(text="ok", usage=Usage(input_tokens=50, output_tokens=4, cached_tokens=30)), Reply(text="ok")
    )
    chunks = raw_chunks(server, stream_options={"include_usage": True})
    assert chunks[-1].choices == []
    usage = chunks[-1].usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (50, 4, 54)
    assert usage.prompt_tokens_details.cached_tokens == 30
    assert all(chunk.usage is None for chunk in raw_chunks(server))


def test_non_stream_request_gets_the_whole_completion(server: FakeProviderServer) -> None:
    server.push(Reply(text="Done.", reasoning="r", tool_calls=[ToolCall("ls", {"path": "."})]))
    completion = client(server).chat.completions.create(model="gpt-test", messages=MESSAGES)
    message = completion.choices[0].message
    assert message.content == "Done."
    assert (message.model_extra or {})["reasoning_content"] == "r"
    assert message.tool_calls is not None and json.loads(message.tool_calls[0].function.arguments) == {
        "path": "."
    }
    assert completion.usage is not None and completion.usage.total_tokens == 15


def test_max_tokens_stop_is_finish_reason_length(server: FakeProviderServer) -> None:
    server.push(Reply(text="cut", stop="max_tokens"))
    with pytest.raises(openai.LengthFinishReasonError):
        helper_stream(server)


def test_empty_reply_streams_no_content(server: FakeProviderServer) -> None:
    server.push(Reply(), Reply())
    chunks = raw_chunks(server)
    assert [c.choices[0].delta.content for c in chunks] == ["", None]
    assert chunks[-1].choices[0].finish_reason == "stop"
    completion = client(server).chat.completions.create(model="gpt-test", messages=MESSAGES)
    assert completion.choices[0].message.content == "" and completion.choices[0].message.tool_calls is None


@pytest.mark.parametrize(
    "status, error_class, error_type",
    [
        (400, openai.BadRequestError, "invalid_request_error"),
        (401, openai.AuthenticationError, "invalid_request_error"),
        (404, openai.NotFoundError, "invalid_request_error"),
        (429, openai.RateLimitError, "requests"),
        (500, openai.InternalServerError, "server_error"),
        (503, openai.InternalServerError, "server_error"),
    ],
)
def test_http_failures_raise_the_sdk_error_for_the_status(
    server: FakeProviderServer, status: int, error_class: type[openai.APIStatusError], error_type: str
) -> None:
    server.push(Failure(status, "scripted failure"))
    with pytest.raises(error_class) as caught:
        raw_chunks(server)
    assert caught.value.status_code == status
    assert caught.value.message == f"Error code: {status} - scripted failure"
    assert caught.value.type == error_type


def test_context_overflow_is_context_length_exceeded(server: FakeProviderServer) -> None:
    server.push(Failure(400, kind="context_overflow"))
    with pytest.raises(openai.BadRequestError) as caught:
        raw_chunks(server)
    assert caught.value.code == "context_length_exceeded"
    assert "maximum context length" in caught.value.message


def test_mid_stream_failure_is_an_error_chunk_after_partial_text(server: FakeProviderServer) -> None:
    server.push(Failure(500, "The server had an error", mid_stream=True, partial_text="Partial answer"))
    texts: list[str | None] = []
    with pytest.raises(openai.APIError) as caught:
        for chunk in client(server).chat.completions.create(model="m", messages=MESSAGES, stream=True):
            texts.append(chunk.choices[0].delta.content)
    assert texts == ["", "Partial ", "answer"]
    assert caught.value.message == "The server had an error"
    assert caught.value.body == {
        "message": "The server had an error",
        "type": "server_error",
        "param": None,
        "code": None,
    }


def test_break_after_is_a_connection_error_after_partial_content(server: FakeProviderServer) -> None:
    server.push(Reply(text="one two three", break_after=2), Reply(text="x", break_after=0))
    texts: list[str | None] = []
    with pytest.raises(openai.APIConnectionError):
        for chunk in client(server).chat.completions.create(model="m", messages=MESSAGES, stream=True):
            texts.append(chunk.choices[0].delta.content)
    assert texts == ["", "one ", "two "]
    with pytest.raises(openai.APIConnectionError):
        client(server).chat.completions.create(model="m", messages=MESSAGES)


def test_requests_are_recorded(server: FakeProviderServer) -> None:
    server.push(Reply(text="ok"))
    raw_chunks(server, stream_options={"include_usage": True})
    (request,) = server.requests
    assert (request.provider, request.path, request.stream, request.model) == (
        "openai_chat",
        "/v1/chat/completions",
        True,
        "gpt-test",
    )
    assert request.headers["authorization"] == "Bearer test-key"
    assert request.body["messages"] == MESSAGES and request.body["stream_options"] == {"include_usage": True}


def test_exhausted_script_answers_500(server: FakeProviderServer) -> None:
    with pytest.raises(openai.InternalServerError) as caught:
        raw_chunks(server)
    assert caught.value.message == "Error code: 500 - fake server: script exhausted"


def test_broken_history_is_rejected_with_the_checker_message(server: FakeProviderServer) -> None:
    server.push(Reply(text="unused"))
    broken: list[Any] = [
        {"role": "user", "content": "go"},
        {"role": "tool", "tool_call_id": "call_1", "content": "{}"},
    ]
    with pytest.raises(openai.BadRequestError) as caught:
        client(server).chat.completions.create(model="m", messages=broken)
    problems = check_request("openai_chat", server.requests[-1].body)
    assert problems
    assert caught.value.message == "Error code: 400 - " + "; ".join(problems)
    assert server.remaining == 1
    assert raw_chunks(server)[1].choices[0].delta.content == "unused"


@settings(max_examples=25, deadline=None)
@given(
    text=st.text(max_size=60),
    arguments=st.dictionaries(st.text(max_size=8), st.text(max_size=30), max_size=4),
)
def test_the_sdk_reassembles_exactly_the_scripted_content(
    module_server: FakeProviderServer, text: str, arguments: dict[str, str]
) -> None:
    module_server.reset()
    module_server.push(Reply(text=text, tool_calls=[ToolCall("tool", arguments)]))
    _, completion = helper_stream(module_server)
    message = completion.choices[0].message
    assert (message.content or "") == text
    assert [json.loads(call.function.arguments) for call in message.tool_calls] == [arguments]
