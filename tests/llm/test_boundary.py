"""The boundary policy of the client: when a finished turn's raw trace gives way to its TurnMemory.

Against the fake server's Anthropic cache: deferring the compaction keeps the next turn reading all the
last request wrote; the spec's default rewrites the compacted turn. The raw trace lives in the client
only, and a history that no longer continues it drops it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

import turnmemory as tm
from turnmemory.boundary import BoundaryPolicy
from turnmemory.llm import Client, RetryPolicy, ToolResult, ToolSpec, Usage, open_client, record
from turnmemory.testing import FakeProviderServer, PromptCache, Reply, ToolCall

LOOKUP = ToolSpec("lookup", "Look up.", {"type": "object", "properties": {"q": {"type": "string"}}})
SYSTEM = tm.Message("system", "You are a careful assistant. " * 40)
OUTPUT = "raw output 7f3e that only the trace holds"


@pytest.fixture(scope="module")
def cached() -> Iterator[FakeProviderServer]:
    with FakeProviderServer(cache=PromptCache()) as server:
        yield server


def answer(call_id: str, name: str, arguments: dict[str, Any]) -> ToolResult:
    return ToolResult(output={"content": OUTPUT})


def client_of(server: FakeProviderServer, boundary: BoundaryPolicy, ttl: float | None = 300.0) -> Client:
    return open_client(
        "anthropic",
        model="claude-sonnet-4-6",
        base_url=server.base_url("anthropic"),
        api_key="test-key",
        retry=RetryPolicy(attempts=1),
        boundary=boundary,
        cache_ttl=ttl,
    )


def turn(client: Client, history: list[tm.Message], prompt: str) -> tuple[list[tm.Message], list[Usage]]:
    """One turn with a tool call; the history after it and each request's usage."""
    recorder = tm.TurnRecorder()
    usages = []
    for event in client.run_turn(history, prompt, tools=[LOOKUP], execute=answer):
        record(event, recorder)
        if event.kind == "usage" and event.usage is not None:
            usages.append(event.usage)
    assert event.kind == "done"
    return [*history, tm.Message("user", prompt), recorder.finish()], usages


def two_turns(server: FakeProviderServer, client: Client, tag: str) -> tuple[list[Usage], list[Usage], str]:
    server.push(Reply(text="Looking.", tool_calls=[ToolCall("lookup", {"q": tag})]), Reply(text="Found it."))
    history, first = turn(client, [SYSTEM], f"Find {tag}")
    server.push(Reply(text="Again.", tool_calls=[ToolCall("lookup", {"q": tag})]), Reply(text="Same."))
    _, second = turn(client, history, "And again")
    body = json.dumps(server.requests[-2].body)
    return first, second, body


@pytest.mark.parametrize("boundary", ["when_it_pays", "never"])
def test_a_deferred_boundary_reads_all_the_last_request_wrote(
    cached: FakeProviderServer, boundary: BoundaryPolicy
) -> None:
    client = client_of(cached, boundary)
    first, second, body = two_turns(cached, client, boundary)
    assert OUTPUT in body  # the raw trace went in place of the record
    assert second[0].cached_tokens == first[-1].cached_tokens + first[-1].cache_write_tokens
    assert client.traced_turns == 2


def test_the_spec_default_compacts_at_every_boundary(cached: FakeProviderServer) -> None:
    client = client_of(cached, "every_turn")
    first, second, body = two_turns(cached, client, "spec")
    assert OUTPUT not in body and "historical_" in body
    assert second[0].cached_tokens < first[-1].cached_tokens + first[-1].cache_write_tokens
    assert client.traced_turns == 0


def test_a_cold_cache_compacts_when_it_pays(cached: FakeProviderServer) -> None:
    client = client_of(cached, "when_it_pays", ttl=0.0)  # every pause outlives the cache
    _, _, body = two_turns(cached, client, "cold")
    assert OUTPUT not in body


def test_a_history_that_no_longer_continues_the_trace_drops_it(cached: FakeProviderServer) -> None:
    client = client_of(cached, "never")
    cached.push(Reply(text="Looking.", tool_calls=[ToolCall("lookup", {"q": "x"})]), Reply(text="Found."))
    turn(client, [SYSTEM], "Find x")
    rewritten = [SYSTEM, tm.Message("user", "Summary of earlier turns."), tm.Message("assistant", "Noted.")]
    cached.push(Reply(text="Fine."))
    turn(client, rewritten, "Go on")
    assert OUTPUT not in json.dumps(cached.requests[-1].body)
    assert client.traced_turns == 1  # only the turn just finished
    client.boundary = "every_turn"  # switched back: the next boundary compacts
    cached.push(Reply(text="Done."))
    turn(client, [*rewritten, tm.Message("user", "Go on"), tm.Message("assistant", "Fine.")], "End")
    assert client.traced_turns == 0
