from __future__ import annotations

import re
from pathlib import Path

from tests.transcripts._checks import assert_replays_cleanly
from tests.transcripts.conftest import EXAMPLES, manifest, shared_files

from turnmemory.transcripts import load_session, replay_turn
from turnmemory.transcripts._codex import load_codex

EXAMPLE = EXAMPLES / "codex-rollout.jsonl"
_CALL_ID = re.compile(r'"call_id":\s*"([^"]+)"')
_EXIT = re.compile(r'"exit_code":\s*(-?\d+)')
_CALL_TYPES = (
    '"type": "function_call"',
    '"type": "custom_tool_call"',
    '"type": "local_shell_call"',
    '"type": "web_search_call"',
)


def grep_counts(path: Path) -> tuple[int, int]:
    lines = path.read_text().splitlines()
    turns = sum('"type": "user_message"' in line for line in lines)
    calls = sum(any(kind in line for kind in _CALL_TYPES) for line in lines)
    return turns, calls


def test_example_counts_match_a_line_count() -> None:
    session = load_codex(EXAMPLE)
    assert (len(session.turns), session.tool_calls) == grep_counts(EXAMPLE) == (2, 8)
    assert session.workspace == "/home/dev/weather"
    assert session.turns[0].user == "The CLI prints temperatures in Kelvin. Make it print Celsius."


def test_exit_codes_come_from_exec_command_end_and_patches_from_their_headers() -> None:
    session = load_codex(EXAMPLE)
    first, second = (replay_turn(turn, session.workspace)[0] for turn in session.turns)
    assert [(a.tool, a.target, a.file_changed, a.exit_code) for a in first.activities] == [
        ("bash", "rg -n 'temp' weather/", None, None),
        ("edit_file", "weather/fmt.py", "weather/fmt.py", None),
        ("bash", "python -m pytest -q", None, 1),
        ("edit_file", "tests/test_fmt.py", "tests/test_fmt.py", None),
        ("bash", "python -m pytest -q", None, None),
    ]
    assert first.activities[2].failed_command == "python -m pytest -q"
    assert [a.tool for a in second.activities] == ["bash", "web_search", "edit_file"]


def test_injected_context_and_ui_events_are_skipped_and_counted() -> None:
    skipped = load_codex(EXAMPLE).skipped
    assert skipped["injected_context"] == 4
    assert skipped["event_msg:task_started"] == 2
    assert "event_msg:exec_command_end" not in skipped  # read for exit codes
    assert skipped["event_msg:agent_message"] == 1


def test_prose_and_offsets_survive_the_replay() -> None:
    assert_replays_cleanly(load_codex(EXAMPLE))


def test_malformed_lines_and_payloads_are_reported(tmp_path: Path) -> None:
    lines = EXAMPLE.read_text().splitlines()
    broken = tmp_path / "rollout.jsonl"
    broken.write_text(
        "\n".join([*lines[:3], '{"type": "response_item", "payload": 7}', "garbage", *lines[3:]]) + "\n"
    )
    session = load_codex(broken)
    assert sorted(session.problems) == [
        "rollout.jsonl:4: response_item record without a payload object; skipped",
        "rollout.jsonl:5: not valid JSON (Expecting value: line 1 column 1 (char 0)); line skipped",
    ]
    assert (len(session.turns), session.tool_calls) == (2, 8)


def test_real_rollouts_match_the_published_counts() -> None:
    counts = manifest()
    files = shared_files("codex", "*.jsonl")
    assert files
    for path in files:
        session = load_session(path)
        expected = counts[path.name]
        assert (len(session.turns), session.tool_calls) == (expected["user_turns"], expected["tool_calls"]), (
            path.name
        )
        assert session.problems == ()
        assert_replays_cleanly(session)


def test_real_rollouts_keep_nonzero_exit_codes() -> None:
    path = shared_files("codex", "Krosss0001__rave-era-project__codex-session.jsonl")[0]
    session = load_session(path)
    codes = [
        a.exit_code
        for t in session.turns
        for a in replay_turn(t, session.workspace)[0].activities
        if a.exit_code
    ]
    lines = path.read_text().splitlines()
    answered = {
        m.group(1) for line in lines if "function_call_output" in line and (m := _CALL_ID.search(line))
    }
    failed = [
        int(code.group(1))
        for line in lines
        if "exec_command_end" in line and (code := _EXIT.search(line)) and code.group(1) != "0"
        if (call := _CALL_ID.search(line)) and call.group(1) in answered
    ]
    assert codes and sorted(codes) == sorted(failed)
