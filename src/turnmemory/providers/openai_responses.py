"""OpenAI Responses: history as stateless ``input`` items, system text as ``instructions``.

Prose becomes easy-input ``message`` items; each historical batch becomes ``function_call`` items
(``call_id`` only, never an item ``id``, so no reasoning item is demanded) followed by their
``function_call_output`` items. No ``previous_response_id`` is needed. Use it as::

    client.responses.create(model=..., tools=..., store=False, **openai_responses.to_request(history))
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from turnmemory.memory import Message
from turnmemory.providers._common import (
    PLACEHOLDER_DESCRIPTION,
    Block,
    IncrementalFormatter,
    Options,
    RequestCache,
    compact_json,
    duplicates,
    is_json_text,
    item_request,
    list_at,
    missing_names,
    replay_steps,
    tool_name,
)
from turnmemory.replay import ArgumentPolicy, IdStyle

__all__ = [
    "MAX_CALL_ID",
    "Formatter",
    "placeholder_tool",
    "placeholder_tools",
    "problems",
    "replayed_tool_names",
    "to_request",
]

MAX_CALL_ID = 64
"""The longest ``call_id`` the Responses API accepts."""


def _message(role: str, content: str) -> Block:
    return {"type": "message", "role": role, "content": content}


def _render(message: Message, message_index: int, options: Options, taken: set[str]) -> tuple[Block, ...]:
    if message.role == "system":
        return ()
    if message.role == "user":
        return (_message("user", message.content),)
    out: list[Block] = []
    for step in replay_steps(message, message_index, options, taken):
        if step.text:
            out.append(_message("assistant", step.text))
        out.extend(
            {
                "type": "function_call",
                "call_id": call.id,
                "name": tool_name(call.name),
                "arguments": compact_json(call.arguments),
            }
            for call in step.calls
        )
        out.extend(
            {"type": "function_call_output", "call_id": call.id, "output": compact_json(call.result)}
            for call in step.calls
        )
    return tuple(out)


def _pending_ids(pending: Sequence[Block]) -> Iterator[str]:
    for item in pending:
        if item.get("type") in ("function_call", "function_call_output") and isinstance(
            item.get("call_id"), str
        ):
            yield item["call_id"]


def to_request(
    messages: Sequence[Message],
    *,
    pending: Sequence[Block] | None = None,
    arguments: ArgumentPolicy = "empty",
    id_style: IdStyle = "historical",
) -> dict[str, Any]:
    """``{"input": [...], "instructions": "..."}`` for ``client.responses.create``.

    ``instructions`` joins the non-blank system messages with blank lines; it is absent without them.
    """
    return _build(messages, pending, Options(arguments, id_style), None)


def _build(
    messages: Sequence[Message], pending: Sequence[Block] | None, options: Options, cache: RequestCache | None
) -> dict[str, Any]:
    systems, items = item_request(messages, pending, options, _render, _pending_ids, cache)
    request: dict[str, Any] = {"input": items}
    if systems:
        request["instructions"] = "\n\n".join(systems)
    return request


class Formatter(IncrementalFormatter):
    """Incremental :func:`to_request` for one conversation: each historical message is rendered once."""

    build = staticmethod(_build)


def replayed_tool_names(request: Mapping[str, Any]) -> list[str]:
    """The names of the ``function_call`` items a request (or wire body) holds, in order, once each."""
    names = (
        item["name"]
        for item in list_at(request, "input")
        if isinstance(item, Mapping)
        and item.get("type") == "function_call"
        and isinstance(item.get("name"), str)
    )
    return missing_names(names, ())


def placeholder_tool(name: str) -> dict[str, Any]:
    """A minimal function tool definition for a replayed name the caller does not offer this turn."""
    return {
        "type": "function",
        "name": name,
        "description": PLACEHOLDER_DESCRIPTION,
        "parameters": {"type": "object", "properties": {}},
        "strict": False,
    }


def placeholder_tools(request: Mapping[str, Any], offered: Sequence[str]) -> list[dict[str, Any]]:
    """Placeholder definitions for every name the request replays that ``offered`` lacks."""
    return [placeholder_tool(name) for name in missing_names(replayed_tool_names(request), offered)]


def problems(body: Mapping[str, Any], *, require_tools: bool | None = None) -> list[str]:
    """The rule violations in a Responses request body (empty when valid).

    Every ``function_call`` needs exactly one later ``function_call_output`` with its ``call_id``, and
    every output an earlier call. ``require_tools`` is accepted for a uniform checker signature.
    """
    out: list[str] = []
    if "instructions" in body and not isinstance(body["instructions"], str | None):
        out.append("instructions: expected a string")
    items = body.get("input")
    if isinstance(items, str):
        return out
    if not isinstance(items, list):
        return [*out, "input: expected a string or a list of items"]
    calls: list[tuple[str, str]] = []
    open_calls: dict[str, str] = {}
    answered: set[str] = set()
    for i, item in enumerate(items):
        where = f"input[{i}]"
        if not isinstance(item, Mapping):
            out.append(f"{where}: expected an object")
            continue
        kind = item.get("type", "message" if "role" in item else None)
        call_id = item.get("call_id")
        if kind == "function_call":
            out.extend(_call_problems(where, item))
            calls.append((where, str(call_id)))
            open_calls.setdefault(str(call_id), where)
        elif kind == "function_call_output":
            if call_id in open_calls:
                del open_calls[call_id]
                answered.add(call_id)
            elif call_id in answered:
                out.append(f"{where}: second function_call_output for {call_id!r}")
            else:
                out.append(
                    f"{where}: function_call_output for {call_id!r} does not answer an earlier function_call"
                )
            if not isinstance(item.get("output"), str | list):
                out.append(f"{where}: output must be a string or a list of content items")
        elif kind == "message":
            if item.get("role") not in ("user", "assistant", "system", "developer"):
                out.append(f"{where}: unknown role {item.get('role')!r}")
            if not isinstance(item.get("content"), str | list):
                out.append(f"{where}: message content must be a string or a list of content items")
        elif kind is None:
            out.append(f"{where}: item has neither type nor role")
    out.extend(
        f"{at}: function_call {call_id!r} has no function_call_output" for call_id, at in open_calls.items()
    )
    out.extend(duplicates(calls, "function_call call_id"))
    return out


def _call_problems(where: str, item: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    call_id, name, item_id = item.get("call_id"), item.get("name"), item.get("id")
    if not isinstance(call_id, str) or not call_id or len(call_id) > MAX_CALL_ID:
        out.append(f"{where}: call_id {call_id!r} must be a string of 1 to {MAX_CALL_ID} characters")
    if item_id is not None and not (isinstance(item_id, str) and item_id.startswith("fc")):
        out.append(f"{where}: item id {item_id!r} must start with 'fc' (or be omitted)")
    if not isinstance(name, str) or not name:
        out.append(f"{where}: name must be a non-empty string")
    if not is_json_text(item.get("arguments")):
        out.append(f"{where}: arguments must be a JSON string")
    return out
