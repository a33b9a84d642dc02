"""Prompt caching as the provider bills it: the fake server's Anthropic cache against our breakpoints.

Within a turn each request carries the previous one whole, so what the previous request wrote must be
read back: ``reads[k+1] == reads[k] + writes[k]`` (the check anthropics/claude-code#63930 proposes for
a healthy session), however many parallel calls an iteration adds (the cache looks back 20 blocks).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import turnmemory as tm
from turnmemory.llm import Client, RetryPolicy, ToolResult, ToolSpec, Usage, open_client
from turnmemory.providers.check import check_request
from turnmemory.testing import FakeProviderServer, PromptCache, Reply, ToolCall

LOOKUP = ToolSpec("lookup", "Look up.", {"type": "object", "properties": {"q": {"type": "string"}}})
SYSTEM = tm.Message("system", "You are a careful assistant. " * 40)


@pytest.fixture(scope="module")
def cached() -> Iterator[FakeProviderServer]:
    with FakeProviderServer(cache=PromptCache()) as server:
        yield server


def client_of(server: FakeProviderServer) -> Client:
    return open_client(
        "anthropic",
        model="claude-sonnet-4-6",
        base_url=server.base_url("anthropic"),
        api_key="test-key",
        retry=RetryPolicy(attempts=1),
    )


def answer(call_id: str, name: str, arguments: dict[str, Any]) -> ToolResult:
    return ToolResult(output={"answer": f"value of {arguments.get('q')}" * 3})


def run(client: Client, history: list[tm.Message], prompt: str) -> list[Usage]:
    """One turn; the usage of each of its requests."""
    events = list(client.run_turn(history, prompt, tools=[LOOKUP], execute=answer))
    assert events[-1].kind == "done", events[-1]
    return [event.usage for event in events if event.kind == "usage" and event.usage is not None]


def script(widths: list[int]) -> list[Reply]:
    """A turn whose iterations make ``widths`` parallel calls each, then an answer."""
    replies = [
        Reply(text=f"Step {n}.", tool_calls=[ToolCall("lookup", {"q": f"{n}-{k}"}) for k in range(width)])
        for n, width in enumerate(widths)
    ]
    return [*replies, Reply(text="All done.")]


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(widths=st.lists(st.integers(1, 30), min_size=1, max_size=3), resumed=st.booleans())
@example(widths=[25], resumed=False)
@example(widths=[2, 21], resumed=True)
def test_reads_grow_by_the_previous_requests_writes_within_a_turn(
    cached: FakeProviderServer, widths: list[int], resumed: bool
) -> None:
    client = client_of(cached)
    history = [SYSTEM, tm.Message("user", f"Start {widths} {resumed}"), tm.Message("assistant", "Ready.")]
    cached.push(Reply(text="Warm."))
    run(client, history[:2], history[1].content)
    if resumed:  # a new process: the client knows nothing of the requests before it
        client = client_of(cached)
    cached.push(*script(widths))
    usages = run(client, history, "Look everything up.")
    assert len(usages) == len(widths) + 1
    assert usages[0].cached_tokens > 0  # the system prompt and the earlier prompt, written by the first turn
    for before, after in itertools.pairwise(usages):
        assert after.cached_tokens == before.cached_tokens + before.cache_write_tokens
        assert after.input_tokens == after.cached_tokens + after.cache_write_tokens + after.uncached_tokens


def test_the_cache_misses_what_lies_beyond_its_look_back() -> None:
    """The simulated cache itself: a breakpoint finds an earlier entry only within 20 blocks before it."""
    first = {
        "messages": [
            {
                "role": "user",
                "content": [{"type": "text", "text": "go", "cache_control": {"type": "ephemeral"}}],
            }
        ]
    }

    def later(appended: int) -> dict[str, Any]:
        blocks = [{"type": "text", "text": f"block {n}"} for n in range(appended)]
        blocks[-1]["cache_control"] = {"type": "ephemeral"}
        return {"messages": [{"role": "user", "content": [{"type": "text", "text": "go"}, *blocks]}]}

    def after_first(appended: int, model: str = "m") -> Usage:
        cache = PromptCache()
        cache.usage(first, "m", 1)
        return cache.usage(later(appended), model, 1)

    near, far = after_first(20), after_first(21)
    assert near.cached_tokens > 0 and near.cached_tokens + near.cache_write_tokens == near.input_tokens
    assert far.cached_tokens == 0 and far.cache_write_tokens == far.input_tokens
    assert after_first(3, "other-model").cached_tokens == 0
    expired = PromptCache(ttl=0.0)
    expired.usage(first, "m", 1)
    assert expired.usage(first, "m", 1).cached_tokens == 0


def _marked(texts: list[str], marks: set[int]) -> dict[str, Any]:
    content = [
        {"type": "text", "text": text, **({"cache_control": {"type": "ephemeral"}} if n in marks else {})}
        for n, text in enumerate(texts)
    ]
    return {"messages": [{"role": "user", "content": content}]}


@pytest.mark.parametrize(
    ("marks", "problem"),
    [
        ({0, 1, 2, 3}, None),
        ({0, 1, 2, 3, 4}, "5 breakpoints, at most 4"),
        ({0, 5, 10, 15, 20, 25}, "6 breakpoints"),
    ],
)
def test_check_request_counts_breakpoints(marks: set[int], problem: str | None) -> None:
    problems = check_request("anthropic", _marked([f"t{n}" for n in range(30)], marks))
    assert (problem is None) == (not problems)
    if problem is not None:
        assert problem in problems[0]


def test_check_request_refuses_markers_on_thinking_and_unknown_kinds() -> None:
    body = {
        "messages": [
            {"role": "user", "content": "q"},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "thinking",
                        "thinking": "t",
                        "signature": "s",
                        "cache_control": {"type": "ephemeral"},
                    },
                    {"type": "text", "text": "a", "cache_control": {"type": "persistent"}},
                ],
            },
        ]
    }
    problems = check_request("anthropic", body)
    assert any("thinking block cannot carry cache_control" in p for p in problems)
    assert any("must be" in p and "messages[1].content[1]" in p for p in problems)


@pytest.mark.parametrize(("appended", "far"), [(5, False), (20, False), (21, True), (40, True)])
def test_check_request_applies_the_look_back_against_the_previous_request(appended: int, far: bool) -> None:
    texts = [f"t{n}" for n in range(4)]
    previous = _marked(texts, {3})
    body = _marked([*texts, *(f"n{n}" for n in range(appended))], {3 + appended})
    problems = check_request("anthropic", body, previous=previous)
    assert bool(problems) == far
    assert not check_request(
        "anthropic",
        _marked([*texts, *(f"n{n}" for n in range(appended))], {3, 3 + appended}),
        previous=previous,
    )


def _breakpoints(body: Any) -> list[str]:
    found = []
    for i, item in enumerate(body.get("messages") or body.get("input") or ()):
        for field in ("content", "output"):
            parts = item.get(field)
            for part in parts if isinstance(parts, list) else ():
                if isinstance(part, dict) and "prompt_cache_breakpoint" in part:
                    found.append(f"{i}:{item.get('role') or item.get('type')}")
    return found


@pytest.mark.parametrize("provider", ["openai_chat", "openai_responses"])
@pytest.mark.parametrize(
    ("model", "marked"),
    [("gpt-5.6", True), ("gpt-5.6-mini", True), ("gpt-6", True), ("gpt-5", False), ("gpt-4.1", False)],
)
def test_openai_models_that_take_it_get_a_breakpoint_at_the_end_of_the_compacted_prefix(
    cached: FakeProviderServer, provider: str, model: str, marked: bool
) -> None:
    client = open_client(
        provider,
        model=model,
        base_url=cached.base_url(provider),
        api_key="k",
        retry=RetryPolicy(attempts=1),
        session_id="s1",
    )
    history = [SYSTEM, tm.Message("user", "Earlier"), tm.Message("assistant", "Earlier answer.")]
    cached.push(Reply(text="Looking.", tool_calls=[ToolCall("lookup", {"q": "x"})]), Reply(text="Done."))
    events = list(client.run_turn(history, "Now", tools=[LOOKUP], execute=answer))
    assert events[-1].kind == "done"
    for request in cached.requests[-2:]:
        assert request.body["prompt_cache_key"] == "s1"
        # The last item of the prefix that takes one: the earlier prompt (the assistant's answer cannot;
        # Responses sends the system prompt as instructions, so the prompt is its first item).
        prompt = "1:user" if provider == "openai_chat" else "0:user"
        assert _breakpoints(request.body) == ([prompt] if marked else [])
