"""OpenAI Responses over the official ``openai`` SDK, stateless.

Requests are sent with ``store=False`` and ``include=["reasoning.encrypted_content"]``: no
``previous_response_id``, so the whole conversation travels in ``input``. In-turn output items are
kept exactly as ``response.output_item.done`` delivered them, reasoning items with their
``encrypted_content`` and ``rs_`` / ``fc_`` / ``msg_`` ids, in output order, so a reasoning item
always travels with the items that followed it. ``session_id`` becomes ``prompt_cache_key``.
"""

from __future__ import annotations

import json
from collections.abc import Generator, Mapping, Sequence
from typing import Any

from turnmemory.llm._loop import (
    Completion,
    Connection,
    History,
    Item,
    PendingReplay,
    Settings,
    StreamInterrupted,
)
from turnmemory.llm._openai import function_tool, openai_client, openai_failure
from turnmemory.llm._reduce import Piece
from turnmemory.llm._retry import Failure, http_failure
from turnmemory.llm._tools import Call, ToolResult, ToolSpec, parse_arguments, parse_output, result_text
from turnmemory.llm.events import Event, Reason, Usage
from turnmemory.providers import openai_responses as formatter

__all__ = ["OpenAIResponsesWire", "ResponseFailed"]

_REASONING_DELTAS = ("response.reasoning_summary_text.delta", "response.reasoning_text.delta")
_STOPS: Mapping[str | None, Reason] = {"max_output_tokens": "max_tokens"}


class ResponseFailed(Exception):
    """A ``response.failed`` or ``error`` event: the response stream reported a failure."""

    def __init__(self, code: str | None, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class OpenAIResponsesWire(History):
    """The Responses wire format (streamed ``responses.create``)."""

    items_key = "input"

    def __init__(self, settings: Settings, connection: Connection) -> None:
        self._client = openai_client(connection)
        super().__init__(formatter, settings)

    def stream(
        self, request: Mapping[str, Any], tools: Sequence[ToolSpec], turn_start: int
    ) -> Generator[Event | Completion, None, None]:
        items: dict[int, Item] = {}
        streamed: set[int] = set()
        response: Any = None
        events = self._client.responses.create(**self._kwargs(request, tools))
        with events:
            for event in events:
                kind = event.type
                if kind == "response.output_text.delta" and event.delta:
                    streamed.add(event.output_index)
                    yield Event("text", text=event.delta)
                elif kind in _REASONING_DELTAS and event.delta:
                    yield Event("reasoning", text=event.delta)
                elif kind == "response.output_item.done":
                    items[event.output_index] = event.item.to_dict(mode="json")
                elif kind in ("response.completed", "response.incomplete"):
                    response = event.response
                elif kind == "response.failed":
                    error = event.response.error
                    raise ResponseFailed(
                        error.code if error else None, error.message if error else "response failed"
                    )
                elif kind == "error":
                    raise ResponseFailed(event.code, event.message)
        if response is None:
            raise StreamInterrupted("the response stream ended before response.completed")
        # Some compatible servers stream no per-item events: the completed response's output fills
        # every index that no output_item.done delivered, and text that no delta streamed is sent now.
        for index, item in enumerate(response.output or ()):
            if index not in items:
                items[index] = item.to_dict(mode="json")
        for index, item in sorted(items.items()):
            if item.get("type") == "message" and index not in streamed and _message_text(item):
                yield Event("text", text=_message_text(item))
        output = tuple(items[index] for index in sorted(items))
        calls = tuple(
            Call(
                id=item["call_id"],
                name=item["name"],
                arguments=parse_arguments(item.get("arguments", "")),
                raw_arguments=item.get("arguments", ""),
            )
            for item in output
            if item.get("type") == "function_call"
        )
        text = "".join(_message_text(item) for item in output if item.get("type") == "message")
        details = response.incomplete_details
        yield Completion(
            items=output if text or calls else (),
            calls=calls,
            text=text,
            usage=_usage(response.usage),
            stop=_STOPS.get(details.reason if details else None, "stop"),
        )

    def pieces(self, items: Sequence[Item]) -> list[Piece]:
        found: list[Piece] = []
        signed = False
        for index, item in enumerate(items):
            kind = item.get("type", "message")
            if kind == "reasoning":
                signed = signed or bool(item.get("encrypted_content"))
            elif kind == "function_call":
                arguments = parse_arguments(str(item.get("arguments") or ""))
                found.append(
                    Piece(
                        index,
                        0,
                        "arguments",
                        str(item.get("call_id", "")),
                        name=str(item.get("name", "")),
                        arguments=arguments,
                        editable=arguments is not None and not signed,
                    )
                )
            elif kind == "function_call_output":
                signed = False
                output = item.get("output")
                text = output if isinstance(output, str) else ""
                found.append(
                    Piece(
                        index,
                        0,
                        "result",
                        str(item.get("call_id", "")),
                        text=text,
                        error=parse_output(text).error is not None,
                    )
                )
            elif item.get("role") != "assistant":
                signed = False
        return found

    def replace(self, item: Item, piece: Piece, content: str | dict[str, Any]) -> Item:
        if isinstance(content, str):
            return {
                **item,
                "output": result_text(ToolResult(error=content), flagged=False) if piece.error else content,
            }
        return {**item, "arguments": json.dumps(content, ensure_ascii=False)}

    def tool_results(self, calls: Sequence[Call], results: Sequence[ToolResult]) -> list[Item]:
        return [
            {"type": "function_call_output", "call_id": call.id, "output": result_text(result, flagged=False)}
            for call, result in zip(calls, results, strict=True)
        ]

    def failure(self, error: Exception) -> Failure | None:
        if isinstance(error, ResponseFailed):
            return http_failure(None, error.message, kind=error.code)
        return openai_failure(error)

    def replay(self, pending: Sequence[Item], out: PendingReplay) -> None:
        for item in pending:
            kind = item.get("type", "message")
            if kind == "message" and item.get("role") == "assistant":
                out.text(_message_text(item))
            elif kind == "function_call":
                out.call(
                    item.get("call_id", ""), item.get("name", ""), parse_arguments(item.get("arguments", ""))
                )
            elif kind == "function_call_output":
                output = item.get("output")
                out.result(item.get("call_id", ""), parse_output(output if isinstance(output, str) else ""))

    def _kwargs(self, request: Mapping[str, Any], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        settings = self.settings
        kwargs: dict[str, Any] = {
            "model": settings.model,
            "input": request["input"],
            "stream": True,
            "store": False,
            "include": ["reasoning.encrypted_content"],
        }
        if request.get("instructions"):
            kwargs["instructions"] = request["instructions"]
        if tools:
            kwargs["tools"] = [function_tool(spec, nested=False) for spec in tools]
        if settings.max_tokens is not None:
            kwargs["max_output_tokens"] = settings.max_tokens
        if settings.temperature is not None:
            kwargs["temperature"] = settings.temperature
        if settings.reasoning_effort is not None:
            kwargs["reasoning"] = {"effort": settings.reasoning_effort, "summary": "auto"}
        if settings.session_id is not None:
            kwargs["prompt_cache_key"] = settings.session_id
        return kwargs


def _message_text(item: Mapping[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    return "".join(
        str(part.get("text", ""))
        for part in content or ()
        if isinstance(part, Mapping) and part.get("type") in ("output_text", "input_text", "text")
    )


def _usage(usage: Any) -> Usage:
    if usage is None:
        return Usage()
    details = getattr(usage, "input_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) or 0
    return Usage(
        input_tokens=usage.input_tokens or 0, output_tokens=usage.output_tokens or 0, cached_tokens=cached
    )
