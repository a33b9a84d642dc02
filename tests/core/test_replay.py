"""historical_steps: placement, ids, arguments, results."""

from __future__ import annotations

import turnmemory as tm
from turnmemory._text import compact_json
from turnmemory.replay import compact_id, historical_arguments, historical_result

SPEC_CONTENT = "Let me update the handler. The terminal event is now handled."
SPEC_MEMORY = tm.TurnMemory.from_dict(
    {
        "tool_activity": [
            {"text_offset": 0, "tool": "query-docs", "server": "context7", "status": "success"},
            {
                "text_offset": 26,
                "tool": "edit_file",
                "status": "success",
                "target": "internal/cli/repl/stream_handler.go",
                "file_changed": "internal/cli/repl/stream_handler.go",
            },
        ]
    }
)


def test_spec_worked_example() -> None:
    steps = tm.historical_steps(tm.Message("assistant", SPEC_CONTENT, SPEC_MEMORY), message_index=4)
    assert [
        (s.text, [(c.id, c.name, c.arguments, c.result, c.is_error) for c in s.calls]) for s in steps
    ] == [
        ("", [("historical_4_0", "call_mcp_tool", {}, {"status": "success"}, False)]),
        (
            "Let me update the handler.",
            [
                (
                    "historical_4_1",
                    "edit_file",
                    {},
                    {"status": "success", "file_changed": "internal/cli/repl/stream_handler.go"},
                    False,
                )
            ],
        ),
        (" The terminal event is now handled.", []),
    ]
    assert "".join(s.text for s in steps) == SPEC_CONTENT


def test_keen_boundary_and_invalid_offsets() -> None:
    mem = tm.TurnMemory(
        (
            tm.ToolActivity(-1, "x"),
            tm.ToolActivity(0, "read_file"),
            tm.ToolActivity(4, "bash"),
            tm.ToolActivity(5, "y"),
        )
    )
    steps = tm.historical_steps(tm.Message("assistant", "done", mem), message_index=0)
    assert [(s.text, [c.id for c in s.calls]) for s in steps] == [
        ("", ["historical_0_0"]),
        ("done", ["historical_0_1"]),
        ("", []),
    ]


def test_activity_inside_a_multibyte_character_is_ignored() -> None:
    mem = tm.TurnMemory((tm.ToolActivity(1, "inside"), tm.ToolActivity(2, "after")))
    steps = tm.historical_steps(tm.Message("assistant", "éa", mem))
    assert [(s.text, [c.name for c in s.calls]) for s in steps] == [("é", ["after"]), ("a", [])]


def test_shared_offset_is_one_batch_in_order() -> None:
    mem = tm.TurnMemory((tm.ToolActivity(15, "read_file"), tm.ToolActivity(15, "grep", status="error")))
    steps = tm.historical_steps(tm.Message("assistant", "Let me inspect. Found it.", mem), message_index=2)
    assert [(s.text, [(c.id, c.name, c.is_error) for c in s.calls]) for s in steps] == [
        ("Let me inspect.", [("historical_2_0", "read_file", False), ("historical_2_1", "grep", True)]),
        (" Found it.", []),
    ]


def test_non_assistant_and_memoryless_messages_are_one_step() -> None:
    assert tm.historical_steps(tm.Message("user", "hi")) == [tm.Step("hi")]
    assert tm.historical_steps(tm.Message("assistant", "hi")) == [tm.Step("hi")]
    invalid = tm.TurnMemory((tm.ToolActivity(99, "x"),))
    assert tm.historical_steps(tm.Message("assistant", "hi", invalid)) == [tm.Step("hi")]


def test_ids_count_accepted_activities_only() -> None:
    mem = tm.TurnMemory(
        (
            tm.ToolActivity(9, "bad"),
            tm.ToolActivity(1, "a"),
            tm.ToolActivity(0, "late"),
            tm.ToolActivity(2, "b"),
        )
    )
    calls = [
        c for s in tm.historical_steps(tm.Message("assistant", "abc", mem), message_index=7) for c in s.calls
    ]
    assert [(c.id, c.name) for c in calls] == [("historical_7_0", "a"), ("historical_7_1", "b")]


def test_results_in_spec_form() -> None:
    assert compact_json(historical_result(tm.ToolActivity(0, "x"))) == '{"status":"success"}'
    assert compact_json(historical_result(tm.ToolActivity(0, "x", status="error"))) == '{"status":"error"}'
    assert compact_json(historical_result(tm.ToolActivity(0, "x", status="timeout"))) == '{"status":"error"}'
    failed = tm.ToolActivity(0, "bash", failed_command="go test ./...", exit_code=1)
    assert (
        compact_json(historical_result(failed))
        == '{"status":"success","failed_command":"go test ./...","exit_code":1}'
    )
    changed = tm.ToolActivity(0, "edit_file", file_changed="a.go")
    assert compact_json(historical_result(changed)) == '{"status":"success","file_changed":"a.go"}'
    # An error result carries nothing but its status.
    assert historical_result(tm.ToolActivity(0, "edit_file", status="error", file_changed="a.go")) == {
        "status": "error"
    }


def test_unicode_is_not_escaped_in_compact_json() -> None:
    assert (
        compact_json({"status": "success", "file_changed": "données.txt"})
        == '{"status":"success","file_changed":"données.txt"}'
    )


def test_target_argument_policy() -> None:
    assert historical_arguments(tm.ToolActivity(0, "read_file", target="a.go"), "target") == {"path": "a.go"}
    assert historical_arguments(tm.ToolActivity(0, "bash", target="make"), "target") == {"command": "make"}
    assert historical_arguments(tm.ToolActivity(0, "grep", target="src :: TODO"), "target") == {
        "path": "src",
        "pattern": "TODO",
    }
    assert historical_arguments(tm.ToolActivity(0, "glob", target="*.py"), "target") == {"pattern": "*.py"}
    assert historical_arguments(tm.ToolActivity(0, "q", server="ctx"), "target") == {
        "server": "ctx",
        "tool": "q",
    }
    assert historical_arguments(tm.ToolActivity(0, "custom", target="t"), "target") == {}
    assert historical_arguments(tm.ToolActivity(0, "read_file", target="a.go")) == {}


def test_compact_ids_are_nine_alphanumerics_and_distinct() -> None:
    ids = {compact_id(m, n) for m in range(50) for n in range(50)}
    assert len(ids) == 2500
    assert all(len(i) == 9 and i.isalnum() and i.isascii() for i in ids)
    steps = tm.historical_steps(
        tm.Message("assistant", "x", tm.TurnMemory((tm.ToolActivity(0, "a"),))), id_style="compact"
    )
    assert steps[0].calls[0].id == compact_id(0, 0)
