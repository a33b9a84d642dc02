"""A call's id and name, as the model gives them, never make the turn's next request fail.

Each call the model makes is echoed back in every later request of its turn (and in pending state).
An id the provider's own rules refuse (too long, a slash on Anthropic, a space on Bedrock), an id used
twice (in one response, in two, or by the pending state of an interrupted turn) and a name no tool may
have would each make every later request of the turn fail with a 400. The fake server checks each
request against the provider's rules, so a turn that ends ``done`` had every request accepted. An id
the provider takes is kept as the model made it: Kimi K2's template shows ``functions.<name>:<n>``
ids in each result's header, pairing it with its call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import turnmemory as tm
from turnmemory.llm import Client, Event, ToolResult, ToolSpec
from turnmemory.providers import PROVIDERS, anthropic, bedrock, openai_chat, openai_responses, wire
from turnmemory.providers._render import tool_name
from turnmemory.testing import FakeProviderServer, Reply, ToolCall

MakeClient = Callable[..., Client]
LOOKUP = ToolSpec(
    name="lookup",
    description="Look something up.",
    input_schema={"type": "object", "properties": {"query": {"type": "string"}}},
)
ACCEPTS: dict[str, Callable[[str], bool]] = {
    "anthropic": anthropic.is_call_id,
    "openai_chat": openai_chat.is_call_id,
    "openai_responses": openai_responses.is_call_id,
    "bedrock": bedrock.is_call_id,
}
"""The wires whose call ids are the model's, and the ids each takes (Gemini's are optional and free-form)."""
NATIVE_IDS = list(ACCEPTS)
BAD_IDS = [
    "a.b/c",
    "x" * 41,
    "toolu_" + "9" * 5000,
    "call 1",
    "call\n1",
    "über",
    "id:with:colons",
    "\x00",
]
BAD_NAMES = ["functions.lookup", "look up", "l" * 5000, "lóok", "repo_browser.open_file", "a/b", "-" * 65]


class Tools:
    """Answers every call; records the ids and names it was called with."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def __call__(self, call_id: str, name: str, arguments: dict[str, Any]) -> ToolResult:
        self.calls.append((call_id, name))
        return ToolResult(output="found")


def run(client: Client, tools: Tools, history: tuple[tm.Message, ...] = ()) -> list[Event]:
    return list(client.run_turn(list(history), "Find it", tools=[LOOKUP], execute=tools))


def pieces(provider: str, body: Any) -> list[Any]:
    module = wire(provider)
    return module.pieces(body[module.ITEMS])


def ended(events: list[Event]) -> tuple[str, str | None]:
    end = events[-1]
    return end.kind, end.error


def call(call_id: str | None, name: str = "lookup") -> ToolCall:
    return ToolCall(name, {"query": "q"}, id=call_id)


@pytest.mark.parametrize("bad", BAD_IDS)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_id_the_provider_refuses_is_replaced(
    provider: str, bad: str, server: FakeProviderServer, make_client: MakeClient
) -> None:
    server.push(Reply(tool_calls=[call(bad)]), Reply(text="Found."))
    tools = Tools()
    assert ended(run(make_client(provider), tools)) == ("done", None)
    assert [name for _, name in tools.calls] == ["lookup"]
    if provider in NATIVE_IDS:
        ((call_id, _),) = tools.calls
        assert ACCEPTS[provider](call_id)
        assert (call_id == bad) == ACCEPTS[provider](bad)


@pytest.mark.parametrize("provider", ["openai_chat", "openai_responses", "bedrock"])
def test_an_id_the_provider_takes_is_kept_as_the_model_made_it(
    provider: str, server: FakeProviderServer, make_client: MakeClient
) -> None:
    kimi = ["functions.lookup:0", "functions.lookup:1"]
    server.push(Reply(tool_calls=[call(call_id) for call_id in kimi]), Reply(text="Found."))
    tools = Tools()
    assert ended(run(make_client(provider), tools)) == ("done", None)
    assert [call_id for call_id, _ in tools.calls] == kimi
    replayed = pieces(provider, server.requests[-1].body)
    assert [piece.call_id for piece in replayed if piece.kind == "call"] == kimi
    assert [piece.call_id for piece in replayed if piece.kind == "result"] == kimi


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_id_used_twice_in_a_response_in_a_turn_or_by_pending_state_is_replaced(
    provider: str, server: FakeProviderServer, make_client: MakeClient
) -> None:
    client = make_client(provider, max_tool_turns=2)
    server.push(
        Reply(tool_calls=[call("same"), call("same")]),
        Reply(tool_calls=[call("same"), call("call_0")]),
    )
    tools = Tools()
    kind, _ = ended(run(client, tools))
    assert kind == "incomplete" and client.pending  # the round limit: the calls stay pending
    server.push(Reply(tool_calls=[call("same"), call("call_0")]), Reply(text="Found."))
    assert ended(run(client, tools, (tm.Message("user", "Find it"),))) == ("done", None)
    assert len(tools.calls) == 6
    if provider in NATIVE_IDS:
        ids = [call_id for call_id, _ in tools.calls]
        assert len(set(ids)) == 6 and ids[0] == "same" and ids[3] == "call_0"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_id_the_history_replays_is_not_taken_again(
    provider: str, server: FakeProviderServer, make_client: MakeClient
) -> None:
    client = make_client(provider)
    memory = tm.TurnMemory((tm.ToolActivity(text_offset=0, tool="lookup"),))
    history = (tm.Message("user", "Find it"), tm.Message("assistant", "Found.", turn_memory=memory))
    server.push(Reply(text="Again."))
    run(client, Tools(), history)
    (replayed,) = [
        piece.call_id for piece in pieces(provider, server.requests[-1].body) if piece.kind == "call"
    ]
    server.push(Reply(tool_calls=[call(replayed)]), Reply(text="Found."))
    tools = Tools()
    assert (
        ended(
            run(client, tools, (*history, tm.Message("user", "Find it"), tm.Message("assistant", "Again.")))
        )[0]
        == "done"
    )
    if provider in NATIVE_IDS:
        ((call_id, _),) = tools.calls
        assert ACCEPTS[provider](call_id) and call_id != replayed


@pytest.mark.parametrize("bad", BAD_NAMES)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_name_no_tool_may_have_replays_as_one_that_every_provider_accepts(
    provider: str, bad: str, server: FakeProviderServer, make_client: MakeClient
) -> None:
    server.push(Reply(tool_calls=[call("c1", bad)]), Reply(text="Found."))
    tools = Tools()
    events = run(make_client(provider), tools)
    assert ended(events) == ("done", None)
    (end,) = [event for event in events if event.kind == "tool_end"]
    assert end.name == tool_name(bad) and len(end.name) <= 64
    assert end.error is not None and end.error.startswith(f"Unknown tool {tool_name(bad)!r}")
    assert not tools.calls


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    provider=st.sampled_from(PROVIDERS),
    responses=st.lists(
        st.lists(
            st.tuples(
                st.one_of(st.none(), st.text(min_size=1, max_size=50)), st.text(min_size=1, max_size=70)
            ),
            min_size=1,
            max_size=3,
        ),
        min_size=1,
        max_size=3,
    ),
)
def test_whatever_ids_and_names_the_model_gives_every_request_is_accepted(
    provider: str,
    responses: list[list[tuple[str | None, str]]],
    server: FakeProviderServer,
    make_client: MakeClient,
) -> None:
    server.reset()
    server.push(
        *(Reply(tool_calls=[call(call_id, name) for call_id, name in batch]) for batch in responses),
        Reply(text="Found."),
    )
    tools = Tools()
    events = run(make_client(provider), tools)
    assert ended(events) == ("done", None)
    ends = [event for event in events if event.kind == "tool_end"]
    assert len(ends) == sum(map(len, responses))
    names = [name for batch in responses for _, name in batch]
    assert [event.name for event in ends] == [tool_name(name) for name in names]
    if provider in NATIVE_IDS:
        ids = [event.call_id for event in ends]
        assert len(set(ids)) == len(ids) and all(map(ACCEPTS[provider], ids))
