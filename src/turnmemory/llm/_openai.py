"""What the two OpenAI wire formats share: the SDK client, error classification, function tools."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from turnmemory.llm._retry import RequestFailure, connection_failure, error_fields, http_failure
from turnmemory.llm._sdk import Endpoint, sdk_options
from turnmemory.llm._tools import ToolSpec
from turnmemory.providers._render import Item

__all__ = [
    "function_tool",
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


def openai_count(details: Any, name: str) -> int:
    """A token count of a usage details object (``cached_tokens``, ``cache_write_tokens``): 0 when the
    server leaves it out, or sends something that is not a count."""
    value = getattr(details, name, None)
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
