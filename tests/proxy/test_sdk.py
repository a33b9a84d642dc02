"""The official SDK clients through the proxy, with the fake provider server as upstream.

Each conversation runs twice in lockstep against two fake servers with the same script: once through
the proxy, once directly. What the direct server received is what the client sent; the proxied
server must receive exactly that with the completed turns compacted by ``compact_request`` (nothing
else changed), and the client must get byte for byte what the upstream answered.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import anthropic
import openai
import pytest
from tests.providers.sdk_validators import validate
from tests.proxy._serving import Recording, serving

from turnmemory.integrations import compact_request
from turnmemory.proxy import ProxyApp
from turnmemory.testing import FakeProviderServer, Reply, ToolCall

RAW = "RAW-TOOL-OUTPUT-7f3a"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
SYSTEM = "You are a coding agent. Be brief."
SCRIPT = [
    Reply(
        reasoning="Two checks at once.",
        text="Running both.",
        tool_calls=[ToolCall("Bash", {"command": "pytest -q"}), ToolCall("Read", {"file_path": "/ws/a.py"})],
    ),
    Reply(text="Fixed the test."),
    Reply(reasoning="Docs next.", tool_calls=[ToolCall("Bash", {"command": "make docs"})]),
    Reply(text="Docs built."),
]
SCHEMA = {"type": "object", "properties": {"command": {"type": "string"}}}
IGNORED_HEADERS = {"date", "connection", "transfer-encoding"}

Items = list[dict[str, Any]]


class Anthropic:
    wire = "anthropic"
    key = "messages"

    def __init__(self, base_url: str, recording: Recording) -> None:
        self.client = anthropic.Anthropic(
            api_key="sk-ant-test", base_url=base_url, http_client=recording.client(), max_retries=0
        )

    def ask(self, history: Items, stream: bool) -> Items:
        kwargs: dict[str, Any] = {
            "model": "claude-x",
            "max_tokens": 2048,
            "system": [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}],
            "tools": [{"name": n, "description": n, "input_schema": SCHEMA} for n in ("Bash", "Read")],
            "thinking": {"type": "enabled", "budget_tokens": 1024},
            "messages": history,
        }
        if stream:
            with self.client.messages.stream(**kwargs) as events:
                message = events.get_final_message()
        else:
            message = self.client.messages.create(**kwargs)
        return [{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]}]

    @staticmethod
    def calls(items: Items) -> list[str]:
        return [b["id"] for b in items[-1]["content"] if b["type"] == "tool_use"]

    @staticmethod
    def results(ids: list[str]) -> Items:
        image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
        results = [
            {"type": "tool_result", "tool_use_id": i, "content": [{"type": "text", "text": RAW}, image]}
            for i in ids
        ]
        return [{"role": "user", "content": results}]

    @staticmethod
    def user(text: str) -> Items:
        image = {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": PNG},
            "cache_control": {"type": "ephemeral"},
        }
        return [{"role": "user", "content": [{"type": "text", "text": text}, image]}]


class Chat:
    wire = "openai_chat"
    key = "messages"

    def __init__(self, base_url: str, recording: Recording) -> None:
        self.client = openai.OpenAI(
            api_key="sk-test", base_url=base_url + "/v1", http_client=recording.client(), max_retries=0
        )

    def ask(self, history: Items, stream: bool) -> Items:
        tools: Any = [
            {"type": "function", "function": {"name": n, "parameters": SCHEMA}} for n in ("Bash", "Read")
        ]
        messages: Any = [{"role": "system", "content": SYSTEM}, *history]
        if stream:
            with self.client.chat.completions.stream(model="gpt-x", messages=messages, tools=tools) as events:
                completion = events.get_final_completion()
        else:
            completion = self.client.chat.completions.create(model="gpt-x", messages=messages, tools=tools)
        message = completion.choices[0].message
        item: dict[str, Any] = {"role": "assistant", "content": message.content}
        if message.tool_calls:
            item["tool_calls"] = [
                {"id": c.id, "type": "function", "function": c.function.model_dump()}  # type: ignore[union-attr]
                for c in message.tool_calls
            ]
        return [item]

    @staticmethod
    def calls(items: Items) -> list[str]:
        return [c["id"] for c in items[-1].get("tool_calls", ())]

    @staticmethod
    def results(ids: list[str]) -> Items:
        return [{"role": "tool", "tool_call_id": i, "content": RAW} for i in ids]

    @staticmethod
    def user(text: str) -> Items:
        image = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}
        return [{"role": "user", "content": [{"type": "text", "text": text}, image]}]


class Responses:
    wire = "openai_responses"
    key = "input"

    def __init__(self, base_url: str, recording: Recording) -> None:
        self.client = openai.OpenAI(
            api_key="sk-test", base_url=base_url + "/v1", http_client=recording.client(), max_retries=0
        )

    def ask(self, history: Items, stream: bool) -> Items:
        kwargs: dict[str, Any] = {
            "model": "gpt-x",
            "instructions": SYSTEM,
            "input": history,
            "tools": [{"type": "function", "name": n, "parameters": SCHEMA} for n in ("Bash", "Read")],
            "store": False,
            "include": ["reasoning.encrypted_content"],
        }
        if stream:
            with self.client.responses.stream(**kwargs) as events:
                response = events.get_final_response()
        else:
            response = self.client.responses.create(**kwargs)
        return [item.model_dump(exclude_none=True) for item in response.output]

    @staticmethod
    def calls(items: Items) -> list[str]:
        return [i["call_id"] for i in items if i.get("type") == "function_call"]

    @staticmethod
    def results(ids: list[str]) -> Items:
        return [{"type": "function_call_output", "call_id": i, "output": RAW} for i in ids]

    @staticmethod
    def user(text: str) -> Items:
        image = {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}", "detail": "auto"}
        return [{"role": "user", "content": [{"type": "input_text", "text": text}, image]}]


CLIENTS: dict[str, Callable[[str, Recording], Any]] = {
    "anthropic": Anthropic,
    "openai_chat": Chat,
    "openai_responses": Responses,
}


class Twins:
    """The same script behind the proxy and beside it, with a recording SDK client for each."""

    def __init__(
        self, wire: str, proxied: FakeProviderServer, direct: FakeProviderServer, proxy: str
    ) -> None:
        self.proxied, self.direct = proxied, direct
        self.via, self.beside = Recording(), Recording()
        self.through = CLIENTS[wire](proxy, self.via)
        self.straight = CLIENTS[wire](direct.url, self.beside)

    def ask(self, history: Items, stream: bool) -> Items:
        got = self.through.ask(history, stream)
        assert got == self.straight.ask(history, stream)
        return got  # type: ignore[no-any-return]

    def assert_relayed_unchanged(self) -> None:
        """The client got what the upstream sent: status, headers and every body byte."""
        assert self.via.statuses == self.beside.statuses
        assert [bytes(b) for b in self.via.bodies] == [bytes(b) for b in self.beside.bodies]
        for through, straight in zip(self.via.headers, self.beside.headers, strict=True):
            assert {k: v for k, v in through.items() if k not in IGNORED_HEADERS} == {
                k: v for k, v in straight.items() if k not in IGNORED_HEADERS
            }


@pytest.fixture
def twins(request: pytest.FixtureRequest) -> Iterator[Callable[[str], Twins]]:
    boundary = getattr(request, "param", "every_turn")  # the proxy's boundary policy
    with FakeProviderServer() as proxied, FakeProviderServer() as direct:
        app = ProxyApp(
            anthropic_upstream=proxied.url, openai_upstream=proxied.base_url("openai_chat"), boundary=boundary
        )
        with serving(app) as proxy:
            yield lambda wire: Twins(wire, proxied, direct, proxy)


def _converse(pair: Twins, stream: bool) -> tuple[list[Any], list[Any]]:
    """The script's two turns through the proxy and beside it: what was sent, what the upstream got."""
    pair.proxied.push(*SCRIPT)
    pair.direct.push(*SCRIPT)
    agent = pair.through
    history = agent.user("fix the failing test")
    for step in range(len(SCRIPT)):
        answer = pair.ask(history, stream)
        history += answer
        calls = agent.calls(answer)
        if calls:
            history += agent.results(calls)
        elif step == 1:
            history += agent.user("now build the docs")
    pair.assert_relayed_unchanged()
    return [r.body for r in pair.direct.requests], [r.body for r in pair.proxied.requests]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("wire", list(CLIENTS))
def test_a_conversation_through_the_proxy(wire: str, stream: bool, twins: Callable[[str], Twins]) -> None:
    pair = twins(wire)
    agent = pair.through
    sent, received = _converse(pair, stream)
    assert len(sent) == len(received) == len(SCRIPT)
    for number, (body, got) in enumerate(zip(sent, received, strict=True)):
        done = compact_request(agent.wire, body)
        assert (done is not None) == (number >= 2)  # the first turn is complete from the third request on
        assert got == (body if done is None else done.apply(body))
        validate(agent.wire, {agent.key: got[agent.key]})
    # parallel results with raw output in the completed turn are gone; the turn in progress keeps its own
    assert [json.dumps(b).count(RAW) for b in sent] == [0, 2, 2, 3]
    assert [json.dumps(b).count(RAW) for b in received] == [0, 2, 0, 1]
    # the users' images stay; Anthropic's tool results carried two more, gone with their turn
    dropped = [0, 0, 2, 2] if wire == "anthropic" else [0, 0, 0, 0]
    assert [json.dumps(b).count(PNG) for b in received] == [
        json.dumps(b).count(PNG) - d for b, d in zip(sent, dropped, strict=True)
    ]
    if wire == "anthropic":
        last = received[-1]
        assert last["messages"][-2]["content"][0]["type"] == "thinking"
        assert last["messages"][-2]["content"][0]["signature"]
        marks = json.dumps(last).count('"cache_control"')
        assert 2 < marks <= 4  # the system's, the user's image's, and one closing the compacted prefix


@pytest.mark.parametrize("twins", ["never"], indirect=True)
@pytest.mark.parametrize("wire", list(CLIENTS))
def test_a_proxy_that_never_compacts_relays_every_request_as_sent(
    wire: str, twins: Callable[[str], Twins]
) -> None:
    sent, received = _converse(twins(wire), stream=False)
    assert received == sent and json.dumps(received[-1]).count(RAW) == 3


def test_responses_continuing_upstream_history_pass_through(twins: Callable[[str], Twins]) -> None:
    pair = twins("openai_responses")
    pair.proxied.push(Reply(text="ok"))
    pair.direct.push(Reply(text="ok"))
    call = {"type": "function_call", "call_id": "call_1", "name": "Bash", "arguments": "{}"}
    history = [
        {"role": "user", "content": "go"},
        call,
        {"type": "function_call_output", "call_id": "call_1", "output": RAW},
        {"role": "user", "content": "next"},
    ]
    for agent in (pair.through, pair.straight):
        agent.client.responses.create(model="gpt-x", input=history, previous_response_id="resp_001")
    pair.assert_relayed_unchanged()
    assert pair.proxied.requests[0].body == pair.direct.requests[0].body
    assert pair.proxied.requests[0].body["previous_response_id"] == "resp_001"
