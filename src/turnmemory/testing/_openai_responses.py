"""OpenAI Responses: ``POST /v1/responses``, SSE of typed events with ``sequence_number``s.

The stream keeps the invariants the SDK's stream helper checks: ``response.created`` first, one
response id throughout, one ``output_index`` per item, ``content_part.added`` before text deltas,
every ``output_item.added`` closed by its ``output_item.done``. Reasoning is a ``reasoning`` item
(summary streamed as ``reasoning_summary_text`` deltas, ``encrypted_content`` on the done item),
text a ``message`` item, each tool call a ``function_call`` item (``fc_`` id, ``call_`` call id).
Stops other than ``end_turn``/``tool_use`` end with ``response.incomplete``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from turnmemory.testing._chunks import json_pieces, text_pieces
from turnmemory.testing._openai_common import openai_error
from turnmemory.testing._script import Failure, Reply, Usage
from turnmemory.testing._sse import sse
from turnmemory.testing._wire import Exchange, Frame, FramePart, JsonAnswer, WireProtocol

__all__ = ["OPENAI_RESPONSES", "OpenAIResponses"]

_INCOMPLETE_REASONS = {"max_tokens": "max_output_tokens"}
_CREATED = 1_700_000_000

StreamEvent = tuple[dict[str, Any], FramePart]


def _usage(usage: Usage) -> dict[str, Any]:
    return {
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {
            "cached_tokens": usage.cached_tokens,
            "cache_write_tokens": usage.cache_write_tokens,
        },
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage.total_tokens,
    }


def _incomplete_reason(reply: Reply) -> str | None:
    if reply.stop_reason in ("end_turn", "tool_use"):
        return None
    return _INCOMPLETE_REASONS.get(reply.stop_reason, reply.stop_reason)


def _output_text(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def _items(reply: Reply, exchange: Exchange) -> list[dict[str, Any]]:
    """The response's complete output items, in stream order."""
    status = "completed" if _incomplete_reason(reply) is None else "incomplete"
    items: list[dict[str, Any]] = []
    if reply.reasoning:
        items.append(
            {
                "type": "reasoning",
                "id": exchange.id("rs", len(items)),
                "summary": [{"type": "summary_text", "text": reply.reasoning}],
                "encrypted_content": exchange.signature("reasoning"),
            }
        )
    if reply.text:
        items.append(
            {
                "type": "message",
                "id": exchange.id("msg", len(items)),
                "status": status,
                "role": "assistant",
                "content": [_output_text(reply.text)],
            }
        )
    for i, call in enumerate(reply.tool_calls, 1):
        items.append(
            {
                "type": "function_call",
                "id": exchange.id("fc", len(items)),
                "call_id": exchange.call_id(call, i, "call"),
                "name": call.name,
                "arguments": call.arguments_json,
                "status": "completed",
            }
        )
    return items


def _item_events(index: int, item: Mapping[str, Any]) -> list[StreamEvent]:
    """``output_item.added`` … ``output_item.done`` for one complete item."""
    where = {"item_id": item["id"], "output_index": index}
    events: list[StreamEvent]
    if item["type"] == "reasoning":
        text = item["summary"][0]["text"]
        part = {"type": "summary_text", "text": text}
        opened = {"type": "reasoning", "id": item["id"], "summary": []}
        events = [
            (
                {
                    "type": "response.reasoning_summary_part.added",
                    **where,
                    "summary_index": 0,
                    "part": {**part, "text": ""},
                },
                "other",
            ),
            *(
                (
                    {
                        "type": "response.reasoning_summary_text.delta",
                        **where,
                        "summary_index": 0,
                        "delta": t,
                    },
                    "content",
                )
                for t in text_pieces(text)
            ),
            (
                {"type": "response.reasoning_summary_text.done", **where, "summary_index": 0, "text": text},
                "other",
            ),
            (
                {"type": "response.reasoning_summary_part.done", **where, "summary_index": 0, "part": part},
                "other",
            ),
        ]
    elif item["type"] == "message":
        text = item["content"][0]["text"]
        at = {**where, "content_index": 0}
        opened = {**item, "status": "in_progress", "content": []}
        events = [
            ({"type": "response.content_part.added", **at, "part": _output_text("")}, "other"),
            *(
                ({"type": "response.output_text.delta", **at, "delta": t, "logprobs": []}, "content")
                for t in text_pieces(text)
            ),
            ({"type": "response.output_text.done", **at, "text": text, "logprobs": []}, "other"),
            ({"type": "response.content_part.done", **at, "part": _output_text(text)}, "other"),
        ]
    else:
        opened = {**item, "arguments": "", "status": "in_progress"}
        events = [
            ({"type": "response.function_call_arguments.delta", **where, "delta": p}, "content")
            for p in json_pieces(item["arguments"])
        ]
        done = {
            "type": "response.function_call_arguments.done",
            **where,
            "name": item["name"],
            "arguments": item["arguments"],
        }
        events.append((done, "other"))
    return [
        ({"type": "response.output_item.added", "output_index": index, "item": opened}, "other"),
        *events,
        ({"type": "response.output_item.done", "output_index": index, "item": dict(item)}, "other"),
    ]


def _frames(events: list[StreamEvent], first: int = 0) -> list[Frame]:
    return [
        Frame(sse({**event, "sequence_number": first + n}, event=str(event["type"])), part)
        for n, (event, part) in enumerate(events)
    ]


class OpenAIResponses(WireProtocol):
    """The Responses API wire format."""

    name = "openai_responses"
    routes = re.compile("/v1/responses")
    context_overflow = (
        "Your input exceeds the context window of this model. Please adjust your input and try again."
    )

    def error(self, failure: Failure) -> JsonAnswer:
        return JsonAnswer(failure.status, {"error": openai_error(failure, self.context_overflow, "input")})

    def _response(
        self, exchange: Exchange, status: str, output: list[dict[str, Any]], **extra: Any
    ) -> dict[str, Any]:
        tools = exchange.body.get("tools")
        return {
            "id": exchange.id("resp"),
            "object": "response",
            "created_at": _CREATED,
            "status": status,
            "model": exchange.model,
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": exchange.body.get("tool_choice", "auto"),
            "tools": tools if isinstance(tools, list) else [],
            "error": None,
            "incomplete_details": None,
            "usage": None,
            **extra,
        }

    def _final(self, reply: Reply, exchange: Exchange) -> dict[str, Any]:
        reason = _incomplete_reason(reply)
        return self._response(
            exchange,
            "completed" if reason is None else "incomplete",
            _items(reply, exchange),
            incomplete_details=None if reason is None else {"reason": reason},
            usage=_usage(reply.token_usage),
        )

    def message(self, reply: Reply, exchange: Exchange) -> Mapping[str, Any]:
        return self._final(reply, exchange)

    def stream(self, reply: Reply, exchange: Exchange) -> list[Frame]:
        started = self._response(exchange, "in_progress", [])
        final = self._final(reply, exchange)
        events: list[StreamEvent] = [
            ({"type": "response.created", "response": started}, "opening"),
            ({"type": "response.in_progress", "response": started}, "opening"),
        ]
        for index, item in enumerate(final["output"]):
            events += _item_events(index, item)
        terminal = "response.completed" if final["status"] == "completed" else "response.incomplete"
        events.append(({"type": terminal, "response": final}, "other"))
        return _frames(events)

    def stream_error(self, failure: Failure, exchange: Exchange, sent: int) -> list[Frame]:
        error = openai_error(failure, self.context_overflow, "input")
        code = error["code"] or error["type"]
        failed = self._response(exchange, "failed", [], error={"code": code, "message": error["message"]})
        events: list[StreamEvent] = [
            ({"type": "error", "code": code, "message": error["message"], "param": error["param"]}, "other"),
            ({"type": "response.failed", "response": failed}, "other"),
        ]
        return _frames(events, sent)


OPENAI_RESPONSES = OpenAIResponses()
