"""The imported form of another agent's session: user turns, each a stream of small events.

Events keep two views of every tool call: the agent's own tool name and input text (what the model
really sent, needed to measure full-trace history) and the same call mapped onto this project's tools
(``read_file``, ``edit_file``, ``bash``, ...) so that the retention rules apply when the turn is
replayed into a :class:`~turnmemory.TurnRecorder`. Raw data lives only in memory.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from turnmemory.memory import Message
from turnmemory.segments import TurnRecorder

__all__ = [
    "ImportedEvent",
    "ImportedSession",
    "ImportedTurn",
    "IterationEnd",
    "Prose",
    "Reasoning",
    "ToolCall",
    "ToolResult",
    "replay_events",
    "replay_turn",
]


@dataclass(frozen=True, slots=True)
class Prose:
    """A chunk of assistant prose."""

    text: str


@dataclass(frozen=True, slots=True)
class Reasoning:
    """Reasoning or thinking text; never part of the prose."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call, mapped onto this project's tools, with the agent's own name and input kept.

    ``name``/``arguments`` are what the recorder sees (for example ``edit_file`` with ``path``);
    ``source_name``/``source_input`` are the call as the agent's model emitted it (the input as JSON
    text, or the raw freeform input such as a patch).
    """

    call_id: str
    name: str
    arguments: Mapping[str, Any]
    source_name: str
    source_input: str


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The result of the call ``call_id``: the text the model saw, and the mapped outcome.

    ``outcome`` follows this project's conventions (``{"file_changed": path}`` for a write that
    changed a file, ``{"exit_code": n}`` for a command); ``is_error`` marks a failed invocation.
    """

    call_id: str
    text: str
    is_error: bool = False
    outcome: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class IterationEnd:
    """One provider request of the tool loop finished (the next output comes from a new request).

    ``ended`` is when its last result came in, which is when the next request was sent (seconds
    since the epoch, from the log's own timestamps), or ``None`` when the log does not say.
    """

    ended: float | None = None


ImportedEvent = Prose | Reasoning | ToolCall | ToolResult | IterationEnd
"""Any event of an imported turn."""


@dataclass(frozen=True, slots=True)
class ImportedTurn:
    """One user message and everything the assistant did in answer to it, in order.

    ``started`` is when the user message was sent, which is when the turn's first request went out
    (seconds since the epoch, from the log's own timestamps), or ``None`` when the log does not say.
    """

    user: str
    events: tuple[ImportedEvent, ...] = ()
    started: float | None = None

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The turn's tool calls, in order."""
        return tuple(event for event in self.events if isinstance(event, ToolCall))

    @property
    def prose(self) -> str:
        """The flattened assistant prose of the turn."""
        return "".join(event.text for event in self.events if isinstance(event, Prose))


@dataclass(frozen=True, slots=True)
class ImportedSession:
    """A whole imported session.

    ``skipped`` counts the records that were not imported, by kind (unknown record types,
    sidechains, harness-injected messages, ...); ``problems`` holds one readable line per malformed
    line or record that was skipped (the first few of them: ``skipped["malformed"]`` counts them all);
    ``lines`` is the number of non-blank lines read from a line-based log (0 for a JSON document).
    """

    path: str
    format: str
    workspace: str | None
    turns: tuple[ImportedTurn, ...]
    skipped: Counter[str] = field(default_factory=Counter)
    problems: tuple[str, ...] = ()
    lines: int = 0

    @property
    def tool_calls(self) -> int:
        """The number of tool calls over all turns."""
        return sum(len(turn.tool_calls) for turn in self.turns)

    @property
    def unreadable(self) -> int:
        """The number of malformed lines or records that were skipped."""
        return self.skipped.get("malformed", 0)


def replay_turn(turn: ImportedTurn, workspace: str | None = None) -> tuple[Message, TurnRecorder]:
    """Feed ``turn`` through a fresh :class:`TurnRecorder` and return its finished message.

    Reasoning goes to ``reasoning()``, iteration ends to ``seal()``. A result without a running
    call, or a second start of a running call id, is ignored; calls that never got a result are
    not recorded (as for any unfinished call).
    """
    recorder = TurnRecorder(workspace=workspace)
    replay_events(turn.events, recorder)
    return recorder.finish(), recorder


def replay_events(events: Iterable[ImportedEvent], recorder: TurnRecorder) -> None:
    """Feed ``events`` into ``recorder`` in order (see :func:`replay_turn`)."""
    running: set[str] = set()
    for event in events:
        if isinstance(event, Prose):
            recorder.text(event.text)
        elif isinstance(event, Reasoning):
            recorder.reasoning(event.text)
        elif isinstance(event, ToolCall):
            if event.call_id not in running:
                running.add(event.call_id)
                recorder.tool_start(event.call_id, event.name, event.arguments)
        elif isinstance(event, ToolResult):
            if event.call_id in running:
                running.discard(event.call_id)
                recorder.tool_end(
                    event.call_id,
                    output=event.outcome,
                    error=(event.text or "error") if event.is_error else None,
                )
        else:
            recorder.seal()
