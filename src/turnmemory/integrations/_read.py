"""Reading provider-format message lists into kept messages and completed turns' event streams.

The events are the transcript importers' (:mod:`turnmemory.transcripts`): prose, reasoning, tool calls,
their results with the outcome the result parser read, and loop iterations. User and system messages
are kept as given (an Anthropic, Bedrock or Gemini user message that also answers calls keeps only its
other blocks; its results belong to the turn before).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from turnmemory.transcripts import Event, IterationEnd, Prose, Reasoning, ToolCall, ToolResult, as_text

__all__ = [
    "PROVIDERS",
    "Part",
    "Provider",
    "ResultParser",
    "content_key",
    "is_user_turn",
    "read",
    "text_block",
]

Provider = Literal["openai_chat", "anthropic", "openai_responses", "gemini", "bedrock"]
"""The message-list formats :func:`~turnmemory.integrations.compact` reads and writes."""

PROVIDERS: tuple[Provider, ...] = ("openai_chat", "anthropic", "openai_responses", "gemini", "bedrock")

ResultParser = Callable[[str, Mapping[str, Any], str, bool], "tuple[Mapping[str, Any] | None, bool]"]
"""``(tool name, call arguments, result text, error flag) -> (outcome, failed)``.

The outcome is the output mapping the retention rules read (``{"file_changed": path}``,
``{"exit_code": n}``); ``failed`` marks a call that did not run (its activity gets status ``error``).
"""

_TEXT_KEYS = ("output", "result", "content", "text", "stdout")


def _arguments(value: Any) -> Mapping[str, Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, Mapping) else {}


@dataclass(slots=True)
class _Reader:
    """The events of the turn being read; the calls its results answer."""

    parse: ResultParser
    events: list[Event] = field(default_factory=list)
    calls: dict[str, ToolCall] = field(default_factory=dict)
    open: list[str] = field(default_factory=list)
    answered: bool = False

    def iteration(self) -> None:
        """A new model response starts."""
        if self.events and not isinstance(self.events[-1], IterationEnd):
            self.events.append(IterationEnd())
        self.answered = False

    def _output(self, event: Event) -> None:
        if self.answered:  # output after results comes from the next model response
            self.iteration()
        self.events.append(event)

    def prose(self, text: Any) -> None:
        if isinstance(text, str) and text:
            self._output(Prose(text))

    def reasoning(self, text: Any) -> None:
        if isinstance(text, str) and text:
            self._output(Reasoning(text))

    def call(self, call_id: Any, name: Any, arguments: Any) -> None:
        if not isinstance(name, str):
            return
        if not isinstance(call_id, str) or not call_id:  # Gemini calls may have no id
            call_id = f"\x00{len(self.calls)}"
        call = ToolCall(call_id, name, _arguments(arguments), name, "")
        self.calls[call_id] = call
        self.open.append(call_id)
        self._output(call)

    def result(self, call_id: Any, content: Any, is_error: bool, name: Any = None) -> None:
        if not isinstance(call_id, str) or not call_id:  # answer the first open call of that name
            call_id = next((c for c in self.open if self.calls[c].name == name), None)
        if call_id not in self.open:
            return
        self.open.remove(call_id)
        call = self.calls[call_id]
        text = as_text(content)
        outcome, failed = self.parse(call.name, call.arguments, text, is_error)
        self.events.append(ToolResult(call.call_id, text, is_error=failed, outcome=outcome))
        self.answered = True

    def take(self) -> tuple[Event, ...]:
        events = tuple(self.events)
        self.events, self.calls, self.open, self.answered = [], {}, [], False
        return events


@dataclass(frozen=True, slots=True)
class Part:
    """A kept message (``kept`` set: a user or system message, as given) or a completed turn's events."""

    kept: Any = None
    events: tuple[Event, ...] = ()


def _chat(messages: Sequence[Mapping[str, Any]], reader: _Reader) -> list[Part]:
    parts: list[Part] = []
    for message in messages:
        role = message.get("role")
        if role == "assistant":
            reader.iteration()
            reader.prose(as_text(message.get("content")))
            for call in message.get("tool_calls") or ():
                function = call.get("function") if isinstance(call, Mapping) else None
                if isinstance(function, Mapping):
                    reader.call(call.get("id"), function.get("name"), function.get("arguments"))
        elif role == "tool":
            failed = message.get("status") == "error" or message.get("is_error") is True
            reader.result(message.get("tool_call_id"), message.get("content"), failed)
        else:
            parts += [Part(events=reader.take()), Part(kept=message)]
    return [*parts, Part(events=reader.take())]


def _responses(items: Sequence[Mapping[str, Any]], reader: _Reader) -> list[Part]:
    parts: list[Part] = []
    for item in items:
        kind, role = item.get("type", "message"), item.get("role")
        if kind == "message" and role == "assistant":
            reader.prose(as_text(item.get("content")))
        elif kind == "message":
            parts += [Part(events=reader.take()), Part(kept=item)]
        elif kind == "reasoning":
            reader.reasoning(as_text(item.get("summary")))
        elif kind in ("function_call", "custom_tool_call"):
            arguments = item.get("arguments") if kind == "function_call" else {"input": item.get("input")}
            reader.call(item.get("call_id"), item.get("name"), arguments)
        elif kind in ("function_call_output", "custom_tool_call_output"):
            reader.result(item.get("call_id"), item.get("output"), False)
    return [*parts, Part(events=reader.take())]


Block = Mapping[str, Any]
_Result = tuple[Any, Any, bool, Any]


@dataclass(frozen=True, slots=True)
class _TurnWire:
    """How a turn-based format (Anthropic, Bedrock, Gemini) spells roles and blocks."""

    name: str
    assistant: str
    key: str
    text: Callable[[str], dict[str, Any]]
    read: Callable[[Block, _Reader], None]
    """Feed one block of an assistant message into the reader."""
    result: Callable[[Block], _Result | None]
    """A user message block as a result (call id, content, error flag, tool name), or ``None``."""


def _anthropic_read(block: Block, reader: _Reader) -> None:
    kind = block.get("type")
    if kind == "text":
        reader.prose(block.get("text"))
    elif kind == "thinking":
        reader.reasoning(block.get("thinking"))
    elif kind == "tool_use":
        reader.call(block.get("id"), block.get("name"), block.get("input"))


def _anthropic_result(block: Block) -> _Result | None:
    if block.get("type") != "tool_result":
        return None
    return block.get("tool_use_id"), block.get("content"), block.get("is_error") is True, None


def _bedrock_read(block: Block, reader: _Reader) -> None:
    use = block.get("toolUse")
    if isinstance(block.get("text"), str):
        reader.prose(block["text"])
    elif isinstance(use, Mapping):
        reader.call(use.get("toolUseId"), use.get("name"), use.get("input"))


def _bedrock_result(block: Block) -> _Result | None:
    result = block.get("toolResult")
    if not isinstance(result, Mapping):
        return None
    return result.get("toolUseId"), result.get("content"), result.get("status") == "error", None


def _field(block: Block, snake: str, camel: str) -> Any:
    return block.get(snake, block.get(camel))


def _gemini_read(block: Block, reader: _Reader) -> None:
    call = _field(block, "function_call", "functionCall")
    if isinstance(block.get("text"), str):
        (reader.reasoning if block.get("thought") is True else reader.prose)(block["text"])
    elif isinstance(call, Mapping):
        reader.call(call.get("id"), call.get("name"), call.get("args"))


def _gemini_result(block: Block) -> _Result | None:
    response = _field(block, "function_response", "functionResponse")
    if not isinstance(response, Mapping):
        return None
    body = response.get("response")
    # {"output": "..."} and the like wrap a text result; anything else is the tool's output object
    if isinstance(body, Mapping) and len(body) == 1 and next(iter(body)) in _TEXT_KEYS:
        body = next(iter(body.values()))
    content = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
    return response.get("id"), content, False, response.get("name")


_WIRES: Mapping[str, _TurnWire] = {
    "anthropic": _TurnWire(
        "anthropic",
        "assistant",
        "content",
        lambda t: {"type": "text", "text": t},
        _anthropic_read,
        _anthropic_result,
    ),
    "bedrock": _TurnWire(
        "bedrock", "assistant", "content", lambda t: {"text": t}, _bedrock_read, _bedrock_result
    ),
    "gemini": _TurnWire("gemini", "model", "parts", lambda t: {"text": t}, _gemini_read, _gemini_result),
}


def _blocks(wire: _TurnWire, message: Mapping[str, Any]) -> list[Block]:
    content = message.get(wire.key)
    if isinstance(content, str):
        return [wire.text(content)]
    return [block for block in content if isinstance(block, Mapping)] if isinstance(content, list) else []


def _turns(wire: _TurnWire, messages: Sequence[Mapping[str, Any]], reader: _Reader) -> list[Part]:
    parts: list[Part] = []
    for message in messages:
        role = message.get("role")
        if role == wire.assistant:
            reader.iteration()
            for block in _blocks(wire, message):
                wire.read(block, reader)
            continue
        if role != "user":
            raise ValueError(f"{wire.name} messages: role must be 'user' or {wire.assistant!r}, got {role!r}")
        rest = []
        for block in _blocks(wire, message):
            found = wire.result(block)
            if found is None:
                rest.append(block)
            else:
                reader.result(*found)
        if rest:
            content = message.get(wire.key)
            parts += [
                Part(events=reader.take()),
                Part(kept={**message, wire.key: content if isinstance(content, str) else rest}),
            ]
    return [*parts, Part(events=reader.take())]


def read(provider: Provider, messages: Sequence[Mapping[str, Any]], parse: ResultParser) -> list[Part]:
    """``messages`` as kept messages and the events of the turns between them, in order.

    The last part is the turn after the last kept message (empty when that message is a user turn).
    """
    reader = _Reader(parse)
    if provider == "openai_chat":
        return _chat(messages, reader)
    if provider == "openai_responses":
        return _responses(messages, reader)
    return _turns(_WIRES[provider], messages, reader)


def is_user_turn(provider: Provider, message: Mapping[str, Any]) -> bool:
    """Whether ``message`` starts a user turn (a user message that is not only results)."""
    role = message.get("role")
    if provider == "openai_responses":
        return role == "user" and message.get("type", "message") == "message"
    if provider == "openai_chat":
        return role == "user"
    wire = _WIRES[provider]
    return role == "user" and any(wire.result(block) is None for block in _blocks(wire, message))


def content_key(provider: Provider) -> str:
    """Where a turn-based format keeps a message's blocks."""
    return _WIRES[provider].key


def text_block(provider: Provider, text: str) -> dict[str, Any]:
    """A text block of a turn-based format."""
    return _WIRES[provider].text(text)
