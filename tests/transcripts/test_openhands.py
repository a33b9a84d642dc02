from __future__ import annotations

import json
from pathlib import Path

from tests.transcripts._checks import assert_replays_cleanly
from tests.transcripts.conftest import EXAMPLES, manifest, shared_files

from turnmemory.transcripts import load_session, replay_turn
from turnmemory.transcripts._openhands import load_openhands

EXAMPLE = EXAMPLES / "openhands-events.json"


def simple_counts(path: Path) -> tuple[int, int]:
    events = json.loads(path.read_text())
    turns = sum(1 for e in events if e.get("source") == "user" and e.get("action") == "message")
    calls = sum(1 for e in events if e.get("source") == "agent" and e.get("action") not in (None, "message"))
    return turns, calls


def test_example_counts_match_a_simple_count() -> None:
    session = load_openhands(EXAMPLE)
    assert (len(session.turns), session.tool_calls) == simple_counts(EXAMPLE) == (2, 4)
    assert session.skipped["observation:agent_state_changed"] == 1


def test_actions_map_and_observations_carry_outcomes() -> None:
    session = load_openhands(EXAMPLE)
    first, second = (replay_turn(turn, session.workspace)[0] for turn in session.turns)
    assert [(a.tool, a.target, a.file_changed, a.exit_code) for a in first.activities] == [
        ("read_file", "cli.py", None, None),
        ("edit_file", "cli.py", "cli.py", None),
        ("bash", "python cli.py --verbose", None, 2),
    ]
    assert first.content.startswith("Let me look at the CLI first.")
    assert [a.tool for a in second.activities] == ["finish"]
    assert_replays_cleanly(session)


def test_a_non_object_event_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "events.json"
    path.write_text(json.dumps([7, *json.loads(EXAMPLE.read_text())]))
    session = load_openhands(path)
    assert session.problems == ("events.json (event 0): expected an object; skipped",)
    assert session.tool_calls == 4


def test_real_event_streams_match_the_published_counts() -> None:
    counts = manifest()
    for path in shared_files("openhands", "*.json"):
        session = load_session(path)
        expected = counts[path.name]
        assert (len(session.turns), session.tool_calls) == (expected["user_turns"], expected["tool_calls"]), (
            path.name
        )
        assert_replays_cleanly(session)
