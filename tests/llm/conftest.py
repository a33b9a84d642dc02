"""Fixtures for the LLM clients: one fake server per module, clients wired to it, request views.

Every provider test drives the real SDK client against the loopback fake server; the SDK's own
retries are off and our retry policy sleeps through an injected recorder of delays.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from turnmemory.llm import Client, RetryPolicy, open_client
from turnmemory.testing import MODELS, FakeProviderServer

Entry = tuple[Any, ...]
"""One normalized piece of a request: ``("text", role, text)``, ``("call", id, name, args)``,
``("result", id, text, is_error)`` or ``("reasoning", opaque)``."""


@pytest.fixture
def sleeps() -> list[float]:
    """The delays the retry policy slept, in order."""
    return []


@pytest.fixture
def make_client(
    server: FakeProviderServer, sleeps: list[float], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., Client]:
    """``make_client(provider, **options)``: a client of ``provider`` talking to the fake server."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test-key-id")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test-secret")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)

    def make(provider: str, *, attempts: int = 3, **options: Any) -> Client:
        retry = RetryPolicy(attempts=attempts, base_delay=1.0, max_delay=8.0, jitter=0.0, sleep=sleeps.append)
        return open_client(
            provider,
            model=MODELS[provider],
            base_url=server.base_url(provider),
            api_key=None if provider == "bedrock" else "test-key",
            region="us-east-1",
            retry=retry,
            **options,
        )

    return make


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _anthropic(body: dict[str, Any]) -> Iterator[Entry]:
    if body.get("system"):
        yield ("text", "system", _text_of(body["system"]))
    for message in body["messages"]:
        role, content = message["role"], message["content"]
        if isinstance(content, str):
            yield ("text", role, content)
            continue
        for block in content:
            kind = block["type"]
            if kind == "text":
                yield ("text", role, block["text"])
            elif kind in ("thinking", "redacted_thinking"):
                yield ("reasoning", block.get("signature") or block.get("data"))
            elif kind == "tool_use":
                yield ("call", block["id"], block["name"], block["input"])
            elif kind == "tool_result":
                yield (
                    "result",
                    block["tool_use_id"],
                    _text_of(block.get("content")),
                    bool(block.get("is_error")),
                )


def _openai_chat(body: dict[str, Any]) -> Iterator[Entry]:
    for message in body["messages"]:
        role = message["role"]
        for key in ("reasoning_content", "reasoning"):
            if message.get(key):
                yield ("reasoning", message[key])
        if role == "tool":
            yield ("result", message["tool_call_id"], _text_of(message["content"]), False)
            continue
        if message.get("content"):
            yield ("text", role, _text_of(message["content"]))
        for call in message.get("tool_calls") or ():
            yield (
                "call",
                call["id"],
                call["function"]["name"],
                json.loads(call["function"]["arguments"] or "{}"),
            )


def _openai_responses(body: dict[str, Any]) -> Iterator[Entry]:
    if body.get("instructions"):
        yield ("text", "system", body["instructions"])
    items = body["input"]
    for item in [{"role": "user", "content": items}] if isinstance(items, str) else items:
        kind = item.get("type", "message")
        if kind == "message":
            yield ("text", item["role"], _text_of(item["content"]))
        elif kind == "reasoning":
            yield ("reasoning", item.get("encrypted_content"))
        elif kind == "function_call":
            yield ("call", item["call_id"], item["name"], json.loads(item["arguments"] or "{}"))
        elif kind == "function_call_output":
            yield ("result", item["call_id"], _text_of(item["output"]), False)


def _gemini(body: dict[str, Any]) -> Iterator[Entry]:
    system = body.get("systemInstruction") or body.get("system_instruction")
    if system:
        yield ("text", "system", _text_of(system.get("parts")))
    for content in body["contents"]:
        role = "assistant" if content.get("role") == "model" else "user"
        for part in content["parts"]:
            signature = part.get("thoughtSignature") or part.get("thought_signature")
            if part.get("thought"):
                yield ("reasoning", signature or part.get("text"))
                continue
            if signature:
                yield ("reasoning", signature)
            call = part.get("functionCall") or part.get("function_call")
            response = part.get("functionResponse") or part.get("function_response")
            if call is not None:
                yield ("call", call.get("id") or call["name"], call["name"], call.get("args") or {})
            elif response is not None:
                payload = response.get("response") or {}
                yield (
                    "result",
                    response.get("id") or response["name"],
                    _compact(payload),
                    "error" in payload,
                )
            elif "text" in part:
                yield ("text", role, part["text"])


def _bedrock(body: dict[str, Any]) -> Iterator[Entry]:
    for block in body.get("system") or ():
        if "text" in block:
            yield ("text", "system", block["text"])
    for message in body["messages"]:
        role = message["role"]
        for block in message["content"]:
            if "text" in block:
                yield ("text", role, block["text"])
            elif "reasoningContent" in block:
                reasoning = block["reasoningContent"]
                yield (
                    "reasoning",
                    reasoning.get("reasoningText", {}).get("signature") or reasoning.get("redactedContent"),
                )
            elif "toolUse" in block:
                use = block["toolUse"]
                yield ("call", use["toolUseId"], use["name"], use["input"])
            elif "toolResult" in block:
                result = block["toolResult"]
                parts = [
                    _compact(part["json"]) if "json" in part else part.get("text", "")
                    for part in result["content"]
                ]
                yield ("result", result["toolUseId"], "".join(parts), result.get("status") == "error")


_VIEWS: dict[str, Callable[[dict[str, Any]], Iterator[Entry]]] = {
    "anthropic": _anthropic,
    "openai_chat": _openai_chat,
    "openai_responses": _openai_responses,
    "gemini": _gemini,
    "bedrock": _bedrock,
}


@pytest.fixture
def entries() -> Callable[[str, dict[str, Any]], list[Entry]]:
    """``entries(provider, body)``: a request body as a flat, provider-neutral list of entries.

    Adjacent text entries of one role are joined, so providers that split or merge prose the same
    way compare equal.
    """

    def view(provider: str, body: dict[str, Any]) -> list[Entry]:
        out: list[Entry] = []
        for entry in _VIEWS[provider](body):
            if entry[0] == "text" and out and out[-1][0] == "text" and out[-1][1] == entry[1]:
                out[-1] = ("text", entry[1], out[-1][2] + entry[2])
            else:
                out.append(entry)
        return out

    return view
