"""Broken, odd and slow streams through each official SDK against the fake server.

Whatever the wire sends (a line that is not JSON, a delta for a block never opened, output only in the
final event, nothing at all, a trickle), a turn ends in exactly one of done / incomplete / error, and
``run_turn`` raises nothing. The property test corrupts streams at random (cut, duplicated, garbled,
reordered, dropped events) for all five providers.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import turnmemory as tm
from turnmemory.llm import Client, Event, ToolResult, ToolSpec, record
from turnmemory.testing import EDIT_OPS, Failure, FakeProviderServer, Hang, Reply, StreamEdit, ToolCall

PROVIDERS = ["anthropic", "openai_chat", "openai_responses", "gemini", "bedrock"]
MakeClient = Callable[..., Client]

LOOKUP = ToolSpec(
    name="lookup",
    description="Look something up.",
    input_schema={"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
)
SECRET = "zq-output-5be1"


class Tools:
    """Answers every call with a distinctive output; records the calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, dict[str, Any]]] = []

    def __call__(self, call_id: str, name: str, arguments: dict[str, Any]) -> ToolResult:
        self.calls.append((call_id, name, arguments))
        return ToolResult(output={"content": SECRET})


def run(
    client: Client, prompt: str = "Find it", tools: Tools | None = None
) -> tuple[list[Event], tm.Message]:
    """One turn to its end (it must not raise), fed to a recorder: its events and its message."""
    recorder = tm.TurnRecorder()
    events = []
    for event in client.run_turn([], prompt, tools=[LOOKUP], execute=tools or Tools()):
        record(event, recorder)
        events.append(event)
    return events, recorder.finish()


def terminal(events: list[Event]) -> Event:
    """The one terminal event, which must be the last."""
    ends = [event for event in events if event.terminal]
    assert len(ends) == 1 and events[-1] is ends[0], [event.kind for event in events]
    return ends[0]


def sse(data: Mapping[str, Any], event: str | None = None) -> str:
    return (f"event: {event}\n" if event else "") + "data: " + json.dumps(data) + "\n\n"


NOT_JSON: dict[str, StreamEdit] = {
    "anthropic": StreamEdit("insert", at=3, data="event: content_block_delta\ndata: {not json}\n\n"),
    "openai_chat": StreamEdit("insert", at=1, data="data: {not json}\n\n"),
    "openai_responses": StreamEdit(
        "insert", at=2, data="event: response.output_text.delta\ndata: {not json}\n\n"
    ),
    "gemini": StreamEdit("insert", at=1, data="data: {not json}\n\n"),
    "bedrock": StreamEdit("garble", at=1),
}
"""A line that is not JSON in the middle of each stream (Bedrock's binary frames: a flipped byte)."""

NEVER_OPENED: dict[str, StreamEdit] = {
    "anthropic": StreamEdit(
        "insert",
        match="message_delta",
        data=sse(
            {"type": "content_block_delta", "index": 5, "delta": {"type": "text_delta", "text": "x"}},
            "content_block_delta",
        ),
    ),
    "openai_chat": StreamEdit(
        "insert",
        match='"finish_reason":"',
        data=sse(
            {
                "id": "chatcmpl-x",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": "m",
                "choices": [
                    {
                        "index": 0,
                        "delta": {"tool_calls": [{"index": 3, "function": {"arguments": "{}"}}]},
                        "finish_reason": None,
                    }
                ],
            }
        ),
    ),
    "gemini": StreamEdit(
        "insert",
        match="finishReason",
        data=sse({"candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"args": {}}}]}}]}),
    ),
    "bedrock": StreamEdit("drop", match="contentBlockStart"),
}
"""Content for a block, call or part that was never opened (or never named)."""


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_line_that_is_not_json_ends_the_turn_with_one_error(
    provider: str, server: FakeProviderServer, make_client: MakeClient
) -> None:
    client = make_client(provider, attempts=3)
    server.push(Reply(text="Here is a long enough answer.", edits=[NOT_JSON[provider]]))
    events, _ = run(client)
    end = terminal(events)
    assert (end.kind, end.reason) == ("error", "api_error")
    assert end.error is not None and end.error.startswith("malformed response from the provider (")
    assert not [event for event in events if event.kind == "retry"] and len(server.requests) == 1
    assert client.pending is None


@pytest.mark.parametrize("provider", sorted(NEVER_OPENED))
def test_a_delta_for_a_block_never_opened_ends_the_turn_with_one_error(
    provider: str, server: FakeProviderServer, make_client: MakeClient
) -> None:
    client = make_client(provider)
    tools = Tools()
    server.push(
        Reply(
            text="Looking.", tool_calls=[ToolCall("lookup", {"query": "q"})], edits=[NEVER_OPENED[provider]]
        )
    )
    events, _ = run(client, tools=tools)
    end = terminal(events)
    assert end.kind == "error" and end.error is not None and "malformed response" in end.error
    assert not tools.calls


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_malformed_stream_after_a_tool_ran_keeps_the_work_pending(
    provider: str, server: FakeProviderServer, make_client: MakeClient
) -> None:
    client = make_client(provider)
    tools = Tools()
    server.push(
        Reply(text="Looking.", tool_calls=[ToolCall("lookup", {"query": "q"})]),
        Reply(text="The answer is long enough.", edits=[NOT_JSON[provider]]),
    )
    events, _ = run(client, tools=tools)
    end = terminal(events)
    assert (end.kind, end.reason) == ("incomplete", "api_error") and "malformed" in (end.error or "")
    assert len(tools.calls) == 1 and client.pending


# -- Responses streams that carry their output only in the final event ---------------------------------

_PER_ITEM = (
    "response.output_item",
    "response.content_part",
    "response.output_text",
    "response.function_call",
)


@pytest.mark.parametrize(
    "dropped",
    [
        pytest.param(_PER_ITEM, id="completed-only"),
        pytest.param(("response.output_item.done",), id="deltas-but-no-done-items"),
        pytest.param(('"type":"response.output_item.done","output_index":1',), id="one-done-item-missing"),
        pytest.param((), id="every-event"),
    ],
)
def test_responses_output_only_in_the_completed_event_is_used_once(
    dropped: tuple[str, ...], server: FakeProviderServer, make_client: MakeClient
) -> None:
    client = make_client("openai_responses")
    tools = Tools()
    edits = [StreamEdit("drop", match=match) for match in dropped]
    server.push(
        Reply(text="Looking it up.", tool_calls=[ToolCall("lookup", {"query": "q"})], edits=edits),
        Reply(text="Found it.", edits=edits),
    )
    events, message = run(client, tools=tools)
    assert terminal(events).kind == "done"
    assert [(name, arguments) for _, name, arguments in tools.calls] == [("lookup", {"query": "q"})]
    assert message.content == "Looking it up.Found it."
    second = server.requests[-1].body["input"]
    kinds = [item.get("type", "message") for item in second]
    assert kinds == ["message", "message", "function_call", "function_call_output"]
    assert second[1]["content"][0]["text"] == "Looking it up." and SECRET in second[3]["output"]


# -- silence, trickles and deadlines ---------------------------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_server_that_never_answers_ends_at_the_read_timeout(
    provider: str, server: FakeProviderServer, make_client: MakeClient
) -> None:
    client = make_client(provider, attempts=2, timeout=0.5)
    server.push(Hang(), Reply(text="Back again."))
    events, _ = run(client)
    retries = [event for event in events if event.kind == "retry"]
    assert terminal(events).kind == "done" and len(retries) == 1
    assert retries[0].error is not None and "timed out" in retries[0].error.lower()


def test_gemini_timeouts_do_not_limit_the_generation_server_side(
    server: FakeProviderServer, make_client: MakeClient
) -> None:
    """google-genai's own timeout option also sends X-Server-Timeout; the client's timeouts do not."""
    server.push(Reply(text="Fine."))
    run(make_client("gemini", timeout=7))
    assert "x-server-timeout" not in server.requests[-1].headers


@pytest.mark.timeout(60)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_trickle_ends_at_the_turn_deadline(
    provider: str, server: FakeProviderServer, make_client: MakeClient
) -> None:
    client = make_client(provider, timeout=5, deadline=0.5)
    server.push(Reply(text=" ".join(["word"] * 200), pace=0.05))
    events, _ = run(client)
    end = terminal(events)
    assert (end.kind, end.reason) == ("error", "deadline")
    assert end.error == "the turn took longer than its deadline of 0.5 s"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_silence_under_a_deadline_ends_at_the_deadline_not_the_read_timeout(
    provider: str, server: FakeProviderServer, make_client: MakeClient
) -> None:
    client = make_client(provider, deadline=0.5)  # the read timeout stays at its default of 300 s
    server.push(Hang())
    events, _ = run(client)
    end = terminal(events)
    assert (end.kind, end.reason) == ("error", "deadline") and "timed out" in (end.error or "")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_no_retry_waits_past_the_deadline(
    provider: str, server: FakeProviderServer, make_client: MakeClient, sleeps: list[float]
) -> None:
    client = make_client(provider, deadline=5)  # the policy waits up to 8 s: a server's 60 s become 8
    server.push(Failure(503, "busy", retry_after=60))
    events, _ = run(client)
    end = terminal(events)
    assert (end.kind, end.reason) == ("error", "deadline") and not sleeps
    assert end.error is not None and "busy" in end.error and "no time left to retry" in end.error


def test_timeouts_and_deadlines_must_be_positive(make_client: MakeClient) -> None:
    for options in ({"timeout": 0}, {"connect_timeout": -1}, {"deadline": 0}):
        with pytest.raises(ValueError, match="positive number of seconds"):
            make_client("anthropic", **options)


# -- random corruption ---------------------------------------------------------------------------------

_EDITS = st.builds(
    StreamEdit,
    op=st.sampled_from([op for op in EDIT_OPS if op != "insert"]),
    at=st.integers(-40, 40),
) | st.builds(
    StreamEdit,
    op=st.just("insert"),
    at=st.integers(-40, 40),
    data=st.sampled_from(
        ["data: {not json}\n\n", "event: error\ndata: {}\n\n", "data: [DONE]\n\n", "\n\n", ":\n\n"]
    ),
)


@pytest.mark.parametrize("provider", PROVIDERS)
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=st.lists(_EDITS, min_size=1, max_size=4), calls=st.integers(0, 2), reasoning=st.booleans())
def test_any_corruption_ends_every_turn_with_exactly_one_terminal_event(
    provider: str,
    edits: list[StreamEdit],
    calls: int,
    reasoning: bool,
    server: FakeProviderServer,
    make_client: MakeClient,
) -> None:
    server.reset()
    client = make_client(provider, attempts=2)
    corrupted = Reply(
        text="Some prose to stream.",
        reasoning="Thinking it over." if reasoning else "",
        tool_calls=[ToolCall("lookup", {"query": f"q{n}"}) for n in range(calls)],
        edits=edits,
    )
    server.push(corrupted, corrupted, Reply(text="Done."), Reply(text="Done."))
    events, _ = run(client)
    end = terminal(events)
    assert end.kind in ("done", "incomplete", "error")
    if end.kind != "done":
        assert end.error and "\n" not in end.error
    assert (client.pending is not None) == (end.kind == "incomplete")
    server.reset()  # the corruption decides how many of the scripted items are asked for
