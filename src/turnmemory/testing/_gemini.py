"""Gemini ``generateContent`` / ``streamGenerateContent?alt=sse`` under ``/v1``, ``/v1beta`` or no version.

A stream is ``data:`` chunks of ``GenerateContentResponse`` JSON, one part each: reasoning as
``thought: true`` text parts (the last one signed), text parts, whole ``functionCall`` parts (the
first one carrying a base64 ``thoughtSignature``), then a closing chunk with ``finishReason`` and
``usageMetadata``. Answers are always SSE, as the SDK asks for them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar

from turnmemory.testing._chunks import text_pieces
from turnmemory.testing._script import Failure, Reply, Usage
from turnmemory.testing._sse import sse
from turnmemory.testing._wire import Exchange, Frame, JsonAnswer, WireProtocol, error_kind

__all__ = ["GEMINI", "Gemini"]


def _usage(usage: Usage) -> dict[str, int]:
    metadata = {
        "promptTokenCount": usage.input_tokens,
        "candidatesTokenCount": usage.output_tokens,
        "totalTokenCount": usage.total_tokens,
    }
    if usage.cached_tokens:
        metadata["cachedContentTokenCount"] = usage.cached_tokens
    return metadata


def _parts(reply: Reply, exchange: Exchange, pieces: bool) -> list[dict[str, Any]]:
    """The reply's parts: one per text piece when streaming (``pieces``), else one per kind."""

    def split(text: str) -> list[str]:
        return text_pieces(text) if pieces else ([text] if text else [])

    parts: list[dict[str, Any]] = [{"text": t, "thought": True} for t in split(reply.reasoning)]
    if parts:
        parts[-1]["thoughtSignature"] = exchange.signature("thought")
    parts += [{"text": t} for t in split(reply.text)]
    for i, call in enumerate(reply.tool_calls, 1):
        function_call = {
            "id": exchange.call_id(call, i, "call"),
            "name": call.name,
            "args": dict(call.arguments),
        }
        part: dict[str, Any] = {"functionCall": function_call}
        if i == 1:
            part["thoughtSignature"] = exchange.signature("function-call")
        parts.append(part)
    return parts


_STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


class Gemini(WireProtocol):
    """The Gemini API wire format (google-genai's requests)."""

    name = "gemini"
    routes = re.compile(
        r"(?:/v1|/v1beta|/v1alpha)?/models/(?P<model>[^/:]+)"
        r":(?:generateContent|(?P<stream>streamGenerateContent))"
    )
    credentials = ("x-goog-api-key", "authorization")
    stop_reasons: ClassVar[Mapping[str, str]] = {
        "end_turn": "STOP",
        "tool_use": "STOP",
        "max_tokens": "MAX_TOKENS",
        "content_filter": "SAFETY",
    }
    context_overflow = "The input token count (250000) exceeds the maximum number of tokens allowed (200000)."

    def authorized(self, headers: Mapping[str, str], query: str) -> bool:
        return super().authorized(headers, query) or "key=" in query

    def _error_object(self, failure: Failure) -> dict[str, Any]:
        status = (
            "INVALID_ARGUMENT"
            if failure.context_overflow
            else error_kind(failure, _STATUSES, "INVALID_ARGUMENT", "INTERNAL")
        )
        return {"error": {"code": failure.status, "message": self.failure_message(failure), "status": status}}

    def error(self, failure: Failure) -> JsonAnswer:
        return JsonAnswer(failure.status, self._error_object(failure))

    def _response(
        self, exchange: Exchange, parts: list[dict[str, Any]] | None, **candidate: Any
    ) -> dict[str, Any]:
        content: dict[str, Any] = {"role": "model"} if parts is None else {"role": "model", "parts": parts}
        return {
            "candidates": [{"content": content, "index": 0, **candidate}],
            "modelVersion": exchange.model,
            "responseId": exchange.id("resp"),
        }

    def _closing(self, reply: Reply) -> dict[str, Any]:
        return {"finishReason": self.stop_reason(reply)}

    def message(self, reply: Reply, exchange: Exchange) -> Mapping[str, Any]:
        parts = _parts(reply, exchange, pieces=False)
        response = self._response(exchange, parts or None, **self._closing(reply))
        return {**response, "usageMetadata": _usage(reply.token_usage)}

    def stream(self, reply: Reply, exchange: Exchange) -> list[Frame]:
        frames = [
            Frame(sse(self._response(exchange, [part])), "content") for part in _parts(reply, exchange, True)
        ]
        closing = {
            **self._response(exchange, None, **self._closing(reply)),
            "usageMetadata": _usage(reply.token_usage),
        }
        frames.append(Frame(sse(closing)))
        return frames

    def stream_error(self, failure: Failure, exchange: Exchange, sent: int) -> list[Frame]:
        return [Frame(sse(self._error_object(failure)))]


GEMINI = Gemini()
