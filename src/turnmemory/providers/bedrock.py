"""AWS Bedrock Converse: history as strictly alternating ``messages`` and ``system`` text blocks.

Each historical batch becomes ``toolUse`` blocks (``input`` ``{}``) at the end of an assistant message
and one user message of ``toolResult`` blocks (``[{"json": result}]`` with ``status``), merged with the
following user text, results first. Converse demands a ``toolConfig`` whenever tool blocks are present;
declare at least the replayed names::

    request = bedrock.to_request(history)
    tools = my_tools + bedrock.placeholder_tools(request, [t["toolSpec"]["name"] for t in my_tools])
    client.converse(modelId=..., toolConfig={"tools": tools}, **request)
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
    list_at,
    missing_names,
    tool_name,
)
from turnmemory.replay import ArgumentPolicy, HistoricalCall, IdStyle

__all__ = [
    "Formatter",
    "placeholder_tool",
    "placeholder_tools",
    "replayed_tool_names",
    "to_request",
]


def _text(text: str) -> Block:
    return {"text": text}


def _call(call: HistoricalCall, first: bool) -> Block:
    return {"toolUse": {"toolUseId": call.id, "name": tool_name(call.name), "input": call.arguments}}


def _result(call: HistoricalCall) -> Block:
    return {
        "toolResult": {
            "toolUseId": call.id,
            "content": [{"json": call.result}],
            "status": "error" if call.is_error else "success",
        }
    }


def _tool_blocks(messages: Sequence[Any], key: str) -> Iterator[Mapping[str, Any]]:
    for message in messages:
        if isinstance(message, Mapping):
            for block in list_at(message, "content"):
                if isinstance(block, Mapping) and isinstance(block.get(key), Mapping):
                    yield block[key]


def _pending_ids(pending: Sequence[Item]) -> Iterator[str]:
    for key in ("toolUse", "toolResult"):
        for block in _tool_blocks(pending, key):
            if isinstance(block.get("toolUseId"), str):
                yield block["toolUseId"]


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
    """``{"messages": [...], "system": [text blocks]}`` for ``client.converse`` (system only when present)."""
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
    request: dict[str, Any] = {"messages": turns}
    if systems:
        request["system"] = [_text(text) for text in systems]
    return request


Formatter = partial(IncrementalFormatter, _request)
"""``Formatter()``: :func:`to_request` for one conversation, built incrementally (each historical message is
rendered once; the same keywords give the same requests)."""


def replayed_tool_names(request: Mapping[str, Any]) -> list[str]:
    """The names of the ``toolUse`` blocks a request (or wire body) holds, in order, once each."""
    names = (
        block["name"]
        for block in _tool_blocks(list_at(request, "messages"), "toolUse")
        if isinstance(block.get("name"), str)
    )
    return missing_names(names, ())


def placeholder_tool(name: str) -> dict[str, Any]:
    """A minimal ``toolConfig.tools`` entry for a replayed name the caller does not offer this turn."""
    return {
        "toolSpec": {
            "name": name,
            "description": PLACEHOLDER_DESCRIPTION,
            "inputSchema": {"json": {"type": "object", "properties": {}}},
        }
    }


def placeholder_tools(request: Mapping[str, Any], offered: Sequence[str]) -> list[dict[str, Any]]:
    """Placeholder entries for every name the request replays that ``offered`` lacks."""
    return [placeholder_tool(name) for name in missing_names(replayed_tool_names(request), offered)]
