"""Whole turns through each provider's real SDK client against the fake server.

Each test scripts the fake model, runs turns through ``Client.run_turn``, and checks the events, the
pending state and the request bodies the server recorded (through the provider-neutral ``entries``
view from conftest).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import pytest

import turnmemory as tm
from turnmemory.llm import Client, Event, ToolResult, ToolSpec, record
from turnmemory.testing import Failure, FakeProviderServer, Reply, ToolCall

PROVIDERS = ["anthropic", "openai_chat", "openai_responses", "gemini", "bedrock"]

READ = ToolSpec(
    name="read_file",
    description="Read a file.",
    input_schema={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)
LOOKUP = ToolSpec(
    name="lookup",
    description="Look something up.",
    input_schema={
        "type": "object",
        "properties": {"query": {"type": "string"}},
        "required": ["query"],
        "additionalProperties": False,
    },
)
TOOLS = [READ, LOOKUP]

SECRET_INPUT = "zq-input-7f3a"
SECRET_OUTPUT = "zq-output-91bc"

MakeClient = Callable[..., Client]
Entries = Callable[[str, dict[str, Any]], list[tuple[Any, ...]]]


class Tools:
    """An ``execute`` double: answers every call with a distinctive output and records the calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, dict[str, Any]]] = []

    def __call__(self, call_id: str, name: str, arguments: dict[str, Any]) -> ToolResult:
        self.calls.append((call_id, name, arguments))
        return ToolResult(output={"content": f"{SECRET_OUTPUT} for {name}"})


def run(
    client: Client,
    history: Iterable[tm.Message],
    prompt: str,
    tools: Tools | None = None,
    recorder: tm.TurnRecorder | None = None,
) -> list[Event]:
    """Run one turn to its end, feeding a recorder; the events."""
    recorder = recorder if recorder is not None else tm.TurnRecorder()
    events = []
    for event in client.run_turn(list(history), prompt, tools=TOOLS, execute=tools or Tools()):
        record(event, recorder)
        events.append(event)
    return events


def terminal(events: list[Event]) -> Event:
    """The one terminal event, which must be the last."""
    ends = [event for event in events if event.terminal]
    assert len(ends) == 1 and events[-1] is ends[0], [event.kind for event in events]
    return ends[0]


def kinds(events: list[Event], *wanted: str) -> list[str]:
    return [event.kind for event in events if not wanted or event.kind in wanted]


def lookup_call(query: str = SECRET_INPUT) -> ToolCall:
    return ToolCall("lookup", {"query": query})


def incomplete_turn(server: FakeProviderServer, client: Client, history: list[tm.Message]) -> list[Event]:
    """A turn whose tool iteration completes and whose next request fails for good (a 400)."""
    server.push(Reply(text="Looking it up.", tool_calls=[lookup_call()]), Failure(400, "rejected on purpose"))
    events = run(client, history, "Find the answer")
    assert terminal(events).kind == "incomplete"
    return events


@pytest.mark.parametrize("provider", PROVIDERS)
def test_two_turns_replay_the_first_as_compact_history(
    provider: str, server: FakeProviderServer, make_client: MakeClient, entries: Entries
) -> None:
    client = make_client(provider)
    history = [tm.Message("system", "You are terse."), tm.Message("user", "Find the answer")]
    server.push(
        Reply(text="Looking it up.", tool_calls=[lookup_call()]),
        Reply(text=" The answer is 42."),
    )
    recorder = tm.TurnRecorder()
    tools = Tools()
    events = run(client, history[:1], history[1].content, tools, recorder)
    assert terminal(events).kind == "done"
    assert [name for _, name, _ in tools.calls] == ["lookup"]
    first = recorder.finish()
    assert first.content == "Looking it up. The answer is 42."
    assert [(a.text_offset, a.tool, a.status) for a in first.activities] == [(14, "lookup", "success")]
    assert client.pending is None

    server.push(Reply(text="Still 42."))
    assert terminal(run(client, [*history, first], "And again?")).kind == "done"
    body = server.requests[-1].body
    call_id = f"historical_{2}_0"
    assert [e for e in entries(provider, body) if e[0] != "reasoning"] == [
        ("text", "system", "You are terse."),
        ("text", "user", "Find the answer"),
        ("text", "assistant", "Looking it up."),
        ("call", call_id, "lookup", {}),
        ("result", call_id, '{"status":"success"}', False),
        ("text", "assistant", " The answer is 42."),
        ("text", "user", "And again?"),
    ]
    wire = json.dumps(body)
    assert SECRET_INPUT not in wire and SECRET_OUTPUT not in wire


@pytest.mark.parametrize("provider", PROVIDERS)
def test_in_turn_requests_carry_real_calls_and_results(
    provider: str, server: FakeProviderServer, make_client: MakeClient, entries: Entries
) -> None:
    client = make_client(provider)
    server.push(Reply(text="Looking.", tool_calls=[lookup_call()]), Reply(text="Done."))
    assert terminal(run(client, [], "Find it")).kind == "done"
    second = entries(provider, server.requests[-1].body)
    calls = [e for e in second if e[0] == "call"]
    results = [e for e in second if e[0] == "result"]
    assert [(c[2], c[3]) for c in calls] == [("lookup", {"query": SECRET_INPUT})]
    assert len(results) == 1 and results[0][1] == calls[0][1] and SECRET_OUTPUT in results[0][2]
    assert second.index(calls[0]) < second.index(results[0])


@pytest.mark.parametrize("provider", PROVIDERS)
def test_reasoning_is_replayed_inside_the_turn_and_absent_from_history(
    provider: str, server: FakeProviderServer, make_client: MakeClient, entries: Entries
) -> None:
    client = make_client(provider)
    server.push(
        Reply(reasoning="I should look it up.", text="Looking.", tool_calls=[lookup_call()]),
        Reply(text="Found."),
    )
    recorder = tm.TurnRecorder()
    events = run(client, [], "Find it", recorder=recorder)
    assert terminal(events).kind == "done"
    assert "".join(e.text for e in events if e.kind == "reasoning") == "I should look it up."
    first, second = (entries(provider, request.body) for request in server.requests[-2:])
    assert not [e for e in first if e[0] == "reasoning"]
    reasoning = [e for e in second if e[0] == "reasoning"]
    assert reasoning and all(e[1] for e in reasoning)
    assert second.index(reasoning[0]) < next(i for i, e in enumerate(second) if e[0] == "call")

    server.push(Reply(text="ok"))
    run(client, [tm.Message("user", "Find it"), recorder.finish()], "Next")
    wire = json.dumps(server.requests[-1].body)
    assert "I should look it up." not in wire
    assert not [payload for _, payload in reasoning if str(payload) in wire]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_mid_loop_failure_saves_pending_and_the_next_turn_recovers(
    provider: str, server: FakeProviderServer, make_client: MakeClient, entries: Entries
) -> None:
    client = make_client(provider, attempts=2)
    server.push(
        Reply(text="Looking it up.", tool_calls=[lookup_call()]),
        Reply(text="The answer", break_after=1),
        Reply(text="The answer", break_after=1),
    )
    tools = Tools()
    events = run(client, [], "Find the answer", tools)
    end = terminal(events)
    assert (end.kind, end.reason) == ("incomplete", "api_error")
    assert end.error and "connection" in end.error
    assert kinds(events, "retry") == ["retry"]
    pending = client.pending
    assert pending
    pending_entries = entries(provider, {**_empty_body(provider), **_wrap(provider, pending)})
    assert [e[0] for e in pending_entries if e[0] != "reasoning"] == ["text", "call", "result"]

    server.push(Reply(text="Recovered: 42."))
    events = run(client, [tm.Message("user", "Find the answer")], "Continue", tools)
    assert terminal(events).kind == "done"
    assert client.pending is None
    assert len(tools.calls) == 1
    body = entries(provider, server.requests[-1].body)
    prompt = (
        body.index(("text", "user", "Continue")) if ("text", "user", "Continue") in body else len(body) - 1
    )
    call = next(i for i, e in enumerate(body) if e[0] == "call")
    result = next(i for i, e in enumerate(body) if e[0] == "result")
    assert body[0] == ("text", "user", "Find the answer")
    assert 0 < call < result <= prompt
    assert body[-1][0] == "text" and body[-1][2].endswith("Continue")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_recovery_failing_before_progress_keeps_pending_identical(
    provider: str, server: FakeProviderServer, make_client: MakeClient
) -> None:
    client = make_client(provider)
    incomplete_turn(server, client, [])
    before = json.dumps(client.pending, sort_keys=True, default=repr)
    server.push(Failure(400, "rejected again"))
    count = len(server.requests)
    events = run(client, [tm.Message("user", "Find the answer")], "Continue")
    end = terminal(events)
    assert (end.kind, end.reason) == ("incomplete", "api_error")
    assert len(server.requests) == count + 1
    assert json.dumps(client.pending, sort_keys=True, default=repr) == before


@pytest.mark.parametrize("provider", PROVIDERS)
def test_recovery_that_makes_progress_then_fails_keeps_old_and_new_work(
    provider: str, server: FakeProviderServer, make_client: MakeClient
) -> None:
    client = make_client(provider)
    incomplete_turn(server, client, [])
    before = client.pending
    assert before is not None
    server.push(Reply(text="More.", tool_calls=[lookup_call("second")]), Failure(400, "rejected again"))
    end = terminal(run(client, [tm.Message("user", "Find the answer")], "Continue"))
    assert end.kind == "incomplete"
    after = client.pending
    assert after is not None and after[: len(before)] == before and len(after) > len(before)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_first_request_failing_is_an_error_without_pending(
    provider: str, server: FakeProviderServer, make_client: MakeClient
) -> None:
    client = make_client(provider)
    server.push(Failure(400, "your request was malformed"))
    events = run(client, [], "Hello")
    end = terminal(events)
    assert (end.kind, end.reason) == ("error", "api_error")
    assert end.error and "your request was malformed" in end.error and "\n" not in end.error
    assert "400" in end.error
    assert client.pending is None
    assert len(server.requests) == 1 and not kinds(events, "retry")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_empty_response_mid_loop_is_incomplete(
    provider: str, server: FakeProviderServer, make_client: MakeClient
) -> None:
    client = make_client(provider)
    server.push(Reply(text="Looking.", tool_calls=[lookup_call()]), Reply())
    end = terminal(run(client, [], "Find it"))
    assert (end.kind, end.reason) == ("incomplete", "empty_response")
    assert client.pending


@pytest.mark.parametrize("provider", PROVIDERS)
def test_empty_first_response_is_an_error(
    provider: str, server: FakeProviderServer, make_client: MakeClient
) -> None:
    client = make_client(provider)
    server.push(Reply())
    end = terminal(run(client, [], "Hello"))
    assert (end.kind, end.reason) == ("error", "empty_response")
    assert client.pending is None


@pytest.mark.parametrize("provider", PROVIDERS)
def test_retryable_failures_are_retried_then_succeed(
    provider: str, server: FakeProviderServer, make_client: MakeClient, sleeps: list[float]
) -> None:
    client = make_client(provider, attempts=4)
    server.push(Failure(503, "busy"), Failure(429, "slow down", retry_after=2), Reply(text="Hello."))
    recorder = tm.TurnRecorder()
    events = run(client, [], "Hi", recorder=recorder)
    assert terminal(events).kind == "done"
    retries = [e for e in events if e.kind == "retry"]
    assert [e.attempt for e in retries] == [2, 3]
    assert "busy" in str(retries[0].error) and "slow down" in str(retries[1].error)
    assert sleeps == [1.0, 2.0]
    assert len(server.requests) == 3
    assert recorder.finish().content == "Hello."


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_retry_rewinds_the_prose_of_the_failed_attempt(
    provider: str, server: FakeProviderServer, make_client: MakeClient
) -> None:
    client = make_client(provider)
    server.push(
        Reply(text="Looking.", tool_calls=[lookup_call()]),
        Reply(text="Abandoned words here", break_after=2),
        Reply(text=" Found it."),
    )
    recorder = tm.TurnRecorder()
    events = run(client, [], "Find it", recorder=recorder)
    assert terminal(events).kind == "done" and kinds(events, "retry") == ["retry"]
    message = recorder.finish()
    assert message.content == "Looking. Found it."
    assert [(a.text_offset, a.tool) for a in message.activities] == [(8, "lookup")]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_retries_are_bounded(
    provider: str, server: FakeProviderServer, make_client: MakeClient, sleeps: list[float]
) -> None:
    client = make_client(provider, attempts=3)
    server.push(Failure(503, "busy"), Failure(500, "broken"), Failure(503, "still busy"))
    events = run(client, [], "Hi")
    end = terminal(events)
    assert (end.kind, end.reason) == ("error", "api_error") and "still busy" in str(end.error)
    assert kinds(events, "retry") == ["retry", "retry"]
    assert sleeps == [1.0, 2.0]
    assert len(server.requests) == 3


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_in_stream_overload_is_retried(
    provider: str, server: FakeProviderServer, make_client: MakeClient
) -> None:
    client = make_client(provider)
    server.push(Failure(529, "Overloaded", kind=_overloaded(provider), mid_stream=True), Reply(text="Hello."))
    events = run(client, [], "Hi")
    assert terminal(events).kind == "done" and kinds(events, "retry") == ["retry"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_context_overflow_is_its_own_outcome(
    provider: str, server: FakeProviderServer, make_client: MakeClient
) -> None:
    client = make_client(provider)
    server.push(Failure(400, kind="context_overflow"))
    end = terminal(run(client, [], "Hi"))
    assert (end.kind, end.reason) == ("error", "context_overflow")
    assert len(server.requests) == 1

    server.push(Reply(text="Looking.", tool_calls=[lookup_call()]), Failure(400, kind="context_overflow"))
    end = terminal(run(client, [], "Find it"))
    assert (end.kind, end.reason) == ("incomplete", "context_overflow")
    assert client.pending


@pytest.mark.parametrize("provider", PROVIDERS)
def test_unknown_tools_and_invalid_arguments_get_error_results(
    provider: str, server: FakeProviderServer, make_client: MakeClient, entries: Entries
) -> None:
    client = make_client(provider)
    server.push(
        Reply(
            text="Trying.",
            tool_calls=[
                ToolCall("delete_everything", {}),
                ToolCall("read_file", {"path": 7}),
                ToolCall("lookup", {}),
            ],
        ),
        Reply(text="Sorry."),
    )
    tools = Tools()
    recorder = tm.TurnRecorder()
    events = run(client, [], "Do it", tools, recorder)
    assert terminal(events).kind == "done"
    assert tools.calls == []
    ends = [e for e in events if e.kind == "tool_end"]
    assert [e.name for e in ends] == ["delete_everything", "read_file", "lookup"]
    assert "Unknown tool 'delete_everything'" in str(ends[0].error) and "lookup, read_file" in str(
        ends[0].error
    )
    assert "arguments.path must be string, got integer" in str(ends[1].error)
    assert "arguments.query is required" in str(ends[2].error) and '"required":["query"]' in str(
        ends[2].error
    )
    results = [e for e in entries(provider, server.requests[-1].body) if e[0] == "result"]
    assert len(results) == 3
    assert (
        "Unknown tool" in results[0][2]
        and "must be string" in results[1][2]
        and "is required" in results[2][2]
    )
    message = recorder.finish()
    assert [(a.tool, a.status) for a in message.activities] == [
        ("delete_everything", "error"),
        ("read_file", "error"),
        ("lookup", "error"),
    ]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_drop_pending_returns_a_historical_message(
    provider: str, server: FakeProviderServer, make_client: MakeClient
) -> None:
    client = make_client(provider)
    incomplete_turn(server, client, [])
    message = client.drop_pending()
    assert client.pending is None and client.drop_pending() is None
    assert message is not None
    assert message.role == "assistant" and message.content == "Looking it up."
    assert [(a.text_offset, a.tool, a.status) for a in message.activities] == [(14, "lookup", "success")]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_pending_never_leaks_into_another_conversation(
    provider: str, server: FakeProviderServer, make_client: MakeClient
) -> None:
    client = make_client(provider)
    history = [tm.Message("user", "Earlier question"), tm.Message("assistant", "Earlier answer.")]
    incomplete_turn(server, client, history)
    with pytest.raises(ValueError, match="another conversation"):
        client.run_turn([tm.Message("user", "A different chat")], "Hello")
    assert client.pending
    client.drop_pending()
    server.push(Reply(text="Fresh."))
    assert terminal(run(client, [tm.Message("user", "A different chat")], "Hello")).kind == "done"


OTHER_CONVERSATIONS = [
    [],
    [tm.Message("user", "A different chat")],
    [tm.Message("system", "Be brief."), tm.Message("user", "A different chat")],
    [
        tm.Message("user", "A different chat"),
        tm.Message("assistant", "Sure."),
        tm.Message("user", "Find the answer"),
    ],
    [tm.Message("user", "Find the answer!")],
    [tm.Message("assistant", "Find the answer")],
]
"""Histories of conversations other than one whose first turn, "Find the answer", ended incomplete."""


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_first_turns_pending_state_never_enters_another_conversation(
    provider: str, server: FakeProviderServer, make_client: MakeClient
) -> None:
    client = make_client(provider)
    incomplete_turn(server, client, [])
    pending = client.pending
    for history in OTHER_CONVERSATIONS:
        with pytest.raises(ValueError, match="another conversation"):
            client.run_turn(history, "Hello")
    assert client.pending == pending and len(server.requests) == 2
    # Its own continuation still resumes it: the interrupted prompt, then the new one.
    server.push(Reply(text="Recovered."))
    history = [tm.Message("system", "A new system prompt."), tm.Message("user", "Find the answer")]
    assert terminal(run(client, history, "Continue")).kind == "done"
    wire = json.dumps(server.requests[-1].body)
    assert SECRET_OUTPUT in wire and client.pending is None


@pytest.mark.parametrize("provider", PROVIDERS)
def test_tool_turn_limit_ends_incomplete(
    provider: str, server: FakeProviderServer, make_client: MakeClient
) -> None:
    client = make_client(provider, max_tool_turns=2)
    server.push(
        Reply(text="One.", tool_calls=[lookup_call("a")]),
        Reply(text="Two.", tool_calls=[lookup_call("b")]),
    )
    tools = Tools()
    end = terminal(run(client, [], "Loop", tools))
    assert (end.kind, end.reason) == ("incomplete", "tool_limit")
    assert len(tools.calls) == 2 and client.pending


@pytest.mark.parametrize("provider", PROVIDERS)
def test_usage_is_reported_per_request(
    provider: str, server: FakeProviderServer, make_client: MakeClient
) -> None:
    from turnmemory.testing import Usage as ScriptUsage

    client = make_client(provider)
    server.push(Reply(text="Hi.", usage=ScriptUsage(input_tokens=120, output_tokens=7, cached_tokens=100)))
    events = run(client, [], "Hello")
    usage = [e.usage for e in events if e.kind == "usage"]
    assert len(usage) == 1 and usage[0] is not None
    assert (usage[0].input_tokens, usage[0].output_tokens, usage[0].cached_tokens) == (120, 7, 100)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_replayed_tools_are_declared_even_when_not_offered(
    provider: str, server: FakeProviderServer, make_client: MakeClient
) -> None:
    client = make_client(provider)
    old = tm.Message(
        "assistant", "Ran it.", tm.TurnMemory((tm.ToolActivity(text_offset=7, tool="bash", target="make"),))
    )
    server.push(Reply(text="ok"))
    events = list(client.run_turn([tm.Message("user", "Build"), old], "Again"))
    assert terminal(events).kind == "done"
    assert "bash" in _declared_tools(provider, server.requests[-1].body)

    server.push(Reply(text="ok"))
    list(client.run_turn([], "Plain"))
    assert _declared_tools(provider, server.requests[-1].body) is None


def test_closing_the_turn_early_keeps_completed_work_pending(
    server: FakeProviderServer, make_client: MakeClient
) -> None:
    client = make_client("anthropic")
    server.push(Reply(text="Two things.", tool_calls=[lookup_call("a"), lookup_call("b")]))
    tools = Tools()
    turn = client.run_turn([], "Go", tools=TOOLS, execute=tools)
    for event in turn:
        if event.kind == "tool_end":
            break
    turn.close()
    assert len(tools.calls) == 1
    message = client.drop_pending()
    assert message is not None
    assert [(a.tool, a.status) for a in message.activities] == [("lookup", "success"), ("lookup", "error")]


def _overloaded(provider: str) -> str:
    """Each provider's in-stream error type for an overloaded or unavailable service."""
    return {
        "anthropic": "overloaded_error",
        "openai_chat": "server_error",
        "openai_responses": "server_error",
        "gemini": "UNAVAILABLE",
        "bedrock": "serviceUnavailableException",
    }[provider]


def _declared_tools(provider: str, body: dict[str, Any]) -> list[str] | None:
    if provider == "anthropic":
        tools = body.get("tools")
        return [tool["name"] for tool in tools] if tools is not None else None
    if provider == "openai_chat":
        tools = body.get("tools")
        return [tool["function"]["name"] for tool in tools] if tools is not None else None
    if provider == "openai_responses":
        tools = body.get("tools")
        return [tool["name"] for tool in tools] if tools is not None else None
    if provider == "bedrock":
        config = body.get("toolConfig")
        return [tool["toolSpec"]["name"] for tool in config["tools"]] if config is not None else None
    if provider == "gemini":
        tools = body.get("tools")
        return (
            [d["name"] for tool in tools for d in tool["functionDeclarations"]] if tools is not None else None
        )
    raise AssertionError(provider)


def _empty_body(provider: str) -> dict[str, Any]:
    return {}


def _wrap(provider: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    key = {"openai_responses": "input", "gemini": "contents"}.get(provider, "messages")
    return {key: items}
