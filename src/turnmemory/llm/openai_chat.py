"""OpenAI Chat Completions, and any OpenAI-compatible server, over the official ``openai`` SDK.

In-turn assistant messages keep the reasoning text that compatible servers stream beside the
content (``reasoning_content``, or ``reasoning``) under the same key, so servers that demand it
back inside a tool loop get it. ``session_id`` becomes ``prompt_cache_key``.
"""

from __future__ import annotations

import json
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

from turnmemory.llm._openai import OpenAISdk, openai_usage
from turnmemory.llm._retry import MalformedError
from turnmemory.llm._sdk import CallIds, Completion, Endpoint, Query, Settings, StreamInterrupted, given
from turnmemory.llm._stream import Arguments
from turnmemory.llm.events import Event, Usage
from turnmemory.providers import openai_chat
from turnmemory.providers._render import MAX_TOOL_NAME, Item, tool_name
from turnmemory.providers._tools import Call, parse_arguments

__all__ = ["OpenAIChatSdk"]

REASONING_KEYS = openai_chat.REASONING_KEYS


class OpenAIChatSdk(OpenAISdk):
    """Chat Completions through the official SDK (streamed ``chat.completions.create``)."""

    wire = openai_chat
    max_tokens_stops = frozenset({"length"})

    def __init__(self, settings: Settings, endpoint: Endpoint) -> None:
        super().__init__(settings, endpoint)
        self._official = endpoint.base_url is None and endpoint.client is None

    def options(self) -> dict[str, Any]:
        """The served model chooses the history's form (``openai_chat.family``); the settings may force it."""
        settings = self.settings
        return {
            "arguments": settings.arguments,
            "id_style": settings.id_style,
            "single_calls": settings.single_calls,
            "model": settings.model,
        }

    def stream(self, query: Query) -> Generator[Event | Completion, None, None]:
        text: list[str] = []
        reasoning: dict[str, list[str]] = {}
        calls: dict[int, _Call] = {}
        finish: str | None = None
        usage = Usage()
        for chunk in self.events(self._client.chat.completions, self._fields(query)):
            if chunk.get("usage") is not None:
                usage = openai_usage(chunk["usage"], "prompt_tokens", "completion_tokens")
            for choice in (chunk.get("choices") or ())[:1]:
                delta = choice.get("delta") or {}
                for key in REASONING_KEYS:
                    piece = delta.get(key)
                    if isinstance(piece, str) and piece:
                        reasoning.setdefault(key, []).append(piece)
                        yield Event("reasoning", text=piece)
                content = delta.get("content")
                if isinstance(content, str) and content:
                    text.append(content)
                    yield Event("text", text=content)
                for fragment in delta.get("tool_calls") or ():
                    call = calls.get(fragment["index"])
                    if call is None:
                        call = calls[fragment["index"]] = _Call(Arguments(query.max_argument_bytes))
                    call.id = fragment.get("id") or call.id
                    function = fragment.get("function")
                    if function is not None:
                        call.add_name(function.get("name"))
                        call.arguments.add(function.get("arguments") or "")
                finish = choice.get("finish_reason") or finish
        if finish is None:
            raise StreamInterrupted("the response stream ended without a finish reason")
        content = "".join(text)
        ordered = [calls[index] for index in sorted(calls)]
        if any(not call.name for call in ordered):
            raise MalformedError("a tool call without a name")
        message: Item = {"role": "assistant", "content": content or None}
        for key, pieces in reasoning.items():
            message[key] = "".join(pieces)
        ids = CallIds(query.taken_ids, openai_chat.is_call_id)
        parsed = tuple(call.parsed(ids) for call in ordered)
        if ordered:
            message["tool_calls"] = [wire for wire, _ in parsed]
        yield Completion(
            items=(message,) if content or ordered else (),
            calls=tuple(call for _, call in parsed),
            text=content,
            usage=usage,
            stop=self.reason(finish),
        )

    def _fields(self, query: Query) -> dict[str, Any]:
        settings = self.settings
        return {
            **self.shared_fields(query, openai_chat.mark_cache, nested=True),
            "stream_options": {"include_usage": True},
            **given(
                **{"max_completion_tokens" if self._official else "max_tokens": settings.max_tokens},
                reasoning_effort=settings.reasoning_effort,
            ),
        }


@dataclass(slots=True)
class _Call:
    """One tool call as its fragments stream: its id, name pieces and arguments."""

    arguments: Arguments
    id: str = ""
    name: str = ""

    def add_name(self, piece: str | None) -> None:
        """Append a fragment of the name; past what a name may be, fragments only cut it short."""
        if piece and len(self.name) <= MAX_TOOL_NAME:
            self.name += piece

    def parsed(self, ids: CallIds) -> tuple[Item, Call]:
        """The call as the assistant message carries it (its id and name as every wire accepts them,
        arguments that are not JSON, or too large to keep, as ``{}``), and as a ``Call``."""
        name, raw = tool_name(self.name), self.arguments.text()
        wire: Item = {
            "id": ids.conform(self.id),
            "type": "function",
            "function": {"name": name, "arguments": raw if _is_json(raw) else "{}"},
        }
        if self.arguments.dropped:
            call = Call(id=wire["id"], name=name, arguments=None, dropped_bytes=self.arguments.size)
        else:
            call = Call(id=wire["id"], name=name, arguments=parse_arguments(raw), raw_arguments=raw)
        return wire, call


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True
