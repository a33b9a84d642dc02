"""Anthropic Messages: ``POST /v1/messages``, SSE with named events, or one message JSON.

Reasoning becomes a ``thinking`` block with a signature, text a ``text`` block, each tool call a
``tool_use`` block whose input streams as ``input_json_delta`` fragments.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, ClassVar

from turnmemory.testing._chunks import json_pieces, text_pieces
from turnmemory.testing._script import Failure, Reply, Usage
from turnmemory.testing._sse import sse
from turnmemory.testing._wire import Exchange, Frame, FramePart, JsonAnswer, WireProtocol, error_kind

__all__ = ["ANTHROPIC", "Anthropic"]


def _usage(usage: Usage, output_tokens: int) -> dict[str, int]:
    return {
        "input_tokens": usage.uncached_input_tokens,
        "cache_creation_input_tokens": usage.cache_write_tokens,
        "cache_read_input_tokens": usage.cached_tokens,
        "output_tokens": output_tokens,
    }


def _blocks(reply: Reply, exchange: Exchange) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.reasoning:
        signature = exchange.signature("thinking")
        blocks.append({"type": "thinking", "thinking": reply.reasoning, "signature": signature})
    if reply.text:
        blocks.append({"type": "text", "text": reply.text})
    for i, call in enumerate(reply.tool_calls, 1):
        tool_id = exchange.call_id(call, i, "toolu")
        blocks.append({"type": "tool_use", "id": tool_id, "name": call.name, "input": dict(call.arguments)})
    return blocks


def _frame(data: Mapping[str, Any], part: FramePart = "other") -> Frame:
    return Frame(sse(data, event=str(data["type"])), part)


def _delta(index: int, delta: Mapping[str, Any], part: FramePart = "content") -> Frame:
    return _frame({"type": "content_block_delta", "index": index, "delta": dict(delta)}, part)


def _block_frames(index: int, block: Mapping[str, Any]) -> list[Frame]:
    if block["type"] == "thinking":
        start: dict[str, Any] = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [
            _delta(index, {"type": "thinking_delta", "thinking": t}) for t in text_pieces(block["thinking"])
        ]
        deltas.append(_delta(index, {"type": "signature_delta", "signature": block["signature"]}, "other"))
    elif block["type"] == "text":
        start = {"type": "text", "text": ""}
        deltas = [_delta(index, {"type": "text_delta", "text": t}) for t in text_pieces(block["text"])]
    else:
        start = {**block, "input": {}}
        arguments = json.dumps(block["input"], ensure_ascii=False)
        deltas = [
            _delta(index, {"type": "input_json_delta", "partial_json": p}) for p in json_pieces(arguments)
        ]
    opening = _frame({"type": "content_block_start", "index": index, "content_block": start})
    return [opening, *deltas, _frame({"type": "content_block_stop", "index": index})]


_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout_error",
    409: "conflict_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}


class Anthropic(WireProtocol):
    """The Messages API wire format."""

    name = "anthropic"
    routes = re.compile("/v1/messages")
    credentials = ("x-api-key", "authorization")
    stop_reasons: ClassVar[Mapping[str, str]] = {"content_filter": "refusal"}
    context_overflow = "prompt is too long: 250000 tokens > 200000 maximum"

    def _error_object(self, failure: Failure) -> dict[str, Any]:
        kind = error_kind(failure, _ERROR_TYPES, "invalid_request_error", "api_error")
        return {"type": "error", "error": {"type": kind, "message": self.failure_message(failure)}}

    def error(self, failure: Failure) -> JsonAnswer:
        return JsonAnswer(failure.status, self._error_object(failure))

    def _shell(self, reply: Reply, exchange: Exchange, content: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "id": exchange.id("msg"),
            "type": "message",
            "role": "assistant",
            "model": exchange.model,
            "content": content,
            "stop_reason": None,
            "stop_sequence": None,
            "usage": _usage(reply.token_usage, 1),
        }

    def message(self, reply: Reply, exchange: Exchange) -> Mapping[str, Any]:
        usage = reply.token_usage
        return {
            **self._shell(reply, exchange, _blocks(reply, exchange)),
            "stop_reason": self.stop_reason(reply),
            "usage": _usage(usage, usage.output_tokens),
        }

    def stream(self, reply: Reply, exchange: Exchange) -> list[Frame]:
        frames = [
            _frame({"type": "message_start", "message": self._shell(reply, exchange, [])}, "opening"),
            _frame({"type": "ping"}, "opening"),
        ]
        for index, block in enumerate(_blocks(reply, exchange)):
            frames += _block_frames(index, block)
        stop = {"stop_reason": self.stop_reason(reply), "stop_sequence": None}
        usage = {"output_tokens": reply.token_usage.output_tokens}
        frames.append(_frame({"type": "message_delta", "delta": stop, "usage": usage}))
        frames.append(_frame({"type": "message_stop"}))
        return frames

    def stream_error(self, failure: Failure, exchange: Exchange, sent: int) -> list[Frame]:
        return [_frame(self._error_object(failure))]


ANTHROPIC = Anthropic()
