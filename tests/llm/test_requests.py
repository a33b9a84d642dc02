"""What each client puts in its requests: caching, statelessness, options, tool declarations."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

import turnmemory as tm
from turnmemory.llm import Client, ToolResult, ToolSpec, open_client
from turnmemory.testing import Failure, FakeProviderServer, Reply, ToolCall

MakeClient = Callable[..., Client]

LOOKUP = ToolSpec("lookup", "Look up.", {"type": "object", "properties": {"q": {"type": "string"}}})
SYSTEM = tm.Message("system", "Be brief.")


def answer(call_id: str, name: str, arguments: dict[str, Any]) -> ToolResult:
    return ToolResult(output={"answer": 42})


def turn(client: Client, history: list[tm.Message], prompt: str, tools: list[ToolSpec] | None = None) -> str:
    """Run a turn; its terminal event's kind."""
    offered = [LOOKUP] if tools is None else tools
    events = list(client.run_turn(history, prompt, tools=offered, execute=answer if offered else None))
    return events[-1].kind


def markers(body: Any) -> list[str]:
    """Where ``cache_control`` sits in an Anthropic body, as readable paths."""
    found = []
    for i, block in enumerate(body.get("system") or ()):
        if "cache_control" in block:
            found.append(f"system[{i}]")
    for i, tool in enumerate(body.get("tools") or ()):
        if "cache_control" in tool:
            found.append(f"tools[{i}]")
    for i, message in enumerate(body["messages"]):
        content = message["content"]
        for j, block in enumerate(content if isinstance(content, list) else ()):
            if "cache_control" in block:
                found.append(f"messages[{i}][{j}]")
    return found


def test_anthropic_cache_breakpoints(server: FakeProviderServer, make_client: MakeClient) -> None:
    client = make_client("anthropic")
    server.push(Reply(text="Plain."))
    assert turn(client, [], "Hi", tools=[]) == "done"
    assert markers(server.requests[-1].body) == ["messages[0][0]"]

    history = [SYSTEM, tm.Message("user", "Earlier"), tm.Message("assistant", "Earlier answer.")]
    server.push(Reply(text="Looking.", tool_calls=[ToolCall("lookup", {"q": "x"})]), Reply(text="Done."))
    assert turn(client, history, "Now") == "done"
    first, second = (request.body for request in server.requests[-2:])
    # The system prompt (which covers the tools before it), the last prompt a new client's previous
    # turn would have ended with, the compacted prefix's last block, and the end.
    assert markers(first) == ["system[0]", "messages[0][0]", "messages[1][0]", "messages[2][0]"]
    # The next iteration reads what the first wrote: its end is one of the breakpoints.
    assert markers(second) == ["system[0]", "messages[1][0]", "messages[2][0]", "messages[4][0]"]
    assert first["messages"][2]["content"][0]["text"] == "Now"


def test_anthropic_markers_never_reach_pending_state(
    server: FakeProviderServer, make_client: MakeClient
) -> None:
    client = make_client("anthropic")
    server.push(Reply(text="Looking.", tool_calls=[ToolCall("lookup", {"q": "x"})]), Failure(400, "no"))
    assert turn(client, [SYSTEM], "Find") == "incomplete"
    assert "cache_control" not in json.dumps(client.pending)
    server.push(
        Reply(text="Looking again.", tool_calls=[ToolCall("lookup", {"q": "y"})]), Reply(text="Done.")
    )
    assert turn(client, [SYSTEM, tm.Message("user", "Find")], "Continue") == "done"
    for request in server.requests[-2:]:
        assert len(markers(request.body)) <= 4
    assert (
        markers(server.requests[-1].body)[-1]
        == f"messages[{len(server.requests[-1].body['messages']) - 1}][0]"
    )


def test_anthropic_thinking_and_output_limit(server: FakeProviderServer, make_client: MakeClient) -> None:
    client = make_client("anthropic", thinking=2048, max_tokens=4096)
    server.push(Reply(text="Hi."))
    assert turn(client, [], "Hi", tools=[]) == "done"
    body = server.requests[-1].body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] == 4096 and "temperature" not in body
    with pytest.raises(ValueError, match="below max_tokens"):
        make_client("anthropic", thinking=8192, max_tokens=8192)
    with pytest.raises(ValueError, match="takes no temperature"):
        make_client("anthropic", temperature=0.5)


def test_openai_chat_options(server: FakeProviderServer, make_client: MakeClient) -> None:
    client = make_client("openai_chat", session_id="session-1", max_tokens=300, reasoning_effort="low")
    server.push(Reply(text="Hi."))
    assert turn(client, [SYSTEM], "Hi") == "done"
    body = server.requests[-1].body
    assert body["prompt_cache_key"] == "session-1"
    assert body["max_tokens"] == 300 and "max_completion_tokens" not in body
    assert body["reasoning_effort"] == "low"
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}


def test_openai_responses_are_stateless(server: FakeProviderServer, make_client: MakeClient) -> None:
    client = make_client(
        "openai_responses", session_id="session-2", reasoning_effort="medium", max_tokens=500
    )
    server.push(
        Reply(reasoning="Hmm.", text="Looking.", tool_calls=[ToolCall("lookup", {"q": "x"})]),
        Reply(text="Done."),
    )
    assert turn(client, [SYSTEM], "Hi") == "done"
    for request in server.requests[-2:]:
        body = request.body
        assert body["store"] is False and body["include"] == ["reasoning.encrypted_content"]
        assert "previous_response_id" not in body
        assert body["prompt_cache_key"] == "session-2"
        assert body["reasoning"] == {"effort": "medium", "summary": "auto"}
        assert body["max_output_tokens"] == 500 and body["instructions"] == "Be brief."
    items = server.requests[-1].body["input"]
    kinds = [item.get("type", "message") for item in items]
    assert kinds[:1] == ["message"] and kinds[1:].count("reasoning") == 1
    reasoning = items[kinds.index("reasoning")]
    assert reasoning["encrypted_content"] and reasoning["id"].startswith("rs")
    assert kinds.index("reasoning") < kinds.index("function_call") < kinds.index("function_call_output")


def camel(value: Any) -> Any:
    """``value`` with every object key in lowerCamelCase (Gemini accepts both spellings)."""
    if isinstance(value, dict):
        return {_camel(key): camel(item) for key, item in value.items()}
    if isinstance(value, list):
        return [camel(item) for item in value]
    return value


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part.title() for part in rest)


def test_gemini_options(server: FakeProviderServer, make_client: MakeClient) -> None:
    client = make_client("gemini", thinking=512, max_tokens=1000, temperature=0.2)
    server.push(Reply(text="Hi."))
    assert turn(client, [SYSTEM], "Hi") == "done"
    body = camel(server.requests[-1].body)
    assert body["generationConfig"]["thinkingConfig"] == {"thinkingBudget": 512, "includeThoughts": True}
    assert body["generationConfig"]["maxOutputTokens"] == 1000
    assert body["generationConfig"]["temperature"] == 0.2
    assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert server.requests[-1].headers.get("x-goog-api-key") == "test-key"


def test_bedrock_options_and_tool_config(server: FakeProviderServer, make_client: MakeClient) -> None:
    client = make_client("bedrock", max_tokens=700, thinking=1024)
    server.push(Reply(text="Hi."))
    assert turn(client, [SYSTEM], "Hi", tools=[]) == "done"
    body = server.requests[-1].body
    assert "toolConfig" not in body
    assert body["inferenceConfig"] == {"maxTokens": 700}
    assert body["additionalModelRequestFields"] == {"thinking": {"type": "enabled", "budget_tokens": 1024}}
    assert body["system"] == [{"text": "Be brief."}]
    server.push(Reply(text="Hi."))
    assert turn(client, [], "Hi") == "done"
    assert server.requests[-1].body["toolConfig"]["tools"][0]["toolSpec"]["name"] == "lookup"


def test_open_client_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="provider: expected one of anthropic, openai_chat"):
        open_client("claude", model="m")
    with pytest.raises(ValueError, match="model: expected a non-empty string"):
        open_client("anthropic", model="")
    with pytest.raises(ValueError, match="api_key: Bedrock reads AWS credentials"):
        open_client("bedrock", model="m", api_key="k", region="us-east-1")
    with pytest.raises(ValueError, match="max_tool_turns"):
        open_client("anthropic", model="m", api_key="k", max_tool_turns=0)


def test_the_package_imports_without_any_sdk() -> None:
    blocked = ["anthropic", "openai", "google", "google.genai", "boto3", "botocore", "httpx2"]
    script = (
        "import sys\n"
        f"for name in {blocked!r}: sys.modules[name] = None\n"
        "import turnmemory.llm as llm\n"
        "from turnmemory.llm import anthropic, bedrock, gemini, openai_chat, openai_responses\n"
        "try:\n"
        "    llm.open_client('anthropic', model='m', api_key='k')\n"
        "except ImportError as error:\n"
        "    print(error)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert "the anthropic client needs the 'anthropic' package" in result.stdout
