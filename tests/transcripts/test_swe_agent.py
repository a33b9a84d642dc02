from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.transcripts._checks import assert_replays_cleanly
from tests.transcripts.conftest import EXAMPLES, manifest, shared_files

from turnmemory.transcripts import load_session, replay_turn
from turnmemory.transcripts._mini_swe_agent import load_mini_swe_agent
from turnmemory.transcripts._swe_agent import load_swe_agent, swe_agent_tool


def test_swe_agent_example_is_one_turn_of_steps() -> None:
    path = EXAMPLES / "swe-agent.traj"
    session = load_swe_agent(path)
    steps = len(json.loads(path.read_text())["trajectory"])
    assert (len(session.turns), session.tool_calls) == (1, steps) == (1, 5)
    assert session.turns[0].user.startswith("ISSUE:")
    message, _ = replay_turn(session.turns[0], session.workspace)
    assert [(a.tool, a.target) for a in message.activities] == [
        ("glob", "src :: parse.py"),
        ("read_file", "src/dates/parse.py"),
        ("edit_file", "src/dates/parse.py"),
        ("bash", "python -m pytest -q tests/test_parse.py"),
        ("submit", None),
    ]
    assert_replays_cleanly(session)


@pytest.mark.parametrize(
    ("action", "open_file", "expected"),
    [
        ("open src/a.py", None, ("read_file", {"path": "src/a.py"})),
        ("scroll_down", "/repo/a.py", ("read_file", {"path": "/repo/a.py"})),
        ("create b.py", "n/a", ("write_file", {"path": "b.py"})),
        ("edit 3:4\nx\nend_of_edit", "n/a", ("edit_file", {})),
        ('search_dir "def f" src', None, ("grep", {"pattern": "def f", "path": "src"})),
        ("ls -la", None, ("bash", {"command": "ls -la"})),
    ],
)
def test_swe_agent_actions_map_by_their_first_word(
    action: str, open_file: str | None, expected: object
) -> None:
    assert swe_agent_tool(action, open_file) == expected


def test_mini_swe_agent_example_commands_and_return_codes() -> None:
    path = EXAMPLES / "mini-swe-agent.traj.json"
    session = load_mini_swe_agent(path)
    blocks = sum(message["role"] == "assistant" for message in json.loads(path.read_text()))
    assert (len(session.turns), session.tool_calls) == (1, blocks) == (1, 4)
    message, _ = replay_turn(session.turns[0], session.workspace)
    assert [a.exit_code for a in message.activities] == [None, None, 1, None]
    assert "```" not in message.content
    assert_replays_cleanly(session)


def test_a_non_object_trajectory_step_is_reported(tmp_path: Path) -> None:
    data = json.loads((EXAMPLES / "swe-agent.traj").read_text())
    data["trajectory"].insert(0, "oops")
    path = tmp_path / "x.traj"
    path.write_text(json.dumps(data))
    session = load_swe_agent(path)
    assert session.problems == ("x.traj (step 0): expected an object with an action; skipped",)
    assert session.tool_calls == 5


def test_real_trajectories_match_the_published_counts() -> None:
    counts = manifest()
    files = shared_files("swe-agent", "*.traj") + shared_files("mini-swe-agent", "*.traj.json")
    assert files
    for path in files:
        session = load_session(path)
        expected = counts[path.name]
        assert (len(session.turns), session.tool_calls) == (expected["user_turns"], expected["tool_calls"]), (
            path.name
        )
        assert_replays_cleanly(session)
