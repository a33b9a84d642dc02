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
from turnmemory.testing import FakeProviderServer, Reply, ToolCall

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
