"""Google Gemini (google-genai): history as alternating ``user`` / ``model`` contents.

Each historical batch becomes ``function_call`` parts at the end of a model content (the first one
carrying the documented ``skip_thought_signature_validator`` signature, base64 as on the wire) and the
same number of ``function_response`` parts, in order, opening the next user content; ``response`` is
the result object. Keys are snake_case, as google-genai accepts dicts. ``system_instruction`` belongs
in the config::

    request = gemini.to_request(history)
    client.models.generate_content(
        model=..., contents=request["contents"],
        config={"tools": ..., "system_instruction": request.get("system_instruction")},
    )
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

from turnmemory._text import compact_json
from turnmemory.providers._build import TurnFormat
from turnmemory.providers._images import Image, gemini_tokens, with_parts
from turnmemory.providers._read import Piece, PieceKind
from turnmemory.providers._render import PLACEHOLDER_DESCRIPTION, Block, Item, list_at, tool_name
from turnmemory.providers._tools import Call, ToolResult, object_result, parse_output
from turnmemory.providers._wire import WireFormat
from turnmemory.replay import HistoricalCall

__all__ = [
    "IMAGE_TYPES",
    "ITEMS",
    "MAX_IMAGE_BYTES",
    "SKIP_THOUGHT_SIGNATURE",
    "TURNS",
    "Formatter",
    "either_case",
    "image_tokens",
    "pieces",
    "placeholder_tool",
    "placeholder_tools",
    "replace",
    "replayed_tool_names",
    "to_request",
    "tool_results",
    "with_images",
]

SKIP_THOUGHT_SIGNATURE = base64.b64encode(b"skip_thought_signature_validator").decode("ascii")
"""The documented dummy thought signature, base64-encoded (google-genai decodes it to bytes)."""


def _text(text: str) -> Block:
    return {"text": text}


def _call(call: HistoricalCall, first: bool) -> Block:
    part: Block = {"function_call": {"id": call.id, "name": tool_name(call.name), "args": call.arguments}}
    if first:
        part["thought_signature"] = SKIP_THOUGHT_SIGNATURE
    return part


def _result(call: HistoricalCall) -> Block:
    return {"function_response": {"id": call.id, "name": tool_name(call.name), "response": call.result}}


def either_case(mapping: Mapping[str, Any], snake: str, camel: str) -> Any:
    """``mapping[snake]``, or ``mapping[camel]`` as a wire body spells it (google-genai takes both)."""
    return mapping[snake] if snake in mapping else mapping.get(camel)


ITEMS = "contents"
"""The request key of the content list."""


def _shape(systems: list[str], contents: list[Item]) -> dict[str, Any]:
    system = {"system_instruction": {"parts": [_text(text) for text in systems]}} if systems else {}
    return {"contents": contents, **system}


def placeholder_tool(name: str) -> dict[str, Any]:
    """A minimal function declaration (for a ``function_declarations`` list) for a replayed name."""
    return {"name": name, "description": PLACEHOLDER_DESCRIPTION}


def pieces(items: Sequence[Mapping[str, Any]]) -> list[Piece]:
    """The text, thought, ``function_call`` and ``function_response`` parts of contents, in order.

    Keys may be snake_case or camelCase. A response's text is its output as the model reads it: a
    lone ``output`` (or ``result``, ``content``, ``text``, ``stdout``) is unwrapped, anything else is
    compact JSON. Calls and responses without an id pair by name and order, as Gemini pairs them.
    """
    found: list[Piece] = []
    for index, content in enumerate(items):
        model = content.get("role") == "model"
        parts = [part if isinstance(part, Mapping) else {} for part in list_at(content, "parts")]
        signed = any(either_case(part, "thought_signature", "thoughtSignature") for part in parts)
        for slot, part in enumerate(parts):
            call = either_case(part, "function_call", "functionCall")
            response = either_case(part, "function_response", "functionResponse")
            if isinstance(call, Mapping):
                found.append(
                    Piece.object_call(
                        index, slot, call.get("id"), call.get("name"), call.get("args"), signed=signed
                    )
                )
            elif isinstance(response, Mapping):
                body = response.get("response")
                failed = object_result(body).error is not None
                answer = Piece.answer(
                    index,
                    slot,
                    response.get("id"),
                    _output_text(body),
                    error=failed,
                    name=response.get("name"),
                )
                found.append(answer)
            elif model and isinstance(part.get("text"), str) and part["text"]:
                kind: PieceKind = "reasoning" if part.get("thought") is True else "prose"
                found.append(Piece(index, slot, kind, text=part["text"]))
    return found


def replace(item: Item, piece: Piece, content: str | dict[str, Any]) -> Item:
    """A copy of ``item`` with the response (``content`` a note) or the arguments of ``piece`` replaced."""
    parts = list(item["parts"])
    part = dict(parts[piece.slot])
    snake, camel = (
        ("function_response", "functionResponse")
        if piece.kind == "result"
        else ("function_call", "functionCall")
    )
    key = snake if snake in part else camel
    if isinstance(content, str):
        result = ToolResult(error=content) if piece.error else parse_output(content)
        part[key] = {**part[key], "response": _response(result)}
    else:
        part[key] = {**part[key], "args": content}
    parts[piece.slot] = part
    return {**item, "parts": parts}


def tool_results(calls: Sequence[Call], results: Sequence[ToolResult]) -> list[Item]:
    """The user content answering ``calls``: one ``function_response`` part each, in order, with the
    call's own id where it came with one."""
    parts = []
    for call, result in zip(calls, results, strict=True):
        response: Item = {"name": call.name, "response": _response(result)}
        if call.native is not None:
            response["id"] = call.native
        parts.append({"function_response": response})
    return [{"role": "user", "parts": parts}]


_TEXT_KEYS = ("output", "result", "content", "text", "stdout")


def _output_text(body: object) -> str:
    if isinstance(body, Mapping) and len(body) == 1 and next(iter(body)) in _TEXT_KEYS:
        body = next(iter(body.values()))
    return body if isinstance(body, str) else compact_json(body)


def _response(result: ToolResult) -> Item:
    """A function response object: the output (wrapped as ``{"output": ...}`` unless an object), or the error."""
    if result.error is not None:
        return {"error": result.error or "error"}
    if isinstance(result.output, dict):
        return result.output
    return {"output": result.output}


# -- the wire: its requests and replayed names, from the rendering and reading above -------------------

TURNS = TurnFormat("model", "parts", _text, _call, _result, pieces, strip_final=False)
"""How Gemini spells turns: ``model`` and ``user`` contents of ``parts``."""

_WIRE = WireFormat(ITEMS, TURNS, pieces, placeholder_tool, _shape)

to_request = _WIRE.to_request
"""``{"contents": [...], "system_instruction": {"parts": [...]}}`` (system only when present).

Contents alternate strictly and open with a user content: blank user messages are left out, and so
are assistant messages before the first non-blank user message (nothing is invented to precede them).
"""

Formatter = _WIRE.formatter
replayed_tool_names = _WIRE.replayed_tool_names
placeholder_tools = _WIRE.placeholder_tools


# -- images --------------------------------------------------------------------------------------------

IMAGE_TYPES: tuple[str, ...] = ("image/png", "image/jpeg", "image/webp")
"""The media types of the images this wire takes."""

MAX_IMAGE_BYTES = 15_000_000
"""The largest image this wire takes: a request of at most 20 MB, base64 included, so 15 MB decoded."""

image_tokens = gemini_tokens
"""The input tokens one image costs on this wire."""


def with_images(message: Item, images: Sequence[Image]) -> Item:
    """A copy of the user ``message`` with ``images`` before its text (after any results it opens with),
    where a cache marker on the text covers them too: each an ``inline_data`` part
    (``google.genai.types.Blob``: the SDK reads base64 into its bytes; png, jpeg, webp, heic, heif, no
    gif); https://ai.google.dev/gemini-api/docs/image-understanding."""
    return with_parts(
        message,
        "parts",
        _text,
        ({"inline_data": {"mime_type": image.media_type, "data": image.base64}} for image in images),
    )
