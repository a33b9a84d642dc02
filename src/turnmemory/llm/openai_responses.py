"""OpenAI Responses over the official ``openai`` SDK, stateless.

Requests are sent with ``store=False`` and ``include=["reasoning.encrypted_content"]``: no
``previous_response_id``, so the whole conversation travels in ``input``. In-turn output items are
kept exactly as ``response.output_item.done`` delivered them, reasoning items with their
``encrypted_content`` and ``rs_`` / ``fc_`` / ``msg_`` ids, in output order, so a reasoning item
always travels with the items that followed it. ``session_id`` becomes ``prompt_cache_key``.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from turnmemory.llm._openai import OpenAISdk, openai_usage
from turnmemory.llm._retry import MalformedError, RequestFailure, http_failure
from turnmemory.llm._sdk import CallIds, Completion, Query, StreamInterrupted, given
from turnmemory.llm.events import Event
from turnmemory.providers import openai_responses
from turnmemory.providers._read import prose_text
from turnmemory.providers._render import Item, tool_name
from turnmemory.providers._tools import Call, parse_arguments

__all__ = ["OpenAIResponsesSdk", "ResponseFailed"]

_REASONING_DELTAS = ("response.reasoning_summary_text.delta", "response.reasoning_text.delta")


class ResponseFailed(Exception):
    """A ``response.failed`` or ``error`` event: the response stream reported a failure."""

    def __init__(self, code: str | None, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class OpenAIResponsesSdk(OpenAISdk):
    """Responses through the official SDK (streamed ``responses.create``, stateless)."""

    wire = openai_responses
    max_tokens_stops = frozenset({"max_output_tokens"})

    def stream(self, query: Query) -> Generator[Event | Completion, None, None]:
        items: dict[int, Item] = {}
        streamed: set[int] = set()
        response: Any = None
        for event in self.events(self._client.responses, self._fields(query)):
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
        ids = CallIds(query.taken_ids, openai_responses.is_call_id)
        output = tuple(
            (_conformed(item, ids), dropped)
            for item, dropped in (_kept(items[index], query.max_argument_bytes) for index in sorted(items))
        )
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
            usage=openai_usage(response.get("usage"), "input_tokens", "output_tokens"),
            stop=self.reason(details.get("reason") if details else None),
        )

    def failure(self, error: Exception) -> RequestFailure | None:
        if isinstance(error, ResponseFailed):
            return http_failure(None, error.message, kind=error.code)
        return super().failure(error)

    def _fields(self, query: Query) -> dict[str, Any]:
        settings, effort = self.settings, self.settings.reasoning_effort
        return {
            **self.shared_fields(query, openai_responses.mark_cache, nested=False),
            "store": False,
            "include": ["reasoning.encrypted_content"],
            **given(
                instructions=query.body.get("instructions") or None,
                max_output_tokens=settings.max_tokens,
                reasoning=None if effort is None else {"effort": effort, "summary": "auto"},
            ),
        }


def _conformed(item: Item, ids: CallIds) -> Item:
    """A function call item with its call id and name as every wire accepts them; other items as they are."""
    if item.get("type") != "function_call":
        return item
    name = item.get("name")
    if not isinstance(name, str) or not name:
        raise MalformedError("a function call without a name")
    call_id = item.get("call_id")
    conformed = {
        "call_id": ids.conform(call_id if isinstance(call_id, str) else None),
        "name": tool_name(name),
    }
    return item if conformed == {"call_id": call_id, "name": name} else {**item, **conformed}


def _kept(item: Item, cap: int) -> tuple[Item, int]:
    """An output item as the turn keeps it, and the size of function call arguments too large to keep
    (0 when kept): those arguments become ``{}``."""
    arguments = item.get("arguments") if item.get("type") == "function_call" else None
    if not isinstance(arguments, str) or len(arguments) * 4 <= cap:  # UTF-8 takes at most 4 bytes a character
        return item, 0
    size = len(arguments.encode("utf-8", "surrogatepass"))
    return ({**item, "arguments": "{}"}, size) if size > cap else (item, 0)
