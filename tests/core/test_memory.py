"""The data model: serialization, forgiving activity loading, strict message loading."""

from __future__ import annotations

import json

import pytest

import turnmemory as tm
from turnmemory.memory import valid_activities


def test_activity_to_dict_is_the_spec_field_order_with_absent_fields_omitted() -> None:
    act = tm.ToolActivity(
        text_offset=26,
        tool="edit_file",
        status="success",
        target="internal/x.go",
        file_changed="internal/x.go",
    )
    assert act.to_dict() == {
        "text_offset": 26,
        "tool": "edit_file",
        "status": "success",
        "target": "internal/x.go",
        "file_changed": "internal/x.go",
    }
    assert list(act.to_dict()) == ["text_offset", "tool", "status", "target", "file_changed"]


def test_full_activity_serializes_every_field_in_order() -> None:
    act = tm.ToolActivity(1, "bash", "success", "t", "s", "f", "go test", 2)
    assert list(act.to_dict()) == [
        "text_offset",
        "tool",
        "status",
        "target",
        "server",
        "file_changed",
        "failed_command",
        "exit_code",
    ]


def test_empty_strings_are_absent() -> None:
    act = tm.ToolActivity(0, "read_file", target="")
    assert act.target is None
    assert "target" not in act.to_dict()


def test_message_omits_memory_key_when_there_is_none() -> None:
    assert tm.Message("user", "hi").to_dict() == {"role": "user", "content": "hi"}
    assert tm.Message("assistant", "x", tm.TurnMemory(())).turn_memory is None


def test_round_trip_through_json() -> None:
    mem = tm.TurnMemory(
        (
            tm.ToolActivity(0, "query-docs", server="context7"),
            tm.ToolActivity(3, "bash", failed_command="go test ./...", exit_code=1, target="go test ./..."),
        )
    )
    msg = tm.Message("assistant", "héllo", mem)
    assert tm.Message.from_dict(json.loads(json.dumps(msg.to_dict()))) == msg


def test_turn_memory_drops_invalid_activities_and_keeps_the_rest() -> None:
    data = {
        "tool_activity": [
            {"text_offset": 0, "tool": "read_file", "status": "success"},
            {"text_offset": -1, "tool": "read_file"},
            {"text_offset": "3", "tool": "read_file"},
            {"text_offset": True, "tool": "read_file"},
            {"text_offset": 1.0, "tool": "read_file"},
            {"text_offset": 2, "tool": ""},
            {"text_offset": 2},
            {"text_offset": 2, "tool": "bash", "exit_code": "1"},
            {"text_offset": 2, "tool": "bash", "target": 7},
            "not an object",
            {"text_offset": 4, "tool": "bash", "status": "success", "exit_code": 2, "failed_command": "make"},
        ]
    }
    mem = tm.TurnMemory.from_dict(data)
    assert [a.to_dict() for a in mem.tool_activity] == [
        {"text_offset": 0, "tool": "read_file", "status": "success"},
        {"text_offset": 4, "tool": "bash", "status": "success", "failed_command": "make", "exit_code": 2},
    ]


def test_unknown_status_loads_as_error() -> None:
    mem = tm.TurnMemory.from_dict({"tool_activity": [{"text_offset": 0, "tool": "x", "status": "weird"}]})
    assert mem.tool_activity[0].status == "error"


def test_missing_status_loads_as_success() -> None:
    mem = tm.TurnMemory.from_dict({"tool_activity": [{"text_offset": 0, "tool": "x"}]})
    assert mem.tool_activity[0].status == "success"


def test_wrongly_typed_activity_list_reads_as_no_memory() -> None:
    msg = tm.Message.from_dict(
        {"role": "assistant", "content": "x", "turn_memory": {"tool_activity": "nope"}}
    )
    assert msg.turn_memory is None


def test_message_from_dict_drops_activities_that_do_not_fit_the_content() -> None:
    msg = tm.Message.from_dict(
        {
            "role": "assistant",
            "content": "é done",
            "turn_memory": {
                "tool_activity": [
                    {"text_offset": 1, "tool": "inside_e"},
                    {"text_offset": 2, "tool": "after_e"},
                    {"text_offset": 1, "tool": "out_of_order"},
                    {"text_offset": 99, "tool": "out_of_range"},
                    {"text_offset": 7, "tool": "at_end"},
                ]
            },
        }
    )
    assert [a.tool for a in msg.activities] == ["after_e", "at_end"]


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ([], "message"),
        ({"content": "x"}, "message.role"),
        ({"role": "tool", "content": "x"}, "message.role"),
        ({"role": "user"}, "message.content"),
        ({"role": "user", "content": 3}, "message.content"),
        ({"role": "user", "content": "\ud800"}, "message.content"),
        ({"role": "assistant", "content": "x", "turn_memory": []}, "message.turn_memory"),
    ],
)
def test_malformed_message_is_a_value_error_naming_the_field(data: object, field: str) -> None:
    with pytest.raises(ValueError, match=f"^{field}:"):
        tm.Message.from_dict(data)


def test_loading_redacts_and_bounds_a_hostile_record() -> None:
    key = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 2
    msg = tm.Message.from_dict(
        {
            "role": "assistant",
            "content": "ok",
            "turn_memory": {
                "tool_activity": [
                    {
                        "text_offset": 2,
                        "tool": "bash",
                        "target": "curl -H 'Authorization: Bearer " + key + "' " + "x" * 5000,
                        "failed_command": f"OPENAI_API_KEY={key} make",
                        "exit_code": 2,
                    }
                ]
            },
        }
    )
    (act,) = msg.activities
    assert key not in json.dumps(msg.to_dict())
    assert act.target is not None and len(act.target.encode()) <= 256
    assert act.failed_command == "OPENAI_API_KEY=[REDACTED] make"


def test_valid_activities_keeps_shared_offsets_in_order() -> None:
    acts = [
        tm.ToolActivity(2, "a"),
        tm.ToolActivity(2, "b"),
        tm.ToolActivity(0, "c"),
        tm.ToolActivity(3, "d"),
    ]
    assert [a.tool for a in valid_activities(b"abc", acts)] == ["a", "b", "d"]
