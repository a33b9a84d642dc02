"""OpenAI Responses over the official ``openai`` SDK, stateless.

Requests are sent with ``store=False`` and ``include=["reasoning.encrypted_content"]``: no
``previous_response_id``, so the whole conversation travels in ``input``. In-turn output items are
kept exactly as ``response.output_item.done`` delivered them, reasoning items with their
``encrypted_content`` and ``rs_`` / ``fc_`` / ``msg_`` ids, in output order, so a reasoning item
always travels with the items that followed it. ``session_id`` becomes ``prompt_cache_key``.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import Any

from turnmemory.llm._openai import (
    function_tool,
    openai_chunks,
    openai_client,
    openai_count,
    openai_failure,
    with_breakpoint,
)
from turnmemory.llm._retry import RequestFailure, http_failure
from turnmemory.llm._sdk import Completion, Endpoint, Query, Sdk, Settings, StreamInterrupted
from turnmemory.llm.events import Event, Reason, Usage
from turnmemory.providers import openai_responses
from turnmemory.providers._read import prose_text
from turnmemory.providers._render import Item, takes_breakpoint
from turnmemory.providers._tools import Call, parse_arguments

__all__ = ["OpenAIResponsesSdk", "ResponseFailed"]

_REASONING_DELTAS = ("response.reasoning_summary_text.delta", "response.reasoning_text.delta")
_STOPS: Mapping[str | None, Reason] = {"max_output_tokens": "max_tokens"}


class ResponseFailed(Exception):
    """A ``response.failed`` or ``error`` event: the response stream reported a failure."""

    def __init__(self, code: str | None, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class OpenAIResponsesSdk(Sdk):
    """Responses through the official SDK (streamed ``responses.create``, stateless)."""

    wire = openai_responses

    def __init__(self, settings: Settings, endpoint: Endpoint) -> None:
        self._client = openai_client(endpoint)
        self.settings = settings
        self._pending_items = 0

    def stream(self, query: Query) -> Generator[Event | Completion, None, None]:
        items: dict[int, Item] = {}
        streamed: set[int] = set()
        response: Any = None
        for event in openai_chunks(self._client.responses, self._kwargs(query)):
            kind = event.get("type")
            if kind == "response.output_text.delta" and event.get("delta"):
                streamed.add(event["output_index"])
                yield Event("text", text=event["delta"])
            elif kind in _REASONING_DELTAS and event.get("delta"):
                yield Event("reasoning", text=event["delta"])
            elif kind == "response.output_item.done":
                items[event["output_index"]] = event["item"]
            elif kind in ("response.completed", "response.incomplete"):
                response = event["response"]
            elif kind == "response.failed":
                error = event["response"].get("error")
                raise ResponseFailed(
                    error.get("code") if error else None,
                    error.get("message") if error else "response failed",
                )
            elif kind == "error":
                raise ResponseFailed(event.get("code"), event.get("message") or "")
        if response is None:
            raise StreamInterrupted("the response stream ended before response.completed")
        # Some compatible servers stream no per-item events: the completed response's output fills
        # every index that no output_item.done delivered, and text that no delta streamed is sent now.
        for index, item in enumerate(response.get("output") or ()):
            if index not in items:
                items[index] = item
        for index, item in sorted(items.items()):
            if item.get("type") == "message" and index not in streamed and prose_text(item.get("content")):
                yield Event("text", text=prose_text(item.get("content")))
        output = tuple(_kept(items[index], query.max_argument_bytes) for index in sorted(items))
        calls = tuple(
            Call(
                id=item["call_id"],
                name=item["name"],
                arguments=None if dropped else parse_arguments(item.get("arguments", "")),
                raw_arguments="" if dropped else item.get("arguments", ""),
                dropped_bytes=dropped,
            )
            for item, dropped in output
            if item.get("type") == "function_call"
        )
        output_items = tuple(item for item, _ in output)
        text = "".join(
            prose_text(item.get("content")) for item in output_items if item.get("type") == "message"
        )
        details = response.get("incomplete_details")
        yield Completion(
            items=output_items if text or calls else (),
            calls=calls,
            text=text,
            usage=_usage(response.get("usage")),
            stop=_STOPS.get(details.get("reason") if details else None, "stop"),
        )

    def failure(self, error: Exception) -> RequestFailure | None:
        if isinstance(error, ResponseFailed):
            return http_failure(None, error.message, kind=error.code)
        return openai_failure(error)

    def injected(self, pending: list[Item]) -> list[Item]:
        """The pending items as they are (their count places the compacted prefix's breakpoint)."""
        self._pending_items = len(pending)
        return pending

    def _kwargs(self, query: Query) -> dict[str, Any]:
        settings, request = self.settings, query.body
        items = request["input"]
        if takes_breakpoint(settings.model):  # the compacted prefix ends before pending state and the prompt
            items = with_breakpoint(
                items, query.turn_start - 1 - self._pending_items, openai_responses.mark_cache
            )
        kwargs: dict[str, Any] = {
            "model": settings.model,
            "input": items,
            "stream": True,
            "store": False,
            "include": ["reasoning.encrypted_content"],
        }
        if request.get("instructions"):
            kwargs["instructions"] = request["instructions"]
        if query.tools:
            kwargs["tools"] = [function_tool(spec, nested=False) for spec in query.tools]
        if settings.max_tokens is not None:
            kwargs["max_output_tokens"] = settings.max_tokens
        if settings.temperature is not None:
            kwargs["temperature"] = settings.temperature
        if settings.reasoning_effort is not None:
            kwargs["reasoning"] = {"effort": settings.reasoning_effort, "summary": "auto"}
        if settings.session_id is not None:
            kwargs["prompt_cache_key"] = settings.session_id
        return kwargs


def _kept(item: Item, cap: int) -> tuple[Item, int]:
    """An output item as the turn keeps it, and the size of function call arguments too large to keep
    (0 when kept): those arguments become ``{}``."""
    arguments = item.get("arguments") if item.get("type") == "function_call" else None
    if not isinstance(arguments, str) or len(arguments) * 4 <= cap:  # UTF-8 takes at most 4 bytes a character
        return item, 0
    size = len(arguments.encode("utf-8", "surrogatepass"))
    return ({**item, "arguments": "{}"}, size) if size > cap else (item, 0)


def _usage(usage: Mapping[str, Any] | None) -> Usage:
    if usage is None:
        return Usage()
    details = usage.get("input_tokens_details")
    return Usage(
        input_tokens=usage.get("input_tokens") or 0,
        output_tokens=usage.get("output_tokens") or 0,
        cached_tokens=openai_count(details, "cached_tokens"),
        cache_write_tokens=openai_count(details, "cache_write_tokens"),
    )
