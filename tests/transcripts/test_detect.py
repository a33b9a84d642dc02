from __future__ import annotations

from pathlib import Path

import pytest
from tests.transcripts.conftest import EXAMPLES, SHARED

from turnmemory.transcripts import detect_format, discover, load_session

EXPECTED = {
    "claude-code-session.jsonl": "claude-code",
    "codex-rollout.jsonl": "codex",
    "opencode-export.json": "opencode",
    "swe-agent.traj": "swe-agent",
    "mini-swe-agent.traj.json": "mini-swe-agent",
    "openhands-events.json": "openhands",
    "aider-chat.md": "aider",
}


def test_examples_are_detected() -> None:
    assert {path.name: detect_format(path) for path in discover([EXAMPLES])} == EXPECTED


def test_discover_recurses_and_keeps_files_given(tmp_path: Path) -> None:
    nested = tmp_path / "a" / "b"
    nested.mkdir(parents=True)
    (nested / "s.jsonl").write_text("")
    (nested / "notes.txt").write_text("")
    single = tmp_path / "single.traj"
    single.write_text("{}")
    assert list(discover([tmp_path / "a", single])) == [nested / "s.jsonl", single]


def test_a_missing_path_raises() -> None:
    with pytest.raises(FileNotFoundError, match="no such file or directory"):
        list(discover(["/nonexistent/sessions"]))


def test_unknown_files_are_not_sessions(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text('[{"file": "x"}]')
    (tmp_path / "empty.jsonl").write_text("\n")
    assert [detect_format(p) for p in sorted(tmp_path.iterdir())] == [None, None]
    with pytest.raises(ValueError, match=r"^manifest\.json: not a recognized session format$"):
        load_session(tmp_path / "manifest.json")


def test_every_shared_session_file_is_detected() -> None:
    if not SHARED.is_dir():
        pytest.skip(f"shared transcripts not found at {SHARED}")
    formats = {
        path.parent.name: detect_format(path)
        for path in discover([SHARED])
        if path.name not in ("manifest.json", "README.md")
    }
    assert formats == {
        "claude-code": "claude-code",
        "codex": "codex",
        "opencode": "opencode",
        "swe-agent": "swe-agent",
        "mini-swe-agent": "mini-swe-agent",
        "openhands": "openhands",
        "aider": "aider",
    }
