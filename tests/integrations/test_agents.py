"""GATEWAY_RULES: the tools of Claude Code, Codex CLI and OpenCode keep what the project's own do."""

from __future__ import annotations

import json
from typing import Any

import pytest

from turnmemory.integrations import AGENT_RULES, GATEWAY_RULES, compact

CALLS: list[tuple[str, dict[str, Any], str, dict[str, Any]]] = [
    # Claude Code
    (
        "Bash",
        {"command": "pytest -q"},
        "Exit code 1\nFAILED",
        {"failed_command": "pytest -q", "exit_code": 1},
    ),
    ("Bash", {"command": "ls"}, "a.py", {}),
    (
        "Edit",
        {"file_path": "/ws/a.py", "old_string": "x", "new_string": "y"},
        "updated",
        {"file_changed": "/ws/a.py"},
    ),
    ("MultiEdit", {"file_path": "/ws/b.py", "edits": []}, "ok", {"file_changed": "/ws/b.py"}),
    ("NotebookEdit", {"notebook_path": "/ws/n.ipynb"}, "ok", {"file_changed": "/ws/n.ipynb"}),
    ("Write", {"file_path": "/ws/c.py", "content": "SECRET BODY"}, "ok", {"file_changed": "/ws/c.py"}),
    ("Edit", {"file_path": "/ws/a.py"}, "Error: old_string not found", {"status": "error"}),
    ("Read", {"file_path": "/ws/a.py"}, "RAW FILE", {}),
    # Codex CLI
    (
        "exec_command",
        {"cmd": ["bash", "-lc", "make test"]},
        "Process exited with code 2\n",
        {"failed_command": "make test", "exit_code": 2},
    ),
    ("exec_command", {"cmd": "cargo build"}, "Process exited with code 0\n", {}),
    (
        "shell",
        {"command": ["bash", "-lc", "go test ./..."]},
        '{"output":"FAIL","metadata":{"exit_code":1}}',
        {"failed_command": "go test ./...", "exit_code": 1},
    ),
    (
        "shell_command",
        {"command": "npm test"},
        "Exit code: 3",
        {"failed_command": "npm test", "exit_code": 3},
    ),
    (
        "apply_patch",
        {"input": "*** Begin Patch\n*** Update File: src/x.rs\n@@\n-a\n+b\n*** End Patch"},
        "Done",
        {"file_changed": "src/x.rs"},
    ),
    # OpenCode
    (
        "edit",
        {"filePath": "/ws/d.ts", "oldString": "a", "newString": "b"},
        "ok",
        {"file_changed": "/ws/d.ts"},
    ),
    ("write", {"filePath": "/ws/e.ts", "content": "x"}, "ok", {"file_changed": "/ws/e.ts"}),
    (
        "apply_patch",
        {"patchText": "*** Begin Patch\n*** Add File: new.md\n+hi\n*** End Patch"},
        "ok",
        {"file_changed": "new.md"},
    ),
    ("bash", {"command": "bun test"}, "Exit code 1", {"failed_command": "bun test", "exit_code": 1}),
    # a tool nobody maps keeps its name and status only
    ("frobnicate", {"path": "/ws/a.py"}, "Exit code 1", {}),
]


def _replayed_result(name: str, arguments: dict[str, Any], result: str) -> dict[str, Any]:
    call = {"id": "c1", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
    history = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": result},
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": "next"},
    ]
    out = compact(history, "openai_chat", rules=GATEWAY_RULES)
    [tool] = [m for m in out if m["role"] == "tool"]
    assert "RAW" not in json.dumps(out) and "SECRET" not in json.dumps(out)
    return json.loads(tool["content"])  # type: ignore[no-any-return]


@pytest.mark.parametrize(("name", "arguments", "result", "kept"), CALLS)
def test_each_agent_tool_keeps_its_outcome(
    name: str, arguments: dict[str, Any], result: str, kept: dict[str, Any]
) -> None:
    assert _replayed_result(name, arguments, result) == {"status": "success", **kept}


def test_the_rules_cover_the_agents_and_keep_the_project_own() -> None:
    assert {"Bash", "Read", "Edit", "Write", "exec_command", "shell", "apply_patch", "read", "edit"} <= set(
        AGENT_RULES
    )
    assert set(AGENT_RULES).isdisjoint(
        {"bash", "grep", "glob", "read_file"}
    )  # the project's own stay as they are
    assert {**GATEWAY_RULES} == {**GATEWAY_RULES, **AGENT_RULES}
