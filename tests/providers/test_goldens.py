"""Golden requests: the spec's worked example, and a batch at the end of the prose, for every provider."""

from __future__ import annotations

from typing import Any

import pytest
from tests.providers.examples import FILE, end_batch_history, spec_history
from tests.providers.sdk_validators import validate

from turnmemory.providers import PROVIDERS, anthropic, bedrock, gemini, openai_chat, openai_responses
from turnmemory.providers.check import check_request
from turnmemory.providers.gemini import SKIP_THOUGHT_SIGNATURE

MODULES = {
    "anthropic": anthropic,
    "openai_chat": openai_chat,
    "openai_responses": openai_responses,
    "gemini": gemini,
    "bedrock": bedrock,
}
SUCCESS = '{"status":"success"}'
CHANGED = '{"status":"success","file_changed":"' + FILE + '"}'
PROSE_1 = "Let me update the handler."
PROSE_2 = " The terminal event is now handled."

SPEC_GOLDENS: dict[str, dict[str, Any]] = {
    "anthropic": {
        "system": [{"type": "text", "text": "S"}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "U"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "historical_2_0", "name": "call_mcp_tool", "input": {}}
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "historical_2_0", "content": SUCCESS}],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": PROSE_1},
                    {"type": "tool_use", "id": "historical_2_1", "name": "edit_file", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "historical_2_1", "content": CHANGED}],
            },
            {"role": "assistant", "content": [{"type": "text", "text": PROSE_2}]},
            {"role": "user", "content": [{"type": "text", "text": "next"}]},
        ],
    },
    "openai_chat": {
        "messages": [
            {"role": "system", "content": "S"},
            {"role": "user", "content": "U"},
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "historical_2_0",
                        "type": "function",
                        "function": {"name": "call_mcp_tool", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "historical_2_0", "content": SUCCESS},
            {
                "role": "assistant",
                "content": PROSE_1,
                "tool_calls": [
                    {
                        "id": "historical_2_1",
                        "type": "function",
                        "function": {"name": "edit_file", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "historical_2_1", "content": CHANGED},
            {"role": "assistant", "content": PROSE_2},
            {"role": "user", "content": "next"},
        ]
    },
    "openai_responses": {
        "instructions": "S",
        "input": [
            {"type": "message", "role": "user", "content": "U"},
            {
                "type": "function_call",
                "call_id": "historical_2_0",
                "name": "call_mcp_tool",
                "arguments": "{}",
            },
            {"type": "function_call_output", "call_id": "historical_2_0", "output": SUCCESS},
            {"type": "message", "role": "assistant", "content": PROSE_1},
            {"type": "function_call", "call_id": "historical_2_1", "name": "edit_file", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "historical_2_1", "output": CHANGED},
            {"type": "message", "role": "assistant", "content": PROSE_2},
            {"type": "message", "role": "user", "content": "next"},
        ],
    },
    "gemini": {
        "system_instruction": {"parts": [{"text": "S"}]},
        "contents": [
            {"role": "user", "parts": [{"text": "U"}]},
            {
                "role": "model",
                "parts": [
                    {
                        "function_call": {"id": "historical_2_0", "name": "call_mcp_tool", "args": {}},
                        "thought_signature": SKIP_THOUGHT_SIGNATURE,
                    }
                ],
            },
            {
                "role": "user",
                "parts": [
                    {
                        "function_response": {
                            "id": "historical_2_0",
                            "name": "call_mcp_tool",
                            "response": {"status": "success"},
                        }
                    }
                ],
            },
            {
                "role": "model",
                "parts": [
                    {"text": PROSE_1},
                    {
                        "function_call": {"id": "historical_2_1", "name": "edit_file", "args": {}},
                        "thought_signature": SKIP_THOUGHT_SIGNATURE,
                    },
                ],
            },
            {
                "role": "user",
                "parts": [
                    {
                        "function_response": {
                            "id": "historical_2_1",
                            "name": "edit_file",
                            "response": {"status": "success", "file_changed": FILE},
                        }
                    }
                ],
            },
            {"role": "model", "parts": [{"text": PROSE_2}]},
            {"role": "user", "parts": [{"text": "next"}]},
        ],
    },
    "bedrock": {
        "system": [{"text": "S"}],
        "messages": [
            {"role": "user", "content": [{"text": "U"}]},
            {
                "role": "assistant",
                "content": [
                    {"toolUse": {"toolUseId": "historical_2_0", "name": "call_mcp_tool", "input": {}}}
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "toolResult": {
                            "toolUseId": "historical_2_0",
                            "content": [{"json": {"status": "success"}}],
                            "status": "success",
                        }
                    }
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"text": PROSE_1},
                    {"toolUse": {"toolUseId": "historical_2_1", "name": "edit_file", "input": {}}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "toolResult": {
                            "toolUseId": "historical_2_1",
                            "content": [{"json": {"status": "success", "file_changed": FILE}}],
                            "status": "success",
                        }
                    }
                ],
            },
            {"role": "assistant", "content": [{"text": PROSE_2}]},
            {"role": "user", "content": [{"text": "next"}]},
        ],
    },
}

ERROR = '{"status":"error"}'
FAILED = '{"status":"success","failed_command":"go test ./...","exit_code":1}'

END_BATCH_GOLDENS: dict[str, dict[str, Any]] = {
    "anthropic": {
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Run the tests"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Running them."},
                    {"type": "tool_use", "id": "historical_1_0", "name": "read_file", "input": {}},
                    {"type": "tool_use", "id": "historical_1_1", "name": "bash", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "historical_1_0",
                        "content": ERROR,
                        "is_error": True,
                    },
                    {"type": "tool_result", "tool_use_id": "historical_1_1", "content": FAILED},
                    {"type": "text", "text": "And now?"},
                ],
            },
        ]
    },
    "openai_chat": {
        "messages": [
            {"role": "user", "content": "Run the tests"},
            {
                "role": "assistant",
                "content": "Running them.",
                "tool_calls": [
                    {
                        "id": "historical_1_0",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": "{}"},
                    },
                    {
                        "id": "historical_1_1",
                        "type": "function",
                        "function": {"name": "bash", "arguments": "{}"},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "historical_1_0", "content": ERROR},
            {"role": "tool", "tool_call_id": "historical_1_1", "content": FAILED},
            {"role": "user", "content": "And now?"},
        ]
    },
    "openai_responses": {
        "input": [
            {"type": "message", "role": "user", "content": "Run the tests"},
            {"type": "message", "role": "assistant", "content": "Running them."},
            {"type": "function_call", "call_id": "historical_1_0", "name": "read_file", "arguments": "{}"},
            {"type": "function_call", "call_id": "historical_1_1", "name": "bash", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "historical_1_0", "output": ERROR},
            {"type": "function_call_output", "call_id": "historical_1_1", "output": FAILED},
            {"type": "message", "role": "user", "content": "And now?"},
        ]
    },
    "gemini": {
        "contents": [
            {"role": "user", "parts": [{"text": "Run the tests"}]},
            {
                "role": "model",
                "parts": [
                    {"text": "Running them."},
                    {
                        "function_call": {"id": "historical_1_0", "name": "read_file", "args": {}},
                        "thought_signature": SKIP_THOUGHT_SIGNATURE,
                    },
                    {"function_call": {"id": "historical_1_1", "name": "bash", "args": {}}},
                ],
            },
            {
                "role": "user",
                "parts": [
                    {
                        "function_response": {
                            "id": "historical_1_0",
                            "name": "read_file",
                            "response": {"status": "error"},
                        }
                    },
                    {
                        "function_response": {
                            "id": "historical_1_1",
                            "name": "bash",
                            "response": {
                                "status": "success",
                                "failed_command": "go test ./...",
                                "exit_code": 1,
                            },
                        }
                    },
                    {"text": "And now?"},
                ],
            },
        ]
    },
    "bedrock": {
        "messages": [
            {"role": "user", "content": [{"text": "Run the tests"}]},
            {
                "role": "assistant",
                "content": [
                    {"text": "Running them."},
                    {"toolUse": {"toolUseId": "historical_1_0", "name": "read_file", "input": {}}},
                    {"toolUse": {"toolUseId": "historical_1_1", "name": "bash", "input": {}}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "toolResult": {
                            "toolUseId": "historical_1_0",
                            "content": [{"json": {"status": "error"}}],
                            "status": "error",
                        }
                    },
                    {
                        "toolResult": {
                            "toolUseId": "historical_1_1",
                            "content": [
                                {
                                    "json": {
                                        "status": "success",
                                        "failed_command": "go test ./...",
                                        "exit_code": 1,
                                    }
                                }
                            ],
                            "status": "success",
                        }
                    },
                    {"text": "And now?"},
                ],
            },
        ]
    },
}


def test_the_offset_in_the_spec_example_falls_right_after_the_first_sentence() -> None:
    prose = spec_history()[2].content.encode()
    assert prose[:26].decode() == PROSE_1
    assert [a.text_offset for a in spec_history()[2].activities] == [0, 26]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_spec_example_golden(provider: str) -> None:
    assert MODULES[provider].to_request(spec_history()) == SPEC_GOLDENS[provider]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_end_of_prose_batch_golden(provider: str) -> None:
    assert MODULES[provider].to_request(end_batch_history()) == END_BATCH_GOLDENS[provider]


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("goldens", [SPEC_GOLDENS, END_BATCH_GOLDENS], ids=["spec", "end_batch"])
def test_goldens_pass_the_sdk_types_and_the_checker(
    provider: str, goldens: dict[str, dict[str, Any]]
) -> None:
    validate(provider, goldens[provider])
    assert check_request(provider, goldens[provider]) == []


@pytest.mark.parametrize("provider", PROVIDERS)
def test_replayed_tool_names_lists_every_call_once(provider: str) -> None:
    module = MODULES[provider]
    assert module.replayed_tool_names(SPEC_GOLDENS[provider]) == ["call_mcp_tool", "edit_file"]
    assert module.replayed_tool_names(END_BATCH_GOLDENS[provider]) == ["read_file", "bash"]
    assert module.replayed_tool_names({}) == []


@pytest.mark.parametrize("provider", PROVIDERS)
def test_placeholder_tools_cover_what_is_not_offered(provider: str) -> None:
    module = MODULES[provider]
    missing = module.placeholder_tools(SPEC_GOLDENS[provider], ["edit_file"])
    assert missing == [module.placeholder_tool("call_mcp_tool")]
    assert module.placeholder_tools(SPEC_GOLDENS[provider], ["edit_file", "call_mcp_tool"]) == []


def test_argument_and_id_options_pass_through() -> None:
    request = openai_chat.to_request(end_batch_history(), arguments="target", id_style="compact")
    calls = request["messages"][1]["tool_calls"]
    assert calls[0]["function"]["arguments"] == '{"path":"a.go"}'
    assert [len(call["id"]) for call in calls] == [9, 9]
    assert all(call["id"].isalnum() for call in calls)
    assert request["messages"][2]["tool_call_id"] == calls[0]["id"]
    assert check_request("openai_chat", request) == []
