"""The ordered segment stream of one active assistant turn, and its compression into a ``Message``.

A :class:`TurnRecorder` receives what happens during a turn, in order: assistant prose chunks,
reasoning chunks, tool starts and ends (paired by call id), permission decisions and diffs. It keeps
the full segments for rendering while the turn runs; :meth:`TurnRecorder.finish` compresses them into
the turn's ``Message``: the flattened prose plus a ``TurnMemory`` that records, for each completed
tool, the number of prose bytes emitted before it started.

``seal()`` marks the end of a provider loop iteration; ``rewind()`` (a retry) drops the trailing
unsealed assistant and reasoning segments, so abandoned prose of a failed attempt is not retained.
Text never merges across a seal, so a rewind cannot reach into an earlier iteration.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from turnmemory._text import is_unicode
from turnmemory.memory import Message, ToolActivity, TurnMemory
from turnmemory.retention import DEFAULT_RULES, ToolRule, retain

__all__ = [
    "AssistantSegment",
    "DiffSegment",
    "PermissionSegment",
    "ReasoningSegment",
    "Segment",
    "ToolSegment",
    "TurnRecorder",
]


@dataclass(frozen=True, slots=True)
class _Stretch:
    """Text streamed in one stretch of one loop iteration; ``sealed`` once that iteration completed."""

    text: str
    sealed: bool


@dataclass(frozen=True, slots=True)
class AssistantSegment(_Stretch):
    """Assistant prose streamed in one stretch of one loop iteration."""

    kind: Literal["assistant"] = "assistant"


@dataclass(frozen=True, slots=True)
class ReasoningSegment(_Stretch):
    """Reasoning or thinking text; shown while the turn runs, never retained."""

    kind: Literal["reasoning"] = "reasoning"


@dataclass(frozen=True, slots=True)
class ToolSegment:
    """One tool invocation, from its start; ``ended`` once its result arrived.

    ``bash`` is an ordinary tool segment: the result is paired by call id, so a permission prompt or
    a diff between start and end cannot detach it.
    """

    call_id: str
    name: str
    arguments: Mapping[str, Any]
    ended: bool = False
    output: Any = None
    error: str | None = None
    kind: Literal["tool"] = "tool"


@dataclass(frozen=True, slots=True)
class PermissionSegment:
    """A permission request for a tool call and its decision (``allow_once``, ``deny``, ...)."""

    call_id: str
    summary: str
    decision: str
    kind: Literal["permission"] = "permission"


@dataclass(frozen=True, slots=True)
class DiffSegment:
    """The diff a write or edit would make, shown before its permission prompt."""

    call_id: str
    diff: str
    kind: Literal["diff"] = "diff"


Segment = AssistantSegment | ReasoningSegment | ToolSegment | PermissionSegment | DiffSegment
"""Any segment of a turn; ``segment.kind`` tells which."""


class _Text:
    """A mutable prose or reasoning run; chunks are joined lazily to keep appends O(1)."""

    __slots__ = ("chunks", "kind", "sealed")

    def __init__(self, kind: Literal["assistant", "reasoning"], chunk: str) -> None:
        self.kind = kind
        self.chunks = [chunk]
        self.sealed = False

    def text(self) -> str:
        if len(self.chunks) > 1:
            self.chunks = ["".join(self.chunks)]
        return self.chunks[0]


_Entry = _Text | ToolSegment | PermissionSegment | DiffSegment


class TurnRecorder:
    """Records one assistant turn and compresses it into a ``Message`` with its ``TurnMemory``.

    ``workspace`` (an absolute path) makes retained paths relative; ``rules`` maps tool names to
    :class:`~turnmemory.retention.ToolRule` (default: the agent's tools).
    """

    def __init__(
        self, workspace: str | None = None, *, rules: Mapping[str, ToolRule] = DEFAULT_RULES
    ) -> None:
        self.workspace = workspace
        self.rules = rules
        self._entries: list[_Entry] = []
        self._open: dict[str, int] = {}

    # -- recording -------------------------------------------------------------------------------

    def text(self, chunk: str) -> None:
        """Append an assistant prose chunk (empty chunks are ignored)."""
        self._append_text("assistant", chunk)

    def reasoning(self, chunk: str) -> None:
        """Append a reasoning chunk; it never enters the prose or the memory."""
        self._append_text("reasoning", chunk)

    def tool_start(self, call_id: str, name: str, arguments: Mapping[str, Any] | None = None) -> None:
        """A tool call began; its place in the prose is fixed now."""
        if call_id in self._open:
            raise ValueError(f"tool_start: call id {call_id!r} is already running")
        self._open[call_id] = len(self._entries)
        self._entries.append(ToolSegment(call_id=call_id, name=name, arguments=arguments or {}))

    def tool_end(self, call_id: str, *, output: Any = None, error: str | None = None) -> None:
        """The call ``call_id`` finished with ``output``, or failed with ``error``."""
        index = self._open.pop(call_id, None)
        if index is None:
            raise ValueError(f"tool_end: no running tool call with id {call_id!r}")
        started = self._entries[index]
        assert isinstance(started, ToolSegment)
        self._entries[index] = ToolSegment(
            call_id=call_id,
            name=started.name,
            arguments=started.arguments,
            ended=True,
            output=output,
            error=error,
        )

    def permission(self, call_id: str, summary: str, decision: str) -> None:
        """A permission request for ``call_id`` was decided (``allow_once``, ``allow_session``, ``deny``...)."""
        self._entries.append(PermissionSegment(call_id=call_id, summary=summary, decision=decision))

    def diff(self, call_id: str, diff: str) -> None:
        """The diff a pending write or edit of ``call_id`` would make."""
        self._entries.append(DiffSegment(call_id=call_id, diff=diff))

    def seal(self) -> None:
        """A provider loop iteration completed: what was streamed so far survives retries."""
        for entry in reversed(self._entries):
            if isinstance(entry, _Text):
                if entry.sealed:
                    break
                entry.sealed = True

    def rewind(self) -> None:
        """A retry: drop the trailing unsealed assistant and reasoning segments."""
        while self._entries:
            last = self._entries[-1]
            if not isinstance(last, _Text) or last.sealed:
                break
            self._entries.pop()

    # -- reading ---------------------------------------------------------------------------------

    @property
    def segments(self) -> tuple[Segment, ...]:
        """The ordered segments so far, for rendering."""
        return tuple(self._public(entry) for entry in self._entries)

    @property
    def prose(self) -> str:
        """The flattened assistant prose so far."""
        return "".join(
            entry.text() for entry in self._entries if isinstance(entry, _Text) and entry.kind == "assistant"
        )

    def finish(self) -> Message:
        """The turn as a ``Message``: the prose, and a memory of every tool call that ended.

        Calls that never ended are not recorded; several calls at one offset keep their order.
        The recorder stays usable (``finish`` only reads).
        """
        offset = 0
        prose: list[str] = []
        activities: list[ToolActivity] = []
        for entry in self._entries:
            if isinstance(entry, _Text):
                if entry.kind == "assistant":
                    text = entry.text()
                    prose.append(text)
                    offset += len(text.encode("utf-8"))
            elif isinstance(entry, ToolSegment) and entry.ended:
                activities.append(
                    retain(
                        offset,
                        entry.name,
                        entry.arguments,
                        output=entry.output,
                        error=entry.error,
                        workspace=self.workspace,
                        rules=self.rules,
                    )
                )
        memory = TurnMemory(tuple(activities)) if activities else None
        return Message(role="assistant", content="".join(prose), turn_memory=memory)

    # -- internals -------------------------------------------------------------------------------

    def _append_text(self, kind: Literal["assistant", "reasoning"], chunk: str) -> None:
        if not chunk:
            return
        if not is_unicode(chunk):
            chunk = chunk.encode("utf-8", "replace").decode("utf-8")
        last = self._entries[-1] if self._entries else None
        if isinstance(last, _Text) and last.kind == kind and not last.sealed:
            last.chunks.append(chunk)
        else:
            self._entries.append(_Text(kind, chunk))

    @staticmethod
    def _public(entry: _Entry) -> Segment:
        if isinstance(entry, _Text):
            if entry.kind == "assistant":
                return AssistantSegment(text=entry.text(), sealed=entry.sealed)
            return ReasoningSegment(text=entry.text(), sealed=entry.sealed)
        return entry
