"""The rules of a Chat Completions request: every ``tool_calls`` entry answered by one ``tool`` message;
image parts of user messages as data URLs of a type and size the API takes; ``prompt_cache_breakpoint``
markers only where the wire takes them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from turnmemory.providers._images import data_url_problems
from turnmemory.providers.check._rules import Breakpoints, answer_problem, duplicates, is_json_text, objects
from turnmemory.providers.openai_chat import IMAGE_TYPES, MAX_ID, MAX_IMAGE_BYTES, is_call_id

__all__ = ["problems"]

_MARKED_PARTS: dict[object, tuple[str, ...]] = {
    "system": ("text",),
    "developer": ("text",),
    "tool": ("text",),
    "user": ("text", "image_url", "input_audio", "file"),
}
"""The content parts that take a ``prompt_cache_breakpoint``, by role (:class:`Breakpoints`)."""


def problems(body: Mapping[str, Any], *, require_tools: bool | None = None) -> list[str]:
    """The rule violations in a Chat Completions request body (empty when valid).

    ``require_tools`` is accepted for a uniform checker signature; Chat Completions does not demand
    that replayed tools be declared.
    """
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return ["messages: expected a non-empty list"]
    out: list[str] = []
    ids: list[tuple[str, str]] = []
    open_calls: dict[str, str] = {}
    answered: set[str] = set()
    marks = Breakpoints()
    for where, message in objects(messages, "messages", out):
        role = message.get("role")
        marks.on_item(where, message)
        marks.in_parts(f"{where}.content", message.get("content"), _MARKED_PARTS.get(role, ()))
        if role == "tool":
            stray = "a tool_call of the preceding assistant message"
            problem = answer_problem(
                where, message.get("tool_call_id"), open_calls, answered, result="tool message", stray=stray
            )
            out.extend([problem] if problem else [])
            if not isinstance(message.get("content"), str | list):
                out.append(f"{where}: tool message content must be a string or a list of text parts")
            continue
        out.extend(
            f"{at}: tool_call {call_id!r} has no tool message before {where}"
            for call_id, at in open_calls.items()
        )
        open_calls, answered = {}, set()
        if role not in ("system", "developer", "user", "assistant"):
            out.append(f"{where}: unknown role {role!r}")
        elif role == "assistant":
            calls = _assistant_problems(where, message, out)
            ids.extend(calls)
            open_calls = {call_id: at for at, call_id in calls}
        elif not isinstance(message.get("content"), str | list):
            out.append(f"{where}: {role} message content must be a string or a list of parts")
        elif role == "user" and isinstance(message["content"], list):
            out.extend(_image_problems(where, message["content"]))
    out.extend(f"{at}: tool_call {call_id!r} has no tool message" for call_id, at in open_calls.items())
    out.extend(duplicates(ids, "tool_call"))
    out.extend(marks.request_problems(body))
    return out


def _image_problems(where: str, parts: list[Any]) -> list[str]:
    out: list[str] = []
    for j, part in enumerate(parts):
        if isinstance(part, Mapping) and part.get("type") == "image_url":
            image = part.get("image_url")
            url = image.get("url") if isinstance(image, Mapping) else None
            out.extend(
                data_url_problems(f"{where}.content[{j}].image_url", url, IMAGE_TYPES, MAX_IMAGE_BYTES)
            )
    return out


def _assistant_problems(where: str, message: Mapping[str, Any], out: list[str]) -> list[tuple[str, str]]:
    calls = message.get("tool_calls")
    if calls is None:
        if message.get("content") is None:
            out.append(f"{where}: assistant message needs content or tool_calls")
        return []
    if not isinstance(calls, list) or not calls:
        out.append(f"{where}.tool_calls: must be a non-empty list (omit the key when there are no calls)")
        return []
    found: list[tuple[str, str]] = []
    for at, call in objects(calls, f"{where}.tool_calls", out):
        call_id, function = call.get("id"), call.get("function")
        if not isinstance(call_id, str) or not is_call_id(call_id):
            out.append(f"{at}: id {call_id!r} must be a string of 1 to {MAX_ID} characters")
        if call.get("type") == "custom" and isinstance(call.get("custom"), Mapping):
            found.append((at, str(call_id)))
            continue
        if call.get("type") != "function" or not isinstance(function, Mapping):
            out.append(f"{at}: expected a function or custom tool call")
            continue
        if not isinstance(function.get("name"), str) or not function["name"]:
            out.append(f"{at}.function: name must be a non-empty string")
        if not is_json_text(function.get("arguments")):
            out.append(f"{at}.function: arguments must be a JSON string")
        found.append((at, str(call_id)))
    return found
