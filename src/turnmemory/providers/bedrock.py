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

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from turnmemory.providers._build import TurnFormat
from turnmemory.providers._images import MEDIA_TYPES, Image, claude_tokens, with_parts
from turnmemory.providers._read import Piece, as_text
from turnmemory.providers._render import PLACEHOLDER_DESCRIPTION, Block, Item, list_at, tool_name
from turnmemory.providers._tools import NO_OUTPUT, Call, ToolResult, plain
from turnmemory.providers._wire import WireFormat
from turnmemory.replay import HistoricalCall

__all__ = [
    "CALL_ID",
    "IMAGE_TYPES",
    "ITEMS",
    "MAX_IMAGE_BYTES",
    "TURNS",
    "Formatter",
    "image_tokens",
    "is_call_id",
    "pieces",
    "placeholder_tool",
    "placeholder_tools",
    "replace",
    "replayed_tool_names",
    "to_request",
    "tool_results",
    "with_images",
]

CALL_ID = re.compile(r"[a-zA-Z0-9_.:-]{1,64}")
"""Bedrock's ``toolUseId`` pattern."""


def is_call_id(text: str) -> bool:
    """Whether the wire takes ``text`` as a call id (:data:`CALL_ID`)."""
    return CALL_ID.fullmatch(text) is not None


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


ITEMS = "messages"
"""The request key of the message list."""


def _shape(systems: list[str], turns: list[Item]) -> dict[str, Any]:
    system = {"system": [_text(text) for text in systems]} if systems else {}
    return {"messages": turns, **system}


def placeholder_tool(name: str) -> dict[str, Any]:
    """A minimal ``toolConfig.tools`` entry for a replayed name the caller does not offer this turn."""
    return {
        "toolSpec": {
            "name": name,
            "description": PLACEHOLDER_DESCRIPTION,
            "inputSchema": {"json": {"type": "object", "properties": {}}},
        }
    }


def pieces(items: Sequence[Mapping[str, Any]]) -> list[Piece]:
    """The text, reasoning, ``toolUse`` and ``toolResult`` blocks of Converse messages, in order.

    A call's arguments are editable unless its message carries reasoning (which may be signed).
    """
    found: list[Piece] = []
    for index, message in enumerate(items):
        assistant = message.get("role") == "assistant"
        content = [block if isinstance(block, Mapping) else {} for block in list_at(message, "content")]
        signed = any("reasoningContent" in block for block in content)
        for slot, block in enumerate(content):
            use, result, reasoning = (
                block.get("toolUse"),
                block.get("toolResult"),
                block.get("reasoningContent"),
            )
            if isinstance(use, Mapping):
                call = Piece.object_call(
                    index, slot, use.get("toolUseId"), use.get("name"), use.get("input"), signed=signed
                )
                found.append(call)
            elif isinstance(result, Mapping):
                failed = result.get("status") == "error"
                text = as_text(result.get("content"))
                found.append(Piece.answer(index, slot, result.get("toolUseId"), text, error=failed))
            elif isinstance(reasoning, Mapping):
                thought = reasoning.get("reasoningText")
                if isinstance(thought, Mapping) and isinstance(thought.get("text"), str) and thought["text"]:
                    found.append(Piece(index, slot, "reasoning", text=thought["text"]))
            elif assistant and isinstance(block.get("text"), str):
                found.append(Piece(index, slot, "prose", text=block["text"]))
    return found


def replace(item: Item, piece: Piece, content: str | dict[str, Any]) -> Item:
    """A copy of ``item`` with the result (``content`` a note, as text) or the input of ``piece`` replaced."""
    edited = list(item["content"])
    if isinstance(content, str):
        result = edited[piece.slot]["toolResult"]
        edited[piece.slot] = {"toolResult": {**result, "content": [{"text": content}]}}
    else:
        use = edited[piece.slot]["toolUse"]
        edited[piece.slot] = {"toolUse": {**use, "input": content}}
    return {**item, "content": edited}


def tool_results(calls: Sequence[Call], results: Sequence[ToolResult]) -> list[Item]:
    """The user message answering ``calls``: one ``toolResult`` block each, in order (an object output
    as a ``json`` block, anything else as text, a failure as text with status ``error``)."""
    return [
        {
            "role": "user",
            "content": [_result_block(call, result) for call, result in zip(calls, results, strict=True)],
        }
    ]


def _result_block(call: Call, result: ToolResult) -> Block:
    if result.error is not None:
        content: list[Block] = [{"text": result.error or "error"}]
    elif isinstance(result.output, Mapping):
        content = [{"json": plain(result.output)}]
    else:
        text = (
            result.output if isinstance(result.output, str) else json.dumps(result.output, ensure_ascii=False)
        )
        content = [{"text": text or NO_OUTPUT}]
    status = "error" if result.error is not None else "success"
    return {"toolResult": {"toolUseId": call.id, "content": content, "status": status}}


# -- the wire: its requests and replayed names, from the rendering and reading above -------------------

TURNS = TurnFormat("assistant", "content", _text, _call, _result, pieces, strip_final=True)
"""How Converse spells turns: ``assistant`` and ``user`` messages of ``content`` blocks."""

_WIRE = WireFormat(ITEMS, TURNS, pieces, placeholder_tool, _shape)

to_request = _WIRE.to_request
"""``{"messages": [...], "system": [text blocks]}`` for ``client.converse`` (system only when present).

Converse demands a ``toolConfig`` declaring every replayed name (:func:`placeholder_tools`).
"""

Formatter = _WIRE.formatter
replayed_tool_names = _WIRE.replayed_tool_names
placeholder_tools = _WIRE.placeholder_tools


# -- images --------------------------------------------------------------------------------------------

IMAGE_TYPES: tuple[str, ...] = MEDIA_TYPES
"""The media types of the images this wire takes."""

MAX_IMAGE_BYTES = 3_932_160
"""The largest image this wire takes: 3.75 MB per image."""

image_tokens = claude_tokens
"""The input tokens one image costs on this wire."""


def with_images(message: Item, images: Sequence[Image]) -> Item:
    """A copy of the user ``message`` with ``images`` before its text (after any results it opens with),
    where a cache marker on the text covers them too: each an ``image`` block with ``format`` and
    ``source.bytes`` (botocore's ``ImageBlock``: png, jpeg, gif, webp), base64 as in the JSON body; the
    SDK half hands boto3 the bytes;
    https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ImageBlock.html."""
    return with_parts(
        message,
        "content",
        _text,
        (
            {"image": {"format": image.media_type.removeprefix("image/"), "source": {"bytes": image.base64}}}
            for image in images
        ),
    )
