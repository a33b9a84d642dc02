"""Anthropic Messages: history as ``system`` text blocks and alternating ``messages``.

Each historical batch becomes ``tool_use`` blocks at the end of an assistant message and one user
message holding all its ``tool_result`` blocks (compact JSON strings, ``is_error`` for errors); a batch
at the end of the prose merges into the next user message, results first. Use it as::

    client.messages.create(model=..., max_tokens=..., tools=..., **anthropic.to_request(history))
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from turnmemory.memory import Message
from turnmemory.providers._common import (
    PLACEHOLDER_DESCRIPTION,
    Block,
    Exchange,
    IncrementalFormatter,
    Options,
    RequestCache,
    TurnFormat,
    adjacent_pairing,
    compact_json,
    duplicates,
    is_blank,
    json_object,
    list_at,
    missing_names,
    tool_name,
    turn_request,
)
from turnmemory.replay import ArgumentPolicy, HistoricalCall, IdStyle

__all__ = [
    "Formatter",
    "placeholder_tool",
    "placeholder_tools",
    "problems",
    "replayed_tool_names",
    "to_request",
]

_ID = re.compile(r"[a-zA-Z0-9_-]+")
_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")


def _text(text: str) -> Block:
    return {"type": "text", "text": text}


def _call(call: HistoricalCall, first: bool) -> Block:
    return {"type": "tool_use", "id": call.id, "name": tool_name(call.name), "input": call.arguments}


def _result(call: HistoricalCall) -> Block:
    block: Block = {"type": "tool_result", "tool_use_id": call.id, "content": compact_json(call.result)}
    if call.is_error:
        block["is_error"] = True
    return block


def _blocks(message: Mapping[str, Any]) -> list[Any]:
    content = message.get("content")
    if isinstance(content, str):
        return [_text(content)]
    return content if isinstance(content, list) else []


def _pending_ids(pending: Sequence[Block]) -> Iterator[str]:
    for message in pending:
        for block in _blocks(message):
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
    pending: Sequence[Block] | None = None,
    arguments: ArgumentPolicy = "empty",
    id_style: IdStyle = "historical",
) -> dict[str, Any]:
    """``{"system": [text blocks], "messages": [...]}`` for ``client.messages.create`` (system only when present)."""
    return _build(messages, pending, Options(arguments, id_style), None)


def _build(
    messages: Sequence[Message], pending: Sequence[Block] | None, options: Options, cache: RequestCache | None
) -> dict[str, Any]:
    systems, turns = turn_request(_FORMAT, messages, pending, options, cache)
    request: dict[str, Any] = {"system": [_text(text) for text in systems]} if systems else {}
    request["messages"] = turns
    return request


class Formatter(IncrementalFormatter):
    """Incremental :func:`to_request` for one conversation: each historical message is rendered once."""

    build = staticmethod(_build)


def replayed_tool_names(request: Mapping[str, Any]) -> list[str]:
    """The names of the ``tool_use`` blocks a request (or wire body) holds, in order, once each."""
    names = (
        block["name"]
        for message in list_at(request, "messages")
        if isinstance(message, Mapping)
        for block in _blocks(message)
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
    exchanges: list[Exchange] = []
    ids: list[tuple[str, str]] = []
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, Mapping):
            out.append(f"{where}: expected an object")
            exchanges.append(Exchange())
            continue
        role = message.get("role")
        if role not in ("user", "assistant"):
            out.append(f"{where}: role must be 'user' or 'assistant', got {role!r}")
        elif i == 0 and role != "user":
            out.append(f"{where}: the first message must be a user message")
        exchange = _message_problems(where, role, message, out)
        exchanges.append(exchange)
        ids.extend(exchange.calls)
    out.extend(adjacent_pairing(exchanges, call="tool_use", result="tool_result"))
    out.extend(duplicates(ids, "tool_use"))
    out.extend(_final_problems(messages))
    if require_tools if require_tools is not None else ("model" in body or "tools" in body):
        out.extend(_tools_problems(body, bool(ids)))
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


def _message_problems(where: str, role: object, message: Mapping[str, Any], out: list[str]) -> Exchange:
    content = message.get("content")
    if isinstance(content, str):
        if is_blank(content):
            out.append(f"{where}.content: text is empty or whitespace only")
        return Exchange()
    if not isinstance(content, list) or not content:
        out.append(f"{where}.content: expected a non-empty string or list of blocks")
        return Exchange()
    calls: list[tuple[str, str]] = []
    results: list[tuple[str, str]] = []
    leading = True
    for j, block in enumerate(content):
        at = f"{where}.content[{j}]"
        if not isinstance(block, Mapping):
            out.append(f"{at}: expected an object")
            continue
        kind = block.get("type")
        if kind == "text":
            if not isinstance(block.get("text"), str) or is_blank(block["text"]):
                out.append(f"{at}: text block is empty or whitespace only")
        elif kind == "tool_use":
            call_id, name = block.get("id"), block.get("name")
            if role != "assistant":
                out.append(f"{at}: tool_use outside an assistant message")
            if not isinstance(call_id, str) or not _ID.fullmatch(call_id):
                out.append(f"{at}: tool_use id {call_id!r} does not match ^[a-zA-Z0-9_-]+$")
            if not isinstance(name, str) or not _NAME.fullmatch(name):
                out.append(f"{at}: tool_use name {name!r} does not match ^[a-zA-Z0-9_-]{{1,64}}$")
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
        leading = leading and kind == "tool_result"
    return Exchange(tuple(calls), tuple(results))


def _final_problems(messages: list[Any]) -> list[str]:
    last = messages[-1]
    if not isinstance(last, Mapping) or last.get("role") != "assistant":
        return []
    blocks = _blocks(last)
    tail = blocks[-1] if blocks else None
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
    declared = [tool.get("name") for tool in tools if isinstance(tool, Mapping)]
    return [
        f"tools: {name!r} is replayed but not declared"
        for name in missing_names(replayed_tool_names(body), (n for n in declared if isinstance(n, str)))
    ]
