"""The rules of a Converse request: alternation, pairing, ids, blank text, images, the tool configuration."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from turnmemory.providers._images import image_problems
from turnmemory.providers._render import is_blank
from turnmemory.providers.bedrock import CALL_ID, IMAGE_TYPES, MAX_IMAGE_BYTES, replayed_tool_names
from turnmemory.providers.check._rules import ToolIds, json_object, mismatch, turn_problems, undeclared

__all__ = ["problems"]

_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")


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
    exchanges = turn_problems(
        messages, _message_problems, out, alternate=True, call="toolUse", result="toolResult"
    )
    if require_tools if require_tools is not None else ("modelId" in body or "toolConfig" in body):
        has_blocks = any(exchange.calls or exchange.results for exchange in exchanges)
        out.extend(_tool_config_problems(body, has_blocks))
    return out


def _non_blank(text: object) -> bool:
    return isinstance(text, str) and not is_blank(text)


def _image_problems(where: str, image: object) -> list[str]:
    """An image block: a ``format`` Converse takes and base64 ``source.bytes`` of that format (the JSON
    body as boto3 sends it), within its size; an S3 source is not checked."""
    if not isinstance(image, Mapping) or not isinstance(image.get("source"), Mapping):
        return [f"{where}: expected an object with format and source"]
    source = image["source"]
    if "s3Location" in source:
        return []
    kind = f"image/{image.get('format')}"
    return image_problems(where, kind, source.get("bytes"), IMAGE_TYPES, MAX_IMAGE_BYTES)


def _message_problems(where: str, role: object, message: Mapping[str, Any], out: list[str]) -> ToolIds:
    content = message.get("content")
    if not isinstance(content, list) or not content:
        out.append(f"{where}.content: expected a non-empty list of blocks")
        return ToolIds()
    calls: list[tuple[str, str]] = []
    results: list[tuple[str, str]] = []
    for j, block in enumerate(content):
        at = f"{where}.content[{j}]"
        if not isinstance(block, Mapping) or len(block) != 1:
            out.append(f"{at}: a content block must have exactly one member")
            continue
        if "text" in block and not _non_blank(block["text"]):
            out.append(f"{at}: the text field is blank")
        if "image" in block:
            out.extend(_image_problems(f"{at}.image", block["image"]))
        use = _tool_block(at, role, block, "toolUse", out)
        if use is not None:
            call_id, name = use.get("toolUseId"), use.get("name")
            out.extend(mismatch(at, "toolUseId", call_id, CALL_ID, CALL_ID.pattern))
            out.extend(mismatch(at, "toolUse name", name, _NAME, _NAME.pattern))
            if not json_object(use.get("input")):
                out.append(f"{at}: toolUse input must be an object")
            calls.append((at, str(call_id)))
        result = _tool_block(at, role, block, "toolResult", out)
        if result is not None:
            out.extend(_result_problems(at, result))
            results.append((at, str(result.get("toolUseId"))))
    return ToolIds(tuple(calls), tuple(results))


def _tool_block(
    at: str, role: object, block: Mapping[str, Any], key: str, out: list[str]
) -> Mapping[str, Any] | None:
    """The ``toolUse`` (an assistant's) or ``toolResult`` (a user's) member ``key`` of ``block`` when it
    holds an object, after a problem where it stands in the other role's message or is not an object."""
    if key not in block:
        return None
    owner = "assistant" if key == "toolUse" else "user"
    if role != owner:
        out.append(f"{at}: {key} outside {'an' if owner == 'assistant' else 'a'} {owner} message")
    member = block[key]
    if isinstance(member, Mapping):
        return member
    out.append(f"{at}: {key} must be an object")
    return None


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
    specs = (tool.get("toolSpec") for tool in tools if isinstance(tool, Mapping))
    declared = (spec.get("name") for spec in specs if isinstance(spec, Mapping))
    return undeclared("toolConfig", replayed_tool_names(body), declared)
