"""An imported session as the analysis sees it: turns of loop iterations, rendered as request blocks.

Every strategy renders its history in one wire shape, OpenAI Chat Completions messages, so sizes
compare: the full trace keeps each agent's own tool names, its real arguments JSON and its real
output text; TurnMemory histories come from :func:`turnmemory.providers.openai_chat.to_request`.
Reasoning is left out everywhere (the providers drop earlier turns' reasoning anyway), and so are the
system prompt and tool definitions, which are the same under every strategy.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from turnmemory.analysis._measure import Block, Meter
from turnmemory.memory import Message
from turnmemory.transcripts import ImportedSession, ImportedTurn, IterationEnd, Prose, ToolCall, ToolResult
from turnmemory.transcripts import replay_turn as _replay_turn

__all__ = [
    "Call",
    "Item",
    "Iteration",
    "Turn",
    "block",
    "conversation",
    "iteration_items",
    "tool_block",
    "user_block",
]

_MISSING_RESULT = "aborted"  # what Codex CLI sends for a call left without an output


@dataclass(frozen=True, slots=True)
class Call:
    """A tool call with its result, as the agent's model saw them."""

    id: str
    name: str
    arguments: str
    result: str
    is_error: bool


@dataclass(frozen=True, slots=True)
class Iteration:
    """One provider request's output: prose and the calls it made; ``sent`` is when the request went
    out (seconds since the epoch), ``None`` when the log does not say."""

    prose: str
    calls: tuple[Call, ...]
    sent: float | None = None


@dataclass(frozen=True, slots=True)
class Turn:
    """A user turn: the user text, the loop iterations, and the TurnMemory message it leaves behind."""

    user: str
    iterations: tuple[Iteration, ...]
    message: Message


@dataclass(frozen=True, slots=True)
class Item:
    """A block of a full-trace request; ``call`` is set on tool result blocks."""

    block: Block
    call: Call | None = None


def conversation(session: ImportedSession) -> list[Turn]:
    """The session's turns; each turn has at least one iteration (its first request)."""
    return [_turn(turn, session.workspace) for turn in session.turns]


def _turn(turn: ImportedTurn, workspace: str | None) -> Turn:
    results = {event.call_id: event for event in turn.events if isinstance(event, ToolResult)}
    iterations: list[Iteration] = []
    prose: list[str] = []
    calls: list[Call] = []
    sent = turn.started  # when the request of the iteration being read went out

    def close() -> None:
        nonlocal sent
        if prose or calls:
            iterations.append(Iteration("".join(prose), tuple(calls), sent))
            sent = None
        prose.clear()
        calls.clear()

    for event in turn.events:
        if isinstance(event, IterationEnd):
            close()
            sent = sent if event.ended is None else event.ended
        elif isinstance(event, Prose):
            if calls:
                close()
            prose.append(event.text)
        elif isinstance(event, ToolCall):
            result = results.get(event.call_id)
            calls.append(
                Call(
                    id=event.call_id,
                    name=event.source_name,
                    arguments=event.source_input,
                    result=result.text if result is not None else _MISSING_RESULT,
                    is_error=result.is_error if result is not None else True,
                )
            )
    close()
    message, _ = _replay_turn(turn, workspace)
    return Turn(turn.user, tuple(iterations) or (Iteration("", (), turn.started),), message)


def block(meter: Meter, message: dict[str, Any]) -> Block:
    """The block of one wire message (compact JSON, as sent)."""
    return meter.block(json.dumps(message, ensure_ascii=False, separators=(",", ":")))


def user_block(meter: Meter, text: str) -> Block:
    """A user message."""
    return block(meter, {"role": "user", "content": text})


def tool_block(meter: Meter, call: Call, content: str) -> Block:
    """A tool result message answering ``call`` with ``content``."""
    return block(meter, {"role": "tool", "tool_call_id": call.id, "content": content})


def iteration_items(meter: Meter, iteration: Iteration) -> list[Item]:
    """The assistant message of an iteration and its tool result messages, full fidelity."""
    if not iteration.prose and not iteration.calls:
        return []
    assistant: dict[str, Any] = {"role": "assistant"}
    if iteration.prose:
        assistant["content"] = iteration.prose
    if iteration.calls:
        assistant["tool_calls"] = [
            {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
            for call in iteration.calls
        ]
    items = [Item(block(meter, assistant))]
    items.extend(Item(tool_block(meter, call, call.result), call) for call in iteration.calls)
    return items
