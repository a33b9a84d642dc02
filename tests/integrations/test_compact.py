"""compact(): result conventions, the caller's own rules and parser, and what is kept as given."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

from turnmemory.integrations import Compactor, compact, parse_result
from turnmemory.retention import DEFAULT_RULES, ToolRule, command_target, path_target

_BASH = {"command": "make test"}
_EDIT = {"path": "/ws/a.py"}


@pytest.mark.parametrize(
    ("name", "arguments", "text", "flag", "outcome", "failed"),
    [
        ("bash", _BASH, "Exit code: 1\nboom", False, {"exit_code": 1}, False),
        ("bash", _BASH, "Exit code 2", True, {"exit_code": 2}, False),
        ("bash", _BASH, "Error: Exit code 3\nboom", True, {"exit_code": 3}, False),
        ("bash", _BASH, "Process exited with code 4\nOutput:\n", False, {"exit_code": 4}, False),
        ("bash", _BASH, "<returncode>5</returncode>\n<output>", False, {"exit_code": 5}, False),
        ("bash", _BASH, "go test ./...\nFAIL\nexit status 6", False, {"exit_code": 6}, False),
        ("bash", _BASH, "Command exited with exit code 7", False, {"exit_code": 7}, False),
        ("bash", _BASH, '{"exit_code": 8, "stdout": "x"}', False, {"exit_code": 8, "stdout": "x"}, False),
        ("bash", _BASH, '{"returncode": 9}', False, {"returncode": 9, "exit_code": 9}, False),
        ("bash", _BASH, "all good", False, {"exit_code": 0}, False),
        ("bash", _BASH, "command not found", True, None, True),
        ("bash", _BASH, "Error: permission denied", False, None, True),
        ("bash", _BASH, '{"error": "timed out"}', False, None, True),
        ("bash", _BASH, '{"status": "error"}', False, None, True),
        ("edit_file", _EDIT, "Edited.", False, {"file_changed": "/ws/a.py"}, False),
        ("edit_file", _EDIT, '{"ok": true}', False, {"ok": True, "file_changed": "/ws/a.py"}, False),
        ("edit_file", _EDIT, '{"file_changed": null}', False, {"file_changed": None}, False),
        ("edit_file", _EDIT, "old_string not found", True, None, True),
        ("edit_file", _EDIT, '{"is_error": true}', False, None, True),
        ("read_file", _EDIT, "Exit code: 1 is just text here", False, None, False),
        (
            "read_file",
            _EDIT,
            "An error occurred while running the tool. Please try again.",
            False,
            None,
            True,
        ),
        ("unknown_tool", {}, "whatever", False, None, False),
    ],
)
def test_result_conventions(
    name: str, arguments: Mapping[str, Any], text: str, flag: bool, outcome: Any, failed: bool
) -> None:
    assert parse_result(name, arguments, text, flag) == (outcome, failed)


def _chat(name: str, arguments: Mapping[str, Any], result: str) -> list[dict[str, Any]]:
    call = {"id": "c1", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
    return [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": result},
        {"role": "user", "content": "next"},
    ]


def _result(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return json.loads(next(m for m in messages if m["role"] == "tool")["content"])


def test_rules_for_the_callers_own_tools() -> None:
    rules = {
        **DEFAULT_RULES,
        "run_tests": ToolRule(target=command_target("cmd"), outcome="exit_code", parameter="cmd"),
        "patch": ToolRule(target=path_target("file"), outcome="file_change", parameter="file"),
    }
    failing = _chat("run_tests", {"cmd": "tox -e py311"}, "Exit code: 2")
    assert _result(compact(failing, rules=rules)) == {
        "status": "success",
        "failed_command": "tox -e py311",
        "exit_code": 2,
    }
    assert _result(compact(failing)) == {"status": "success"}  # without a rule: name and status only
    patched = compact(_chat("patch", {"file": "/ws/src/x.py"}, "ok"), rules=rules, workspace="/ws")
    assert _result(patched) == {"status": "success", "file_changed": "src/x.py"}


def test_a_callers_result_parser_decides_outcomes() -> None:
    def parser(
        name: str, arguments: Mapping[str, Any], text: str, flag: bool
    ) -> tuple[Mapping[str, Any] | None, bool]:
        return ({"exit_code": int(text.split("=")[1])}, False) if text.startswith("rc=") else (None, True)

    assert _result(compact(_chat("bash", _BASH, "rc=3"), result_parser=parser))["exit_code"] == 3
    assert _result(compact(_chat("bash", _BASH, "Exit code: 1"), result_parser=parser)) == {"status": "error"}


def test_user_and_system_messages_are_kept_as_given() -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    chat = [
        {"role": "developer", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "What is this?"}, image], "name": "ann"},
        *_chat("bash", _BASH, "Exit code: 0")[1:3],
        {"role": "assistant", "content": [{"type": "text", "text": "A PNG."}]},
        {"role": "user", "content": [image]},
    ]
    out = compact(chat)
    assert out[0] == chat[0] and out[1] == chat[1] and out[-1] == chat[-1]
    assert out[4] == {"role": "assistant", "content": "A PNG."}

    blocks = [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}]
    anthropic = [
        {"role": "user", "content": blocks},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": _BASH}]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "Exit code: 1"}, *blocks],
        },
    ]
    out = compact(anthropic, "anthropic")
    assert out[0] == anthropic[0]
    assert out[2]["content"][1:] == blocks
    assert out[2]["content"][0]["tool_use_id"] == out[1]["content"][0]["id"] == "historical_1_0"


def test_reasoning_never_reaches_the_record() -> None:
    anthropic = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "SECRET-REASONING", "signature": "sig"},
                {"type": "text", "text": "Done."},
            ],
        },
        {"role": "user", "content": "next"},
    ]
    assert "SECRET-REASONING" not in json.dumps(compact(anthropic, "anthropic"))
    responses = [
        {"role": "user", "content": "go"},
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "SECRET-REASONING"}],
        },
        {"type": "message", "role": "assistant", "content": "Done."},
        {"role": "user", "content": "next"},
    ]
    assert "SECRET-REASONING" not in json.dumps(compact(responses, "openai_responses"))


def test_a_history_without_a_user_message_is_returned_as_is() -> None:
    history = [{"role": "system", "content": "s"}, {"role": "assistant", "content": "hi"}]
    assert compact(history) == history


def test_a_compactor_follows_a_conversation_that_changes_under_it() -> None:
    compactor = Compactor()
    first = _chat("bash", _BASH, "Exit code: 1")
    other = _chat("edit_file", _EDIT, "ok")
    assert compactor.compact(first) == compact(first)
    assert compactor.compact(other) == compact(other)  # not an extension: compacted from scratch
    assert compactor.compact(first[:1]) == first[:1]
