"""Replaying any event stream yields a valid TurnMemory whose steps rejoin to the prose."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

import turnmemory as tm
from turnmemory.memory import valid_activities
from turnmemory.transcripts import (
    ImportedTurn,
    IterationEnd,
    Prose,
    Reasoning,
    ToolCall,
    ToolResult,
    replay_turn,
)

_NAMES = st.sampled_from(["bash", "edit_file", "read_file", "call_mcp_tool", "Skill", "web_fetch"])
_IDS = st.sampled_from(["a", "b", "c", "d"])
_EVENTS = st.one_of(
    st.builds(Prose, st.text(max_size=12)),
    st.builds(Reasoning, st.text(max_size=8)),
    st.builds(
        ToolCall,
        _IDS,
        _NAMES,
        st.fixed_dictionaries({"path": st.just("/w/x.py"), "command": st.text(max_size=10)}),
        st.just("Tool"),
        st.just("{}"),
    ),
    st.builds(
        ToolResult,
        _IDS,
        st.text(max_size=10),
        st.booleans(),
        st.one_of(st.none(), st.fixed_dictionaries({"exit_code": st.integers(-2, 3)})),
    ),
    st.just(IterationEnd()),
)


@given(st.lists(_EVENTS, max_size=25))
def test_any_event_stream_replays_into_a_placeable_memory(events: list[object]) -> None:
    turn = ImportedTurn("do it", tuple(events))  # type: ignore[arg-type]
    message, _ = replay_turn(turn, "/w")
    prose = "".join(e.text for e in events if isinstance(e, Prose))
    assert message.content == prose
    assert valid_activities(prose.encode(), message.activities) == message.activities
    assert "".join(step.text for step in tm.historical_steps(message)) == prose
    assert tm.Message.from_dict(message.to_dict()) == message
