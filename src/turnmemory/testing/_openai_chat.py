"""OpenAI Chat Completions: ``POST /v1/chat/completions``, SSE ``data:`` chunks ending ``[DONE]``.

Reasoning streams as ``reasoning_content`` deltas, as OpenAI-compatible servers (DeepSeek, vLLM)
send it. A tool call's first delta carries its id, type and name; later ones argument fragments.
The final usage chunk (``choices: []``) comes only with ``stream_options.include_usage``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar

from turnmemory.testing._chunks import json_pieces, text_pieces
from turnmemory.testing._openai_common import openai_error
from turnmemory.testing._script import Failure, Reply, Usage
from turnmemory.testing._sse import DONE, sse
from turnmemory.testing._wire import Exchange, Frame, FramePart, JsonAnswer, WireProtocol

__all__ = ["OPENAI_CHAT", "OpenAIChat"]

_CREATED = 1_700_000_000


def _usage(usage: Usage) -> dict[str, Any]:
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
        "prompt_tokens_details": {
            "cached_tokens": usage.cached_tokens,
            "cache_write_tokens": usage.cache_write_tokens,
        },
        "completion_tokens_details": {"reasoning_tokens": 0},
    }


def _tool_calls(reply: Reply, exchange: Exchange) -> list[dict[str, Any]]:
    return [
        {
            "id": exchange.call_id(call, i, "call"),
            "type": "function",
            "function": {"name": call.name, "arguments": call.arguments_json},
        }
        for i, call in enumerate(reply.tool_calls, 1)
    ]


class OpenAIChat(WireProtocol):
    """The Chat Completions wire format."""

    name = "openai_chat"
    routes = re.compile("/v1/chat/completions")
    stop_reasons: ClassVar[Mapping[str, str]] = {
        "end_turn": "stop",
        "tool_use": "tool_calls",
        "max_tokens": "length",
    }
    context_overflow = (
        "This model's maximum context length is 128000 tokens. However, your messages resulted in 250000 "
        "tokens. Please reduce the length of the messages."
    )

    def _error_object(self, failure: Failure) -> dict[str, Any]:
        return {"error": openai_error(failure, self.context_overflow, "messages")}

    def error(self, failure: Failure) -> JsonAnswer:
        return JsonAnswer(failure.status, self._error_object(failure))

    def _envelope(self, exchange: Exchange, kind: str, choices: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-{exchange.number:03d}",
            "object": kind,
            "created": _CREATED,
            "model": exchange.model,
            "choices": choices,
        }

    def message(self, reply: Reply, exchange: Exchange) -> Mapping[str, Any]:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": reply.text or (None if reply.tool_calls else ""),
            "refusal": None,
        }
        if reply.reasoning:
            message["reasoning_content"] = reply.reasoning
        if reply.tool_calls:
            message["tool_calls"] = _tool_calls(reply, exchange)
        choice = {"index": 0, "message": message, "finish_reason": self.stop_reason(reply), "logprobs": None}
        return {**self._envelope(exchange, "chat.completion", [choice]), "usage": _usage(reply.token_usage)}

    def _chunk(
        self, exchange: Exchange, delta: Mapping[str, Any], part: FramePart, finish: str | None = None
    ) -> Frame:
        choice = {"index": 0, "delta": dict(delta), "finish_reason": finish, "logprobs": None}
        return Frame(sse(self._envelope(exchange, "chat.completion.chunk", [choice])), part)

    def stream(self, reply: Reply, exchange: Exchange) -> list[Frame]:
        content = None if reply.tool_calls and not reply.text else ""
        frames = [
            self._chunk(exchange, {"role": "assistant", "content": content, "refusal": None}, "opening")
        ]
        frames += [
            self._chunk(exchange, {"reasoning_content": t}, "content") for t in text_pieces(reply.reasoning)
        ]
        frames += [self._chunk(exchange, {"content": t}, "content") for t in text_pieces(reply.text)]
        for index, call in enumerate(_tool_calls(reply, exchange)):
            function = call["function"]
            start = {**call, "index": index, "function": {"name": function["name"], "arguments": ""}}
            frames.append(self._chunk(exchange, {"tool_calls": [start]}, "other"))
            for piece in json_pieces(function["arguments"]):
                fragment = {"index": index, "function": {"arguments": piece}}
                frames.append(self._chunk(exchange, {"tool_calls": [fragment]}, "content"))
        frames.append(self._chunk(exchange, {}, "other", self.stop_reason(reply)))
        options = exchange.body.get("stream_options")
        if isinstance(options, Mapping) and options.get("include_usage") is True:
            usage_chunk = {
                **self._envelope(exchange, "chat.completion.chunk", []),
                "usage": _usage(reply.token_usage),
            }
            frames.append(Frame(sse(usage_chunk)))
        frames.append(Frame(DONE))
        return frames

    def stream_error(self, failure: Failure, exchange: Exchange, sent: int) -> list[Frame]:
        return [Frame(sse(self._error_object(failure)))]


OPENAI_CHAT = OpenAIChat()
