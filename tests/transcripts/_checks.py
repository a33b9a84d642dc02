"""Checks every importer's output must pass, whatever the format."""

from __future__ import annotations

import turnmemory as tm
from turnmemory.memory import valid_activities
from turnmemory.transcripts import ImportedSession, ToolCall, ToolResult, replay_turn


def assert_replays_cleanly(session: ImportedSession) -> None:
    """Each turn replays into a message whose prose survives and whose activities all place."""
    for turn in session.turns:
        message, _ = replay_turn(turn, session.workspace)
        assert message.content == turn.prose
        steps = tm.historical_steps(message)
        assert "".join(step.text for step in steps) == message.content
        prose = message.content.encode("utf-8")
        assert valid_activities(prose, message.activities) == message.activities
        ended = {e.call_id for e in turn.events if isinstance(e, ToolResult)}
        assert len(message.activities) == sum(
            1 for e in turn.events if isinstance(e, ToolCall) and e.call_id in ended
        )
