"""What the two OpenAI wire formats share: the SDK client, error classification, function tools."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from turnmemory.llm._retry import (
    MalformedError,
    RequestFailure,
    connection_failure,
    error_fields,
    http_failure,
)
from turnmemory.llm._sdk import Endpoint, sdk_options
from turnmemory.llm._stream import sse_events
from turnmemory.llm._tools import ToolSpec
from turnmemory.providers._render import Item

__all__ = [
    "function_tool",
    "openai_chunks",
    "openai_client",
    "openai_count",
    "openai_failure",
    "with_breakpoint",
]


def openai_client(endpoint: Endpoint) -> Any:
    """The ``openai.OpenAI`` client of ``endpoint``, with the SDK's retries off."""
    import openai

    if endpoint.client is not None:
        return endpoint.client.with_options(max_retries=0)
    return openai.OpenAI(**sdk_options(endpoint))


def openai_chunks(resource: Any, kwargs: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """The JSON events of ``resource.create(**kwargs, stream=True)`` (Chat Completions or Responses),
    read raw from the SDK's streaming response: each decoded once, as plain objects. An event that
    carries an ``error`` raises ``openai.APIError``, as the SDK's own stream does.

    The lists (the items, the tools) go as ``extra_body``, which the SDK sends as they are: given as
    parameters, it would walk every item against its types on each request, the costliest part of a long
    turn (a quarter of a second per request of a 60k window); they are given empty, where required."""
    import openai

    lists = {key: value for key, value in kwargs.items() if isinstance(value, list)}
    typed = {key: [] if key in lists else value for key, value in kwargs.items()}
    with resource.with_streaming_response.create(**typed, extra_body=lists) as response:
        for _, data in sse_events(response.iter_bytes()):
            if data == "[DONE]":
                break
            if not isinstance(data, dict):
                raise MalformedError("a stream event that is not a JSON object")
            error = data.get("error")
            if error:
                message = error.get("message") if isinstance(error, Mapping) else None
                raise openai.APIError(
                    message if isinstance(message, str) and message else "An error occurred during streaming",
                    response.http_response.request,
                    body=error,
                )
            yield data


def openai_failure(error: Exception) -> RequestFailure | None:
    """Classify an ``openai`` SDK error (HTTP, in-stream or connection)."""
    import httpx2
    import openai

    if isinstance(error, openai.APIConnectionError | httpx2.TransportError):
        return connection_failure(error)
    if isinstance(error, openai.APIStatusError):
        message, _ = error_fields(error.body)
        return http_failure(
            error.status_code, message, kind=error.code or error.type, headers=error.response.headers
        )
    if isinstance(error, openai.APIError):
        message, _ = error_fields(error.body)
        return http_failure(None, message, kind=error.code or error.type)
    return None


def openai_count(details: object, name: str) -> int:
    """A token count of a usage details object (``cached_tokens``, ``cache_write_tokens``): 0 when the
    server leaves it out, or sends something that is not a count."""
    value = details.get(name) if isinstance(details, Mapping) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def with_breakpoint(items: Sequence[Item], end: int, mark: Callable[[Item], Item | None]) -> list[Item]:
    """``items`` with a breakpoint (``mark``, the wire's) on the last item before ``end`` that takes one:
    the end of the compacted prefix. Items are copied where marked, never changed."""
    out = list(items)
    for index in range(min(end, len(out)) - 1, -1, -1):
        marked = mark(out[index])
        if marked is not None:
            out[index] = marked
            break
    return out


def function_tool(spec: ToolSpec, *, nested: bool) -> Item:
    """An OpenAI function tool: Chat nests it under ``function``; Responses does not."""
    function: Item = {"name": spec.name, "parameters": spec.schema()}
    if spec.description:
        function["description"] = spec.description
    return {"type": "function", "function": function} if nested else {"type": "function", **function}
