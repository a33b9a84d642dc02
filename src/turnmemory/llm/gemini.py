"""Google Gemini over the official ``google-genai`` SDK (``generate_content_stream``).

In-turn model contents keep their parts as they streamed, thought signatures on the very parts they
came on (consecutive plain text chunks are joined; a part with a signature is never merged). Calls
that arrive without an id are paired with their responses by position, as Gemini does.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from typing import Any

from turnmemory._text import compact_json
from turnmemory.llm._loop import (
    Completion,
    Connection,
    History,
    Item,
    PendingReplay,
    Settings,
    StreamInterrupted,
)
from turnmemory.llm._reduce import Piece
from turnmemory.llm._retry import Failure, MalformedError, connection_failure, http_failure
from turnmemory.llm._tools import Call, ToolResult, ToolSpec, object_result, parse_output
from turnmemory.llm.events import Event, Reason, Usage
from turnmemory.providers import gemini as formatter

__all__ = ["GeminiWire"]

_STOPS: Mapping[str | None, Reason] = {"MAX_TOKENS": "max_tokens"}
_PLAIN = frozenset({"text"})
_THOUGHT = frozenset({"text", "thought"})


class GeminiWire(History):
    """The Gemini ``generateContent`` wire format (streamed)."""

    items_key = "contents"

    def __init__(self, settings: Settings, connection: Connection) -> None:
        import httpx2
        from google import genai
        from google.genai import errors

        self._errors = errors
        self._types = genai.types
        self._connection_errors: tuple[type[BaseException], ...] = (httpx2.TransportError,)
        if connection.client is not None:
            self._client = connection.client
        else:
            options: dict[str, Any] = {}
            if connection.base_url is not None:
                options["base_url"] = connection.base_url
            if connection.http_client is not None:
                options["httpx_client"] = connection.http_client
                options["timeout"] = int(connection.timeout * 1000)
            else:
                options["httpx_client"] = _timed_client(httpx2, connection)
            self._client = genai.Client(
                api_key=connection.api_key, http_options=genai.types.HttpOptions(**options)
            )
        super().__init__(formatter, settings)
        self._generated = 0

    def stream(
        self, request: Mapping[str, Any], tools: Sequence[ToolSpec], turn_start: int
    ) -> Generator[Event | Completion, None, None]:
        parts: list[Item] = []
        finish: str | None = None
        metadata: Any = None
        chunks = self._client.models.generate_content_stream(
            model=self.settings.model, contents=request["contents"], config=self._config(request, tools)
        )
        for chunk in chunks:
            metadata = chunk.usage_metadata or metadata
            for candidate in (chunk.candidates or ())[:1]:
                if candidate.finish_reason is not None:
                    finish = str(getattr(candidate.finish_reason, "value", candidate.finish_reason))
                for part in (candidate.content.parts if candidate.content else None) or ():
                    if part.text:
                        yield Event("reasoning" if part.thought else "text", text=part.text)
                    _append(parts, part.model_dump(mode="json", exclude_none=True))
        if finish is None:
            raise StreamInterrupted("the response stream ended without a finish reason")
        calls = tuple(self._call(part["function_call"]) for part in parts if "function_call" in part)
        if any(not call.name for call in calls):
            raise MalformedError("a function call without a name")
        text = "".join(part["text"] for part in parts if "text" in part and not part.get("thought"))
        yield Completion(
            items=({"role": "model", "parts": parts},) if text or calls else (),
            calls=calls,
            text=text,
            usage=_usage(metadata),
            stop=_STOPS.get(finish, "stop"),
        )

    def pieces(self, items: Sequence[Item]) -> list[Piece]:
        found: list[Piece] = []
        for index, content in enumerate(items):
            parts = [part if isinstance(part, Mapping) else {} for part in content.get("parts") or ()]
            signed = any(_field(part, "thought_signature", "thoughtSignature") for part in parts)
            for slot, part in enumerate(parts):
                call = _field(part, "function_call", "functionCall")
                response = _field(part, "function_response", "functionResponse")
                if isinstance(call, Mapping):
                    arguments = call.get("args")
                    found.append(
                        Piece(
                            index,
                            slot,
                            "arguments",
                            str(call.get("id") or call.get("name", "")),
                            name=str(call.get("name", "")),
                            arguments=arguments if isinstance(arguments, dict) else {},
                            editable=not signed,
                        )
                    )
                elif isinstance(response, Mapping):
                    payload = response.get("response")
                    found.append(
                        Piece(
                            index,
                            slot,
                            "result",
                            str(response.get("id") or response.get("name", "")),
                            name=str(response.get("name", "")),
                            text=compact_json(payload) if payload is not None else "",
                            error=isinstance(payload, Mapping) and "error" in payload,
                        )
                    )
        return found

    def replace(self, item: Item, piece: Piece, content: str | dict[str, Any]) -> Item:
        parts = list(item["parts"])
        part = dict(parts[piece.slot])
        snake = "function_response" if piece.kind == "result" else "function_call"
        camel = "functionResponse" if piece.kind == "result" else "functionCall"
        key = snake if snake in part else camel
        if isinstance(content, str):
            result = ToolResult(error=content) if piece.error else parse_output(content)
            part[key] = {**part[key], "response": _response(result)}
        else:
            part[key] = {**part[key], "args": content}
        parts[piece.slot] = part
        return {**item, "parts": parts}

    def tool_results(self, calls: Sequence[Call], results: Sequence[ToolResult]) -> list[Item]:
        parts = []
        for call, result in zip(calls, results, strict=True):
            response: Item = {"name": call.name, "response": _response(result)}
            if call.native is not None:
                response["id"] = call.native
            parts.append({"function_response": response})
        return [{"role": "user", "parts": parts}]

    def failure(self, error: Exception) -> Failure | None:
        if isinstance(error, self._connection_errors):
            return connection_failure(error)
        if isinstance(error, self._errors.APIError):
            response = getattr(error, "response", None)
            headers = getattr(response, "headers", None)
            return http_failure(error.code, error.message or "", kind=error.status, headers=headers)
        return None

    def replay(self, pending: Sequence[Item], out: PendingReplay) -> None:
        waiting: list[str] = []
        for index, content in enumerate(pending):
            parts = [part for part in content.get("parts") or () if isinstance(part, Mapping)]
            if content.get("role") == "model":
                waiting = []
                for position, part in enumerate(parts):
                    call = _field(part, "function_call", "functionCall")
                    if isinstance(call, Mapping):
                        call_id = call.get("id") or f"pending_{index}_{position}"
                        waiting.append(call_id)
                        out.call(call_id, call.get("name", ""), call.get("args") or {})
                    elif isinstance(part.get("text"), str) and not part.get("thought"):
                        out.text(part["text"])
                continue
            responses = [_field(part, "function_response", "functionResponse") for part in parts]
            for position, response in enumerate(r for r in responses if isinstance(r, Mapping)):
                call_id = response.get("id") or (waiting[position] if position < len(waiting) else "")
                out.result(call_id, _result(response.get("response")))

    def _call(self, call: Mapping[str, Any]) -> Call:
        native = call.get("id")
        if native is None:
            self._generated += 1
        call_id = native or f"gemini_call_{self._generated}"
        arguments = call.get("args")
        return Call(id=call_id, name=call.get("name", ""), arguments=dict(arguments or {}), native=native)

    def _config(self, request: Mapping[str, Any], tools: Sequence[ToolSpec]) -> Any:
        settings = self.settings
        config: dict[str, Any] = {}
        if request.get("system_instruction"):
            config["system_instruction"] = request["system_instruction"]
        if tools:
            config["tools"] = [{"function_declarations": [_declaration(spec) for spec in tools]}]
        if settings.max_tokens is not None:
            config["max_output_tokens"] = settings.max_tokens
        if settings.temperature is not None:
            config["temperature"] = settings.temperature
        if settings.thinking is not None:
            config["thinking_config"] = {"thinking_budget": settings.thinking, "include_thoughts": True}
        return self._types.GenerateContentConfig.model_validate(config)


def _timed_client(httpx2: Any, connection: Connection) -> Any:
    """An ``httpx2.Client`` that applies the connection's connect and read timeouts to every request.

    google-genai sends each request with ``timeout=None`` (no timeout at all) unless ``HttpOptions``
    has one, and that one would be a single value for every phase plus an ``X-Server-Timeout``
    header that limits the whole generation. A request hook sets the timeouts instead.
    """
    timeouts = httpx2.Timeout(connection.timeout, connect=connection.connect_timeout).as_dict()

    def set_timeouts(request: Any) -> None:
        if not any(request.extensions.get("timeout", {}).values()):
            request.extensions["timeout"] = timeouts

    return httpx2.Client(timeout=timeouts, event_hooks={"request": [set_timeouts]})


def _append(parts: list[Item], part: Item) -> None:
    """Add a streamed part, joining it to the previous one when both are plain text (or thought)."""
    if not part:
        return
    last = parts[-1] if parts else None
    keys = frozenset(part)
    if (
        last is not None
        and keys in (_PLAIN, _THOUGHT)
        and frozenset(last) == keys
        and last.get("thought") == part.get("thought")
    ):
        last["text"] += part["text"]
    elif part.get("text") != "" or len(part) > 1:
        parts.append(part)


def _declaration(spec: ToolSpec) -> Item:
    declaration: Item = {"name": spec.name, "parameters_json_schema": spec.schema()}
    if spec.description:
        declaration["description"] = spec.description
    return declaration


def _response(result: ToolResult) -> Item:
    """A function response object: the output (wrapped as ``{"output": ...}`` unless an object), or the error."""
    if result.error is not None:
        return {"error": result.error or "error"}
    if isinstance(result.output, dict):
        return result.output
    return {"output": result.output}


def _result(response: Any) -> ToolResult:
    if isinstance(response, Mapping) and set(response) == {"output"}:
        return ToolResult(output=response["output"])
    return object_result(dict(response) if isinstance(response, Mapping) else response)


def _field(part: Mapping[str, Any], snake: str, camel: str) -> Any:
    return part[snake] if snake in part else part.get(camel)


def _usage(metadata: Any) -> Usage:
    if metadata is None:
        return Usage()
    output = (metadata.candidates_token_count or 0) + (metadata.thoughts_token_count or 0)
    return Usage(
        input_tokens=metadata.prompt_token_count or 0,
        output_tokens=output,
        cached_tokens=metadata.cached_content_token_count or 0,
    )
