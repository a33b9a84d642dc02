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
from functools import partial
from typing import Any

from turnmemory.memory import Message
from turnmemory.providers._build import (
    IncrementalFormatter,
    RequestCache,
    TurnFormat,
    turn_request,
)
from turnmemory.providers._render import (
    PLACEHOLDER_DESCRIPTION,
    Block,
    Item,
    Options,
    list_at,
    missing_names,
    tool_name,
)
from turnmemory.replay import ArgumentPolicy, HistoricalCall, IdStyle

__all__ = [
    "SKIP_THOUGHT_SIGNATURE",
    "Formatter",
    "either_case",
    "placeholder_tool",
    "placeholder_tools",
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


def either_case(mapping: Mapping[str, Any], snake: str, camel: str) -> Any:
    """``mapping[snake]``, or ``mapping[camel]`` as a wire body spells it (google-genai takes both)."""
    return mapping[snake] if snake in mapping else mapping.get(camel)


def _pending_ids(pending: Sequence[Item]) -> Iterator[str]:
    for content in pending:
        for part in list_at(content, "parts"):
            if not isinstance(part, Mapping):
                continue
            for snake, camel in (
                ("function_call", "functionCall"),
                ("function_response", "functionResponse"),
            ):
                inner = either_case(part, snake, camel)
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
    pending: Sequence[Item] | None = None,
    arguments: ArgumentPolicy = "empty",
    id_style: IdStyle = "historical",
) -> dict[str, Any]:
    """``{"contents": [...], "system_instruction": {"parts": [...]}}`` (system only when present).

    Contents alternate strictly and open with a user content: blank user messages are left out, and so
    are assistant messages before the first non-blank user message (nothing is invented to precede them).
    """
    return _request(messages, None, pending=pending, arguments=arguments, id_style=id_style)


def _request(
    messages: Sequence[Message],
    cache: RequestCache | None,
    *,
    pending: Sequence[Item] | None = None,
    arguments: ArgumentPolicy = "empty",
    id_style: IdStyle = "historical",
) -> dict[str, Any]:
    systems, contents = turn_request(_FORMAT, messages, pending, Options(arguments, id_style), cache)
    request: dict[str, Any] = {"contents": contents}
    if systems:
        request["system_instruction"] = {"parts": [_text(text) for text in systems]}
    return request


Formatter = partial(IncrementalFormatter, _request)
"""``Formatter()``: :func:`to_request` for one conversation, built incrementally (each historical message is
rendered once; the same keywords give the same requests)."""


def _function_calls(content: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    for part in list_at(content, "parts"):
        if isinstance(part, Mapping):
            call = either_case(part, "function_call", "functionCall")
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
