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
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from turnmemory.memory import Message
from turnmemory.providers._common import (
    PLACEHOLDER_DESCRIPTION,
    Block,
    IncrementalFormatter,
    Options,
    RequestCache,
    TurnFormat,
    json_object,
    list_at,
    missing_names,
    tool_name,
    turn_request,
)
from turnmemory.replay import ArgumentPolicy, HistoricalCall, IdStyle

__all__ = [
    "SKIP_THOUGHT_SIGNATURE",
    "Formatter",
    "placeholder_tool",
    "placeholder_tools",
    "problems",
    "replayed_tool_names",
    "to_request",
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


def _field(part: Mapping[str, Any], snake: str, camel: str) -> Any:
    return part[snake] if snake in part else part.get(camel)


def _pending_ids(pending: Sequence[Block]) -> Iterator[str]:
    for content in pending:
        for part in list_at(content, "parts"):
            if not isinstance(part, Mapping):
                continue
            for snake, camel in (
                ("function_call", "functionCall"),
                ("function_response", "functionResponse"),
            ):
                inner = _field(part, snake, camel)
                if isinstance(inner, Mapping) and isinstance(inner.get("id"), str):
                    yield inner["id"]


_FORMAT = TurnFormat(
    assistant_role="model",
    content_key="parts",
    text=_text,
    call=_call,
    result=_result,
    pending_ids=_pending_ids,
    strip_final=False,
)


def to_request(
    messages: Sequence[Message],
    *,
    pending: Sequence[Block] | None = None,
    arguments: ArgumentPolicy = "empty",
    id_style: IdStyle = "historical",
) -> dict[str, Any]:
    """``{"contents": [...], "system_instruction": {"parts": [...]}}`` (system only when present).

    Contents alternate strictly and open with a user content: blank user messages are left out, and so
    are assistant messages before the first non-blank user message (nothing is invented to precede them).
    """
    return _build(messages, pending, Options(arguments, id_style), None)


def _build(
    messages: Sequence[Message], pending: Sequence[Block] | None, options: Options, cache: RequestCache | None
) -> dict[str, Any]:
    systems, contents = turn_request(_FORMAT, messages, pending, options, cache)
    request: dict[str, Any] = {"contents": contents}
    if systems:
        request["system_instruction"] = {"parts": [_text(text) for text in systems]}
    return request


class Formatter(IncrementalFormatter):
    """Incremental :func:`to_request` for one conversation: each historical message is rendered once."""

    build = staticmethod(_build)


def _function_calls(content: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    for part in list_at(content, "parts"):
        if isinstance(part, Mapping):
            call = _field(part, "function_call", "functionCall")
            if isinstance(call, Mapping):
                yield call


def replayed_tool_names(request: Mapping[str, Any]) -> list[str]:
    """The names of the function calls a request (or camelCase wire body) holds, in order, once each."""
    names = (
        call["name"]
        for content in list_at(request, "contents")
        if isinstance(content, Mapping)
        for call in _function_calls(content)
        if isinstance(call.get("name"), str)
    )
    return missing_names(names, ())


def placeholder_tool(name: str) -> dict[str, Any]:
    """A minimal function declaration (for a ``function_declarations`` list) for a replayed name."""
    return {"name": name, "description": PLACEHOLDER_DESCRIPTION}


def placeholder_tools(request: Mapping[str, Any], offered: Sequence[str]) -> list[dict[str, Any]]:
    """Placeholder declarations for every name the request replays that ``offered`` lacks."""
    return [placeholder_tool(name) for name in missing_names(replayed_tool_names(request), offered)]


def problems(body: Mapping[str, Any], *, require_tools: bool | None = None) -> list[str]:
    """The rule violations in a generateContent request (snake_case dict or camelCase wire body).

    Contents must alternate ``user`` / ``model`` starting with ``user``; the function calls of a model
    content must be answered by the same number of function responses, in the same order, in the next
    user content. ``require_tools`` is accepted for a uniform checker signature.
    """
    out: list[str] = []
    system = _field(body, "system_instruction", "systemInstruction")
    if isinstance(system, Mapping):
        out.extend(_text_problems("system_instruction", system))
    contents = body.get("contents")
    if not isinstance(contents, list) or not contents:
        return [*out, "contents: expected a non-empty list"]
    previous: tuple[str, list[tuple[str, Mapping[str, Any]]]] | None = None
    role_before = None
    for i, content in enumerate(contents):
        where = f"contents[{i}]"
        if not isinstance(content, Mapping):
            out.append(f"{where}: expected an object")
            previous = None
            continue
        role = content.get("role")
        if role not in ("user", "model"):
            out.append(f"{where}: role must be 'user' or 'model', got {role!r}")
        elif i == 0 and role != "user":
            out.append(f"{where}: the first content must be a user content")
        elif role == role_before:
            out.append(f"{where}: a second {role} content in a row; roles must alternate")
        role_before = role
        calls, responses = _part_problems(where, role, content, out)
        out.extend(_pairing_problems(where, previous, responses))
        previous = (where, calls)
    if previous is not None:
        out.extend(
            f"{at}: function_call {call.get('name')!r} has no function_response: no content follows"
            for at, call in previous[1]
        )
    return out


def _text_problems(where: str, content: Mapping[str, Any]) -> list[str]:
    # Gemini itself returns empty text parts that carry only a thought signature; those are replayed as is.
    return [
        f"{where}.parts[{j}]: empty text part"
        for j, part in enumerate(list_at(content, "parts"))
        if isinstance(part, Mapping)
        and "text" in part
        and part["text"] in ("", None)
        and _field(part, "thought_signature", "thoughtSignature") is None
    ]


def _part_problems(
    where: str, role: object, content: Mapping[str, Any], out: list[str]
) -> tuple[list[tuple[str, Mapping[str, Any]]], list[tuple[str, Mapping[str, Any]]]]:
    parts = content.get("parts")
    if not isinstance(parts, list) or not parts:
        out.append(f"{where}.parts: expected a non-empty list")
        return [], []
    out.extend(_text_problems(where, content))
    calls: list[tuple[str, Mapping[str, Any]]] = []
    responses: list[tuple[str, Mapping[str, Any]]] = []
    for j, part in enumerate(parts):
        at = f"{where}.parts[{j}]"
        if not isinstance(part, Mapping):
            out.append(f"{at}: expected an object")
            continue
        call = _field(part, "function_call", "functionCall")
        response = _field(part, "function_response", "functionResponse")
        if call is not None:
            if role != "model":
                out.append(f"{at}: function_call outside a model content")
            if not isinstance(call, Mapping) or not isinstance(call.get("name"), str) or not call["name"]:
                out.append(f"{at}: function_call needs a name")
                continue
            if call.get("args") is not None and not json_object(call["args"]):
                out.append(f"{at}: function_call args must be an object")
            calls.append((at, call))
        if response is not None:
            if role != "user":
                out.append(f"{at}: function_response outside a user content")
            if not isinstance(response, Mapping) or not isinstance(response.get("name"), str):
                out.append(f"{at}: function_response needs a name")
                continue
            if not json_object(response.get("response")):
                out.append(f"{at}: function_response response must be an object")
            responses.append((at, response))
    return calls, responses


def _pairing_problems(
    where: str,
    previous: tuple[str, list[tuple[str, Mapping[str, Any]]]] | None,
    responses: list[tuple[str, Mapping[str, Any]]],
) -> list[str]:
    calls = previous[1] if previous is not None else []
    if not calls:
        return [
            f"{at}: function_response {response.get('name')!r} does not answer a function_call in the previous content"
            for at, response in responses
        ]
    if len(responses) != len(calls):
        return [
            f"{where}: {len(responses)} function_response part(s) for the {len(calls)} function_call part(s) "
            f"of {previous[0] if previous else '?'}"
        ]
    out: list[str] = []
    for (at, response), (call_at, call) in zip(responses, calls, strict=True):
        same_id = response.get("id") == call.get("id") or None in (response.get("id"), call.get("id"))
        if response.get("name") != call.get("name") or not same_id:
            out.append(
                f"{at}: function_response {response.get('name')!r} ({response.get('id')!r}) does not answer "
                f"function_call {call.get('name')!r} ({call.get('id')!r}) at {call_at}; order must match"
            )
    return out
