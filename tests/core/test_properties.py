"""Property tests for the spec's invariants of recording, loading and replay."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import turnmemory as tm

TOOLS = [
    "read_file",
    "write_file",
    "edit_file",
    "bash",
    "grep",
    "glob",
    "web_fetch",
    "call_mcp_tool",
    "custom",
]

prose = st.text(st.characters(codec="utf-8"), max_size=12) | st.sampled_from(
    ["", " ", "\n\n", "é", "日本語", "🙂 ok", "\t"]
)


@dataclass(frozen=True)
class Op:
    kind: str
    value: Any = None


ops = st.lists(
    st.one_of(
        st.builds(Op, st.just("text"), prose),
        st.builds(Op, st.just("reasoning"), prose),
        st.builds(Op, st.just("start"), st.sampled_from(TOOLS)),
        st.builds(Op, st.just("end"), st.integers(0, 30)),
        st.builds(Op, st.just("fail"), st.integers(0, 30)),
        st.builds(Op, st.just("permission"), st.integers(0, 30)),
        st.builds(Op, st.just("seal")),
        st.builds(Op, st.just("rewind")),
    ),
    max_size=40,
)


def play(operations: list[Op]) -> tuple[tm.TurnRecorder, int, str]:
    """Drive a recorder; returns it, the number of calls that ended, and the expected prose."""
    rec = tm.TurnRecorder("/ws")
    running: list[str] = []
    ended = 0
    started = 0
    for op in operations:
        if op.kind == "text":
            rec.text(op.value)
        elif op.kind == "reasoning":
            rec.reasoning(op.value)
        elif op.kind == "start":
            call_id = f"c{started}"
            started += 1
            rec.tool_start(
                call_id,
                op.value,
                {"path": "/ws/a", "command": "ls", "pattern": "x", "server": "s", "tool": "t"},
            )
            running.append(call_id)
        elif op.kind in ("end", "fail") and running:
            call_id = running.pop(op.value % len(running))
            if op.kind == "end":
                rec.tool_end(call_id, output={"exit_code": op.value % 3, "file_changed": "/ws/a"})
            else:
                rec.tool_end(call_id, error="boom")
            ended += 1
        elif op.kind == "permission" and running:
            rec.permission(running[op.value % len(running)], "ask", "allow_once")
        elif op.kind == "seal":
            rec.seal()
        elif op.kind == "rewind":
            rec.rewind()
    return rec, ended, rec.prose


@settings(max_examples=300, deadline=None)
@given(ops)
def test_finish_then_steps_reproduce_the_prose_and_every_completed_tool(operations: list[Op]) -> None:
    rec, ended, prose_text = play(operations)
    msg = rec.finish()
    assert msg.content == prose_text
    offsets = [a.text_offset for a in msg.activities]
    assert offsets == sorted(offsets)
    assert len(msg.activities) == ended
    steps = tm.historical_steps(msg, message_index=3)
    assert "".join(s.text for s in steps) == msg.content
    assert sum(len(s.calls) for s in steps) == ended
    ids = [c.id for s in steps for c in s.calls]
    assert ids == [f"historical_3_{n}" for n in range(ended)]
    assert tm.Message.from_dict(json.loads(json.dumps(msg.to_dict()))) == msg


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)

activity_like = st.fixed_dictionaries(
    {},
    optional={
        "text_offset": st.integers(-3, 40) | json_values,
        "tool": st.sampled_from([*TOOLS, ""]) | json_values,
        "status": st.sampled_from(["success", "error", "weird"]) | json_values,
        "target": st.text(max_size=300) | json_values,
        "server": st.text(max_size=10) | json_values,
        "file_changed": st.text(max_size=10) | json_values,
        "failed_command": st.text(max_size=10) | json_values,
        "exit_code": st.integers(-2, 300) | json_values,
    },
)

message_like = st.fixed_dictionaries(
    {},
    optional={
        "role": st.sampled_from(["system", "user", "assistant", "tool"]) | json_values,
        "content": prose | json_values,
        "turn_memory": st.fixed_dictionaries(
            {}, optional={"tool_activity": st.lists(activity_like, max_size=6) | json_values}
        )
        | json_values,
    },
)


@settings(max_examples=500, deadline=None)
@given(message_like | json_values)
def test_from_dict_returns_a_message_or_raises_value_error_and_replay_never_raises(data: object) -> None:
    try:
        msg = tm.Message.from_dict(data)
    except ValueError:
        return
    steps = tm.historical_steps(msg, message_index=1)
    assert "".join(s.text for s in steps) == msg.content
    json.dumps(msg.to_dict())
    assert tm.Message.from_dict(msg.to_dict()) == msg


secret_tokens = st.one_of(
    st.from_regex(r"sk-proj-[A-Za-z0-9]{24}", fullmatch=True),
    st.from_regex(r"ghp_[A-Za-z0-9]{36}", fullmatch=True),
    st.from_regex(r"AKIA[0-9A-Z]{16}", fullmatch=True),
    st.from_regex(r"xoxb-[0-9]{12}-[A-Za-z0-9]{12}", fullmatch=True),
    st.from_regex(r"AIza[0-9A-Za-z_-]{35}", fullmatch=True),
)
surrounding = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=300)


@settings(max_examples=300, deadline=None)
@given(surrounding, secret_tokens, surrounding)
def test_retained_targets_are_bounded_redacted_and_stable(before: str, secret: str, after: str) -> None:
    act = tm.TurnRecorder("/ws")
    act.tool_start("1", "bash", {"command": f"{before} {secret} {after}"})
    act.tool_end("1", output={"exit_code": 1})
    (activity,) = act.finish().activities
    for value in (activity.target, activity.failed_command):
        assert value is not None
        assert len(value.encode("utf-8")) <= 256
        assert secret not in value
        assert value == " ".join(value.split())
        assert all(ch.isprintable() or ch == " " for ch in value if ord(ch) < 0x80)
    reloaded = tm.ToolActivity.from_dict(activity.to_dict())
    assert reloaded == activity
