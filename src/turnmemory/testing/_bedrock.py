"""Bedrock Converse: ``POST /model/{modelId}/converse`` (JSON) and ``/converse-stream`` (event-stream).

The stream is ``messageStart``, content block events (reasoning as ``reasoningContent`` text then
signature, text deltas, tool use opened by ``contentBlockStart`` and streamed as input fragments),
``messageStop`` and ``metadata``. Errors are HTTP errors with ``x-amzn-ErrorType`` or, mid-stream,
``exception`` messages. Any SigV4 signature is accepted.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar

from turnmemory.testing._chunks import json_pieces, text_pieces
from turnmemory.testing._eventstream import CONTENT_TYPE, event_message, exception_message
from turnmemory.testing._script import Failure, Reply, Usage
from turnmemory.testing._wire import Exchange, Frame, FramePart, JsonAnswer, WireProtocol, error_kind

__all__ = ["BEDROCK", "Bedrock"]

_EXCEPTIONS = {
    400: "ValidationException",
    401: "UnrecognizedClientException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    408: "ModelTimeoutException",
    409: "ConflictException",
    424: "ModelErrorException",
    429: "ThrottlingException",
    500: "InternalServerException",
    503: "ServiceUnavailableException",
}
_STREAM_EXCEPTIONS = {
    424: "modelStreamErrorException",
    429: "throttlingException",
    503: "serviceUnavailableException",
}


def _http_exception(failure: Failure) -> str:
    """The HTTP error's exception name, such as ``ThrottlingException``."""
    name = error_kind(failure, _EXCEPTIONS, "ValidationException", "InternalServerException")
    return name[:1].upper() + name[1:]


def _stream_exception(failure: Failure) -> str:
    """The in-stream exception event name: a member of the ConverseStream output union."""
    name = error_kind(failure, _STREAM_EXCEPTIONS, "validationException", "internalServerException")
    return name[:1].lower() + name[1:]


def _usage(usage: Usage) -> dict[str, int]:
    return {
        "inputTokens": usage.uncached_input_tokens,
        "outputTokens": usage.output_tokens,
        "totalTokens": usage.total_tokens,
        "cacheReadInputTokens": usage.cached_tokens,
        "cacheWriteInputTokens": usage.cache_write_tokens,
    }


def _blocks(reply: Reply, exchange: Exchange) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.reasoning:
        reasoning = {"text": reply.reasoning, "signature": exchange.signature("reasoning")}
        blocks.append({"reasoningContent": {"reasoningText": reasoning}})
    if reply.text:
        blocks.append({"text": reply.text})
    for i, call in enumerate(reply.tool_calls, 1):
        tool_use = {
            "toolUseId": exchange.call_id(call, i, "tooluse"),
            "name": call.name,
            "input": dict(call.arguments),
        }
        blocks.append({"toolUse": tool_use})
    return blocks


def _event(event_type: str, payload: Mapping[str, Any], part: FramePart = "other") -> Frame:
    return Frame(event_message(event_type, payload), part)


def _block_events(index: int, block: Mapping[str, Any], arguments: str) -> list[Frame]:
    def delta(payload: Mapping[str, Any], part: FramePart = "content") -> Frame:
        return _event("contentBlockDelta", {"contentBlockIndex": index, "delta": dict(payload)}, part)

    frames: list[Frame] = []
    if "reasoningContent" in block:
        reasoning = block["reasoningContent"]["reasoningText"]
        frames += [delta({"reasoningContent": {"text": t}}) for t in text_pieces(reasoning["text"])]
        frames.append(delta({"reasoningContent": {"signature": reasoning["signature"]}}, "other"))
    elif "text" in block:
        frames += [delta({"text": t}) for t in text_pieces(block["text"])]
    else:
        start = {"toolUse": {"toolUseId": block["toolUse"]["toolUseId"], "name": block["toolUse"]["name"]}}
        frames.append(_event("contentBlockStart", {"contentBlockIndex": index, "start": start}))
        frames += [delta({"toolUse": {"input": p}}) for p in json_pieces(arguments)]
    frames.append(_event("contentBlockStop", {"contentBlockIndex": index}))
    return frames


class Bedrock(WireProtocol):
    """The Bedrock Runtime Converse wire format."""

    name = "bedrock"
    routes = re.compile(r"/model/(?P<model>[^/]+)/converse(?P<stream>-stream)?")
    stream_content_type = CONTENT_TYPE
    stop_reasons: ClassVar[Mapping[str, str]] = {"content_filter": "content_filtered"}
    context_overflow = "Input is too long for requested model."

    def _body(self, failure: Failure) -> dict[str, str]:
        return {"message": self.failure_message(failure)}

    def error(self, failure: Failure) -> JsonAnswer:
        return JsonAnswer(failure.status, self._body(failure), {"x-amzn-ErrorType": _http_exception(failure)})

    def message(self, reply: Reply, exchange: Exchange) -> Mapping[str, Any]:
        return {
            "output": {"message": {"role": "assistant", "content": _blocks(reply, exchange)}},
            "stopReason": self.stop_reason(reply),
            "usage": _usage(reply.token_usage),
            "metrics": {"latencyMs": 1},
        }

    def stream(self, reply: Reply, exchange: Exchange) -> list[Frame]:
        frames = [_event("messageStart", {"role": "assistant"}, "opening")]
        calls = iter(reply.tool_calls)
        for index, block in enumerate(_blocks(reply, exchange)):
            arguments = next(calls).arguments_json if "toolUse" in block else ""
            frames += _block_events(index, block, arguments)
        frames.append(_event("messageStop", {"stopReason": self.stop_reason(reply)}))
        frames.append(_event("metadata", {"usage": _usage(reply.token_usage), "metrics": {"latencyMs": 1}}))
        return frames

    def stream_error(self, failure: Failure, exchange: Exchange, sent: int) -> list[Frame]:
        return [Frame(exception_message(_stream_exception(failure), self._body(failure)))]


BEDROCK = Bedrock()
