"""The rules of a Responses request: every ``function_call`` answered by one later output; ``input_image``
parts as data URLs of a type and size the API takes, with a ``detail``; ``prompt_cache_breakpoint``
markers only where the wire takes them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from turnmemory.providers._images import data_url_problems
from turnmemory.providers.check._rules import Breakpoints, answer_problem, duplicates, is_json_text, objects
from turnmemory.providers.openai_responses import IMAGE_TYPES, MAX_CALL_ID, MAX_IMAGE_BYTES, is_call_id

__all__ = ["problems"]

_INPUT_PARTS = ("input_text", "input_image", "input_file")
"""The content parts that take a ``prompt_cache_breakpoint`` (:class:`Breakpoints`), in the messages of
the system, developer and user and in ``function_call_output`` outputs."""


def _image_problems(where: str, parts: list[Any]) -> list[str]:
    out: list[str] = []
    for j, part in enumerate(parts):
        if isinstance(part, Mapping) and part.get("type") == "input_image":
            at = f"{where}.content[{j}]"
            if part.get("detail") not in ("low", "high", "auto", "original"):
                out.append(f"{at}: detail must be low, high, auto or original")
            if "file_id" not in part:
                out.extend(data_url_problems(at, part.get("image_url"), IMAGE_TYPES, MAX_IMAGE_BYTES))
    return out


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
    marks = Breakpoints()
    for where, item in objects(items, "input", out):
        kind = item.get("type", "message" if "role" in item else None)
        marks.on_item(where, item)
        if kind == "function_call_output":
            marks.in_parts(f"{where}.output", item.get("output"), _INPUT_PARTS)
        else:
            takes = _INPUT_PARTS if item.get("role") in ("system", "developer", "user") else ()
            marks.in_parts(f"{where}.content", item.get("content"), takes)
        call_id = item.get("call_id")
        if kind == "function_call":
            out.extend(_call_problems(where, item))
            calls.append((where, str(call_id)))
            open_calls.setdefault(str(call_id), where)
        elif kind == "function_call_output":
            stray = "an earlier function_call"
            problem = answer_problem(
                where, call_id, open_calls, answered, result="function_call_output", stray=stray
            )
            out.extend([problem] if problem else [])
            if not isinstance(item.get("output"), str | list):
                out.append(f"{where}: output must be a string or a list of content items")
        elif kind == "message":
            if item.get("role") not in ("user", "assistant", "system", "developer"):
                out.append(f"{where}: unknown role {item.get('role')!r}")
            if not isinstance(item.get("content"), str | list):
                out.append(f"{where}: message content must be a string or a list of content items")
            elif isinstance(item["content"], list):
                out.extend(_image_problems(where, item["content"]))
        elif kind is None:
            out.append(f"{where}: item has neither type nor role")
    out.extend(
        f"{at}: function_call {call_id!r} has no function_call_output" for call_id, at in open_calls.items()
    )
    out.extend(duplicates(calls, "function_call call_id"))
    out.extend(marks.request_problems(body))
    return out


def _call_problems(where: str, item: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    call_id, name, item_id = item.get("call_id"), item.get("name"), item.get("id")
    if not isinstance(call_id, str) or not is_call_id(call_id):
        out.append(f"{where}: call_id {call_id!r} must be a string of 1 to {MAX_CALL_ID} characters")
    if item_id is not None and not (isinstance(item_id, str) and item_id.startswith("fc")):
        out.append(f"{where}: item id {item_id!r} must start with 'fc' (or be omitted)")
    if not isinstance(name, str) or not name:
        out.append(f"{where}: name must be a non-empty string")
    if not is_json_text(item.get("arguments")):
        out.append(f"{where}: arguments must be a JSON string")
    return out
