"""Anthropic Messages: history as ``system`` text blocks and alternating ``messages``.

Each historical batch becomes ``tool_use`` blocks at the end of an assistant message and one user
message holding all its ``tool_result`` blocks (compact JSON strings, ``is_error`` for errors); a batch
at the end of the prose merges into the next user message, results first. Use it as::

    client.messages.create(model=..., max_tokens=..., tools=..., **anthropic.to_request(history))

It also reads the wire back (:func:`pieces`), edits results and arguments in place (:func:`replace`)
and writes the results of a running turn's calls (:func:`tool_results`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from turnmemory.providers._build import TurnFormat
from turnmemory.providers._images import MEDIA_TYPES, Image, claude_tokens, with_parts
from turnmemory.providers._read import Piece, as_text
from turnmemory.providers._render import PLACEHOLDER_DESCRIPTION, Block, Item, cached_json, tool_name
from turnmemory.providers._tools import Call, ToolResult, result_text
from turnmemory.providers._wire import WireFormat
from turnmemory.replay import HistoricalCall

__all__ = [
    "CALL_ID",
    "IMAGE_TYPES",
    "ITEMS",
    "LOOKBACK",
    "MAX_BREAKPOINTS",
    "MAX_IMAGE_BYTES",
    "TURNS",
    "Formatter",
    "block_positions",
    "blocks",
    "image_tokens",
    "is_call_id",
    "mark_cache",
    "pieces",
    "placeholder_tool",
    "placeholder_tools",
    "replace",
    "replayed_tool_names",
    "shared_breakpoint",
    "to_request",
    "tool_results",
    "unmarked",
    "with_images",
]

CALL_ID = re.compile(r"[a-zA-Z0-9_-]+")
"""Anthropic's ``tool_use`` id pattern."""


def is_call_id(text: str) -> bool:
    """Whether the wire takes ``text`` as a call id (:data:`CALL_ID`)."""
    return CALL_ID.fullmatch(text) is not None


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


def _shape(systems: list[str], turns: list[Item]) -> dict[str, Any]:
    system = {"system": [_text(text) for text in systems]} if systems else {}
    return {**system, "messages": turns}


def placeholder_tool(name: str) -> dict[str, Any]:
    """A minimal tool definition for a replayed name the caller does not offer this turn."""
    return {
        "name": name,
        "description": PLACEHOLDER_DESCRIPTION,
        "input_schema": {"type": "object", "properties": {}},
    }


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


# -- the wire: its requests and replayed names, from the rendering and reading above -------------------

TURNS = TurnFormat("assistant", "content", _text, _call, _result, pieces, strip_final=True)
"""How Messages spells turns: ``assistant`` and ``user`` messages of ``content`` blocks."""

_WIRE = WireFormat(ITEMS, TURNS, pieces, placeholder_tool, _shape)

to_request = _WIRE.to_request
"""``{"system": [text blocks], "messages": [...]}`` for ``client.messages.create`` (system only when present).

Declare every replayed tool name in ``tools`` (:func:`placeholder_tools` gives the missing ones).
"""

Formatter = _WIRE.formatter
replayed_tool_names = _WIRE.replayed_tool_names
placeholder_tools = _WIRE.placeholder_tools


MAX_BREAKPOINTS = 4
"""The most ``cache_control`` breakpoints one request may carry (tools, system and messages together)."""

LOOKBACK = 20
"""How many blocks before a breakpoint the cache looks for an entry an earlier request wrote."""

_UNCACHEABLE = ("thinking", "redacted_thinking")


def block_positions(messages: Sequence[Mapping[str, Any]]) -> list[tuple[int, int]]:
    """Every content block of ``messages`` as ``(message index, block index)``, in order."""
    return [(i, j) for i, message in enumerate(messages) for j in range(len(blocks(message)))]


def shared_breakpoint(
    messages: Sequence[Mapping[str, Any]],
    previous: Sequence[Mapping[str, Any]],
    points: Sequence[int],
) -> int | None:
    """The deepest of ``points`` (block positions of an earlier request's breakpoints, over its
    ``previous`` messages) up to which ``messages`` is still the same: where a breakpoint reads all
    that request wrote, however many blocks were appended since. ``None`` when none is shared."""
    old = block_positions(previous)
    new = block_positions(messages)
    for point in sorted(points, reverse=True):
        if point >= len(old) or point >= len(new) or old[point] != new[point]:
            continue
        i, j = old[point]
        if list(messages[:i]) == list(previous[:i]) and (
            messages[i].get("role") == previous[i].get("role")
            and blocks(messages[i])[: j + 1] == blocks(previous[i])[: j + 1]
        ):
            return point
    return None


def mark_cache(messages: Sequence[Item], points: Sequence[int]) -> list[Item]:
    """``messages`` with an ephemeral ``cache_control`` breakpoint on the blocks at ``points`` (block
    positions); a thinking block takes none. Messages are copied where marked, never changed."""
    positions = block_positions(messages)
    marked: dict[int, set[int]] = {}
    for point in points:
        if 0 <= point < len(positions):
            i, j = positions[point]
            marked.setdefault(i, set()).add(j)
    out = [dict(message) if i in marked else message for i, message in enumerate(messages)]
    for i, slots in marked.items():
        content = [
            {**block, "cache_control": {"type": "ephemeral"}}
            if j in slots and isinstance(block, Mapping) and block.get("type") not in _UNCACHEABLE
            else block
            for j, block in enumerate(blocks(messages[i]))
        ]
        out[i] = {**messages[i], "content": content}
    return out


def unmarked(message: Item) -> Item:
    """``message`` itself, or a copy without ``cache_control`` markers (on it or on its blocks)."""
    content = message.get("content")
    listed = content if isinstance(content, list) else ()
    if "cache_control" not in message and not any(
        isinstance(block, dict) and "cache_control" in block for block in listed
    ):
        return message
    copied = {key: value for key, value in message.items() if key != "cache_control"}
    if isinstance(content, list):
        copied["content"] = [
            {key: value for key, value in block.items() if key != "cache_control"}
            if isinstance(block, dict)
            else block
            for block in content
        ]
    return copied


# -- images --------------------------------------------------------------------------------------------

IMAGE_TYPES: tuple[str, ...] = MEDIA_TYPES
"""The media types of the images this wire takes."""

MAX_IMAGE_BYTES = 3_932_160
"""The largest image this wire takes: 5 MB of base64 (5,242,880 characters) per image, so 3,932,160 bytes decoded."""

image_tokens = claude_tokens
"""The input tokens one image costs on this wire."""


def with_images(message: Item, images: Sequence[Image]) -> Item:
    """A copy of the user ``message`` with ``images`` before its text (after any results it opens with),
    where a cache marker on the text covers them too: each an ``image`` block with a ``base64`` source
    (``anthropic.types.ImageBlockParam``, ``Base64ImageSourceParam``: jpeg, png, gif, webp);
    https://docs.claude.com/en/docs/build-with-claude/vision."""
    return with_parts(
        message,
        "content",
        _text,
        (
            {
                "type": "image",
                "source": {"type": "base64", "media_type": image.media_type, "data": image.base64},
            }
            for image in images
        ),
    )
