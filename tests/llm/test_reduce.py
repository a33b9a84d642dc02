"""The in-turn reducer, through the real SDK clients against the fake provider server.

Long turns are scripted (hundreds of tool calls with sizeable results) under a small configured
window. Every request the server receives must pass the provider checker and fit the window
(measured on the body as sent), the turn must end ``done``, every call keep its one result, and
the reducer must clear in chunks: few requests break the prefix of the one before.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from turnmemory.llm import CLEARED, Client, Event, ToolResult, ToolSpec, open_counter
from turnmemory.memory import Message
from turnmemory.providers.check import check_request
from turnmemory.testing import FakeProviderServer, Reply, ToolCall

PROVIDERS = ("anthropic", "openai_chat", "openai_responses", "gemini", "bedrock")

READ = ToolSpec(
    "read_file",
    "Read a file.",
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)
WRITE = ToolSpec(
    "write_file",
    "Write a file.",
    {
        "type": "object",
        "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["path", "content"],
    },
)

WINDOW = 60_000
RESERVE = 4096
CHUNK = 16_000


def file_text(n: int, lines: int = 12) -> str:
    """A distinct, deterministic file body (about 17 tokens per line)."""
    return "\n".join(f"line {j} of file {n}: value_{n * j % 97} = compute({j}, {n})" for j in range(lines))


class Reader:
    """Executes ``read_file`` calls, each returning a distinct body; remembers which call got which."""

    def __init__(self, lines: int = 12) -> None:
        self.lines = lines
        self.bodies: dict[str, str] = {}

    def __call__(self, call_id: str, name: str, arguments: dict[str, Any]) -> ToolResult:
        body = file_text(len(self.bodies), self.lines)
        self.bodies[call_id] = body
        return ToolResult(output={"content": body})


def run(client: Client, prompt: str, tools: list[ToolSpec], execute: Any) -> list[Event]:
    return list(client.run_turn([], prompt, tools=tools, execute=execute))


def prefix_breaks(views: list[list[Any]]) -> int:
    """How many requests do not extend the request before them."""
    return sum(1 for before, after in itertools.pairwise(views) if after[: len(before)] != before)


@pytest.fixture
def long_client(make_client: Callable[..., Client]) -> Callable[..., Client]:
    def make(provider: str, **options: Any) -> Client:
        settings = {"context_window": WINDOW, "context_reserve": RESERVE, "clear_at_least": CHUNK}
        return make_client(provider, attempts=1, **{"max_tool_turns": 1000, **settings, **options})

    return make


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_300_call_turn_finishes_within_the_window(
    provider: str,
    server: FakeProviderServer,
    long_client: Callable[..., Client],
    entries: Callable[[str, dict[str, Any]], list[Any]],
) -> None:
    rounds, per_round = 15, 20
    server.push(
        *(
            Reply(
                text=f"Reading batch {k}.",
                tool_calls=[ToolCall("read_file", {"path": f"src/f{k}_{m}.py"}) for m in range(per_round)],
            )
            for k in range(rounds)
        ),
        Reply(text="Everything is read."),
    )
    reader = Reader()
    events = run(long_client(provider), "Read every file.", [READ], reader)

    assert events[-1].kind == "done", events[-1]
    reduced = [event for event in events if event.kind == "reduced"]
    assert reduced and all(event.tokens >= CHUNK * 0.9 for event in reduced[:-1])
    counter = open_counter()
    bodies = [request.body for request in server.requests]
    assert len(bodies) == rounds + 1
    for body in bodies:
        assert check_request(provider, body) == []
        assert counter.value(body) <= WINDOW - RESERVE
    views = [entries(provider, body) for body in bodies]
    breaks = prefix_breaks(views)
    assert 1 <= breaks <= len(reduced) and breaks <= len(bodies) // 4

    last = views[-1]
    calls = [entry for entry in last if entry[0] == "call"]
    results = {entry[1]: entry[2] for entry in last if entry[0] == "result"}
    assert len(calls) == rounds * per_round and set(results) == {call[1] for call in calls}
    cleared = [call_id for call_id, text in results.items() if CLEARED in text]
    assert cleared, "the last request should carry cleared results"
    # The oldest results go first, and the latest round is intact: the model has not read it yet.
    order = [call[1] for call in calls]
    assert set(order[: len(cleared)]) == set(cleared)
    assert all(CLEARED not in results[call_id] for call_id in order[-per_round:])
    for call_id in order[-per_round:]:
        if provider != "gemini":  # Gemini pairs by name here; bodies are checked by position above
            assert reader.bodies[call_id].splitlines()[0] in results[call_id]
    assert "read_file" in results[cleared[0]] and "again" in results[cleared[0]]


SMALL = {"context_window": 8000, "context_reserve": 1024, "clear_at_least": 1000}
"""A small window for the tests of the reducer's limits (their streams stay short)."""


def dense(seed: int, words: int = 6) -> str:
    """Prose of few long words (the fake server streams one delta per word) and many tokens."""
    return " ".join(hashlib.sha256(f"{seed}-{i}".encode()).hexdigest() * 8 for i in range(words))


def within(server: FakeProviderServer, window: int, reserve: int) -> bool:
    counter = open_counter()
    return all(counter.value(request.body) <= window - reserve for request in server.requests)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_history_that_cannot_fit_ends_the_turn_before_any_request(
    provider: str, server: FakeProviderServer, long_client: Callable[..., Client]
) -> None:
    prompt = "Please look at this:\n" + file_text(0, lines=600)
    events = run(long_client(provider, **SMALL), prompt, [READ], Reader())

    assert server.requests == []
    assert events[-1].kind == "error" and events[-1].reason == "context_overflow"
    assert "context overflow" in (events[-1].error or "")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_when_nothing_more_can_be_cleared_the_turn_is_incomplete_never_a_400(
    provider: str, server: FakeProviderServer, long_client: Callable[..., Client]
) -> None:
    # Assistant prose is never cleared: enough of it overflows whatever the results.
    server.push(
        *(Reply(text=dense(k), tool_calls=[ToolCall("read_file", {"path": "a.py"})]) for k in range(10))
    )
    client = long_client(provider, **SMALL)
    events = run(client, "Go.", [READ], Reader())

    final = events[-1]
    assert final.kind == "incomplete" and final.reason == "context_overflow", final
    assert "context overflow" in (final.error or "")
    assert server.remaining > 0 and within(server, 8000, 1024)
    assert client.pending is not None
    server.reset()


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_reducer_clears_pending_state_and_it_stays_cleared(
    provider: str, server: FakeProviderServer, long_client: Callable[..., Client]
) -> None:
    client = long_client(provider, max_tool_turns=3, **SMALL)
    script = [
        Reply(text=f"Batch {k}.", tool_calls=[ToolCall("read_file", {"path": f"f{k}_{m}"}) for m in range(3)])
        for k in range(3)
    ]
    server.push(*script)
    first = run(client, "Read.", [READ], Reader())
    assert first[-1].kind == "incomplete" and first[-1].reason == "tool_limit"
    assert CLEARED not in json.dumps(client.pending)

    client.turn_limits = replace(client.turn_limits, max_tool_turns=100)
    server.push(
        *(
            Reply(
                text=f"More {k}.", tool_calls=[ToolCall("read_file", {"path": f"g{k}_{m}"}) for m in range(3)]
            )
            for k in range(4)
        ),
        Reply(text="Done."),
    )
    history = [Message(role="user", content="Read.")]
    second = list(client.run_turn(history, "Continue.", tools=[READ], execute=Reader(lines=40)))
    assert second[-1].kind == "done", second[-1]
    assert any(event.kind == "reduced" for event in second)
    bodies = [json.dumps(request.body) for request in server.requests[len(script) :]]
    # The first turn's results (pending state, oldest) are cleared first, and stay cleared.
    first_line = file_text(0).splitlines()[0]
    assert first_line in bodies[0]
    gone = next(i for i, body in enumerate(bodies) if first_line not in body)
    assert all(first_line not in body and CLEARED in body for body in bodies[gone:])
    assert within(server, 8000, 1024)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_output_too_large_for_the_window_asks_for_less_instead_of_overflowing(
    provider: str, server: FakeProviderServer, long_client: Callable[..., Client]
) -> None:
    server.push(
        Reply(text="Reading.", tool_calls=[ToolCall("read_file", {"path": "huge.log"})]),
        Reply(text="Too big; I will read less."),
    )
    events = run(long_client(provider, **SMALL), "Read the log.", [READ], Reader(lines=600))

    assert events[-1].kind == "done", events[-1]
    last = json.dumps(server.requests[-1].body)
    assert "does not fit" in last and "less of it at a time" in last and "line 599" not in last
    assert within(server, 8000, 1024)


@pytest.mark.parametrize("provider", ["openai_chat", "openai_responses", "bedrock", "anthropic"])
def test_large_arguments_are_cleared_when_results_are_not_enough(
    provider: str, server: FakeProviderServer, long_client: Callable[..., Client]
) -> None:
    body = file_text(7, lines=60)
    server.push(
        *(
            Reply(
                text=f"Writing {k}.",
                tool_calls=[ToolCall("write_file", {"path": f"out{k}.py", "content": body})],
            )
            for k in range(10)
        ),
        Reply(text="Written."),
    )
    events = run(long_client(provider, **SMALL), "Write them.", [WRITE], lambda *_: ToolResult(output="ok"))

    assert events[-1].kind == "done", events[-1]
    assert any("arguments" in event.text for event in events if event.kind == "reduced")
    last = json.dumps(server.requests[-1].body)
    assert "out0.py" in last and CLEARED in last and body.splitlines()[1] in last
    assert within(server, 8000, 1024)


def test_responses_with_signed_thinking_are_never_edited_only_folded_whole(
    server: FakeProviderServer, long_client: Callable[..., Client]
) -> None:
    body = file_text(7, lines=60)
    server.push(
        *(
            Reply(
                text=f"Writing {k}.",
                reasoning="I should write it.",
                tool_calls=[ToolCall("write_file", {"path": f"out{k}.py", "content": body})],
            )
            for k in range(10)
        ),
        Reply(text="Written."),
    )
    events = run(
        long_client("anthropic", **SMALL), "Write them.", [WRITE], lambda *_: ToolResult(output="ok")
    )

    assert events[-1].kind == "done", events[-1]
    assert any("folded" in event.text for event in events if event.kind == "reduced")
    signed = [
        message["content"]
        for request in server.requests
        for message in request.body["messages"]
        if isinstance(message["content"], list) and any(b["type"] == "thinking" for b in message["content"])
    ]
    # A response that keeps its signed thinking keeps its arguments whole; folding drops the thinking
    # with the response (an earlier response's thinking may be left out), never edits it.
    uses = [block for content in signed for block in content if block["type"] == "tool_use"]
    assert len(uses) >= 10 and all(block["input"]["content"] == body for block in uses)
    assert all(check_request("anthropic", request.body) == [] for request in server.requests)
    assert within(server, 8000, 1024)


def test_calibration_follows_reported_usage_of_real_size_requests(
    server: FakeProviderServer, long_client: Callable[..., Client]
) -> None:
    from turnmemory.testing import Usage

    client = long_client("openai_chat")
    first = client.accounting.ratio
    server.push(
        Reply(text="Reading.", tool_calls=[ToolCall("read_file", {"path": "a"}) for _ in range(30)]),
        Reply(text="Done.", usage=Usage(input_tokens=10)),
    )
    run(client, "Read.", [READ], Reader())
    assert client.accounting.ratio == first  # 10 tokens cannot describe a request of thousands

    estimate = client.accounting.counter.value(server.requests[-1].body)
    server.push(
        Reply(text="Again.", tool_calls=[ToolCall("read_file", {"path": "a"}) for _ in range(30)]),
        Reply(text="Done.", usage=Usage(input_tokens=int(estimate * 1.3))),
    )
    client.drop_pending()
    run(client, "Read.", [READ], Reader())
    assert 1.1 < client.accounting.ratio < 1.5


BASH = ToolSpec(
    "bash",
    "Run a command.",
    {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_cleared_results_keep_their_short_facts_and_the_memory_its_failed_commands(
    provider: str, server: FakeProviderServer, long_client: Callable[..., Client]
) -> None:
    client = long_client(provider, max_tool_turns=6, **SMALL)
    server.push(
        *(
            Reply(text=f"Run {k}.", tool_calls=[ToolCall("bash", {"command": f"make test{k}"})])
            for k in range(6)
        )
    )

    def failing(call_id: str, name: str, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult(output={"exit_code": 3, "stdout": file_text(len(call_id), lines=90)})

    events = run(client, "Run the tests.", [BASH], failing)
    assert events[-1].reason == "tool_limit" and any(event.kind == "reduced" for event in events)
    pending = json.dumps(client.pending)
    assert CLEARED in pending
    memory = client.drop_pending()
    assert memory is not None and memory.turn_memory is not None
    activities = memory.turn_memory.tool_activity
    assert len(activities) == 6
    assert all(a.exit_code == 3 and a.failed_command == f"make test{k}" for k, a in enumerate(activities))
