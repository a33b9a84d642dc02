"""Validate request dicts with the official SDKs' own types.

``validate(provider, request)`` raises when the SDK would not accept ``request`` (a ``to_request``
result, possibly with pending state). Pydantic validates ``Iterable`` fields of the SDK TypedDicts
lazily, so every lazy iterator is consumed, and the blocks we emit are also validated with their own
TypedDict adapters, so nested fields are really checked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from functools import cache
from typing import Any

from pydantic import TypeAdapter

from turnmemory.providers import bedrock

__all__ = ["bedrock_params", "validate"]


def _consume(value: Any) -> Any:
    """Walk a validated value, forcing every lazy iterator pydantic returned (which validates it)."""
    if isinstance(value, Iterator):
        return [_consume(item) for item in value]
    if isinstance(value, Mapping):
        return {key: _consume(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_consume(item) for item in value]
    return value


@cache
def _adapter(tp: Any) -> TypeAdapter[Any]:
    return TypeAdapter(tp)


def _check(tp: Any, value: Any) -> None:
    _consume(_adapter(tp).validate_python(value))


def validate_anthropic(request: Mapping[str, Any]) -> None:
    from anthropic.types import (
        ImageBlockParam,
        MessageParam,
        TextBlockParam,
        ToolResultBlockParam,
        ToolUseBlockParam,
    )

    blocks: dict[str, Any] = {
        "image": ImageBlockParam,
        "text": TextBlockParam,
        "tool_use": ToolUseBlockParam,
        "tool_result": ToolResultBlockParam,
    }
    assert set(request) <= {"system", "messages"}, request.keys()
    if "system" in request:
        _check(list[TextBlockParam], request["system"])
    _check(list[MessageParam], request["messages"])
    for message in request["messages"]:
        content = message["content"]
        for block in [] if isinstance(content, str) else content:
            if block["type"] in blocks:
                _check(blocks[block["type"]], block)


def validate_openai_chat(request: Mapping[str, Any]) -> None:
    from openai.types.chat import (
        ChatCompletionAssistantMessageParam,
        ChatCompletionContentPartImageParam,
        ChatCompletionMessageFunctionToolCallParam,
        ChatCompletionMessageParam,
        ChatCompletionSystemMessageParam,
        ChatCompletionToolMessageParam,
        ChatCompletionUserMessageParam,
    )

    roles: dict[str, Any] = {
        "system": ChatCompletionSystemMessageParam,
        "user": ChatCompletionUserMessageParam,
        "assistant": ChatCompletionAssistantMessageParam,
        "tool": ChatCompletionToolMessageParam,
    }
    assert set(request) == {"messages"}, request.keys()
    _check(list[ChatCompletionMessageParam], request["messages"])
    for message in request["messages"]:
        _check(roles[message["role"]], message)
        for call in message.get("tool_calls", ()):
            _check(ChatCompletionMessageFunctionToolCallParam, call)
        content = message.get("content")
        for part in content if isinstance(content, list) else ():
            if part.get("type") == "image_url":
                _check(ChatCompletionContentPartImageParam, part)


def validate_openai_responses(request: Mapping[str, Any]) -> None:
    from openai.types.responses import (
        EasyInputMessageParam,
        ResponseFunctionToolCallParam,
        ResponseInputImageParam,
        ResponseInputItemParam,
    )
    from openai.types.responses.response_input_item_param import FunctionCallOutput

    items: dict[str, Any] = {
        "message": EasyInputMessageParam,
        "function_call": ResponseFunctionToolCallParam,
        "function_call_output": FunctionCallOutput,
    }
    assert set(request) <= {"input", "instructions"}, request.keys()
    assert isinstance(request.get("instructions", ""), str)
    _check(list[ResponseInputItemParam], request["input"])
    for item in request["input"]:
        kind = item.get("type", "message")
        if kind in items and not (kind == "message" and "id" in item):
            _check(items[kind], item)
        content = item.get("content")
        for part in content if kind == "message" and isinstance(content, list) else ():
            if part.get("type") == "input_image":
                _check(ResponseInputImageParam, part)


def validate_gemini(request: Mapping[str, Any]) -> None:
    from google.genai import types

    assert set(request) <= {"contents", "system_instruction"}, request.keys()
    contents = [types.Content.model_validate(content) for content in request["contents"]]
    config = types.GenerateContentConfig(system_instruction=request.get("system_instruction"))
    # Serializing proves the SDK can put the request on the wire.
    for content in contents:
        content.model_dump(mode="json", exclude_none=True, by_alias=True)
    config.model_dump(mode="json", exclude_none=True, by_alias=True)


def bedrock_params(
    request: Mapping[str, Any], model_id: str = "anthropic.claude-sonnet-4-5"
) -> dict[str, Any]:
    """The full Converse parameters for ``request``: ``modelId`` and a ``toolConfig`` of its replayed names."""
    params: dict[str, Any] = {"modelId": model_id, **request}
    names = bedrock.replayed_tool_names(request)
    if names:
        params["toolConfig"] = {"tools": [bedrock.placeholder_tool(name) for name in names]}
    return params


def validate_bedrock(request: Mapping[str, Any]) -> None:
    import botocore.validate

    assert set(request) <= {"messages", "system"}, request.keys()
    report = botocore.validate.ParamValidator().validate(bedrock_params(request), _converse_shape())
    if report.has_errors():
        raise AssertionError(report.generate_report())


@cache
def _converse_shape() -> Any:
    import botocore.session

    model = botocore.session.get_session().get_service_model("bedrock-runtime")
    return model.operation_model("Converse").input_shape


_VALIDATORS: dict[str, Callable[[Mapping[str, Any]], None]] = {
    "anthropic": validate_anthropic,
    "openai_chat": validate_openai_chat,
    "openai_responses": validate_openai_responses,
    "gemini": validate_gemini,
    "bedrock": validate_bedrock,
}


def validate(provider: str, request: Mapping[str, Any]) -> None:
    """Raise unless the SDK of ``provider`` accepts ``request``."""
    _VALIDATORS[provider](request)
