"""What the SDK halves of the two OpenAI wire formats share: the SDK client and its errors, the raw
event stream, the request fields both take, usage, function tools."""

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
from turnmemory.llm._sdk import Endpoint, Query, Sdk, Settings, given, sdk_client
from turnmemory.llm._stream import sse_events
from turnmemory.llm.events import Usage
from turnmemory.providers._render import Item, takes_breakpoint

__all__ = ["OpenAISdk", "openai_usage"]


class OpenAISdk(Sdk):
    """The ``openai.OpenAI`` client of an endpoint (the SDK's retries off) and what both wires do with it."""

    def __init__(self, settings: Settings, endpoint: Endpoint) -> None:
        import openai

        self._client = sdk_client(openai.OpenAI, endpoint)
        self.settings = settings
        self._pending_items = 0

    def injected(self, pending: list[Item]) -> list[Item]:
        """The pending items as they are (their count places the compacted prefix's breakpoint)."""
        self._pending_items = len(pending)
        return pending

    def failure(self, error: Exception) -> RequestFailure | None:
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

    def shared_fields(
        self, query: Query, mark: Callable[[Item], Item | None], *, nested: bool
    ) -> dict[str, Any]:
        """The request fields both wires take: the model, the items (a breakpoint, the wire's ``mark``,
        at the end of the compacted prefix, before pending state and the prompt, where the model takes
        one), streaming, the tools (Chat ``nested`` under ``function``), temperature and the cache key."""
        settings = self.settings
        items = query.body[self.wire.ITEMS]
        if takes_breakpoint(settings.model):
            items = _with_breakpoint(items, query.turn_start - 1 - self._pending_items, mark)
        fields: dict[str, Any] = {"model": settings.model, self.wire.ITEMS: items, "stream": True}
        if query.tools:
            definitions = [spec.definition("parameters") for spec in query.tools]
            fields["tools"] = [
                {"type": "function", "function": definition} if nested else {"type": "function", **definition}
                for definition in definitions
            ]
        return fields | given(temperature=settings.temperature, prompt_cache_key=settings.session_id)

    def events(self, resource: Any, fields: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
        """The JSON events of ``resource.create(**fields)`` (Chat Completions or Responses), read raw
        from the SDK's streaming response: each decoded once, as plain objects. An event that carries an
        ``error`` raises ``openai.APIError``, as the SDK's own stream does.

        The lists (the items, the tools) go as ``extra_body``, which the SDK sends as they are: given as
        parameters, it would walk every item against its types on each request, the costliest part of a
        long turn (a quarter of a second per request of a 60k window); they are given empty, where
        required."""
        import openai

        lists = {key: value for key, value in fields.items() if isinstance(value, list)}
        typed = {key: [] if key in lists else value for key, value in fields.items()}
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
                        message
                        if isinstance(message, str) and message
                        else "An error occurred during streaming",
                        response.http_response.request,
                        body=error,
                    )
                yield data


def openai_usage(usage: Mapping[str, Any] | None, input_key: str, output_key: str) -> Usage:
    """The ``Usage`` of a usage object whose counts are ``input_key`` and ``output_key``, and whose
    cache counts are in ``<input_key>_details``."""
    if usage is None:
        return Usage()
    details = usage.get(f"{input_key}_details")
    return Usage(
        input_tokens=usage.get(input_key) or 0,
        output_tokens=usage.get(output_key) or 0,
        cached_tokens=_count(details, "cached_tokens"),
        cache_write_tokens=_count(details, "cache_write_tokens"),
    )


def _count(details: object, name: str) -> int:
    """A token count of a usage details object (``cached_tokens``, ``cache_write_tokens``): 0 when the
    server leaves it out, or sends something that is not a count."""
    value = details.get(name) if isinstance(details, Mapping) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _with_breakpoint(items: Sequence[Item], end: int, mark: Callable[[Item], Item | None]) -> list[Item]:
    """``items`` with a breakpoint (``mark``, the wire's) on the last item before ``end`` that takes one:
    the end of the compacted prefix. Items are copied where marked, never changed."""
    out = list(items)
    for index in range(min(end, len(out)) - 1, -1, -1):
        marked = mark(out[index])
        if marked is not None:
            out[index] = marked
            break
    return out
