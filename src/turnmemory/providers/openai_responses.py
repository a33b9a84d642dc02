"""OpenAI Responses: history as stateless ``input`` items, system text as ``instructions``.

Prose becomes easy-input ``message`` items; each historical batch becomes ``function_call`` items
(``call_id`` only, never an item ``id``, so no reasoning item is demanded) followed by their
``function_call_output`` items. No ``previous_response_id`` is needed. Use it as::

    client.responses.create(model=..., tools=..., store=False, **openai_responses.to_request(history))
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from turnmemory.memory import Message
from turnmemory.providers._images import MEDIA_TYPES, Image, openai_tokens, with_parts
from turnmemory.providers._read import Piece, as_string, as_text, prose_text
from turnmemory.providers._render import (
    PLACEHOLDER_DESCRIPTION,
    Block,
    Item,
    Options,
    cached_json,
    marked_last,
    replay_steps,
    tool_name,
)
from turnmemory.providers._tools import Call, ToolResult, is_error_text, parse_arguments, result_text
from turnmemory.providers._wire import WireFormat

__all__ = [
    "IMAGE_TYPES",
    "ITEMS",
    "MAX_CALL_ID",
    "MAX_IMAGE_BYTES",
    "TURNS",
    "Formatter",
    "image_tokens",
    "is_call_id",
    "mark_cache",
    "pieces",
    "placeholder_tool",
    "placeholder_tools",
    "replace",
    "replayed_tool_names",
    "to_request",
    "tool_results",
    "with_images",
]

MAX_CALL_ID = 64
"""The longest ``call_id`` the Responses API accepts."""


def is_call_id(text: str) -> bool:
    """Whether the wire takes ``text`` as a ``call_id``: 1 to :data:`MAX_CALL_ID` characters."""
    return 0 < len(text) <= MAX_CALL_ID


ITEMS = "input"
"""The request key of the item list."""

TURNS = None
"""Responses is an item format: no turns merge."""


def _message(role: str, content: str) -> Item:
    return {"type": "message", "role": role, "content": content}


def _render(message: Message, message_index: int, options: Options, taken: set[str]) -> tuple[Item, ...]:
    if message.role == "system":
        return ()
    if message.role == "user":
        return (_message("user", message.content),)
    out: list[Item] = []
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


def _shape(systems: list[str], items: list[Item]) -> dict[str, Any]:
    instructions = {"instructions": "\n\n".join(systems)} if systems else {}
    return {"input": items, **instructions}


def placeholder_tool(name: str) -> dict[str, Any]:
    """A minimal function tool definition for a replayed name the caller does not offer this turn."""
    return {
        "type": "function",
        "name": name,
        "description": PLACEHOLDER_DESCRIPTION,
        "parameters": {"type": "object", "properties": {}},
        "strict": False,
    }


def pieces(items: Sequence[Mapping[str, Any]]) -> list[Piece]:
    """The assistant messages, reasoning summaries, calls and call outputs of Responses items, in order.

    ``custom_tool_call`` items read as calls with ``{"input": ...}`` arguments, never editable; a
    ``function_call`` is not editable after encrypted reasoning of the same response.
    """
    found: list[Piece] = []
    signed = False
    for index, item in enumerate(items):
        kind, role = item.get("type", "message"), item.get("role")
        call_id = item.get("call_id")
        call_id = as_string(call_id)
        if kind == "message" and role == "assistant":
            prose = prose_text(item.get("content"))
            if prose:
                found.append(Piece(index, 0, "prose", text=prose))
        elif kind == "reasoning":
            signed = signed or bool(item.get("encrypted_content"))
            summary = as_text(item.get("summary"))
            if summary:
                found.append(Piece(index, 0, "reasoning", text=summary))
        elif kind in ("function_call", "custom_tool_call"):
            name = item.get("name")
            raw = item.get("arguments") if kind == "function_call" else item.get("input")
            if kind == "function_call":
                arguments = parse_arguments(raw) if isinstance(raw, str) else None
            else:
                arguments = {"input": raw}
            found.append(
                Piece(
                    index,
                    0,
                    "call",
                    call_id,
                    as_string(name),
                    arguments=arguments,
                    raw=raw if isinstance(raw, str) else "",
                    editable=kind == "function_call" and arguments is not None and not signed,
                )
            )
        elif kind in ("function_call_output", "custom_tool_call_output"):
            signed = False
            text = as_text(item.get("output"))
            found.append(Piece(index, 0, "result", call_id, text=text, error=is_error_text(text)))
        elif role != "assistant":
            signed = False
    return found


def replace(item: Item, piece: Piece, content: str | dict[str, Any]) -> Item:
    """A copy of ``item`` with the output (``content`` a note) or the arguments of ``piece`` replaced."""
    if isinstance(content, str):
        return {
            **item,
            "output": result_text(ToolResult(error=content), flagged=False) if piece.error else content,
        }
    return {**item, "arguments": json.dumps(content, ensure_ascii=False)}


def tool_results(calls: Sequence[Call], results: Sequence[ToolResult]) -> list[Item]:
    """One ``function_call_output`` item per call, in order; a failure as ``{"error": message}``."""
    return [
        {"type": "function_call_output", "call_id": call.id, "output": result_text(result, flagged=False)}
        for call, result in zip(calls, results, strict=True)
    ]


# -- the wire: its requests and replayed names, from the rendering and reading above -------------------

_WIRE = WireFormat(ITEMS, _render, pieces, placeholder_tool, _shape)

to_request = _WIRE.to_request
"""``{"input": [...], "instructions": "..."}`` for ``client.responses.create``.

``instructions`` joins the non-blank system messages with blank lines; it is absent without them.
"""

Formatter = _WIRE.formatter
replayed_tool_names = _WIRE.replayed_tool_names
placeholder_tools = _WIRE.placeholder_tools


def mark_cache(item: Item) -> Item | None:
    """A copy of a system, developer or user message, or of a ``function_call_output``, with a
    ``prompt_cache_breakpoint`` on its last text part (a string becomes one ``input_text`` part), or
    ``None`` for an item that cannot carry one (the assistant's, calls, reasoning)."""
    if item.get("type") == "function_call_output":
        return marked_last(item, "output", "input_text")
    if item.get("role") not in ("system", "developer", "user"):
        return None
    return marked_last(item, "content", "input_text")


# -- images --------------------------------------------------------------------------------------------

IMAGE_TYPES: tuple[str, ...] = MEDIA_TYPES
"""The media types of the images this wire takes."""

MAX_IMAGE_BYTES = 20_000_000
"""The largest image this wire takes: 20 MB per image (50 MB per request)."""

image_tokens = openai_tokens
"""The input tokens one image costs on this wire."""


def _text_part(text: str) -> Block:
    return {"type": "input_text", "text": text}


def with_images(message: Item, images: Sequence[Image]) -> Item:
    """A copy of the user ``message`` with ``images`` before its text (after any results it opens with),
    where a cache marker on the text covers them too: each an ``input_image`` part holding a ``data:``
    URL, ``detail`` ``auto`` (``openai.types.responses.ResponseInputImageParam``);
    https://platform.openai.com/docs/guides/images-vision."""
    return with_parts(
        message,
        "content",
        _text_part,
        ({"type": "input_image", "image_url": image.data_url, "detail": "auto"} for image in images),
    )
