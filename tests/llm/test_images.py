"""Images in a turn's prompt, through each real SDK against the fake server: every request of the turn
carries them as the wire's image part (checked by ``check_request`` on the server), nothing after it does."""

from __future__ import annotations

import base64
import json
import struct
import zlib
from collections.abc import Callable
from typing import Any

import pytest

import turnmemory as tm
from turnmemory.llm import Client, Image, ToolResult, ToolSpec
from turnmemory.providers import PROVIDERS
from turnmemory.testing import FakeProviderServer, Reply, ToolCall

MakeClient = Callable[..., Client]
LOOKUP = ToolSpec("lookup", "Look up.", {"type": "object", "properties": {"q": {"type": "string"}}})


def png(width: int, height: int) -> bytes:
    """A valid PNG of ``width`` x ``height`` black pixels."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\0" + b"\0\0\0" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def answer(call_id: str, name: str, arguments: dict[str, Any]) -> ToolResult:
    return ToolResult(output={"answer": 42})


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_turns_requests_carry_the_image_and_the_next_turn_does_not(
    provider: str, server: FakeProviderServer, make_client: MakeClient
) -> None:
    data = png(4, 3)
    image = Image.of("shot.png", data)
    assert image is not None and (image.width, image.height) == (4, 3)
    client = make_client(provider)
    server.push(
        Reply(text="Looking.", tool_calls=[ToolCall("lookup", {"q": "x"})]), Reply(text="A black square.")
    )
    events = list(client.run_turn([], "What is this?", tools=[LOOKUP], execute=answer, images=[image]))
    assert events[-1].kind == "done", events[-1]
    encoded = base64.b64encode(data).decode()
    first, second = (json.dumps(request.body) for request in server.requests[-2:])
    assert encoded in first and encoded in second  # every request of the turn
    history = [tm.Message("user", "What is this?"), tm.Message("assistant", "A black square.")]
    server.push(Reply(text="Fine."))
    assert list(client.run_turn(history, "Thanks"))[-1].kind == "done"
    assert encoded not in json.dumps(server.requests[-1].body)
