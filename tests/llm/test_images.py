"""Images in a turn's prompt, through each real SDK against the fake server: every request of the turn
carries them as the wire's image part (checked by ``check_request`` on the server), nothing after it does."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import pytest
from tests.images import png

import turnmemory as tm
from turnmemory.llm import Client, Image, ToolResult, ToolSpec
from turnmemory.providers import PROVIDERS
from turnmemory.testing import Failure, FakeProviderServer, Reply, ToolCall

MakeClient = Callable[..., Client]
LOOKUP = ToolSpec("lookup", "Look up.", {"type": "object", "properties": {"q": {"type": "string"}}})


def answer(call_id: str, name: str, arguments: dict[str, Any]) -> ToolResult:
    return ToolResult(output={"answer": 42})


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_turns_requests_carry_the_image_and_the_next_turn_does_not(
    provider: str, server: FakeProviderServer, make_client: MakeClient
) -> None:
    data = png(4, 3) + bytes(range(256))  # bytes after IEND: base64 of every symbol, + and / included
    image = Image.of("shot.png", data)
    assert image is not None and (image.width, image.height) == (4, 3)
    client = make_client(provider)
    server.push(
        Reply(text="Looking.", tool_calls=[ToolCall("lookup", {"q": "x"})]), Reply(text="A black square.")
    )
    events = list(client.run_turn([], "What is this?", tools=[LOOKUP], execute=answer, images=[image]))
    assert events[-1].kind == "done", events[-1]
    first, second = (json.dumps(request.body) for request in server.requests[-2:])
    encoded = base64.b64encode(data).decode()
    if provider == "gemini":  # its SDK writes bytes in the URL-safe alphabet, as protobuf's JSON allows
        encoded = base64.urlsafe_b64encode(data).decode()
    assert encoded in first and encoded in second  # every request of the turn
    history = [tm.Message("user", "What is this?"), tm.Message("assistant", "A black square.")]
    server.push(Reply(text="Fine."))
    assert list(client.run_turn(history, "Thanks"))[-1].kind == "done"
    assert encoded not in json.dumps(server.requests[-1].body)


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("after", ["incomplete", "raw_trace"])
def test_no_later_request_carries_the_image(
    provider: str, after: str, server: FakeProviderServer, make_client: MakeClient
) -> None:
    """Neither the pending state of an incomplete turn nor the raw trace a finished turn keeps
    (``boundary="never"``) holds the image: the next turn's requests carry none of it."""
    data = png(2, 2) + bytes(range(256))
    image = Image.of("shot.png", data)
    assert image is not None
    client = make_client(provider, attempts=1, boundary="never" if after == "raw_trace" else "every_turn")
    last = Failure(400, "no") if after == "incomplete" else Reply(text="Done.")
    server.push(Reply(text="Looking.", tool_calls=[ToolCall("lookup", {"q": "x"})]), last)
    events = list(client.run_turn([], "What is this?", tools=[LOOKUP], execute=answer, images=[image]))
    assert events[-1].kind == ("incomplete" if after == "incomplete" else "done")
    assert (client.pending is not None) == (after == "incomplete")
    assert image.base64 not in json.dumps(client.pending or [])
    history = [tm.Message("user", "What is this?")]
    if after == "raw_trace":
        history.append(tm.Message("assistant", "Looking.Done."))
    server.push(Reply(text="Fine."))
    assert list(client.run_turn(history, "Go on", tools=[LOOKUP], execute=answer))[-1].kind == "done"
    later = json.dumps(server.requests[-1].body)
    assert "lookup" in later  # the earlier turn's work is there, raw or pending
    assert image.base64 not in later and base64.urlsafe_b64encode(data).decode() not in later


def test_an_image_the_provider_does_not_take_is_refused_before_any_request(
    server: FakeProviderServer, make_client: MakeClient
) -> None:
    client = make_client("gemini")
    image = Image.of("anim.gif", b"GIF89a" + b"\0" * 20)
    assert image is not None
    with pytest.raises(ValueError, match="images: gemini takes png, jpeg, webp images, not gif"):
        client.run_turn([], "What is this?", images=[image])
    assert server.requests == []


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_image_joins_a_prompt_that_follows_pending_results(
    provider: str, server: FakeProviderServer, make_client: MakeClient
) -> None:
    """After an incomplete turn the prompt shares its message with the pending results on some wires:
    the image goes after the results and before the prompt's text (the server checks the order)."""
    image = Image.of("shot.png", png(2, 2))
    assert image is not None
    client = make_client(provider, attempts=1)
    server.push(Reply(text="Looking.", tool_calls=[ToolCall("lookup", {"q": "x"})]), Failure(400, "no"))
    assert list(client.run_turn([], "First", tools=[LOOKUP], execute=answer))[-1].kind == "incomplete"
    server.push(Reply(text="Seen."))
    history = [tm.Message("user", "First")]
    events = list(client.run_turn(history, "And this?", tools=[LOOKUP], execute=answer, images=[image]))
    assert events[-1].kind == "done", events[-1]
    body = json.dumps(server.requests[-1].body)
    assert body.index("lookup") < body.rindex("And this?")
