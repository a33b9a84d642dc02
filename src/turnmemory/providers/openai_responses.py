"""OpenAI Responses: history as stateless ``input`` items, system text as ``instructions``.

Prose becomes easy-input ``message`` items; each historical batch becomes ``function_call`` items
(``call_id`` only, never an item ``id``, so no reasoning item is demanded) followed by their
``function_call_output`` items. No ``previous_response_id`` is needed. Use it as::

    client.responses.create(model=..., tools=..., store=False, **openai_responses.to_request(history))
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from functools import partial
from typing import Any

from turnmemory.memory import Message
from turnmemory.providers._build import (
    IncrementalFormatter,
    RequestCache,
    item_request,
)
from turnmemory.providers._render import (
    PLACEHOLDER_DESCRIPTION,
    Block,
    Item,
    Options,
    cached_json,
    list_at,
    missing_names,
    replay_steps,
    tool_name,
)
from turnmemory.replay import ArgumentPolicy, IdStyle

__all__ = [
    "MAX_CALL_ID",
    "Formatter",
    "placeholder_tool",
    "placeholder_tools",
    "replayed_tool_names",
    "to_request",
]

MAX_CALL_ID = 64
"""The longest ``call_id`` the Responses API accepts."""


def _message(role: str, content: str) -> Block:
    return {"type": "message", "role": role, "content": content}


def _render(message: Message, message_index: int, options: Options, taken: set[str]) -> tuple[Block, ...]:
    if message.role == "system":
        return ()
    if message.role == "user":
        return (_message("user", message.content),)
    out: list[Block] = []
    for step in replay_steps(message, message_index, options, taken):
        if step.text:
            out.append(_message("assistant", step.text))
        out.extend(
            {
                "type": "function_call",
                "call_id": call.id,
                "name": tool_name(call.name),
                "arguments": cached_json(call.arguments),
            }
            for call in step.calls
        )
        out.extend(
            {"type": "function_call_output", "call_id": call.id, "output": cached_json(call.result)}
            for call in step.calls
        )
    return tuple(out)


def _pending_ids(pending: Sequence[Item]) -> Iterator[str]:
    for item in pending:
        if item.get("type") in ("function_call", "function_call_output") and isinstance(
            item.get("call_id"), str
        ):
            yield item["call_id"]


def to_request(
    messages: Sequence[Message],
    *,
    pending: Sequence[Item] | None = None,
    arguments: ArgumentPolicy = "empty",
    id_style: IdStyle = "historical",
) -> dict[str, Any]:
    """``{"input": [...], "instructions": "..."}`` for ``client.responses.create``.

    ``instructions`` joins the non-blank system messages with blank lines; it is absent without them.
    """
    return _request(messages, None, pending=pending, arguments=arguments, id_style=id_style)


def _request(
    messages: Sequence[Message],
    cache: RequestCache | None,
    *,
    pending: Sequence[Item] | None = None,
    arguments: ArgumentPolicy = "empty",
    id_style: IdStyle = "historical",
) -> dict[str, Any]:
    options = Options(arguments, id_style)
    systems, items = item_request(messages, pending, options, _render, _pending_ids, cache)
    request: dict[str, Any] = {"input": items}
    if systems:
        request["instructions"] = "\n\n".join(systems)
    return request


Formatter = partial(IncrementalFormatter, _request)
"""``Formatter()``: :func:`to_request` for one conversation, built incrementally (each historical message is
rendered once; the same keywords give the same requests)."""


def replayed_tool_names(request: Mapping[str, Any]) -> list[str]:
    """The names of the ``function_call`` items a request (or wire body) holds, in order, once each."""
    names = (
        item["name"]
        for item in list_at(request, "input")
        if isinstance(item, Mapping)
        and item.get("type") == "function_call"
        and isinstance(item.get("name"), str)
    )
    return missing_names(names, ())


def placeholder_tool(name: str) -> dict[str, Any]:
    """A minimal function tool definition for a replayed name the caller does not offer this turn."""
    return {
        "type": "function",
        "name": name,
        "description": PLACEHOLDER_DESCRIPTION,
        "parameters": {"type": "object", "properties": {}},
        "strict": False,
    }


def placeholder_tools(request: Mapping[str, Any], offered: Sequence[str]) -> list[dict[str, Any]]:
    """Placeholder definitions for every name the request replays that ``offered`` lacks."""
    return [placeholder_tool(name) for name in missing_names(replayed_tool_names(request), offered)]
