"""Anthropic Messages: history as ``system`` text blocks and alternating ``messages``.

Each historical batch becomes ``tool_use`` blocks at the end of an assistant message and one user
message holding all its ``tool_result`` blocks (compact JSON strings, ``is_error`` for errors); a batch
at the end of the prose merges into the next user message, results first. Use it as::

    client.messages.create(model=..., max_tokens=..., tools=..., **anthropic.to_request(history))
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from functools import partial
from typing import Any

from turnmemory.memory import Message
from turnmemory.providers._build import (
    IncrementalFormatter,
    RequestCache,
    TurnFormat,
    turn_request,
)
from turnmemory.providers._render import (
    PLACEHOLDER_DESCRIPTION,
    Block,
    Item,
    Options,
    cached_json,
    list_at,
    missing_names,
    tool_name,
)
from turnmemory.replay import ArgumentPolicy, HistoricalCall, IdStyle

__all__ = [
    "Formatter",
    "blocks",
    "placeholder_tool",
    "placeholder_tools",
    "replayed_tool_names",
    "to_request",
]


def _text(text: str) -> Block:
    return {"type": "text", "text": text}


def _call(call: HistoricalCall, first: bool) -> Block:
    return {"type": "tool_use", "id": call.id, "name": tool_name(call.name), "input": call.arguments}


def _result(call: HistoricalCall) -> Block:
    block: Block = {"type": "tool_result", "tool_use_id": call.id, "content": cached_json(call.result)}
    if call.is_error:
        block["is_error"] = True
    return block


def blocks(message: Mapping[str, Any]) -> list[Any]:
    """The content blocks of a message (a string content is one text block; anything else, none)."""
    content = message.get("content")
    if isinstance(content, str):
        return [_text(content)]
    return content if isinstance(content, list) else []


def _pending_ids(pending: Sequence[Item]) -> Iterator[str]:
    for message in pending:
        for block in blocks(message):
            if isinstance(block, Mapping):
                for key in ("id", "tool_use_id"):
                    if isinstance(block.get(key), str):
                        yield block[key]


_FORMAT = TurnFormat(
    assistant_role="assistant",
    content_key="content",
    text=_text,
    call=_call,
    result=_result,
    pending_ids=_pending_ids,
    strip_final=True,
)


def to_request(
    messages: Sequence[Message],
    *,
    pending: Sequence[Item] | None = None,
    arguments: ArgumentPolicy = "empty",
    id_style: IdStyle = "historical",
) -> dict[str, Any]:
    """``{"system": [text blocks], "messages": [...]}`` for ``client.messages.create`` (system only when present)."""
    return _request(messages, None, pending=pending, arguments=arguments, id_style=id_style)


def _request(
    messages: Sequence[Message],
    cache: RequestCache | None,
    *,
    pending: Sequence[Item] | None = None,
    arguments: ArgumentPolicy = "empty",
    id_style: IdStyle = "historical",
) -> dict[str, Any]:
    systems, turns = turn_request(_FORMAT, messages, pending, Options(arguments, id_style), cache)
    request: dict[str, Any] = {"system": [_text(text) for text in systems]} if systems else {}
    request["messages"] = turns
    return request


Formatter = partial(IncrementalFormatter, _request)
"""``Formatter()``: :func:`to_request` for one conversation, built incrementally (each historical message is
rendered once; the same keywords give the same requests)."""


def replayed_tool_names(request: Mapping[str, Any]) -> list[str]:
    """The names of the ``tool_use`` blocks a request (or wire body) holds, in order, once each."""
    names = (
        block["name"]
        for message in list_at(request, "messages")
        if isinstance(message, Mapping)
        for block in blocks(message)
        if isinstance(block, Mapping)
        and block.get("type") == "tool_use"
        and isinstance(block.get("name"), str)
    )
    return missing_names(names, ())


def placeholder_tool(name: str) -> dict[str, Any]:
    """A minimal tool definition for a replayed name the caller does not offer this turn."""
    return {
        "name": name,
        "description": PLACEHOLDER_DESCRIPTION,
        "input_schema": {"type": "object", "properties": {}},
    }


def placeholder_tools(request: Mapping[str, Any], offered: Sequence[str]) -> list[dict[str, Any]]:
    """Placeholder definitions for every name the request replays that ``offered`` lacks."""
    return [placeholder_tool(name) for name in missing_names(replayed_tool_names(request), offered)]
