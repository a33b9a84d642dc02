"""The real SDK clients put formatted requests on the wire unchanged, and the checker accepts the wire body.

A loopback server captures each request body and answers with a minimal non-streaming reply.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from tests.providers.examples import end_batch_history, spec_history

from turnmemory.providers import anthropic, bedrock, gemini, openai_chat, openai_responses
from turnmemory.providers.check import check_request

REPLIES: dict[str, dict[str, Any]] = {
    "/v1/messages": {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    },
    "/v1/chat/completions": {
        "id": "c",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
    },
    "/v1/responses": {
        "id": "resp_1",
        "object": "response",
        "created_at": 0,
        "model": "m",
        "status": "completed",
        "output": [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    },
    ":generateContent": {
        "candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP"}]
    },
    "/converse": {
        "output": {"message": {"role": "assistant", "content": [{"text": "ok"}]}},
        "stopReason": "end_turn",
        "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
        "metrics": {"latencyMs": 1},
    },
}


class _Capture(BaseHTTPRequestHandler):
    bodies: list[Any]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        self.server.bodies.append(json.loads(body))  # type: ignore[attr-defined]
        reply = next(answer for route, answer in REPLIES.items() if self.path.split("?")[0].endswith(route))
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def capture() -> Iterator[Any]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Capture)
    server.bodies = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _url(server: Any) -> str:
    return f"http://127.0.0.1:{server.server_port}"


HISTORIES = {"spec": spec_history, "end_batch": end_batch_history}


@pytest.mark.parametrize("history", HISTORIES)
def test_anthropic_wire(capture: Any, history: str) -> None:
    import anthropic as sdk

    request = anthropic.to_request(HISTORIES[history]())
    client = sdk.Anthropic(api_key="test", base_url=_url(capture), max_retries=0)
    client.messages.create(
        model="test-model", max_tokens=16, tools=anthropic.placeholder_tools(request, []), **request
    )
    body = capture.bodies[-1]
    assert body["messages"] == request["messages"]
    assert check_request("anthropic", body) == []


@pytest.mark.parametrize("history", HISTORIES)
def test_openai_chat_wire(capture: Any, history: str) -> None:
    import openai as sdk

    request = openai_chat.to_request(HISTORIES[history]())
    client = sdk.OpenAI(api_key="test", base_url=_url(capture) + "/v1", max_retries=0)
    client.chat.completions.create(
        model="gpt-4.1", tools=openai_chat.placeholder_tools(request, []), **request
    )
    body = capture.bodies[-1]
    assert body["messages"] == request["messages"]
    assert check_request("openai_chat", body) == []


@pytest.mark.parametrize("history", HISTORIES)
def test_openai_responses_wire(capture: Any, history: str) -> None:
    import openai as sdk

    request = openai_responses.to_request(HISTORIES[history]())
    client = sdk.OpenAI(api_key="test", base_url=_url(capture) + "/v1", max_retries=0)
    client.responses.create(
        model="gpt-5", store=False, tools=openai_responses.placeholder_tools(request, []), **request
    )
    body = capture.bodies[-1]
    assert body["input"] == request["input"]
    assert body.get("instructions") == request.get("instructions")
    assert check_request("openai_responses", body) == []


@pytest.mark.parametrize("history", HISTORIES)
def test_gemini_wire(capture: Any, history: str) -> None:
    from google import genai
    from google.genai import types

    request = gemini.to_request(HISTORIES[history]())
    client = genai.Client(api_key="test", http_options=types.HttpOptions(base_url=_url(capture)))
    config = {
        "tools": [{"function_declarations": gemini.placeholder_tools(request, [])}],
        "system_instruction": request.get("system_instruction"),
    }
    client.models.generate_content(model="gemini-2.5-flash", contents=request["contents"], config=config)
    body = capture.bodies[-1]
    assert check_request("gemini", body) == []
    assert gemini.replayed_tool_names(body) == gemini.replayed_tool_names(request)
    first_call = next(
        part for content in body["contents"] for part in content["parts"] if "functionCall" in part
    )
    assert first_call["thoughtSignature"] == gemini.SKIP_THOUGHT_SIGNATURE
    assert len(body["contents"]) == len(request["contents"])
    if "system_instruction" in request:
        assert body["systemInstruction"] == request["system_instruction"]


@pytest.mark.parametrize("history", HISTORIES)
def test_bedrock_wire(capture: Any, history: str) -> None:
    import boto3

    request = bedrock.to_request(HISTORIES[history]())
    client = boto3.client(
        "bedrock-runtime",
        endpoint_url=_url(capture),
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="y",
    )
    client.converse(
        modelId="anthropic.claude-sonnet-4-5",
        toolConfig={"tools": bedrock.placeholder_tools(request, [])},
        **request,
    )
    body = capture.bodies[-1]
    assert body["messages"] == request["messages"]
    assert "modelId" not in body  # it travels in the URL; the toolConfig key still turns the tools rule on
    assert check_request("bedrock", body) == []
    del body["toolConfig"]
    assert check_request("bedrock", body, require_tools=True) != []
