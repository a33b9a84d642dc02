"""Request times from the logs' own timestamps: parsing any value a log may hold, giving each request
the latest time noted before it, and each importer reading its format's times."""

from __future__ import annotations

import json
import math
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from turnmemory.transcripts import IterationEnd, Prose, ToolCall, ToolResult, load_session
from turnmemory.transcripts._build import SessionBuilder, parse_time

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

_JSON = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(),
        st.text(max_size=80),
        st.from_regex(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?", fullmatch=True),
    ),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=6,
)


@given(_JSON, st.sampled_from([1.0, 0.001]))
def test_any_value_parses_to_a_time_in_range_or_to_nothing(value: object, scale: float) -> None:
    moment = parse_time(value, scale=scale)
    assert moment is None or (math.isfinite(moment) and 0 < moment < 1e11)


def test_the_shapes_logs_use() -> None:
    assert parse_time("2026-05-04T06:15:48.264Z") == 1777875348.264
    assert parse_time("2026-05-04T08:15:48.264+02:00") == 1777875348.264
    assert parse_time("2026-05-04T06:15:48.264") == 1777875348.264  # no zone: UTC (OpenHands)
    assert parse_time(" 2025-10-20 21:49:17") == 1760996957.0  # aider's header
    assert parse_time(1784254006744, scale=0.001) == 1784254006.744  # OpenCode's milliseconds
    assert parse_time(1775795870.1433787) == 1775795870.1433787  # mini-swe-agent's seconds
    for junk in (True, None, "soon", "9999-99-99", float("nan"), float("inf"), 10**400, -5, "1" * 65, [1]):
        assert parse_time(junk) is None


def _call(call_id: str) -> tuple[ToolCall, ToolResult]:
    return ToolCall(call_id, "bash", {}, "Bash", "{}"), ToolResult(call_id, "ok")


def test_each_request_gets_the_latest_time_noted_before_its_first_output() -> None:
    builder = SessionBuilder(Path("s.jsonl"), "test")
    builder.time(5.0)  # before any turn: not a request's time unless noted again
    builder.user("one")
    builder.time("1970-01-01T00:01:40Z")  # the user record: 100
    builder.add(IterationEnd())  # an iteration end before any output does not take the turn's time
    started, ended = _call("a")
    builder.add(Prose("Looking."))
    builder.time(130)
    builder.add(started)
    builder.add(IterationEnd())  # the model's response ended at 130 ...
    builder.add(ended)
    builder.time(190)  # ... and its tool result came in at 190: the next request went out then
    builder.add(Prose("Done."))
    builder.user("two")  # no time noted since the last request: unknown, not 190 stretched over it
    builder.add(Prose("Hm."))
    builder.user("three")
    builder.time(400)
    builder.add(Prose("Yes."))
    turns = builder.build().turns
    assert [turn.started for turn in turns] == [100.0, None, 400.0]
    ends = [event.ended for event in turns[0].events if isinstance(event, IterationEnd)]
    assert ends == [None, 190.0]


def test_a_turn_without_output_is_timed_when_the_next_turn_starts() -> None:
    builder = SessionBuilder(Path("s.jsonl"), "test")
    builder.user("interrupted")
    builder.time(50)
    builder.user("again")
    builder.time(70)
    session = builder.build()
    assert [turn.started for turn in session.turns] == [50.0, 70.0]


def test_the_examples_carry_their_times() -> None:
    for name in ("claude-code-session.jsonl", "codex-rollout.jsonl", "openhands-events.json"):
        session = load_session(EXAMPLES / name)
        assert all(turn.started is not None for turn in session.turns), name
        assert any(
            isinstance(event, IterationEnd) and event.ended is not None
            for turn in session.turns
            for event in turn.events
        ), name
    for name in ("swe-agent.traj", "mini-swe-agent.traj.json"):  # neither example holds times
        assert all(turn.started is None for turn in load_session(EXAMPLES / name).turns)


def test_hostile_timestamps_are_ignored_and_lose_nothing(tmp_path: Path) -> None:
    lines = (EXAMPLES / "claude-code-session.jsonl").read_text().splitlines()
    hostile = [1e308, "9999-12-31T23:59:59Z", {"nested": [1]}, "x" * 10_000, True, -1, None]
    mangled = []
    for number, line in enumerate(lines):
        record = json.loads(line)
        if "timestamp" in record:
            record["timestamp"] = hostile[number % len(hostile)]
        mangled.append(json.dumps(record))
    log = tmp_path / "hostile.jsonl"
    log.write_text("\n".join(mangled) + "\n")
    session, original = load_session(log), load_session(EXAMPLES / "claude-code-session.jsonl")
    assert [turn.user for turn in session.turns] == [turn.user for turn in original.turns]
    assert session.tool_calls == original.tool_calls
    assert all(turn.started is None for turn in session.turns)
