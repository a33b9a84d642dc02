"""One script drives all five SDKs: each item answers one request on whichever route it arrives."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anthropic
import boto3
import botocore.config
import openai
import pytest
from google import genai
from google.genai import types

from turnmemory.testing import PROVIDERS, Failure, FakeProviderServer, Reply, ToolCall

Answer = tuple[str, list[tuple[str, dict[str, Any]]]]


def ask_anthropic(server: FakeProviderServer) -> Answer:
    client = anthropic.Anthropic(api_key="k", base_url=server.base_url("anthropic"), max_retries=0, timeout=5)
    with client.messages.stream(
        model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
    ) as events:
        message = events.get_final_message()
    text = "".join(block.text for block in message.content if block.type == "text")
    return text, [(block.name, dict(block.input)) for block in message.content if block.type == "tool_use"]  # type: ignore[arg-type]


def ask_openai_chat(server: FakeProviderServer) -> Answer:
    client = openai.OpenAI(api_key="k", base_url=server.base_url("openai_chat"), max_retries=0, timeout=5)
    with client.chat.completions.stream(model="m", messages=[{"role": "user", "content": "hi"}]) as events:
        message = events.get_final_completion().choices[0].message
    calls = [(call.function.name, json.loads(call.function.arguments)) for call in message.tool_calls or []]  # type: ignore[union-attr]
    return message.content or "", calls


def ask_openai_responses(server: FakeProviderServer) -> Answer:
    client = openai.OpenAI(
        api_key="k", base_url=server.base_url("openai_responses"), max_retries=0, timeout=5
    )
    with client.responses.stream(model="m", input="hi") as events:
        response = events.get_final_response()
    calls = [
        (item.name, json.loads(item.arguments)) for item in response.output if item.type == "function_call"
    ]
    return response.output_text, calls


def ask_gemini(server: FakeProviderServer) -> Answer:
    options = types.HttpOptions(
        base_url=server.base_url("gemini"), retry_options=types.HttpRetryOptions(attempts=1)
    )
    client = genai.Client(api_key="k", http_options=options)
    parts = [
        part
        for chunk in client.models.generate_content_stream(model="m", contents="hi")
        for part in (chunk.candidates[0].content.parts or [])  # type: ignore[index, union-attr]
    ]
    calls = [(part.function_call.name, part.function_call.args) for part in parts if part.function_call]
    return "".join(part.text or "" for part in parts if not part.thought), calls  # type: ignore[return-value]


def ask_bedrock(server: FakeProviderServer) -> Answer:
    client = boto3.client(
        "bedrock-runtime",
        endpoint_url=server.base_url("bedrock"),
        region_name="us-east-1",
        aws_access_key_id="k",
        aws_secret_access_key="s",
        config=botocore.config.Config(retries={"total_max_attempts": 1}),
    )
    events = list(
        client.converse_stream(modelId="m", messages=[{"role": "user", "content": [{"text": "hi"}]}])[
            "stream"
        ]
    )
    deltas = [event["contentBlockDelta"]["delta"] for event in events if "contentBlockDelta" in event]
    starts = [
        event["contentBlockStart"]["start"]["toolUse"]["name"]
        for event in events
        if "contentBlockStart" in event
    ]
    arguments = json.loads("".join(delta["toolUse"]["input"] for delta in deltas if "toolUse" in delta))
    return "".join(delta.get("text", "") for delta in deltas), [(starts[0], arguments)]


ASK: dict[str, Callable[[FakeProviderServer], Answer]] = {
    "anthropic": ask_anthropic,
    "openai_chat": ask_openai_chat,
    "openai_responses": ask_openai_responses,
    "gemini": ask_gemini,
    "bedrock": ask_bedrock,
}


def test_every_provider_has_a_client_here() -> None:
    assert set(ASK) == set(PROVIDERS)


def test_the_same_reply_reads_the_same_through_every_sdk(server: FakeProviderServer) -> None:
    reply = Reply(
        text="Reading the file.", reasoning="r", tool_calls=[ToolCall("read_file", {"path": "a.py"})]
    )
    server.push(*[reply] * len(ASK))
    answers = {provider: ask(server) for provider, ask in ASK.items()}
    assert answers == {provider: ("Reading the file.", [("read_file", {"path": "a.py"})]) for provider in ASK}
    assert [request.provider for request in server.requests] == list(ASK)


@pytest.mark.parametrize("provider", list(ASK))
def test_a_script_item_is_consumed_by_whichever_route_asks(server: FakeProviderServer, provider: str) -> None:
    server.push(Failure(503, "busy"), Reply(text="second", tool_calls=[ToolCall("ls", {})]))
    with pytest.raises(Exception, match="busy"):
        ASK[provider](server)
    assert ASK[provider](server) == ("second", [("ls", {})])
