"""The rules of a generateContent request: alternation, responses matching the calls in order, and
``inline_data`` images of a type and size the API takes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from turnmemory.providers._images import image_problems
from turnmemory.providers._render import list_at
from turnmemory.providers.check._rules import json_object, role_problems
from turnmemory.providers.gemini import IMAGE_TYPES, MAX_IMAGE_BYTES, either_case

__all__ = ["problems"]


def problems(body: Mapping[str, Any], *, require_tools: bool | None = None) -> list[str]:
    """The rule violations in a generateContent request (snake_case dict or camelCase wire body).

    Contents must alternate ``user`` / ``model`` starting with ``user``; the function calls of a model
    content must be answered by the same number of function responses, in the same order, in the next
    user content. ``require_tools`` is accepted for a uniform checker signature.
    """
    out: list[str] = []
    system = either_case(body, "system_instruction", "systemInstruction")
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
        out.extend(
            role_problems(where, i, role, role_before, assistant="model", noun="content", alternate=True)
        )
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
        and either_case(part, "thought_signature", "thoughtSignature") is None
    ]


def _blob_problems(where: str, blob: object) -> list[str]:
    if not isinstance(blob, Mapping):
        return [f"{where}: expected an object"]
    kind = either_case(blob, "mime_type", "mimeType")
    if not isinstance(kind, str) or not kind.startswith("image/"):
        return []  # audio, video, documents: not what this package sends
    return image_problems(where, kind, blob.get("data"), IMAGE_TYPES, MAX_IMAGE_BYTES, urlsafe=True)


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
        call = either_case(part, "function_call", "functionCall")
        response = either_case(part, "function_response", "functionResponse")
        blob = either_case(part, "inline_data", "inlineData")
        if blob is not None:
            out.extend(_blob_problems(f"{at}.inline_data", blob))
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
