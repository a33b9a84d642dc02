from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

import turnmemory as tm

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
_SPEC = importlib.util.spec_from_file_location("demo", REPO / "scripts" / "demo.py")
assert _SPEC is not None and _SPEC.loader is not None
demo = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(demo)


def test_the_example_turn_keeps_the_changed_file_and_the_failed_command() -> None:
    message = demo.example_turn()
    assert [a.to_dict() for a in message.activities] == [
        {
            "text_offset": 34,
            "tool": "edit_file",
            "status": "success",
            "target": "internal/cli/repl/stream_handler.go",
            "file_changed": "internal/cli/repl/stream_handler.go",
        },
        {
            "text_offset": 34,
            "tool": "bash",
            "status": "success",
            "target": "go test ./...",
            "failed_command": "go test ./...",
            "exit_code": 1,
        },
        {
            "text_offset": 84,
            "tool": "read_file",
            "status": "success",
            "target": "internal/cli/repl/stream_test.go",
        },
    ]
    assert "".join(step.text for step in tm.historical_steps(message)) == message.content


def test_the_demo_prints_the_story_and_the_comparison(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plot = tmp_path / "context.png"
    demo.main([EXAMPLES], plot)
    out = capsys.readouterr().out
    assert out.index("== One assistant turn, as TurnMemory keeps it ==") < out.index(
        "== What a later request"
    )
    assert "    edit_file({})  [historical_1_0]" in out
    flat = " ".join(out.split())
    assert '-> {"status": "success", "file_changed": "internal/cli/repl/stream_handler.go"}' in flat
    assert "All sessions" in out and "TurnMemory + targets" in out
    assert max(len(line) for line in out.splitlines() if str(plot) not in line) <= 80
    assert plot.read_bytes()[:4] == b"\x89PNG"


def test_sources_lists_only_existing_folders() -> None:
    assert all(path.is_dir() for path in demo.sources())
    assert EXAMPLES in demo.sources()
