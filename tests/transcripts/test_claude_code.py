from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from tests.transcripts._checks import assert_replays_cleanly
from tests.transcripts.conftest import EXAMPLES, manifest, shared_files

from turnmemory.transcripts import load_session, replay_turn
from turnmemory.transcripts._claude_code import load_claude_code

EXAMPLE = EXAMPLES / "claude-code-session.jsonl"


def grep_counts(path: Path) -> tuple[int, int]:
    """User turns and tool calls counted line by line with plain text matching."""
    turns = calls = 0
    seen: set[str] = set()
    for line in path.read_text().splitlines():
        if line in seen or '"isSidechain": true' in line:
            continue
        seen.add(line)
        calls += line.count('"type": "tool_use"')
        if re.search(r'"message": \{"role": "user", "content": "(?!<command-|<local-command)', line):
            turns += 1
    return turns, calls


def test_example_counts_match_a_line_count() -> None:
    session = load_claude_code(EXAMPLE)
    assert (len(session.turns), session.tool_calls) == grep_counts(EXAMPLE) == (3, 10)
    assert session.workspace == "/home/dev/todo-app"


def test_example_maps_tools_onto_the_agents_tools() -> None:
    session = load_claude_code(EXAMPLE)
    first, second, third = (replay_turn(turn, session.workspace)[0] for turn in session.turns)
    assert [a.to_dict() for a in first.activities] == [
        {
            "text_offset": 27,
            "tool": "bash",
            "status": "success",
            "target": "npm test",
            "failed_command": "npm test",
            "exit_code": 1,
        },
        {"text_offset": 85, "tool": "read_file", "status": "success", "target": "src/store.js"},
        {
            "text_offset": 154,
            "tool": "edit_file",
            "status": "success",
            "target": "src/store.js",
            "file_changed": "src/store.js",
        },
        {"text_offset": 154, "tool": "bash", "status": "success", "target": "npm test"},
    ]
    assert [(a.tool, a.file_changed) for a in second.activities][1:3] == [
        ("edit_file", "src/store.js"),
        ("write_file", "test/clear.test.js"),
    ]
    mcp = third.activities[-1]
    assert (mcp.tool, mcp.server, mcp.target) == ("create_pull_request", "github", None)


def test_example_skips_and_counts_what_is_not_conversation() -> None:
    skipped = load_claude_code(EXAMPLE).skipped
    assert skipped["sidechain"] == 1
    assert skipped["duplicate_uuid"] == 1
    assert skipped["command_wrapper"] == 2
    assert skipped["attachment"] == 1
    assert skipped["block:thinking"] == 0  # thinking is imported as reasoning


def test_prose_and_offsets_survive_the_replay() -> None:
    assert_replays_cleanly(load_claude_code(EXAMPLE))


def test_malformed_lines_are_reported_and_skipped(tmp_path: Path) -> None:
    lines = EXAMPLE.read_text().splitlines()
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join([lines[0], "{not json", "[1, 2]", *lines[1:]]) + "\n")
    session = load_claude_code(broken)
    assert session.problems == (
        "broken.jsonl:2: not valid JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1)); line skipped",
        "broken.jsonl:3: expected a JSON object, got list; line skipped",
    )
    assert (len(session.turns), session.tool_calls) == (3, 10)
    assert session.skipped["malformed"] == 2


def test_a_slash_command_the_model_answers_starts_a_turn(tmp_path: Path) -> None:
    wrapper = {
        "type": "user",
        "uuid": "u1",
        "message": {"role": "user", "content": "<command-name>/review</command-name>"},
    }
    reply = {
        "type": "assistant",
        "uuid": "a1",
        "message": {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": "Reviewing."}]},
    }
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in (wrapper, reply)) + "\n")
    session = load_claude_code(path)
    assert [turn.user for turn in session.turns] == ["<command-name>/review</command-name>"]
    assert session.skipped["command_wrapper"] == 0
    assert session.turns[0].prose == "Reviewing."


def test_real_sessions_match_the_published_counts() -> None:
    counts = manifest()
    files = shared_files("claude-code", "*.jsonl")
    assert files
    for path in files:
        session = load_session(path)
        typed = sum(1 for turn in session.turns if not turn.user.lstrip().startswith("<command-"))
        expected = counts[path.name]
        assert (typed, session.tool_calls) == (expected["user_turns"], expected["tool_calls"]), path.name
        assert session.problems == ()
        assert_replays_cleanly(session)


@pytest.mark.parametrize("name", ["ikihin__bhavana__claude-session.jsonl"])
def test_real_session_keeps_web_targets_without_query(name: str) -> None:
    path = shared_files("claude-code", name)[0]
    session = load_session(path)
    activities = [a for turn in session.turns for a in replay_turn(turn, session.workspace)[0].activities]
    assert any(a.tool == "web_fetch" and a.target and a.target.startswith("https://") for a in activities)
    assert all("?" not in (a.target or "") for a in activities if a.tool == "web_fetch")
