"""How streamed pieces become provider-native in-turn state the fake server does not produce.

The fake server streams thinking with signatures, but not redacted thinking, several Gemini text
chunks around a signature, or Bedrock's redacted reasoning; these pure helpers are checked directly.
"""

from __future__ import annotations

from typing import Any

from turnmemory.llm import Event
from turnmemory.llm._stream import Arguments
from turnmemory.llm.anthropic import _param
from turnmemory.llm.bedrock import _delta, _finish
from turnmemory.llm.gemini import _merged


def test_anthropic_blocks_keep_thinking_and_redacted_thinking() -> None:
    assert _param({"type": "thinking", "thinking": "hm", "signature": "sig", "extra": None}) == {
        "type": "thinking",
        "thinking": "hm",
        "signature": "sig",
    }
    assert _param({"type": "redacted_thinking", "data": "opaque"}) == {
        "type": "redacted_thinking",
        "data": "opaque",
    }
    assert _param({"type": "text", "text": "  \n", "citations": None}) is None
    assert _param({"type": "text", "text": "Hi", "citations": None}) == {"type": "text", "text": "Hi"}
    assert _param({"type": "tool_use", "id": "t1", "name": "x", "input": {"a": 1}, "caller": None}) == {
        "type": "tool_use",
        "id": "t1",
        "name": "x",
        "input": {"a": 1},
    }
    server_block = {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {}}
    assert _param(server_block) == server_block


def test_gemini_parts_join_plain_chunks_but_never_a_signed_part() -> None:
    parts = _merged(
        [
            {"text": "Think", "thought": True},
            {"text": "ing.", "thought": True},
            {"text": "Let "},
            {"text": "me."},
            {"text": "", "thought_signature": "c2ln"},
            {"text": " More."},
            {"function_call": {"name": "f", "args": {}}, "thought_signature": "c2lnMg=="},
            {"text": ""},
            {},
        ]
    )
    assert parts == [
        {"text": "Thinking.", "thought": True},
        {"text": "Let me."},
        {"text": "", "thought_signature": "c2ln"},
        {"text": " More."},
        {"function_call": {"name": "f", "args": {}}, "thought_signature": "c2lnMg=="},
    ]


def test_bedrock_blocks_keep_reasoning_signatures_and_redacted_reasoning() -> None:
    blocks: dict[int, dict[str, Any]] = {}
    inputs: dict[int, Arguments] = {}
    deltas: list[tuple[int, dict[str, Any]]] = [
        (0, {"reasoningContent": {"text": "Hmm"}}),
        (0, {"reasoningContent": {"text": "."}}),
        (0, {"reasoningContent": {"signature": "sig"}}),
        (1, {"reasoningContent": {"redactedContent": b"\x00\x01"}}),
        (2, {"text": "Go."}),
        (4, {"text": "  "}),
    ]
    events: list[Event] = []
    blocks[3] = {"toolUse": {"toolUseId": "t1", "name": "probe"}}
    for index, delta in deltas:
        events.extend(_delta(blocks, inputs, index, delta, 1000))
    for piece in ('{"n"', ": 1}"):
        events.extend(_delta(blocks, inputs, 3, {"toolUse": {"input": piece}}, 1000))
    content, calls = _finish(blocks, inputs)
    assert [(e.kind, e.text) for e in events] == [
        ("reasoning", "Hmm"),
        ("reasoning", "."),
        ("text", "Go."),
        ("text", "  "),
    ]
    assert content == [
        {"reasoningContent": {"reasoningText": {"text": "Hmm.", "signature": "sig"}}},
        {"reasoningContent": {"redactedContent": b"\x00\x01"}},
        {"text": "Go."},
        {"toolUse": {"toolUseId": "t1", "name": "probe", "input": {"n": 1}}},
    ]
    assert [(c.id, c.name, c.arguments) for c in calls] == [("t1", "probe", {"n": 1})]


def test_bedrock_unparsable_tool_input_replays_as_an_empty_object() -> None:
    blocks: dict[int, dict[str, Any]] = {0: {"toolUse": {"toolUseId": "t1", "name": "probe"}}}
    streamed = Arguments(1000)
    streamed.add('{"n": ')
    content, calls = _finish(blocks, {0: streamed})
    assert content == [{"toolUse": {"toolUseId": "t1", "name": "probe", "input": {}}}]
    assert calls[0].arguments is None and calls[0].raw_arguments == '{"n": '


def test_anthropic_strips_stale_cache_markers_from_injected_pending_state() -> None:
    import turnmemory as tm
    from turnmemory.llm._sdk import Endpoint, Settings
    from turnmemory.llm.anthropic import AnthropicSdk
    from turnmemory.providers import anthropic

    sdk = AnthropicSdk(Settings(model="m"), Endpoint(api_key="test"))
    marked = {"type": "ephemeral"}
    pending: list[dict[str, Any]] = [
        {
            "role": "assistant",
            "cache_control": marked,
            "content": [
                {"type": "text", "text": "Working.", "cache_control": marked},
                {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {}},
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}]},
    ]
    request = anthropic.to_request(
        [tm.Message("user", "go"), tm.Message("user", "next")], pending=sdk.injected(pending)
    )
    assert "cache_control" not in str(request)
    assert "cache_control" in str(pending)  # the caller's state is left as it was
