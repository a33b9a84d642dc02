"""Google Gemini over the official ``google-genai`` SDK (``generate_content_stream``).

In-turn model contents keep their parts as they streamed, thought signatures on the very parts they
came on (consecutive plain text chunks are joined; a part with a signature is never merged). Calls
that arrive without an id are paired with their responses by position, as Gemini does.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from turnmemory._text import compact_json
from turnmemory.llm._retry import MalformedError, RequestFailure, connection_failure, http_failure
from turnmemory.llm._sdk import Completion, Endpoint, Query, Sdk, Settings, StreamInterrupted, given
from turnmemory.llm.events import Event, Usage
from turnmemory.providers import gemini
from turnmemory.providers._render import Item, tool_name
from turnmemory.providers._tools import Call

__all__ = ["GeminiSdk"]

_PLAIN = frozenset({"text"})
_THOUGHT = frozenset({"text", "thought"})


class GeminiSdk(Sdk):
    """Gemini ``generateContent`` through the official ``google-genai`` SDK (streamed)."""

    wire = gemini
    max_tokens_stops = frozenset({"MAX_TOKENS"})

    def __init__(self, settings: Settings, endpoint: Endpoint) -> None:
        import httpx2
        from google import genai
        from google.genai import errors

        self._errors = errors
        self._types = genai.types
        self._connection_errors: tuple[type[BaseException], ...] = (httpx2.TransportError,)
        if endpoint.client is not None:
            self._client = endpoint.client
        else:
            options: dict[str, Any] = {"httpx_client": _timed_client(httpx2, endpoint)}
            if endpoint.base_url is not None:
                options["base_url"] = endpoint.base_url
            self._client = genai.Client(
                api_key=endpoint.api_key, http_options=genai.types.HttpOptions(**options)
            )
        self.settings = settings
        self._generated = 0

    def stream(self, query: Query) -> Generator[Event | Completion, None, None]:
        streamed: list[Item] = []
        finish: str | None = None
        metadata: Any = None
        chunks = self._client.models.generate_content_stream(
            model=self.settings.model, contents=query.body["contents"], config=self._config(query)
        )
        for chunk in chunks:
            metadata = chunk.usage_metadata or metadata
            for candidate in (chunk.candidates or ())[:1]:
                if candidate.finish_reason is not None:
                    finish = str(getattr(candidate.finish_reason, "value", candidate.finish_reason))
                for part in (candidate.content.parts if candidate.content else None) or ():
                    if part.text:
                        yield Event("reasoning" if part.thought else "text", text=part.text)
                    streamed.append(part.model_dump(mode="json", exclude_none=True))
        if finish is None:
            raise StreamInterrupted("the response stream ended without a finish reason")
        parts = _merged(streamed)
        calls = tuple(self._call(part, query.max_argument_bytes) for part in parts if "function_call" in part)
        if any(not call.name for call in calls):
            raise MalformedError("a function call without a name")
        text = "".join(part["text"] for part in parts if "text" in part and not part.get("thought"))
        yield Completion(
            items=({"role": "model", "parts": parts},) if text or calls else (),
            calls=calls,
            text=text,
            usage=_usage(metadata),
            stop=self.reason(finish),
        )

    def failure(self, error: Exception) -> RequestFailure | None:
        if isinstance(error, self._connection_errors):
            return connection_failure(error)
        if isinstance(error, self._errors.APIError):
            response = getattr(error, "response", None)
            headers = getattr(response, "headers", None)
            return http_failure(error.code, error.message or "", kind=error.status, headers=headers)
        return None

    def _call(self, part: Item, cap: int) -> Call:
        """The call of a ``function_call`` part, its name as every wire accepts it (in the part too);
        arguments larger than ``cap`` bytes (as compact JSON) are dropped, from the part too."""
        call = part["function_call"]
        if call.get("name"):
            call["name"] = tool_name(call["name"])
        native = call.get("id")
        if native is None:
            self._generated += 1
        call_id = native or f"gemini_call_{self._generated}"
        arguments = dict(call.get("args") or {})
        size = len(compact_json(arguments).encode("utf-8", "surrogatepass"))
        if size > cap:
            part["function_call"] = {**call, "args": {}}
            return Call(
                id=call_id, name=call.get("name", ""), arguments=None, native=native, dropped_bytes=size
            )
        return Call(id=call_id, name=call.get("name", ""), arguments=arguments, native=native)

    def _config(self, query: Query) -> Any:
        settings, request = self.settings, query.body
        config: dict[str, Any] = {}
        if request.get("system_instruction"):
            config["system_instruction"] = request["system_instruction"]
        if query.tools:
            declarations = [spec.definition("parameters_json_schema") for spec in query.tools]
            config["tools"] = [{"function_declarations": declarations}]
        config |= given(max_output_tokens=settings.max_tokens, temperature=settings.temperature)
        if settings.thinking is not None:
            config["thinking_config"] = {"thinking_budget": settings.thinking, "include_thoughts": True}
        return self._types.GenerateContentConfig.model_validate(config)


def _timed_client(httpx2: Any, endpoint: Endpoint) -> Any:
    """An ``httpx2.Client`` that applies the endpoint's connect and read timeouts to every request.

    google-genai sends each request with ``timeout=None`` (no timeout at all) unless ``HttpOptions``
    has one, and that one would be a single value for every phase plus an ``X-Server-Timeout``
    header that limits the whole generation. A request hook sets the timeouts instead.
    """
    timeouts = httpx2.Timeout(endpoint.timeout, connect=endpoint.connect_timeout).as_dict()

    def set_timeouts(request: Any) -> None:
        if not any(request.extensions.get("timeout", {}).values()):
            request.extensions["timeout"] = timeouts

    return httpx2.Client(timeout=timeouts, event_hooks={"request": [set_timeouts]})


def _merged(streamed: list[Item]) -> list[Item]:
    """The streamed parts with each run of plain text parts (or of thought parts) joined into its first,
    once; empty parts left out."""
    parts: list[Item] = []
    texts: list[list[str]] = []
    for part in streamed:
        if not part:
            continue
        last = parts[-1] if parts else None
        keys = frozenset(part)
        if (
            last is not None
            and keys in (_PLAIN, _THOUGHT)
            and frozenset(last) == keys
            and last.get("thought") == part.get("thought")
        ):
            texts[-1].append(part["text"])
        elif part.get("text") != "" or len(part) > 1:
            parts.append(part)
            texts.append([part.get("text", "")])
    for part, pieces in zip(parts, texts, strict=True):
        if len(pieces) > 1:
            part["text"] = "".join(pieces)
    return parts


def _usage(metadata: Any) -> Usage:
    if metadata is None:
        return Usage()
    output = (metadata.candidates_token_count or 0) + (metadata.thoughts_token_count or 0)
    return Usage(
        input_tokens=metadata.prompt_token_count or 0,
        output_tokens=output,
        cached_tokens=metadata.cached_content_token_count or 0,
    )
