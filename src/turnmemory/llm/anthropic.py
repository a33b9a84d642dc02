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
from typing import Any

from turnmemory.llm._retry import RequestFailure, connection_failure, error_fields, http_failure
from turnmemory.llm._sdk import Completion, Endpoint, Sdk, Settings, StreamInterrupted, sdk_options
from turnmemory.llm._tools import ToolSpec
from turnmemory.llm.events import Event, Reason, Usage
from turnmemory.providers import anthropic
from turnmemory.providers._render import Item
from turnmemory.providers._tools import Call

__all__ = ["AnthropicSdk"]

DEFAULT_MAX_TOKENS = 8192
_EPHEMERAL = {"type": "ephemeral"}


def _text(text: str) -> Item:
    return {"type": "text", "text": text}


_STOPS: Mapping[str | None, Reason] = {
    "max_tokens": "max_tokens",
    "model_context_window_exceeded": "max_tokens",
}


class AnthropicSdk(Sdk):
    """The Messages API through the official SDK (``messages.stream``)."""

    wire = anthropic

    def __init__(self, settings: Settings, endpoint: Endpoint) -> None:
        import anthropic as sdk
        import httpx2

        self._sdk = sdk
        self._connection_errors: tuple[type[BaseException], ...] = (
            sdk.APIConnectionError,
            httpx2.TransportError,
        )
        if endpoint.client is not None:
            self._client = endpoint.client.with_options(max_retries=0)
        else:
            self._client = sdk.Anthropic(**sdk_options(endpoint))
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

    def stream(
        self, request: Mapping[str, Any], tools: Sequence[ToolSpec], turn_start: int
    ) -> Generator[Event | Completion, None, None]:
        kwargs = self._kwargs(request, tools, turn_start)
        stopped = False
        with self._client.messages.stream(**kwargs) as stream:
            for event in stream:
                if event.type == "text" and event.text:
                    yield Event("text", text=event.text)
                elif event.type == "thinking" and event.thinking:
                    yield Event("reasoning", text=event.thinking)
                elif event.type == "message_stop":
                    stopped = True
            message = stream.current_message_snapshot if stopped else None
        if message is None:
            raise StreamInterrupted("the response stream ended before message_stop")
        blocks = [
            block for block in (_param(block.to_dict()) for block in message.content) if block is not None
        ]
        calls = tuple(
            Call(
                id=block["id"],
                name=block["name"],
                arguments=block["input"] if isinstance(block["input"], dict) else None,
            )
            for block in blocks
            if block["type"] == "tool_use"
        )
        usage = message.usage
        cache_read = usage.cache_read_input_tokens or 0
        total_input = usage.input_tokens + cache_read + (usage.cache_creation_input_tokens or 0)
        yield Completion(
            items=({"role": "assistant", "content": blocks},) if blocks else (),
            calls=calls,
            text="".join(block["text"] for block in blocks if block["type"] == "text"),
            usage=Usage(
                input_tokens=total_input,
                output_tokens=usage.output_tokens,
                cached_tokens=cache_read,
                cache_write_tokens=usage.cache_creation_input_tokens or 0,
            ),
            stop=_STOPS.get(message.stop_reason, "stop"),
        )

    def failure(self, error: Exception) -> RequestFailure | None:
        sdk = self._sdk
        if isinstance(error, self._connection_errors):
            return connection_failure(error)
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

    def _kwargs(
        self, request: Mapping[str, Any], tools: Sequence[ToolSpec], turn_start: int
    ) -> dict[str, Any]:
        settings = self.settings
        messages = list(request["messages"])
        kwargs: dict[str, Any] = {
            "model": settings.model,
            "max_tokens": self._max_tokens,
            "messages": anthropic.mark_cache(messages, self._breakpoints(messages, turn_start)),
        }
        system = request.get("system")
        definitions = [_definition(spec) for spec in tools]
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


def _definition(spec: ToolSpec) -> Item:
    definition: Item = {"name": spec.name, "input_schema": spec.schema()}
    if spec.description:
        definition["description"] = spec.description
    return definition


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
