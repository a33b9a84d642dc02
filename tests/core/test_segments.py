"""TurnRecorder: offsets, pairing by call id, seal and rewind."""

from __future__ import annotations

import pytest

import turnmemory as tm
from turnmemory.segments import AssistantSegment, PermissionSegment, ReasoningSegment, ToolSegment

WS = "/repo"


def test_offsets_are_utf8_bytes_of_the_prose_before_each_tool() -> None:
    rec = tm.TurnRecorder(WS)
    rec.text("Héllo wörld ")  # 14 bytes
    rec.tool_start("1", "read_file", {"path": "/repo/a.go"})
    rec.tool_end("1", output={"content": "package a"})
    rec.text("日本")  # 6 bytes
    rec.tool_start("2", "bash", {"command": "go test"})
    rec.tool_end("2", output={"exit_code": 0})
    msg = rec.finish()
    assert msg.content == "Héllo wörld 日本"
    assert [(a.text_offset, a.tool) for a in msg.activities] == [(14, "read_file"), (20, "bash")]


def test_reasoning_never_enters_prose_or_memory() -> None:
    rec = tm.TurnRecorder(WS)
    rec.reasoning("secret plan")
    rec.text("Done.")
    msg = rec.finish()
    assert msg.content == "Done."
    assert msg.turn_memory is None


def test_permission_and_diff_between_start_and_end_do_not_lose_the_activity() -> None:
    rec = tm.TurnRecorder(WS)
    rec.text("Running the tests.")
    rec.tool_start("b1", "bash", {"command": "rm -rf build && make"})
    rec.permission("b1", "bash: rm -rf build && make", "allow_once")
    rec.tool_end("b1", output={"exit_code": 2, "stdout": "LOTS OF OUTPUT"})
    rec.tool_start("e1", "edit_file", {"path": "/repo/x.py", "oldString": "a", "newString": "b"})
    rec.diff("e1", "-a\n+b")
    rec.permission("e1", "edit x.py", "allow_session")
    rec.tool_end("e1", output={"file_changed": "/repo/x.py"})
    acts = rec.finish().activities
    assert [a.to_dict() for a in acts] == [
        {
            "text_offset": 18,
            "tool": "bash",
            "status": "success",
            "target": "rm -rf build && make",
            "failed_command": "rm -rf build && make",
            "exit_code": 2,
        },
        {
            "text_offset": 18,
            "tool": "edit_file",
            "status": "success",
            "target": "x.py",
            "file_changed": "x.py",
        },
    ]


def test_pairing_is_by_call_id_not_adjacency() -> None:
    rec = tm.TurnRecorder(WS)
    rec.tool_start("a", "read_file", {"path": "/repo/a"})
    rec.tool_start("b", "read_file", {"path": "/repo/b"})
    rec.tool_end("b", output={})
    rec.tool_end("a", error="not found")
    acts = rec.finish().activities
    assert [(a.target, a.status) for a in acts] == [("a", "error"), ("b", "success")]


def test_a_tool_that_never_ended_is_not_recorded() -> None:
    rec = tm.TurnRecorder(WS)
    rec.text("x")
    rec.tool_start("a", "bash", {"command": "sleep 100"})
    assert rec.finish().turn_memory is None
    assert rec.finish().content == "x"


def test_tool_end_without_start_and_duplicate_start_are_clear_errors() -> None:
    rec = tm.TurnRecorder(WS)
    with pytest.raises(ValueError, match="no running tool call"):
        rec.tool_end("ghost", output={})
    rec.tool_start("a", "bash", {})
    with pytest.raises(ValueError, match="already running"):
        rec.tool_start("a", "bash", {})
    rec.tool_end("a", output={})
    with pytest.raises(ValueError, match="no running tool call"):
        rec.tool_end("a", output={})
    rec.tool_start("a", "bash", {})  # an id may be reused once its call ended
    rec.tool_end("a", output={})
    assert len(rec.finish().activities) == 2


def test_rewind_drops_only_trailing_unsealed_prose_and_reasoning() -> None:
    rec = tm.TurnRecorder(WS)
    rec.text("Let me read the file. ")
    rec.tool_start("1", "read_file", {"path": "/repo/a"})
    rec.tool_end("1", output={})
    rec.seal()
    rec.reasoning("thinking")
    rec.text("Partial answ")
    rec.rewind()
    assert rec.prose == "Let me read the file. "
    rec.text("Final answer.")
    msg = rec.finish()
    assert msg.content == "Let me read the file. Final answer."
    assert msg.activities[0].text_offset == 22


def test_rewind_keeps_sealed_text_even_when_it_is_trailing() -> None:
    rec = tm.TurnRecorder(WS)
    rec.text("Iteration one.")
    rec.seal()
    rec.rewind()
    assert rec.prose == "Iteration one."


def test_text_does_not_merge_across_a_seal() -> None:
    rec = tm.TurnRecorder(WS)
    rec.text("one ")
    rec.seal()
    rec.text("two ")
    rec.rewind()
    assert rec.prose == "one "
    assert [type(s) for s in rec.segments] == [AssistantSegment]


def test_rewind_keeps_tools_permissions_and_diffs() -> None:
    rec = tm.TurnRecorder(WS)
    rec.text("a")
    rec.tool_start("1", "edit_file", {"path": "/repo/x"})
    rec.diff("1", "-x\n+y")
    rec.permission("1", "edit x", "allow_once")
    rec.reasoning("r")
    rec.text("b")
    rec.rewind()
    kinds = [s.kind for s in rec.segments]
    assert kinds == ["assistant", "tool", "diff", "permission"]


def test_segments_are_readable_for_rendering() -> None:
    rec = tm.TurnRecorder(WS)
    rec.reasoning("hm")
    rec.text("a")
    rec.text("b")
    rec.tool_start("1", "bash", {"command": "ls"})
    rec.permission("1", "bash ls", "deny")
    rec.tool_end("1", error="denied by user")
    segs = rec.segments
    assert segs[0] == ReasoningSegment(text="hm", sealed=False)
    assert segs[1] == AssistantSegment(text="ab", sealed=False)
    assert isinstance(segs[2], ToolSegment) and segs[2].ended and segs[2].error == "denied by user"
    assert segs[3] == PermissionSegment(call_id="1", summary="bash ls", decision="deny")


def test_several_tools_at_one_offset_keep_their_order() -> None:
    rec = tm.TurnRecorder(WS)
    rec.text("Look. ")
    for i, name in enumerate(["glob", "grep", "read_file", "read_file"]):
        rec.tool_start(str(i), name, {"pattern": "x", "path": f"/repo/f{i}"})
    for i in (3, 1, 0, 2):
        rec.tool_end(str(i), output={})
    acts = rec.finish().activities
    assert [(a.text_offset, a.tool, a.target) for a in acts] == [
        (6, "glob", "f0 :: x"),
        (6, "grep", "f1 :: x"),
        (6, "read_file", "f2"),
        (6, "read_file", "f3"),
    ]


def test_lone_surrogates_in_chunks_are_replaced() -> None:
    rec = tm.TurnRecorder(WS)
    rec.text("a\ud800b")
    assert rec.finish().content.encode()  # encodable
