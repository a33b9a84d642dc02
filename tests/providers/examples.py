"""Example histories shared by the provider tests."""

from __future__ import annotations

import turnmemory as tm

SPEC_PROSE = "Let me update the handler. The terminal event is now handled."
SPEC_ACTIVITIES = [
    {"text_offset": 0, "tool": "query-docs", "server": "context7", "status": "success"},
    {
        "text_offset": 26,
        "tool": "edit_file",
        "status": "success",
        "target": "internal/cli/repl/stream_handler.go",
        "file_changed": "internal/cli/repl/stream_handler.go",
    },
]
FILE = "internal/cli/repl/stream_handler.go"


def assistant(content: str, *activities: dict[str, object]) -> tm.Message:
    """An assistant message whose memory holds ``activities`` (persisted form)."""
    return tm.Message.from_dict(
        {"role": "assistant", "content": content, "turn_memory": {"tool_activity": list(activities)}}
    )


def spec_history() -> list[tm.Message]:
    """The spec's worked example: system, user, the assistant turn, and a new user message."""
    return [
        tm.Message("system", "S"),
        tm.Message("user", "U"),
        assistant(SPEC_PROSE, *SPEC_ACTIVITIES),
        tm.Message("user", "next"),
    ]


def end_batch_history() -> list[tm.Message]:
    """Calls at the end of the prose (one failed, one with a failed command), then a new user message."""
    return [
        tm.Message("user", "Run the tests"),
        assistant(
            "Running them.",
            {"text_offset": 13, "tool": "read_file", "status": "error", "target": "a.go"},
            {
                "text_offset": 13,
                "tool": "bash",
                "status": "success",
                "failed_command": "go test ./...",
                "exit_code": 1,
            },
        ),
        tm.Message("user", "And now?"),
    ]
