"""Edge cases the formatters resolve in a documented way: blank messages, leading assistants, merges, input errors."""

from __future__ import annotations

from typing import Any

import pytest
from tests.providers.examples import assistant
from tests.providers.strategies import PendingCall, native_pending

import turnmemory as tm
from turnmemory.providers import PROVIDERS, anthropic, bedrock, gemini, openai_chat, openai_responses
from turnmemory.providers.check import check_request

MODULES: dict[str, Any] = {
    "anthropic": anthropic,
    "openai_chat": openai_chat,
    "openai_responses": openai_responses,
    "gemini": gemini,
    "bedrock": bedrock,
}


def test_leading_assistant_messages_are_left_out_where_the_user_must_open() -> None:
    history = [
        tm.Message("assistant", "Hello! How can I help?"),
        tm.Message("user", "  "),
        assistant("Reading.", {"text_offset": 8, "tool": "read_file"}),
        tm.Message("user", "Fix it"),
    ]
    assert anthropic.to_request(history) == {
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Fix it"}]}]
    }
    assert gemini.to_request(history) == {"contents": [{"role": "user", "parts": [{"text": "Fix it"}]}]}
    assert bedrock.to_request(history) == {"messages": [{"role": "user", "content": [{"text": "Fix it"}]}]}
    chat = openai_chat.to_request(history)["messages"]
    assert chat[0] == {"role": "assistant", "content": "Hello! How can I help?"}
    assert check_request("openai_chat", {"messages": chat}) == []


def test_consecutive_user_messages_merge_and_blank_ones_vanish() -> None:
    history = [tm.Message("user", "one"), tm.Message("user", ""), tm.Message("user", "two")]
    assert anthropic.to_request(history)["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]}
    ]
    assert gemini.to_request(history)["contents"] == [
        {"role": "user", "parts": [{"text": "one"}, {"text": "two"}]}
    ]
    assert [m["content"] for m in openai_chat.to_request(history)["messages"]] == ["one", "", "two"]


def test_a_request_ending_with_assistant_prose_drops_its_trailing_whitespace() -> None:
    history = [tm.Message("user", "u"), tm.Message("assistant", "Done.\n\n")]
    assert anthropic.to_request(history)["messages"][-1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Done."}],
    }
    assert bedrock.to_request(history)["messages"][-1] == {
        "role": "assistant",
        "content": [{"text": "Done."}],
    }
    assert openai_chat.to_request(history)["messages"][-1] == {"role": "assistant", "content": "Done.\n\n"}


def test_whitespace_between_batches_joins_the_next_prose() -> None:
    history = [
        tm.Message("user", "u"),
        assistant("A \n\nB", {"text_offset": 1, "tool": "bash"}, {"text_offset": 2, "tool": "grep"}),
        tm.Message("user", "n"),
    ]
    texts = [
        block["text"]
        for message in anthropic.to_request(history)["messages"]
        for block in message["content"]
        if message["role"] == "assistant" and block["type"] == "text"
    ]
    assert texts == ["A", " \n\nB"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_pending_goes_before_the_final_user_message_or_at_the_end(provider: str) -> None:
    module = MODULES[provider]
    pending = native_pending(provider, [("Let me look.", [PendingCall("p1", "read_file")])])
    before = module.to_request([tm.Message("user", "u"), tm.Message("user", "again")], pending=pending)
    after = module.to_request([tm.Message("user", "u"), tm.Message("assistant", "Sure.")], pending=pending)
    assert check_request(provider, before) == []
    assert check_request(provider, after) == []
    assert module.replayed_tool_names(before) == module.replayed_tool_names(after) == ["read_file"]
    key = next(iter(before.keys() - {"system", "instructions", "system_instruction"}))
    assert "again" in str(before[key][-1])
    assert after[key][-1] is pending[-1]


def test_system_messages_anywhere_become_the_system_prompt() -> None:
    history = [
        tm.Message("system", "S1"),
        tm.Message("user", "u"),
        tm.Message("system", "S2"),
        tm.Message("system", " "),
    ]
    assert anthropic.to_request(history)["system"] == [
        {"type": "text", "text": "S1"},
        {"type": "text", "text": "S2"},
    ]
    assert openai_responses.to_request(history)["instructions"] == "S1\n\nS2"
    assert gemini.to_request(history)["system_instruction"] == {"parts": [{"text": "S1"}, {"text": "S2"}]}
    assert bedrock.to_request(history)["system"] == [{"text": "S1"}, {"text": "S2"}]
    assert [m["role"] for m in openai_chat.to_request(history)["messages"]] == [
        "system",
        "user",
        "system",
        "system",
    ]
    assert "instructions" not in openai_responses.to_request([tm.Message("user", "u")])


def test_tool_names_are_sanitized_for_every_provider() -> None:
    history = [
        tm.Message("user", "u"),
        assistant("x", {"text_offset": 1, "tool": "mcp/tool.x"}),
        tm.Message("user", "n"),
    ]
    for provider in PROVIDERS:
        assert MODULES[provider].replayed_tool_names(MODULES[provider].to_request(history)) == ["mcp_tool_x"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_bad_input_is_a_clear_type_error(provider: str) -> None:
    module = MODULES[provider]
    with pytest.raises(TypeError, match=r"messages\[1\]: expected a turnmemory.Message, got dict"):
        module.to_request([tm.Message("user", "u"), {"role": "user", "content": "x"}])
    with pytest.raises(TypeError, match=r"pending\[0\]: expected an object"):
        module.to_request([tm.Message("user", "u")], pending=["x"])
    with pytest.raises(TypeError, match="pending: expected a sequence"):
        module.to_request([tm.Message("user", "u")], pending={"role": "assistant"})


def test_openai_custom_tool_calls_count_as_calls() -> None:
    body = {
        "messages": [
            {"role": "user", "content": "u"},
            {
                "role": "assistant",
                "tool_calls": [{"id": "c1", "type": "custom", "custom": {"name": "patch", "input": "x"}}],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        ]
    }
    assert check_request("openai_chat", body) == []
    body["messages"].pop()
    assert check_request("openai_chat", body) == [
        "messages[1].tool_calls[0]: tool_call 'c1' has no tool message"
    ]
