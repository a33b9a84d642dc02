"""The fake server's Anthropic Messages protocol, driven by the real ``anthropic`` SDK."""

from __future__ import annotations

import functools
import json
import urllib.error
import urllib.request
from typing import Any

import anthropic
import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from turnmemory.providers.check import check_request
from turnmemory.testing import Failure, FakeProviderServer, Reply, ToolCall, Usage

MESSAGES: list[Any] = [{"role": "user", "content": "Fix the failing test"}]


@functools.cache
def client(server: FakeProviderServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        api_key="test-key", base_url=server.base_url("anthropic"), max_retries=0, timeout=5
    )


def stream(server: FakeProviderServer) -> tuple[list[str], anthropic.types.Message]:
    texts: list[str] = []
    with client(server).messages.stream(model="claude-test", max_tokens=100, messages=MESSAGES) as events:
        for event in events:
            if event.type == "text":
                texts.append(event.text)
        return texts, events.get_final_message()


def create(server: FakeProviderServer) -> anthropic.types.Message:
    return client(server).messages.create(model="claude-test", max_tokens=100, messages=MESSAGES)


def test_text_streams_word_by_word_into_one_text_block(server: FakeProviderServer) -> None:
    server.push(Reply(text="Let me look at the handler."))
    texts, message = stream(server)
    assert texts == ["Let ", "me ", "look ", "at ", "the ", "handler."]
    assert [block.type for block in message.content] == ["text"]
    assert message.content[0].text == "Let me look at the handler."  # type: ignore[union-attr]
    assert message.stop_reason == "end_turn"
    assert message.model == "claude-test"
    assert message.id.startswith("msg_")


def test_tool_calls_stream_as_tool_use_blocks_with_parsed_input(server: FakeProviderServer) -> None:
    arguments = {"path": "src/app.py", "lines": [1, 20], "note": 'ünïcode "quoted"'}
    server.push(
        Reply(
            text="Reading.",
            tool_calls=[ToolCall("read_file", arguments), ToolCall("bash", {}, id="toolu_mine")],
        )
    )
    _, message = stream(server)
    text, first, second = message.content
    assert text.type == "text"
    assert first.type == "tool_use" and second.type == "tool_use"
    assert (first.name, first.input) == ("read_file", arguments)
    assert first.id.startswith("toolu_")
    assert (second.name, second.input, second.id) == ("bash", {}, "toolu_mine")
    assert message.stop_reason == "tool_use"


def test_reasoning_becomes_a_signed_thinking_block_before_the_text(server: FakeProviderServer) -> None:
    server.push(Reply(reasoning="The test fails because of the offset.", text="Found it."))
    _, message = stream(server)
    thinking, text = message.content
    assert thinking.type == "thinking"
    assert thinking.thinking == "The test fails because of the offset."
    assert thinking.signature
    assert text.type == "text" and text.text == "Found it."


def test_ids_and_signatures_are_deterministic_per_server() -> None:
    script = [Reply(reasoning="r", tool_calls=[ToolCall("a", {}), ToolCall("b", {})])] * 2
    runs = []
    for _ in range(2):
        with FakeProviderServer(script, check=False) as server:
            runs.append([create(server).model_dump() for _ in script])
    assert runs[0] == runs[1]
    first, second = runs[0]
    assert first["content"][1]["id"] != first["content"][2]["id"]
    assert first["content"][1]["id"] != second["content"][1]["id"]


def test_usage_reports_uncached_input_and_cache_reads(server: FakeProviderServer) -> None:
    server.push(Reply(text="ok", usage=Usage(input_tokens=120, output_tokens=7, cached_tokens=100)))
    _, message = stream(server)
    assert message.usage.input_tokens == 20
    assert message.usage.cache_read_input_tokens == 100
    assert message.usage.output_tokens == 7


def test_non_stream_request_gets_the_whole_message(server: FakeProviderServer) -> None:
    server.push(Reply(text="Done.", reasoning="r", tool_calls=[ToolCall("ls", {"path": "."})]))
    message = create(server)
    assert [block.type for block in message.content] == ["thinking", "text", "tool_use"]
    assert message.content[2].input == {"path": "."}  # type: ignore[union-attr]
    assert message.stop_reason == "tool_use"
    assert message.usage.output_tokens == 5
    assert server.requests[-1].stream is False


@pytest.mark.parametrize(
    "stop, wire", [("max_tokens", "max_tokens"), ("content_filter", "refusal"), ("pause_turn", "pause_turn")]
)
def test_stop_reasons_map_to_anthropic_wording(server: FakeProviderServer, stop: str, wire: str) -> None:
    server.push(Reply(text="partial", stop=stop), Reply(text="partial", stop=stop))
    assert stream(server)[1].stop_reason == wire
    assert create(server).stop_reason == wire


def test_empty_reply_is_a_message_with_no_content(server: FakeProviderServer) -> None:
    server.push(Reply(), Reply())
    texts, message = stream(server)
    assert texts == [] and message.content == [] and message.stop_reason == "end_turn"
    assert create(server).content == []


@pytest.mark.parametrize(
    "status, error_class, error_type",
    [
        (400, anthropic.BadRequestError, "invalid_request_error"),
        (401, anthropic.AuthenticationError, "authentication_error"),
        (404, anthropic.NotFoundError, "not_found_error"),
        (413, anthropic.APIStatusError, "request_too_large"),
        (429, anthropic.RateLimitError, "rate_limit_error"),
        (500, anthropic.InternalServerError, "api_error"),
        (529, anthropic.InternalServerError, "overloaded_error"),
    ],
)
def test_http_failures_raise_the_sdk_error_for_the_status(
    server: FakeProviderServer, status: int, error_class: type[anthropic.APIStatusError], error_type: str
) -> None:
    server.push(Failure(status, "scripted failure"))
    with pytest.raises(error_class) as caught:
        stream(server)
    assert caught.value.status_code == status
    assert "scripted failure" in str(caught.value)
    assert caught.value.body == {
        "type": "error",
        "error": {"type": error_type, "message": "scripted failure"},
    }


def test_failure_kind_and_retry_after_reach_the_client(server: FakeProviderServer) -> None:
    server.push(Failure(529, "Overloaded", kind="overloaded_error", retry_after=2.5))
    with pytest.raises(anthropic.APIStatusError) as caught:
        create(server)
    assert caught.value.response.headers["retry-after"] == "2.5"
    assert caught.value.body["error"]["type"] == "overloaded_error"  # type: ignore[index]


def test_context_overflow_uses_the_prompt_is_too_long_wording(server: FakeProviderServer) -> None:
    server.push(Failure(400, "ignored", kind="context_overflow"))
    with pytest.raises(anthropic.BadRequestError) as caught:
        create(server)
    assert "prompt is too long" in str(caught.value)
    assert caught.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]


def test_mid_stream_failure_is_an_error_event_after_partial_text(server: FakeProviderServer) -> None:
    server.push(Failure(529, "Overloaded", mid_stream=True, partial_text="Checking the"))
    texts: list[str] = []
    with (
        pytest.raises(anthropic.APIStatusError) as caught,
        client(server).messages.stream(model="m", max_tokens=10, messages=MESSAGES) as events,
    ):
        texts.extend(event.text for event in events if event.type == "text")
    assert texts == ["Checking ", "the"]
    assert caught.value.body == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"},
    }


def test_break_after_drops_the_connection_after_n_deltas(server: FakeProviderServer) -> None:
    server.push(Reply(text="one two three four", break_after=2))
    texts: list[str] = []
    with (
        pytest.raises((httpx2.RemoteProtocolError, anthropic.APIConnectionError)),
        client(server).messages.stream(model="m", max_tokens=10, messages=MESSAGES) as events,
    ):
        texts.extend(event.text for event in events if event.type == "text")
    assert texts == ["one ", "two "]


def test_break_after_counts_tool_argument_fragments(server: FakeProviderServer) -> None:
    server.push(Reply(tool_calls=[ToolCall("write_file", {"path": "a" * 40})], break_after=1))
    fragments: list[str] = []
    with (
        pytest.raises((httpx2.RemoteProtocolError, anthropic.APIConnectionError)),
        client(server).messages.stream(model="m", max_tokens=10, messages=MESSAGES) as events,
    ):
        fragments.extend(event.partial_json for event in events if event.type == "input_json")
    assert fragments == ['{"path": "aaaaaa']


def test_break_after_on_a_non_stream_request_is_a_connection_error(server: FakeProviderServer) -> None:
    server.push(Reply(text="never sent", break_after=0))
    with pytest.raises(anthropic.APIConnectionError):
        create(server)


def test_requests_are_recorded_with_body_and_headers(server: FakeProviderServer) -> None:
    server.push(Reply(text="ok"))
    stream(server)
    (request,) = server.requests
    assert request.provider == "anthropic"
    assert request.path == "/v1/messages"
    assert request.headers["authorization"] == "Bearer test-key"
    assert "anthropic-version" in request.headers
    assert request.body == {"model": "claude-test", "max_tokens": 100, "messages": MESSAGES, "stream": True}
    assert (request.stream, request.model) == (True, "claude-test")


def post(server: FakeProviderServer, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, Any]:
    request = urllib.request.Request(server.url + path, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_x_api_key_is_accepted_and_missing_credentials_are_a_401(server: FakeProviderServer) -> None:
    server.push(Reply(text="ok"))
    body = json.dumps({"model": "m", "max_tokens": 5, "messages": MESSAGES}).encode()
    status, answer = post(
        server, "/v1/messages", body, {"x-api-key": "k", "content-type": "application/json"}
    )
    assert status == 200 and answer["content"] == [{"type": "text", "text": "ok"}]
    status, answer = post(server, "/v1/messages", body, {"content-type": "application/json"})
    assert status == 401 and answer["error"]["type"] == "authentication_error"


def test_a_body_that_is_not_a_json_object_is_a_400_consuming_nothing(server: FakeProviderServer) -> None:
    server.push(Reply(text="kept"))
    status, answer = post(server, "/v1/messages", b"[1, 2]", {"x-api-key": "k"})
    assert status == 400 and answer["type"] == "error"
    assert server.remaining == 1
    assert create(server).content[0].text == "kept"  # type: ignore[union-attr]


def test_exhausted_script_answers_500(server: FakeProviderServer) -> None:
    with pytest.raises(anthropic.InternalServerError) as caught:
        stream(server)
    assert caught.value.status_code == 500
    assert "fake server: script exhausted" in str(caught.value)


def test_broken_history_is_rejected_with_the_checker_message(server: FakeProviderServer) -> None:
    server.push(Reply(text="unused"))
    broken: list[Any] = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {}}],
        },
        {"role": "user", "content": "no tool_result here"},
    ]
    with pytest.raises(anthropic.BadRequestError) as caught:
        client(server).messages.create(model="m", max_tokens=10, messages=broken)
    problems = check_request("anthropic", server.requests[-1].body)
    assert problems
    assert caught.value.body["error"]["message"] == "; ".join(problems)  # type: ignore[index]
    assert server.remaining == 1
    assert create(server).content[0].text == "unused"  # type: ignore[union-attr]


tool_arguments = st.dictionaries(
    st.text(min_size=1, max_size=8),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=20),
        lambda inner: st.lists(inner, max_size=3),
    ),
    max_size=4,
)


@settings(max_examples=25, deadline=None)
@given(text=st.text(max_size=60), arguments=tool_arguments)
def test_the_sdk_reassembles_exactly_the_scripted_content(
    module_server: FakeProviderServer, text: str, arguments: dict[str, Any]
) -> None:
    module_server.reset()
    module_server.push(Reply(text=text, tool_calls=[ToolCall("tool", arguments)]))
    _, message = stream(module_server)
    assert [block.text for block in message.content if block.type == "text"] == ([text] if text else [])
    calls = [(block.name, block.input) for block in message.content if block.type == "tool_use"]
    assert calls == [("tool", arguments)]
