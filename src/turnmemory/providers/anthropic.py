"""Anthropic Messages: history as ``system`` text blocks and alternating ``messages``.

Each historical batch becomes ``tool_use`` blocks at the end of an assistant message and one user
message holding all its ``tool_result`` blocks (compact JSON strings, ``is_error`` for errors); a batch
at the end of the prose merges into the next user message, results first. Use it as::

    client.messages.create(model=..., max_tokens=..., tools=..., **anthropic.to_request(history))

It also reads the wire back (:func:`pieces`), edits results and arguments in place (:func:`replace`)
and writes the results of a running turn's calls (:func:`tool_results`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

from turnmemory.providers._build import (
    IncrementalFormatter,
    StandardWire,
    TurnFormat,
    turn_request,
)
from turnmemory.providers._read import Piece, as_text, call_names
from turnmemory.providers._render import (
    PLACEHOLDER_DESCRIPTION,
    Block,
    Item,
    cached_json,
    list_at,
    missing_names,
    tool_name,
)
from turnmemory.providers._tools import Call, ToolResult, result_text
from turnmemory.replay import HistoricalCall

__all__ = [
    "ITEMS",
    "TURNS",
    "Formatter",
    "blocks",
    "pieces",
    "placeholder_tool",
    "placeholder_tools",
    "replace",
    "replayed_tool_names",
    "to_request",
    "tool_results",
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


ITEMS = "messages"
"""The request key of the message list."""

TURNS = TurnFormat(
    assistant_role="assistant",
    content_key="content",
    text=_text,
    call=_call,
    result=_result,
    pieces=lambda items: pieces(items),
    strip_final=True,
)


def _shape(systems: list[str], turns: list[Item]) -> dict[str, Any]:
    request: dict[str, Any] = {"system": [_text(text) for text in systems]} if systems else {}
    request["messages"] = turns
    return request


_WIRE = StandardWire(partial(turn_request, TURNS), _shape)

to_request = _WIRE.to_request
"""``{"system": [text blocks], "messages": [...]}`` for ``client.messages.create`` (system only when present)."""

Formatter = partial(IncrementalFormatter, _WIRE.build)
"""``Formatter()``: :func:`to_request` for one conversation, built incrementally (each historical message is
rendered once; the same keywords give the same requests)."""


def replayed_tool_names(request: Mapping[str, Any]) -> list[str]:
    """The names of the ``tool_use`` blocks a request (or wire body) holds, in order, once each."""
    return call_names(pieces(list_at(request, ITEMS)))


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


def pieces(items: Sequence[Mapping[str, Any]]) -> list[Piece]:
    """The prose, thinking, ``tool_use`` and ``tool_result`` blocks of Messages API messages, in order.

    A call's arguments are editable unless its message carries signed thinking.
    """
    found: list[Piece] = []
    for index, message in enumerate(items):
        assistant = message.get("role") == "assistant"
        content = [block if isinstance(block, Mapping) else {} for block in blocks(message)]
        signed = any(block.get("type") in ("thinking", "redacted_thinking") for block in content)
        for slot, block in enumerate(content):
            kind = block.get("type")
            if kind == "text" and assistant and isinstance(block.get("text"), str):
                found.append(Piece(index, slot, "prose", text=block["text"]))
            elif kind == "thinking" and isinstance(block.get("thinking"), str):
                found.append(Piece(index, slot, "reasoning", text=block["thinking"]))
            elif kind == "tool_use":
                call = Piece.object_call(
                    index, slot, block.get("id"), block.get("name"), block.get("input"), signed=signed
                )
                found.append(call)
            elif kind == "tool_result":
                text = as_text(block.get("content"))
                found.append(
                    Piece.answer(
                        index, slot, block.get("tool_use_id"), text, error=block.get("is_error") is True
                    )
                )
    return found


def replace(item: Item, piece: Piece, content: str | dict[str, Any]) -> Item:
    """A copy of ``item`` with the result (``content`` a note) or the arguments of ``piece`` replaced."""
    edited = list(item["content"])
    edited[piece.slot] = {**edited[piece.slot], "content" if piece.kind == "result" else "input": content}
    return {**item, "content": edited}


def tool_results(calls: Sequence[Call], results: Sequence[ToolResult]) -> list[Item]:
    """The user message answering ``calls`` with ``results``: one ``tool_result`` block each, in order."""
    content = []
    for call, result in zip(calls, results, strict=True):
        block: Block = {
            "type": "tool_result",
            "tool_use_id": call.id,
            "content": result_text(result, flagged=True),
        }
        if result.error is not None:
            block["is_error"] = True
        content.append(block)
    return [{"role": "user", "content": content}]
