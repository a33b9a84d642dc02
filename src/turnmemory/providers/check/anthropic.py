"""The rules of an Anthropic Messages request: roles, pairing, ids, names, blank text, images, declared tools,
cache breakpoints (four at most, none on thinking; and, against the previous request, one within the
20 blocks after the deepest breakpoint it still shares, or it reads none of what that one wrote)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from turnmemory.providers._images import image_problems
from turnmemory.providers._render import is_blank
from turnmemory.providers.anthropic import (
    CALL_ID,
    IMAGE_TYPES,
    LOOKBACK,
    MAX_BREAKPOINTS,
    MAX_IMAGE_BYTES,
    block_positions,
    blocks,
    replayed_tool_names,
    shared_breakpoint,
    unmarked,
)
from turnmemory.providers.check._rules import (
    ToolIds,
    json_object,
    mismatch,
    objects,
    turn_problems,
    undeclared,
)

__all__ = ["lookback_problems", "problems"]

_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")


def problems(body: Mapping[str, Any], *, require_tools: bool | None = None) -> list[str]:
    """The rule violations in a Messages request body (empty when valid).

    ``require_tools`` (default: when the body has ``model`` or ``tools``, as a wire body does) also
    demands a ``tools`` list that declares every replayed tool name.
    """
    out: list[str] = []
    out.extend(_system_problems(body.get("system")))
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return [*out, "messages: expected a non-empty list"]
    exchanges = turn_problems(
        messages, _message_problems, out, alternate=False, call="tool_use", result="tool_result"
    )
    out.extend(_final_problems(messages))
    out.extend(_cache_problems(body))
    if require_tools if require_tools is not None else ("model" in body or "tools" in body):
        out.extend(_tools_problems(body, any(exchange.calls for exchange in exchanges)))
    return out


def lookback_problems(body: Mapping[str, Any], previous: Mapping[str, Any]) -> list[str]:
    """The look-back rule against the ``previous`` request of the conversation: when ``body`` still
    shares the prefix up to one of its breakpoints, a breakpoint of ``body`` must lie within
    :data:`LOOKBACK` blocks after it, or nothing ``previous`` wrote is read."""
    old, new = _messages(previous), _messages(body)
    marks = _marked_positions(new)
    shared = shared_breakpoint(
        [unmarked(dict(m)) for m in new], [unmarked(dict(m)) for m in old], _marked_positions(old)
    )
    if shared is None or not marks or any(shared <= point <= shared + LOOKBACK for point in marks):
        return []
    i, j = block_positions(old)[shared]
    return [
        f"cache_control: no breakpoint within {LOOKBACK} blocks after messages[{i}].content[{j}], "
        "the deepest breakpoint this request shares with the previous one; it reads none of its cache"
    ]


def _messages(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    messages = body.get("messages")
    return [m for m in messages if isinstance(m, Mapping)] if isinstance(messages, list) else []


def _marked_positions(messages: list[Mapping[str, Any]]) -> list[int]:
    """Block positions of the message blocks that carry ``cache_control``."""
    return [
        point
        for point, (i, j) in enumerate(block_positions(messages))
        if isinstance(block := blocks(messages[i])[j], Mapping) and "cache_control" in block
    ]


def _cache_problems(body: Mapping[str, Any]) -> list[str]:
    """At most :data:`MAX_BREAKPOINTS` ``cache_control`` markers, each ``ephemeral`` with a 5m or 1h
    ``ttl``, and none on a thinking block."""
    out: list[str] = []
    places: list[tuple[str, object]] = []
    for key in ("tools", "system"):
        listed = body.get(key)
        if isinstance(listed, list):
            places.extend((f"{key}[{j}]", block) for j, block in enumerate(listed))
    for i, message in enumerate(_messages(body)):
        places.extend((f"messages[{i}].content[{j}]", block) for j, block in enumerate(blocks(message)))
    marked = [
        (where, block) for where, block in places if isinstance(block, Mapping) and "cache_control" in block
    ]
    if len(marked) > MAX_BREAKPOINTS:
        out.append(f"cache_control: {len(marked)} breakpoints, at most {MAX_BREAKPOINTS} are allowed")
    for where, block in marked:
        assert isinstance(block, Mapping)
        control = block["cache_control"]
        if block.get("type") in ("thinking", "redacted_thinking"):
            out.append(f"{where}: a thinking block cannot carry cache_control")
        if (
            not isinstance(control, Mapping)
            or control.get("type") != "ephemeral"
            or control.get("ttl", "5m") not in ("5m", "1h")
            or set(control) - {"type", "ttl"}
        ):
            out.append(
                f'{where}: cache_control must be {{"type": "ephemeral"}} with an optional ttl of 5m or 1h'
            )
    return out


def _system_problems(system: object) -> list[str]:
    if system is None or isinstance(system, str):
        return []
    if not isinstance(system, list):
        return ["system: expected a string or a list of text blocks"]
    return [
        f"system[{j}]: text block is empty or whitespace only"
        for j, block in enumerate(system)
        if isinstance(block, Mapping) and isinstance(block.get("text"), str) and is_blank(block["text"])
    ]


def _message_problems(where: str, role: object, message: Mapping[str, Any], out: list[str]) -> ToolIds:
    content = message.get("content")
    if isinstance(content, str):
        if is_blank(content):
            out.append(f"{where}.content: text is empty or whitespace only")
        return ToolIds()
    if not isinstance(content, list) or not content:
        out.append(f"{where}.content: expected a non-empty string or list of blocks")
        return ToolIds()
    calls: list[tuple[str, str]] = []
    results: list[tuple[str, str]] = []
    leading = True
    for at, block in objects(content, f"{where}.content", out):
        kind = block.get("type")
        if kind == "text":
            if not isinstance(block.get("text"), str) or is_blank(block["text"]):
                out.append(f"{at}: text block is empty or whitespace only")
        elif kind == "tool_use":
            call_id, name = block.get("id"), block.get("name")
            if role != "assistant":
                out.append(f"{at}: tool_use outside an assistant message")
            out.extend(mismatch(at, "tool_use id", call_id, CALL_ID, f"^{CALL_ID.pattern}$"))
            out.extend(mismatch(at, "tool_use name", name, _NAME, "^[a-zA-Z0-9_-]{1,64}$"))
            if not json_object(block.get("input")):
                out.append(f"{at}: tool_use input must be an object")
            calls.append((at, str(call_id)))
        elif kind == "tool_result":
            if role != "user":
                out.append(f"{at}: tool_result outside a user message")
            if not leading:
                out.append(f"{at}: tool_result after other content; results must open the message")
            if "is_error" in block and not isinstance(block["is_error"], bool):
                out.append(f"{at}: is_error must be a boolean")
            if "content" in block and not isinstance(block["content"], str | list):
                out.append(f"{at}: tool_result content must be a string or a list of blocks")
            results.append((at, str(block.get("tool_use_id"))))
        elif kind == "image":
            out.extend(_image_problems(at, block.get("source")))
        leading = leading and kind == "tool_result"
    return ToolIds(tuple(calls), tuple(results))


def _image_problems(where: str, source: object) -> list[str]:
    """An image block's ``source``: base64 of a media type the API takes, within its size (or a URL)."""
    if not isinstance(source, Mapping) or source.get("type") not in ("base64", "url"):
        return [f"{where}.source: expected a base64 or url source"]
    if source["type"] == "url":
        return [] if isinstance(source.get("url"), str) else [f"{where}.source: url must be a string"]
    return image_problems(
        f"{where}.source", source.get("media_type"), source.get("data"), IMAGE_TYPES, MAX_IMAGE_BYTES
    )


def _final_problems(messages: list[Any]) -> list[str]:
    last = messages[-1]
    if not isinstance(last, Mapping) or last.get("role") != "assistant":
        return []
    content = blocks(last)
    tail = content[-1] if content else None
    text = tail.get("text") if isinstance(tail, Mapping) and tail.get("type") == "text" else None
    if isinstance(text, str) and text != text.rstrip():
        return [f"messages[{len(messages) - 1}]: final assistant content ends with whitespace"]
    return []


def _tools_problems(body: Mapping[str, Any], has_calls: bool) -> list[str]:
    tools = body.get("tools")
    if not has_calls:
        return []
    if not isinstance(tools, list) or not tools:
        return ["tools: missing, but the request holds tool_use blocks"]
    return undeclared(
        "tools", replayed_tool_names(body), (t.get("name") for t in tools if isinstance(t, Mapping))
    )
