"""The fake server's Responses protocol, driven by the real ``openai`` SDK and its stream helper."""

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


@functools.cache
def client(server: FakeProviderServer) -> openai.OpenAI:
    return openai.OpenAI(
        api_key="test-key", base_url=server.base_url("openai_responses"), max_retries=0, timeout=5
    )


def helper_stream(server: FakeProviderServer) -> tuple[list[Any], Any]:
    with client(server).responses.stream(model="gpt-test", input="Fix the failing test") as events:
        seen = list(events)
        return seen, events.get_final_response()


def raw_events(server: FakeProviderServer) -> list[Any]:
    return list(client(server).responses.create(model="gpt-test", input="Fix the failing test", stream=True))


def test_text_streams_in_a_message_item(server: FakeProviderServer) -> None:
    server.push(Reply(text="Let me look."))
    events, response = helper_stream(server)
    assert [e.delta for e in events if e.type == "response.output_text.delta"] == ["Let ", "me ", "look."]
    assert response.output_text == "Let me look."
    assert response.status == "completed" and response.model == "gpt-test"
    assert response.id.startswith("resp_") and response.output[0].id.startswith("msg_")


def test_events_keep_the_stream_invariants(server: FakeProviderServer) -> None:
    server.push(Reply(reasoning="Think.", text="Answer.", tool_calls=[ToolCall("ls", {"path": "."})]))
    events = raw_events(server)
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert [e.type for e in events[:2]] == ["response.created", "response.in_progress"]
    assert events[-1].type == "response.completed"
    assert (
        len({e.response.id for e in events if e.type.startswith("response.") and hasattr(e, "response")}) == 1
    )
    added = [e.output_index for e in events if e.type == "response.output_item.added"]
    done = [e.output_index for e in events if e.type == "response.output_item.done"]
    assert added == done == [0, 1, 2]
    part_added = next(i for i, e in enumerate(events) if e.type == "response.content_part.added")
    first_delta = next(i for i, e in enumerate(events) if e.type == "response.output_text.delta")
    assert part_added < first_delta
    final_ids = [item.id for item in events[-1].response.output]
    assert final_ids == [e.item.id for e in events if e.type == "response.output_item.done"]


def test_tool_calls_are_function_call_items_with_parsed_arguments(server: FakeProviderServer) -> None:
    arguments = {"path": "src/app.py", "lines": [1, 2]}
    server.push(
        Reply(
            text="Reading.", tool_calls=[ToolCall("read_file", arguments), ToolCall("ls", {}, id="call_mine")]
        )
    )
    events, response = helper_stream(server)
    message, first, second = response.output
    assert message.type == "message"
    assert (first.type, first.name, json.loads(first.arguments)) == ("function_call", "read_file", arguments)
    assert first.id.startswith("fc_") and first.call_id.startswith("call_")
    assert (second.call_id, second.arguments) == ("call_mine", "{}")
    done = [e for e in events if e.type == "response.function_call_arguments.done"]
    assert [json.loads(e.arguments) for e in done] == [arguments, {}]
    deltas = [
        e.delta for e in events if e.type == "response.function_call_arguments.delta" and e.output_index == 1
    ]
    assert len(deltas) > 1 and json.loads("".join(deltas)) == arguments


def test_reasoning_is_a_reasoning_item_with_summary_and_encrypted_content(server: FakeProviderServer) -> None:
    server.push(Reply(reasoning="The offset is wrong.", text="Fixed."))
    events, response = helper_stream(server)
    reasoning = response.output[0]
    assert reasoning.type == "reasoning" and reasoning.id.startswith("rs_")
    assert [s.text for s in reasoning.summary] == ["The offset is wrong."]
    assert reasoning.encrypted_content
    deltas = [e.delta for e in events if e.type == "response.reasoning_summary_text.delta"]
    assert "".join(deltas) == "The offset is wrong."
    (done,) = [e.item for e in events if e.type == "response.output_item.done" and e.item.type == "reasoning"]
    assert done.encrypted_content == reasoning.encrypted_content


def test_usage_and_non_stream_response(server: FakeProviderServer) -> None:
    server.push(Reply(text="ok", tool_calls=[ToolCall("ls", {})], usage=Usage(40, 3, 25)))
    response = client(server).responses.create(model="gpt-test", input="hi")
    assert response.output_text == "ok" and response.output[1].type == "function_call"
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.total_tokens) == (
        40,
        3,
        43,
    )
    assert response.usage.input_tokens_details.cached_tokens == 25
    assert server.requests[-1].stream is False


def test_empty_reply_completes_with_empty_output(server: FakeProviderServer) -> None:
    server.push(Reply(), Reply())
    events, response = helper_stream(server)
    assert [e.type for e in events] == ["response.created", "response.in_progress", "response.completed"]
    assert response.output == [] and response.status == "completed"
    assert client(server).responses.create(model="gpt-test", input="hi").output == []


def test_max_tokens_ends_with_response_incomplete(server: FakeProviderServer) -> None:
    server.push(Reply(text="cut", stop="max_tokens"))
    events = raw_events(server)
    assert events[-1].type == "response.incomplete"
    assert events[-1].response.incomplete_details.reason == "max_output_tokens"
    assert events[-1].response.output[0].status == "incomplete"


@pytest.mark.parametrize(
    "status, error_class",
    [
        (400, openai.BadRequestError),
        (401, openai.AuthenticationError),
        (404, openai.NotFoundError),
        (409, openai.ConflictError),
        (429, openai.RateLimitError),
        (500, openai.InternalServerError),
    ],
)
def test_http_failures_raise_the_sdk_error_for_the_status(
    server: FakeProviderServer, status: int, error_class: type[openai.APIStatusError]
) -> None:
    server.push(Failure(status, "scripted failure", kind="custom_type"))
    with pytest.raises(error_class) as caught:
        helper_stream(server)
    assert caught.value.status_code == status
    assert caught.value.message == f"Error code: {status} - scripted failure"
    assert caught.value.type == "custom_type"


def test_context_overflow_is_context_length_exceeded_on_input(server: FakeProviderServer) -> None:
    server.push(Failure(400, kind="context_overflow"))
    with pytest.raises(openai.BadRequestError) as caught:
        raw_events(server)
    assert (caught.value.code, caught.value.param) == ("context_length_exceeded", "input")
    assert "exceeds the context window" in caught.value.message


def test_mid_stream_failure_is_error_then_response_failed_after_partial_text(
    server: FakeProviderServer,
) -> None:
    server.push(Failure(429, "Rate limit reached", mid_stream=True, partial_text="Half done"))
    events = raw_events(server)
    types = [e.type for e in events]
    assert types[-2:] == ["error", "response.failed"]
    assert [e.delta for e in events if e.type == "response.output_text.delta"] == ["Half ", "done"]
    error, failed = events[-2:]
    assert (error.code, error.message) == ("rate_limit_exceeded", "Rate limit reached")
    assert failed.response.status == "failed"
    assert failed.response.error.message == "Rate limit reached"
    assert failed.response.id == events[0].response.id
    assert [e.sequence_number for e in events] == list(range(len(events)))
    server.push(Failure(500, "boom", mid_stream=True))
    with pytest.raises(RuntimeError, match=r"response\.completed"):
        helper_stream(server)


def test_break_after_is_a_connection_error_after_partial_content(server: FakeProviderServer) -> None:
    server.push(Reply(text="one two three", break_after=2), Reply(text="x", break_after=1))
    deltas: list[str] = []
    with (
        pytest.raises(openai.APIConnectionError),
        client(server).responses.stream(model="m", input="hi") as events,
    ):
        deltas.extend(e.delta for e in events if e.type == "response.output_text.delta")
    assert deltas == ["one ", "two "]
    with pytest.raises(openai.APIConnectionError):
        client(server).responses.create(model="m", input="hi")


def test_requests_are_recorded(server: FakeProviderServer) -> None:
    server.push(Reply(text="ok"))
    raw_events(server)
    (request,) = server.requests
    assert (request.provider, request.path, request.stream, request.model) == (
        "openai_responses",
        "/v1/responses",
        True,
        "gpt-test",
    )
    assert request.headers["authorization"] == "Bearer test-key"
    assert request.body["input"] == "Fix the failing test"


def test_exhausted_script_answers_500(server: FakeProviderServer) -> None:
    with pytest.raises(openai.InternalServerError) as caught:
        raw_events(server)
    assert caught.value.message == "Error code: 500 - fake server: script exhausted"


def test_broken_history_is_rejected_with_the_checker_message(server: FakeProviderServer) -> None:
    server.push(Reply(text="unused"))
    broken: list[Any] = [
        {"role": "user", "content": "go"},
        {"type": "function_call_output", "call_id": "call_orphan", "output": "{}"},
    ]
    with pytest.raises(openai.BadRequestError) as caught:
        client(server).responses.create(model="m", input=broken)
    problems = check_request("openai_responses", server.requests[-1].body)
    assert problems
    assert caught.value.message == "Error code: 400 - " + "; ".join(problems)
    assert server.remaining == 1
    assert client(server).responses.create(model="m", input="hi").output_text == "unused"


@settings(max_examples=25, deadline=None)
@given(
    reasoning=st.text(max_size=30),
    text=st.text(max_size=60),
    arguments=st.dictionaries(st.text(max_size=8), st.integers() | st.text(max_size=20), max_size=4),
)
def test_the_helper_reassembles_exactly_the_scripted_content(
    module_server: FakeProviderServer, reasoning: str, text: str, arguments: dict[str, Any]
) -> None:
    module_server.reset()
    module_server.push(Reply(text=text, reasoning=reasoning, tool_calls=[ToolCall("tool", arguments)]))
    _, response = helper_stream(module_server)
    assert response.output_text == text
    summaries = [s.text for item in response.output if item.type == "reasoning" for s in item.summary]
    assert summaries == ([reasoning] if reasoning else [])
    calls = [json.loads(item.arguments) for item in response.output if item.type == "function_call"]
    assert calls == [arguments]
