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

_ID = re.compile(r"[a-zA-Z0-9_.:-]{1,64}")
_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")


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


def _pending_ids(pending: Sequence[Block]) -> Iterator[str]:
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
    pending: Sequence[Block] | None = None,
    arguments: ArgumentPolicy = "empty",
    id_style: IdStyle = "historical",
) -> dict[str, Any]:
    """``{"messages": [...], "system": [text blocks]}`` for ``client.converse`` (system only when present)."""
    return _build(messages, pending, Options(arguments, id_style), None)


def _build(
    messages: Sequence[Message], pending: Sequence[Block] | None, options: Options, cache: RequestCache | None
) -> dict[str, Any]:
    systems, turns = turn_request(_FORMAT, messages, pending, options, cache)
    request: dict[str, Any] = {"messages": turns}
    if systems:
        request["system"] = [_text(text) for text in systems]
    return request


class Formatter(IncrementalFormatter):
    """Incremental :func:`to_request` for one conversation: each historical message is rendered once."""

    build = staticmethod(_build)


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


def problems(body: Mapping[str, Any], *, require_tools: bool | None = None) -> list[str]:
    """The rule violations in a Converse request body (empty when valid).

    ``require_tools`` (default: when the body has ``modelId`` or ``toolConfig``, as the full Converse
    parameters do) demands a non-empty ``toolConfig.tools`` declaring every replayed name whenever
    tool blocks are present.
    """
    out: list[str] = []
    system = body.get("system")
    if system is not None and not isinstance(system, list):
        out.append("system: expected a list of blocks")
    for j, block in enumerate(system if isinstance(system, list) else ()):
        if isinstance(block, Mapping) and "text" in block and not _non_blank(block["text"]):
            out.append(f"system[{j}]: the text field is blank")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return [*out, "messages: expected a non-empty list"]
    exchanges: list[Exchange] = []
    ids: list[tuple[str, str]] = []
    previous = None
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
        elif role == previous:
            out.append(f"{where}: a second {role} message in a row; roles must alternate")
        previous = role
        exchange = _message_problems(where, role, message, out)
        exchanges.append(exchange)
        ids.extend(exchange.calls)
    out.extend(adjacent_pairing(exchanges, call="toolUse", result="toolResult"))
    out.extend(duplicates(ids, "toolUse"))
    if require_tools if require_tools is not None else ("modelId" in body or "toolConfig" in body):
        has_blocks = any(exchange.calls or exchange.results for exchange in exchanges)
        out.extend(_tool_config_problems(body, has_blocks))
    return out


def _non_blank(text: object) -> bool:
    return isinstance(text, str) and not is_blank(text)


def _message_problems(where: str, role: object, message: Mapping[str, Any], out: list[str]) -> Exchange:
    content = message.get("content")
    if not isinstance(content, list) or not content:
        out.append(f"{where}.content: expected a non-empty list of blocks")
        return Exchange()
    calls: list[tuple[str, str]] = []
    results: list[tuple[str, str]] = []
    for j, block in enumerate(content):
        at = f"{where}.content[{j}]"
        if not isinstance(block, Mapping) or len(block) != 1:
            out.append(f"{at}: a content block must have exactly one member")
            continue
        if "text" in block and not _non_blank(block["text"]):
            out.append(f"{at}: the text field is blank")
        if "toolUse" in block:
            use = block["toolUse"]
            if role != "assistant":
                out.append(f"{at}: toolUse outside an assistant message")
            if not isinstance(use, Mapping):
                out.append(f"{at}: toolUse must be an object")
                continue
            call_id, name = use.get("toolUseId"), use.get("name")
            if not isinstance(call_id, str) or not _ID.fullmatch(call_id):
                out.append(f"{at}: toolUseId {call_id!r} does not match [a-zA-Z0-9_.:-]{{1,64}}")
            if not isinstance(name, str) or not _NAME.fullmatch(name):
                out.append(f"{at}: toolUse name {name!r} does not match [a-zA-Z0-9_-]{{1,64}}")
            if not json_object(use.get("input")):
                out.append(f"{at}: toolUse input must be an object")
            calls.append((at, str(call_id)))
        if "toolResult" in block:
            result = block["toolResult"]
            if role != "user":
                out.append(f"{at}: toolResult outside a user message")
            if not isinstance(result, Mapping):
                out.append(f"{at}: toolResult must be an object")
                continue
            out.extend(_result_problems(at, result))
            results.append((at, str(result.get("toolUseId"))))
    return Exchange(tuple(calls), tuple(results))


def _result_problems(at: str, result: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    status, content = result.get("status"), result.get("content")
    if status not in (None, "success", "error"):
        out.append(f"{at}: toolResult status must be 'success' or 'error', got {status!r}")
    if not isinstance(content, list):
        return [*out, f"{at}: toolResult content must be a list"]
    if status == "error" and not content:
        out.append(f"{at}: toolResult content cannot be empty when status is error")
    for k, item in enumerate(content):
        if isinstance(item, Mapping) and "json" in item and not json_object(item["json"]):
            out.append(f"{at}.content[{k}]: json must be an object")
        if isinstance(item, Mapping) and "text" in item and not isinstance(item["text"], str):
            out.append(f"{at}.content[{k}]: text must be a string")
    return out


def _tool_config_problems(body: Mapping[str, Any], has_blocks: bool) -> list[str]:
    if not has_blocks:
        return []
    config = body.get("toolConfig")
    tools = config.get("tools") if isinstance(config, Mapping) else None
    if not isinstance(tools, list) or not tools:
        return [
            "toolConfig: must be defined, with at least one tool, when toolUse or toolResult blocks are present"
        ]
    declared = (
        tool["toolSpec"].get("name")
        for tool in tools
        if isinstance(tool, Mapping) and isinstance(tool.get("toolSpec"), Mapping)
    )
    return [
        f"toolConfig: {name!r} is replayed but not declared"
        for name in missing_names(replayed_tool_names(body), (n for n in declared if isinstance(n, str)))
    ]
