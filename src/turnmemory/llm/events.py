"""The events of one assistant turn, and how they drive a :class:`~turnmemory.TurnRecorder`.

``run_turn`` yields :class:`Event` values in order. Exactly one terminal event (``done``,
``incomplete`` or ``error``) ends every turn. Each completed provider request ends with one ``usage``
event, before the tools of that response run: it is the iteration boundary, and :func:`record`
seals the recorder there, so a later retry can only rewind prose of the attempt that failed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from turnmemory.segments import TurnRecorder

__all__ = ["TERMINAL_KINDS", "Event", "EventKind", "Reason", "Usage", "record"]

EventKind = Literal[
    "text", "reasoning", "tool_start", "tool_end", "retry", "usage", "reduced", "done", "incomplete", "error"
]
"""What an :class:`Event` reports."""

TERMINAL_KINDS: frozenset[EventKind] = frozenset({"done", "incomplete", "error"})

Reason = Literal[
    "stop",
    "max_tokens",
    "api_error",
    "context_overflow",
    "empty_response",
    "tool_limit",
    "deadline",
]
"""Why a turn ended (on terminal events).

``stop`` and ``max_tokens`` end ``done`` turns (the model finished, or hit the output limit);
``api_error`` (a request failed for good), ``context_overflow`` (the request no longer fits the
model's context window), ``empty_response``, ``tool_limit`` and ``deadline`` (the turn took longer
than the client's ``deadline``) end ``incomplete`` turns (when work accumulated) or ``error`` turns
(when nothing did; ``tool_limit`` never does).
"""


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens of one provider request, as the provider reported them.

    ``input_tokens`` is all input: the part read from the prompt cache (``cached_tokens``), the part
    written to it (``cache_write_tokens``) and the rest (``uncached_tokens``); ``output_tokens`` the
    output. Providers that report no writes (Gemini, OpenAI before GPT-5.6) count them as uncached.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def uncached_tokens(self) -> int:
        """Input neither read from the cache nor written to it."""
        return max(self.input_tokens - self.cached_tokens - self.cache_write_tokens, 0)

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cached_tokens + other.cached_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )


@dataclass(frozen=True, slots=True)
class Event:
    """One thing that happened in a turn; ``kind`` says which fields are set.

    - ``text`` / ``reasoning``: ``text`` is the streamed chunk.
    - ``tool_start``: ``call_id``, ``name``, ``arguments`` (``{}`` when the model sent no object).
    - ``tool_end``: ``call_id``, ``name``, and ``output``, or ``error`` when the call failed or was
      refused (unknown tool, invalid arguments).
    - ``retry``: ``error`` is why the attempt failed, ``attempt`` the number of the attempt about to
      start (2 for the first retry) and ``delay`` the seconds waited before it.
    - ``usage``: ``usage``; it closes one completed provider request.
    - ``reduced``: the in-turn reducer cleared old tool results (or large arguments) before the next
      request so that it fits the context window; ``text`` says what, ``tokens`` how many it freed.
    - ``done`` / ``incomplete`` / ``error``: ``reason``; ``error`` holds the provider's message when a
      request failed (one line).
    """

    kind: EventKind
    text: str = ""
    call_id: str = ""
    name: str = ""
    arguments: Mapping[str, Any] | None = None
    output: Any = None
    error: str | None = None
    usage: Usage | None = None
    reason: Reason | None = None
    attempt: int = 0
    delay: float = 0.0
    tokens: int = 0

    @property
    def terminal(self) -> bool:
        """Whether this event ends the turn."""
        return self.kind in TERMINAL_KINDS


def record(event: Event, recorder: TurnRecorder) -> None:
    """Feed one event to ``recorder``: prose, reasoning, tools, rewinds on retry, seals on usage.

    After the terminal event, ``recorder.finish()`` gives the turn's ``Message`` with its memory.
    """
    if event.kind == "text":
        recorder.text(event.text)
    elif event.kind == "reasoning":
        recorder.reasoning(event.text)
    elif event.kind == "tool_start":
        recorder.tool_start(event.call_id, event.name, event.arguments)
    elif event.kind == "tool_end":
        recorder.tool_end(event.call_id, output=event.output, error=event.error)
    elif event.kind == "retry":
        recorder.rewind()
    elif event.kind == "usage":
        recorder.seal()
