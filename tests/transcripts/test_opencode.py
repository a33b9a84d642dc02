from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.transcripts._checks import assert_replays_cleanly
from tests.transcripts.conftest import EXAMPLES, manifest, shared_files

from turnmemory.transcripts import load_session, replay_turn
from turnmemory.transcripts._opencode import load_opencode

EXAMPLE = EXAMPLES / "opencode-export.json"


def simple_counts(path: Path) -> tuple[int, int]:
    data = json.loads(path.read_text())
    turns = sum(
        1
        for m in data["messages"]
        if m["info"]["role"] == "user"
        and any(p["type"] == "text" and not p.get("synthetic") for p in m["parts"])
    )
    calls = path.read_text().count('"type": "tool"')
    return turns, calls


def test_example_counts_match_a_simple_count() -> None:
    session = load_opencode(EXAMPLE)
    assert (len(session.turns), session.tool_calls) == simple_counts(EXAMPLE) == (2, 5)


def test_tools_statuses_and_exit_codes() -> None:
    session = load_opencode(EXAMPLE)
    first, second = (replay_turn(turn, session.workspace)[0] for turn in session.turns)
    assert [(a.tool, a.target, a.file_changed) for a in first.activities] == [
        ("glob", "notes/*.md", None),
        ("read_file", "README.md", None),
        ("write_file", "INDEX.md", "INDEX.md"),
    ]
    assert [(a.tool, a.status, a.exit_code) for a in second.activities] == [
        ("bash", "success", 1),
        ("edit_file", "error", None),
    ]
    assert "plan mode" not in session.turns[1].user


def test_prose_and_offsets_survive_the_replay() -> None:
    assert_replays_cleanly(load_opencode(EXAMPLE))


def test_a_broken_document_is_one_readable_error(tmp_path: Path) -> None:
    path = tmp_path / "export.json"
    path.write_text('{"info": {}, "messages": [')
    with pytest.raises(ValueError, match=r"^export\.json: not valid JSON \("):
        load_opencode(path)


def test_malformed_messages_are_reported_and_skipped(tmp_path: Path) -> None:
    data = json.loads(EXAMPLE.read_text())
    data["messages"].insert(1, {"parts": []})
    path = tmp_path / "export.json"
    path.write_text(json.dumps(data))
    session = load_opencode(path)
    assert session.problems == ("export.json (message 1): expected an object with info and parts; skipped",)
    assert session.tool_calls == 5


def test_real_exports_match_the_published_counts() -> None:
    counts = manifest()
    for path in shared_files("opencode", "*.json"):
        session = load_session(path)
        expected = counts[path.name]
        assert (len(session.turns), session.tool_calls) == (expected["user_turns"], expected["tool_calls"]), (
            path.name
        )
        assert_replays_cleanly(session)
