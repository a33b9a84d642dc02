"""OpenAI Chat Completions, and any OpenAI-compatible server, over the official ``openai`` SDK.

In-turn assistant messages keep the reasoning text that compatible servers stream beside the
content (``reasoning_content``, or ``reasoning``) under the same key, so servers that demand it
back inside a tool loop get it. ``session_id`` becomes ``prompt_cache_key``.
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
from turnmemory.llm._retry import Failure, MalformedError
from turnmemory.llm._tools import Call, ToolResult, ToolSpec, parse_arguments, parse_output, result_text
from turnmemory.llm.events import Event, Reason, Usage
from turnmemory.providers import openai_chat as formatter

__all__ = ["OpenAIChatWire"]

REASONING_KEYS = ("reasoning_content", "reasoning")
"""Where compatible servers put streamed reasoning text, in order of preference."""

_STOPS: Mapping[str | None, Reason] = {"length": "max_tokens"}


class OpenAIChatWire(History):
    """The Chat Completions wire format (streamed ``chat.completions.create``)."""

    items_key = "messages"

    def __init__(self, settings: Settings, connection: Connection) -> None:
        self._client = openai_client(connection)
        self._official = connection.base_url is None and connection.client is None
        super().__init__(formatter, settings)

    def replay_options(self) -> dict[str, Any]:
        """The served model chooses the history's form (``openai_chat.family``); the settings may force it."""
        settings = self.settings
        return {
            **super().replay_options(),
            "id_style": settings.id_style,
            "single_calls": settings.single_calls,
            "model": settings.model,
        }

    def stream(
        self, request: Mapping[str, Any], tools: Sequence[ToolSpec], turn_start: int
    ) -> Generator[Event | Completion, None, None]:
        text: list[str] = []
        reasoning: dict[str, list[str]] = {}
        calls: dict[int, dict[str, str]] = {}
        finish: str | None = None
        usage = Usage()
        chunks = self._client.chat.completions.create(**self._kwargs(request, tools))
        with chunks:
            for chunk in chunks:
                if chunk.usage is not None:
                    usage = _usage(chunk.usage)
                for choice in chunk.choices[:1]:
                    delta = choice.delta
                    for key in REASONING_KEYS:
                        piece = (delta.model_extra or {}).get(key)
                        if isinstance(piece, str) and piece:
                            reasoning.setdefault(key, []).append(piece)
                            yield Event("reasoning", text=piece)
                    if delta.content:
                        text.append(delta.content)
                        yield Event("text", text=delta.content)
                    for fragment in delta.tool_calls or ():
                        call = calls.setdefault(fragment.index, {"id": "", "name": "", "arguments": ""})
                        call["id"] = fragment.id or call["id"]
                        if fragment.function is not None:
                            call["name"] += fragment.function.name or ""
                            call["arguments"] += fragment.function.arguments or ""
                    finish = choice.finish_reason or finish
        if finish is None:
            raise StreamInterrupted("the response stream ended without a finish reason")
        content = "".join(text)
        ordered = [calls[index] for index in sorted(calls)]
        if any(not call["name"] for call in ordered):
            raise MalformedError("a tool call without a name")
        message: Item = {"role": "assistant", "content": content or None}
        for key, pieces in reasoning.items():
            message[key] = "".join(pieces)
        if ordered:
            message["tool_calls"] = [_tool_call(call, n) for n, call in enumerate(ordered)]
        parsed = tuple(
            Call(
                id=wire["id"],
                name=wire["function"]["name"],
                arguments=parse_arguments(call["arguments"]),
                raw_arguments=call["arguments"],
            )
            for call, wire in zip(ordered, message.get("tool_calls", ()), strict=True)
        )
        yield Completion(
            items=(message,) if content or ordered else (),
            calls=parsed,
            text=content,
            usage=usage,
            stop=_STOPS.get(finish, "stop"),
        )

    def pieces(self, items: Sequence[Item]) -> list[Piece]:
        found: list[Piece] = []
        for index, item in enumerate(items):
            if item.get("role") == "assistant":
                for slot, call in enumerate(item.get("tool_calls") or ()):
                    function = call.get("function") or {}
                    arguments = parse_arguments(str(function.get("arguments") or ""))
                    found.append(
                        Piece(
                            index,
                            slot,
                            "arguments",
                            str(call.get("id", "")),
                            name=str(function.get("name", "")),
                            arguments=arguments,
                            editable=arguments is not None,
                        )
                    )
            elif item.get("role") == "tool":
                text = item.get("content")
                text = text if isinstance(text, str) else ""
                found.append(
                    Piece(
                        index,
                        0,
                        "result",
                        str(item.get("tool_call_id", "")),
                        text=text,
                        error=parse_output(text).error is not None,
                    )
                )
        return found

    def replace(self, item: Item, piece: Piece, content: str | dict[str, Any]) -> Item:
        if isinstance(content, str):
            return {
                **item,
                "content": result_text(ToolResult(error=content), flagged=False) if piece.error else content,
            }
        calls = list(item["tool_calls"])
        call = calls[piece.slot]
        calls[piece.slot] = {
            **call,
            "function": {**call["function"], "arguments": json.dumps(content, ensure_ascii=False)},
        }
        return {**item, "tool_calls": calls}

    def tool_results(self, calls: Sequence[Call], results: Sequence[ToolResult]) -> list[Item]:
        return [
            {"role": "tool", "tool_call_id": call.id, "content": result_text(result, flagged=False)}
            for call, result in zip(calls, results, strict=True)
        ]

    def failure(self, error: Exception) -> Failure | None:
        return openai_failure(error)

    def replay(self, pending: Sequence[Item], out: PendingReplay) -> None:
        for item in pending:
            role = item.get("role")
            if role == "assistant":
                content = item.get("content")
                if isinstance(content, str):
                    out.text(content)
                for call in item.get("tool_calls") or ():
                    function = call.get("function") or {}
                    out.call(
                        call.get("id", ""),
                        function.get("name", ""),
                        parse_arguments(function.get("arguments", "")),
                    )
            elif role == "tool":
                content = item.get("content")
                out.result(
                    item.get("tool_call_id", ""), parse_output(content if isinstance(content, str) else "")
                )

    def _kwargs(self, request: Mapping[str, Any], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        settings = self.settings
        kwargs: dict[str, Any] = {
            "model": settings.model,
            "messages": request["messages"],
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if tools:
            kwargs["tools"] = [function_tool(spec, nested=True) for spec in tools]
        if settings.max_tokens is not None:
            kwargs["max_completion_tokens" if self._official else "max_tokens"] = settings.max_tokens
        if settings.temperature is not None:
            kwargs["temperature"] = settings.temperature
        if settings.reasoning_effort is not None:
            kwargs["reasoning_effort"] = settings.reasoning_effort
        if settings.session_id is not None:
            kwargs["prompt_cache_key"] = settings.session_id
        return kwargs


def _tool_call(call: Mapping[str, str], n: int) -> Item:
    arguments = call["arguments"]
    return {
        "id": call["id"] or f"call_{n}",
        "type": "function",
        "function": {"name": call["name"], "arguments": arguments if _is_json(arguments) else "{}"},
    }


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _usage(usage: Any) -> Usage:
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) or 0
    return Usage(
        input_tokens=usage.prompt_tokens or 0,
        output_tokens=usage.completion_tokens or 0,
        cached_tokens=cached,
    )
