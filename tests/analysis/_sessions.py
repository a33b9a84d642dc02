"""Small hand-made sessions for the strategy and cost tests."""

from __future__ import annotations

from turnmemory.transcripts import ImportedSession, ImportedTurn, IterationEnd, Prose, ToolCall, ToolResult


def call(
    call_id: str, result: str, *, name: str = "Bash", error: bool = False
) -> tuple[ToolCall, ToolResult]:
    """A call (mapped to ``bash``) and its result."""
    return (
        ToolCall(call_id, "bash", {"command": "ls"}, name, '{"command":"ls"}'),
        ToolResult(call_id, result, is_error=error),
    )


def turn(user: str, *iterations: tuple[str, list[tuple[ToolCall, ToolResult]]]) -> ImportedTurn:
    """A turn from ``(prose, calls)`` iterations, each ending a request."""
    events: list[object] = []
    for prose, calls in iterations:
        if prose:
            events.append(Prose(prose))
        for started, ended in calls:
            events.extend((started, ended))
        events.append(IterationEnd())
    return ImportedTurn(user, tuple(events))  # type: ignore[arg-type]


def session(*turns: ImportedTurn) -> ImportedSession:
    return ImportedSession(path="mem.jsonl", format="test", workspace="/w", turns=tuple(turns))
