"""Anthropic Messages over the official ``anthropic`` SDK.

In-turn assistant messages keep every block as the API returned it: thinking blocks with their
signatures, redacted thinking, text and tool use, in order. Prompt caching puts ephemeral
``cache_control`` breakpoints, four at most, on the last system block (the last tool when there is no
system prompt), the last block of the compacted prefix (the history before the pending state and the
new user message), the deepest breakpoint of this client's previous request that this request still
shares (so a request reads all the previous one wrote, however many blocks a tool iteration added:
the cache itself looks back only 20 blocks) and the last block; stale markers in pending state are
removed first.
"""

from __future__ import annotations

import copy
from collections.abc import Generator, Mapping, Sequence
from typing import Any, Literal

from turnmemory.llm._retry import RequestFailure, connection_failure, error_fields, http_failure
from turnmemory.llm._sdk import (
    CallIds,
    Completion,
    Endpoint,
    Query,
    Sdk,
    Settings,
    StreamInterrupted,
    sdk_client,
)
from turnmemory.llm._stream import Arguments, StreamError, sse_events
from turnmemory.llm.events import Event, Usage
from turnmemory.providers import anthropic
from turnmemory.providers._render import Item, tool_name
from turnmemory.providers._tools import Call

__all__ = ["AnthropicSdk"]

DEFAULT_MAX_TOKENS = 8192
_EPHEMERAL = {"type": "ephemeral"}
_TRACKS_INPUT = ("tool_use", "server_tool_use")
_STREAMED: Mapping[tuple[object, object], tuple[str, Literal["text", "reasoning"]]] = {
    ("text", "text_delta"): ("text", "text"),
    ("thinking", "thinking_delta"): ("thinking", "reasoning"),
}
"""(block type, delta type) → (the delta's text key, the event it streams as)."""


def _text(text: str) -> Item:
    return {"type": "text", "text": text}


class AnthropicSdk(Sdk):
    """The Messages API through the official SDK (a streamed ``messages.create``, its raw events)."""

    wire = anthropic
    max_tokens_stops = frozenset({"max_tokens", "model_context_window_exceeded"})

    def __init__(self, settings: Settings, endpoint: Endpoint) -> None:
        import anthropic as sdk
        import httpx2

        self._sdk = sdk
        self._connection_errors: tuple[type[BaseException], ...] = (
            sdk.APIConnectionError,
            httpx2.TransportError,
        )
        self._client = sdk_client(sdk.Anthropic, endpoint)
        self.settings = settings
        if settings.temperature is not None:
            raise ValueError("temperature: the Anthropic Messages API takes no temperature")
        max_tokens = settings.max_tokens or DEFAULT_MAX_TOKENS
        if settings.thinking is not None and settings.thinking >= max_tokens:
            raise ValueError(
                f"thinking: the budget ({settings.thinking}) must be below max_tokens ({max_tokens})"
            )
        self._max_tokens = max_tokens
        self._pending_blocks = 0
        self._previous: tuple[list[Item], list[int]] = ([], [])
        """The messages of the last request (without markers) and its breakpoints' block positions."""

    def stream(self, query: Query) -> Generator[Event | Completion, None, None]:
        message = _Message(query.max_argument_bytes)
        with self._client.messages.with_streaming_response.create(
            **self._kwargs(query), stream=True
        ) as response:
            for name, event in sse_events(response.iter_bytes()):
                if name == "error":
                    raise StreamError(event)
                if name and name != "ping" and isinstance(event, dict):
                    yield from message.add(event)
        if not message.stopped:
            raise StreamInterrupted("the response stream ended before message_stop")
        blocks, calls = message.blocks(CallIds(query.taken_ids, anthropic.is_call_id))
        usage = message.usage
        cache_read = usage.get("cache_read_input_tokens") or 0
        cache_write = usage.get("cache_creation_input_tokens") or 0
        yield Completion(
            items=({"role": "assistant", "content": blocks},) if blocks else (),
            calls=calls,
            text="".join(block["text"] for block in blocks if block["type"] == "text"),
            usage=Usage(
                input_tokens=(usage.get("input_tokens") or 0) + cache_read + cache_write,
                output_tokens=usage.get("output_tokens") or 0,
                cached_tokens=cache_read,
                cache_write_tokens=cache_write,
            ),
            stop=self.reason(message.stop_reason),
        )

    def failure(self, error: Exception) -> RequestFailure | None:
        sdk = self._sdk
        if isinstance(error, self._connection_errors):
            return connection_failure(error)
        if isinstance(error, StreamError):
            message, kind = error_fields(error.body)
            return http_failure(None, message, kind=kind)
        if isinstance(error, sdk.APIStatusError):
            message, kind = error_fields(error.body)
            return http_failure(error.status_code, message, kind=kind, headers=error.response.headers)
        return None

    def injected(self, pending: list[Item]) -> list[Item]:
        """The pending items without stale ``cache_control`` markers.

        Pending state is the only part of a request that does not come from the formatter or from this
        client's own conversion of responses, so it is the only place such markers can hide.
        """
        self._pending_blocks = sum(len(anthropic.blocks(message)) for message in pending)
        return [anthropic.unmarked(message) for message in pending]

    def _kwargs(self, query: Query) -> dict[str, Any]:
        settings, request = self.settings, query.body
        messages = list(request["messages"])
        kwargs: dict[str, Any] = {
            "model": settings.model,
            "max_tokens": self._max_tokens,
            "messages": anthropic.mark_cache(messages, self._breakpoints(messages, query.turn_start)),
        }
        system = request.get("system")
        definitions = [spec.definition("input_schema") for spec in query.tools]
        if system:
            blocks: list[Item] = [_text(system)] if isinstance(system, str) else copy.deepcopy(system)
            for block in blocks:
                block.pop("cache_control", None)
            blocks[-1]["cache_control"] = dict(_EPHEMERAL)
            kwargs["system"] = blocks
        elif definitions:
            definitions[-1]["cache_control"] = dict(_EPHEMERAL)
        if definitions:
            kwargs["tools"] = definitions
        if settings.thinking is not None:
            kwargs["thinking"] = {"type": "enabled", "budget_tokens": settings.thinking}
        return kwargs

    def _breakpoints(self, messages: list[Item], turn_start: int) -> list[int]:
        """Block positions of the message breakpoints: the compacted prefix's last block, the previous
        request's deepest shared breakpoint, the last block (three at most, beside the system's)."""
        positions = anthropic.block_positions(messages)
        final_user = sum(len(anthropic.blocks(message)) for message in messages[:turn_start]) - 1
        previous, points = self._previous
        prefix_end = final_user - self._pending_blocks - 1
        # Where an earlier request wrote: the previous request's deepest shared breakpoint, or the last
        # prompt before the compacted prefix's end (the end of the previous turn's first request, which
        # a new client, as in a resumed session, knows too), whichever is deeper.
        anchors = [
            anthropic.shared_breakpoint(messages, previous, points),
            _last_prompt(messages, positions[: max(prefix_end, 0)]),
        ]
        chosen = {prefix_end, len(positions) - 1}
        found = [anchor for anchor in anchors if anchor is not None]
        if found:
            chosen.add(max(found))
        breakpoints = sorted(point for point in chosen if point >= 0)
        self._previous = (messages, breakpoints)
        return breakpoints


def _last_prompt(messages: list[Item], positions: Sequence[tuple[int, int]]) -> int | None:
    """The position of the last user text block among ``positions``, or ``None``."""
    for point in range(len(positions) - 1, -1, -1):
        i, j = positions[point]
        block = anthropic.blocks(messages[i])[j]
        if messages[i].get("role") == "user" and isinstance(block, Mapping) and block.get("type") == "text":
            return point
    return None


class _Message:
    """One streamed message as its raw events build it: blocks in order, usage, stop reason."""

    def __init__(self, cap: int) -> None:
        self._cap = cap
        self._blocks: dict[int, Item] = {}
        self._pieces: dict[int, list[str]] = {}
        self._arguments: dict[int, Arguments] = {}
        self.usage: dict[str, Any] = {}
        self.stop_reason: str | None = None
        self.stopped = False

    def add(self, event: Mapping[str, Any]) -> Generator[Event, None, None]:
        """Fold one event in; yield the text or reasoning it streams."""
        kind = event.get("type")
        if kind == "message_start":
            self.usage = dict(event["message"].get("usage") or {})
        elif kind == "content_block_start":
            index, block = event["index"], dict(event["content_block"])
            self._blocks[index] = block
            if block.get("type") in _TRACKS_INPUT:
                self._arguments[index] = Arguments(self._cap)
            self._pieces[index] = [block.get("text") or block.get("thinking") or ""]
        elif kind == "content_block_delta":
            index, delta = event["index"], event["delta"]
            block = self._blocks[index]
            streamed = _STREAMED.get((block.get("type"), delta.get("type")))
            if streamed is not None:
                piece = delta.get(streamed[0])
                if isinstance(piece, str) and piece:
                    self._pieces[index].append(piece)
                    yield Event(streamed[1], text=piece)
            elif delta.get("type") == "input_json_delta" and index in self._arguments:
                self._arguments[index].add(delta.get("partial_json") or "")
            elif delta.get("type") == "signature_delta" and block.get("type") == "thinking":
                block["signature"] = delta.get("signature", "")
        elif kind == "message_delta":
            self.stop_reason = (event.get("delta") or {}).get("stop_reason")
            for key, value in (event.get("usage") or {}).items():
                if value is not None:  # cumulative totals; those left out keep message_start's
                    self.usage[key] = value
        elif kind == "message_stop":
            self.stopped = True

    def blocks(self, ids: CallIds) -> tuple[list[Item], tuple[Call, ...]]:
        """The message's blocks as request blocks (blank text left out) and its tool calls, their ids
        and names as every wire accepts them (``ids``, :func:`tool_name`)."""
        blocks: list[Item] = []
        calls: list[Call] = []
        for index in sorted(self._blocks):
            block = self._blocks[index]
            if block.get("type") == "text":
                block["text"] = "".join(self._pieces[index])
            elif block.get("type") == "thinking":
                block["thinking"] = "".join(self._pieces[index])
            dropped = 0
            if index in self._arguments:
                arguments = self._arguments[index]
                dropped = arguments.size if arguments.dropped else 0
                block["input"] = {} if dropped else _input(arguments.text(), block.get("input"))
            param = _param(block)
            if param is None:
                continue
            blocks.append(param)
            if param["type"] == "tool_use":
                param["id"], param["name"] = ids.conform(param["id"]), tool_name(param["name"])
                value = param["input"]
                calls.append(
                    Call(
                        id=param["id"],
                        name=param["name"],
                        arguments=value if isinstance(value, dict) and not dropped else None,
                        dropped_bytes=dropped,
                    )
                )
        return blocks, tuple(calls)


def _input(text: str, start: Any) -> Any:
    """A tool block's input from its streamed JSON, read once as the SDK reads it (partial JSON
    completed); the block's starting input when nothing streamed."""
    if not text:
        return start if start is not None else {}
    from jiter import from_json

    return from_json(text.encode("utf-8", "surrogatepass"), partial_mode=True)


def _param(block: Item) -> Item | None:
    """A response content block as a request block, or ``None`` for an empty text block."""
    kind = block.get("type")
    if kind == "text":
        text = block.get("text", "")
        return _text(text) if text.strip() else None
    if kind == "thinking":
        return {
            "type": "thinking",
            "thinking": block.get("thinking", ""),
            "signature": block.get("signature", ""),
        }
    if kind == "redacted_thinking":
        return {"type": "redacted_thinking", "data": block.get("data", "")}
    if kind == "tool_use":
        return {"type": "tool_use", "id": block["id"], "name": block["name"], "input": block.get("input", {})}
    return block
