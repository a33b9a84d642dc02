"""OpenAI Chat Completions (and OpenAI-compatible servers): history as a ``messages`` list.

Each historical batch becomes one assistant message with ``tool_calls`` (``content`` only when prose
precedes the calls; ``arguments`` a compact JSON string) followed by one ``tool`` message per call
carrying the compact JSON result. System messages stay ``system`` messages in place. Use it as::

    client.chat.completions.create(model=..., tools=..., **openai_chat.to_request(history, model=...))

``model=`` (the served model's name) applies what that model family's chat template needs (see
:func:`family`): consecutive single-call exchanges instead of a batch for Llama 3.x, gpt-oss and
Phi-4-mini, 9-character alphanumeric ids and strict user/assistant alternation for the Mistral family.
``single_calls=`` and ``id_style=`` force either behaviour whatever the model.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

from turnmemory.memory import Message
from turnmemory.providers._build import IncrementalFormatter, RequestCache
from turnmemory.providers._families import Family, family
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
from turnmemory.replay import ArgumentPolicy, HistoricalCall, IdStyle

__all__ = [
    "IMAGE_TYPES",
    "ITEMS",
    "MAX_ID",
    "MAX_IMAGE_BYTES",
    "REASONING_KEYS",
    "TURNS",
    "Family",
    "Formatter",
    "family",
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

MAX_ID = 40
"""The longest ``tool_calls[].id`` OpenAI accepts."""


def is_call_id(text: str) -> bool:
    """Whether the wire takes ``text`` as a ``tool_calls[].id``: 1 to :data:`MAX_ID` characters."""
    return 0 < len(text) <= MAX_ID


ITEMS = "messages"
"""The request key of the message list."""

TURNS = None
"""Chat Completions is an item format: no turns merge."""

REASONING_KEYS = ("reasoning_content", "reasoning")
"""Where compatible servers put reasoning text beside an assistant message's content, in order of preference."""


def _render(message: Message, message_index: int, options: Options, taken: set[str]) -> tuple[Item, ...]:
    """The message as Chat messages: a pure function of its arguments (and ``taken``)."""
    if message.role != "assistant":
        return ({"role": message.role, "content": message.content},)
    out: list[Item] = []
    for step in replay_steps(message, message_index, options, taken):
        text = step.text
        if text and (not step.calls or options.prose_apart):
            out.append({"role": "assistant", "content": text})
            text = ""
        batches = (
            [(call,) for call in step.calls] if options.single_calls else [step.calls] if step.calls else []
        )
        for calls in batches:
            out.append(_calls_message(text, calls, options))
            out.extend(
                {"role": "tool", "tool_call_id": call.id, "content": cached_json(call.result)}
                for call in calls
            )
            text = ""
    if options.alternating and (not out or out[-1]["role"] != "assistant"):
        out.append({"role": "assistant", "content": ""})
    return tuple(out)


def _calls_message(text: str, calls: Sequence[HistoricalCall], options: Options) -> Item:
    """An assistant message holding ``calls`` (and ``text``, when there is prose before them)."""
    assistant: Item = {"role": "assistant"}
    if text or options.alternating:
        assistant["content"] = text
    assistant["tool_calls"] = [
        {
            "id": call.id,
            "type": "function",
            "function": {"name": tool_name(call.name), "arguments": cached_json(call.arguments)},
        }
        for call in calls
    ]
    return assistant


def _tool_calls(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    calls = message.get("tool_calls")
    return [call for call in calls if isinstance(call, Mapping)] if isinstance(calls, list) else []


def to_request(
    messages: Sequence[Message],
    *,
    pending: Sequence[Item] | None = None,
    arguments: ArgumentPolicy = "empty",
    id_style: IdStyle | None = None,
    single_calls: bool | None = None,
    model: str | None = None,
) -> dict[str, Any]:
    """``{"messages": [...]}`` for ``client.chat.completions.create``.

    ``model`` (the served model's name) chooses the wire form its family needs; ``id_style``
    (``"historical"`` or ``"compact"``) and ``single_calls`` override that choice when given.
    Without any of them, the spec's default form.
    """
    return _request(
        messages,
        None,
        pending=pending,
        arguments=arguments,
        id_style=id_style,
        single_calls=single_calls,
        model=model,
    )


def _options(
    arguments: ArgumentPolicy, id_style: IdStyle | None, single_calls: bool | None, model: str | None
) -> Options:
    """The replay options: the model family's form, with the explicit choices on top."""
    found: Family = family(model)
    single = found.single_calls if single_calls is None else single_calls
    return Options(
        arguments=arguments,
        id_style=found.id_style if id_style is None else id_style,
        single_calls=single,
        prose_apart=found.prose_apart and single,
        alternating=found.alternating,
    )


def _request(
    messages: Sequence[Message],
    cache: RequestCache | None,
    *,
    pending: Sequence[Item] | None = None,
    arguments: ArgumentPolicy = "empty",
    id_style: IdStyle | None = None,
    single_calls: bool | None = None,
    model: str | None = None,
) -> dict[str, Any]:
    options = _options(arguments, id_style, single_calls, model)
    systems, items = _WIRE.assemble(messages, pending, options, cache)
    if (
        options.alternating
        and len(items) > 1
        and items[-1].get("role") == "user"
        and items[-2].get("role") == "tool"
    ):
        # Pending state that ends with results, then the new user message: close the assistant turn.
        items.insert(len(items) - 1, {"role": "assistant", "content": ""})
    return _WIRE.request(systems, items)


def placeholder_tool(name: str) -> dict[str, Any]:
    """A minimal function tool definition for a replayed name the caller does not offer this turn."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": PLACEHOLDER_DESCRIPTION,
            "parameters": {"type": "object", "properties": {}},
        },
    }


def pieces(items: Sequence[Mapping[str, Any]]) -> list[Piece]:
    """The reasoning, prose, ``tool_calls`` and ``tool`` messages of Chat Completions messages, in order.

    A ``tool`` message reads as failed when it says so (``status``, ``is_error``) or holds
    ``{"error": ...}``, as :func:`tool_results` writes failures.
    """
    found: list[Piece] = []
    for index, message in enumerate(items):
        role = message.get("role")
        if role == "tool":
            text = as_text(message.get("content"))
            failed = message.get("status") == "error" or message.get("is_error") is True
            call_id = message.get("tool_call_id")
            found.append(
                Piece(
                    index,
                    0,
                    "result",
                    as_string(call_id),
                    text=text,
                    error=failed or is_error_text(text),
                )
            )
            continue
        if role != "assistant":
            continue
        found.extend(
            Piece(index, 0, "reasoning", text=message[key])
            for key in REASONING_KEYS
            if isinstance(message.get(key), str) and message[key]
        )
        prose = prose_text(message.get("content"))
        if prose:
            found.append(Piece(index, 0, "prose", text=prose))
        for slot, call in enumerate(_tool_calls(message)):
            function = call.get("function")
            if not isinstance(function, Mapping):
                continue
            raw = function.get("arguments")
            arguments = (
                parse_arguments(raw) if isinstance(raw, str) else raw if isinstance(raw, dict) else None
            )
            call_id, name = call.get("id"), function.get("name")
            found.append(
                Piece(
                    index,
                    slot,
                    "call",
                    as_string(call_id),
                    as_string(name),
                    arguments=arguments,
                    raw=raw if isinstance(raw, str) else "",
                    editable=arguments is not None,
                )
            )
    return found


def replace(item: Item, piece: Piece, content: str | dict[str, Any]) -> Item:
    """A copy of ``item`` with the result (``content`` a note) or the arguments of ``piece`` replaced."""
    if isinstance(content, str):
        return {
            **item,
            "content": result_text(ToolResult(error=content), flagged=False) if piece.error else content,
        }
    calls = list(item["tool_calls"])
    call = calls[piece.slot]
    calls[piece.slot] = {
        **call,
        "function": {**call["function"], "arguments": json.dumps(content, ensure_ascii=False)},
    }
    return {**item, "tool_calls": calls}


def tool_results(calls: Sequence[Call], results: Sequence[ToolResult]) -> list[Item]:
    """One ``tool`` message per call, in order; a failure as ``{"error": message}``."""
    return [
        {"role": "tool", "tool_call_id": call.id, "content": result_text(result, flagged=False)}
        for call, result in zip(calls, results, strict=True)
    ]


# -- the wire: its requests and replayed names, from the rendering and reading above -------------------

_WIRE = WireFormat(ITEMS, _render, pieces, placeholder_tool)

Formatter = partial(IncrementalFormatter, _request)
"""``Formatter()``: :func:`to_request` for one conversation, built incrementally (each historical message is
rendered once; the same keywords give the same requests)."""

replayed_tool_names = _WIRE.replayed_tool_names
placeholder_tools = _WIRE.placeholder_tools


def mark_cache(item: Item) -> Item | None:
    """A copy of a system, user or tool message with a ``prompt_cache_breakpoint`` on its last text
    part (a string content becomes one text part), or ``None`` for a message that cannot carry one
    (the assistant's)."""
    if item.get("role") not in ("system", "developer", "user", "tool"):
        return None
    return marked_last(item, "content", "text")


# -- images --------------------------------------------------------------------------------------------

IMAGE_TYPES: tuple[str, ...] = MEDIA_TYPES
"""The media types of the images this wire takes."""

MAX_IMAGE_BYTES = 20_000_000
"""The largest image this wire takes: 20 MB per image (50 MB per request)."""

image_tokens = openai_tokens
"""The input tokens one image costs on this wire."""


def _text_part(text: str) -> Block:
    return {"type": "text", "text": text}


def with_images(message: Item, images: Sequence[Image]) -> Item:
    """A copy of the user ``message`` with ``images`` before its text (after any results it opens with),
    where a cache marker on the text covers them too: each an ``image_url`` content part holding a
    ``data:`` URL (``openai.types.chat.ChatCompletionContentPartImageParam``);
    https://platform.openai.com/docs/guides/images-vision."""
    return with_parts(
        message,
        "content",
        _text_part,
        ({"type": "image_url", "image_url": {"url": image.data_url}} for image in images),
    )
