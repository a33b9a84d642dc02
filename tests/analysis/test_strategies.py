from __future__ import annotations

import json

import pytest
from tests.analysis._sessions import call, session, turn

from turnmemory.analysis import Meter, conversation, open_meter, requests
from turnmemory.analysis._strategies import (
    CLEAR_PLACEHOLDER,
    PRUNE_PLACEHOLDER,
    mask_placeholder,
    prune_marks,
)


def contents(blocks: tuple[object, ...]) -> list[dict[str, object]]:
    return [json.loads(block.text) for block in blocks]  # type: ignore[attr-defined]


def tool_contents(blocks: tuple[object, ...]) -> list[object]:
    return [m["content"] for m in contents(blocks) if m["role"] == "tool"]


def last_request(strategy: str, meter: Meter, *turns: object) -> tuple[object, ...]:
    return list(requests(strategy, conversation(session(*turns)), meter))[-1].blocks  # type: ignore[arg-type]


@pytest.fixture
def meter() -> Meter:
    return open_meter("bytes")


def test_full_trace_keeps_real_arguments_and_outputs(meter: Meter) -> None:
    blocks = last_request(
        "full", meter, turn("go", ("Looking.", [call("c1", "out\n1")]), ("Done.", [])), turn("next")
    )
    assert contents(blocks) == [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": "Looking.",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "Bash", "arguments": '{"command":"ls"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "out\n1"},
        {"role": "assistant", "content": "Done."},
        {"role": "user", "content": "next"},
    ]
    assert sum(b.size for b in blocks) == sum(len(b.text.encode()) for b in blocks)


def test_one_request_per_iteration_each_with_the_iterations_before(meter: Meter) -> None:
    turns = conversation(session(turn("go", ("a", [call("c1", "x")]), ("b", [call("c2", "y")]), ("c", []))))
    made = list(requests("full", turns, meter))
    assert [(r.turn, r.first, len(r.blocks)) for r in made] == [(0, True, 1), (0, False, 3), (0, False, 5)]


@pytest.mark.parametrize(("calls", "masked"), [(10, 0), (11, 1), (13, 3)])
def test_mask10_keeps_the_last_ten_observations(meter: Meter, calls: int, masked: int) -> None:
    results = [call(f"c{i}", f"line\n{i}\nend") for i in range(calls)]
    blocks = last_request("mask10", meter, turn("task", ("", results)), turn("next"))
    expected = ["Old environment output: (3 lines omitted)"] * masked + [
        f"line\n{i}\nend" for i in range(masked, calls)
    ]
    assert tool_contents(blocks) == expected
    assert contents(blocks)[0] == {"role": "user", "content": "task"}


def test_mask_placeholder_counts_lines_like_swe_agent() -> None:
    assert mask_placeholder("a\nb\nc\n") == "Old environment output: (3 lines omitted)"
    assert mask_placeholder("") == "Old environment output: (0 lines omitted)"


def test_anthropic_clear_waits_for_its_trigger(meter: Meter) -> None:
    # 100,000 tokens at 4 bytes per token: 5 results of 70,000 bytes stay below 400,000 bytes.
    small = [call(f"c{i}", "x" * 70_000) for i in range(5)]
    assert (
        tool_contents(last_request("anthropic_clear", meter, turn("go", ("", small)), turn("next")))
        == ["x" * 70_000] * 5
    )


def test_anthropic_clear_keeps_the_three_most_recent_tool_uses_and_all_inputs(meter: Meter) -> None:
    big = [call(f"c{i}", "x" * 90_000) for i in range(5)]
    blocks = last_request("anthropic_clear", meter, turn("go", ("", big)), turn("next"))
    assert tool_contents(blocks) == [CLEAR_PLACEHOLDER] * 2 + ["x" * 90_000] * 3
    assistant = contents(blocks)[1]
    assert [c["function"]["arguments"] for c in assistant["tool_calls"]] == ['{"command":"ls"}'] * 5  # type: ignore[index]


def _prune_session(first_result_chars: int) -> list[object]:
    # Turn 1: three outputs; OpenCode estimates chars / 4 tokens. Turns 2 and 3 are protected.
    first = turn(
        "one", ("", [call("a", "a" * first_result_chars), call("b", "b" * 80_000), call("c", "c" * 80_000)])
    )
    return conversation(
        session(first, turn("two", ("", [call("d", "d" * 400_000)])), turn("three"), turn("four"))
    )  # type: ignore[return-value]


def test_opencode_prune_needs_more_than_twenty_thousand_tokens() -> None:
    turns = _prune_session(80_000)  # c, b protect 40,000; a would free exactly 20,000: not enough
    assert prune_marks(turns[:3], set()) == set()  # type: ignore[arg-type]


def test_opencode_prune_marks_older_outputs_past_the_protected_forty_thousand(meter: Meter) -> None:
    turns = _prune_session(80_004)  # a would free 20,001 tokens
    assert prune_marks(turns[:2], set()) == set()  # type: ignore[arg-type]  # turns 1-2 are the last two
    assert prune_marks(turns[:3], set()) == {"a"}  # type: ignore[arg-type]
    made = list(requests("opencode_prune", turns, meter))  # type: ignore[arg-type]
    third, fourth = (r for r in made if r.first and r.turn >= 2)
    assert tool_contents(third.blocks)[0] == "a" * 80_004  # pruned at the end of turn 3, not before
    assert tool_contents(fourth.blocks) == [PRUNE_PLACEHOLDER, "b" * 80_000, "c" * 80_000, "d" * 400_000]


def test_opencode_prune_stops_at_pruned_outputs_and_skips_errors_and_skill() -> None:
    turns = conversation(
        session(
            turn("one", ("", [call("old", "o" * 200_000), call("s", "s" * 200_000, name="skill")])),
            turn("two", ("", [call("e", "e" * 200_000, error=True), call("n", "n" * 100_000)])),
            turn("three"),
            turn("four"),
        )
    )
    # Backwards: n counts 25,000 (protected); e (an error) and s (skill) are not counted; old (50,000)
    # crosses 40,000 and would free 50,000 tokens.
    assert prune_marks(turns, set()) == {"old"}
    # The walk stops at an output pruned before: nothing older is looked at, nothing new is marked.
    assert prune_marks(turns, {"old"}) == set()


def test_turn_boundary_strategies_keep_the_current_turn_whole(meter: Meter) -> None:
    turns = conversation(
        session(turn("go", ("a", [call("c1", "out")]), ("b", [call("c2", "more")]), ("c", [])))
    )
    for strategy in ("prose_only", "turnmemory", "turnmemory_target", "opencode_prune"):
        made = list(requests(strategy, turns, meter))  # type: ignore[arg-type]
        assert tool_contents(made[-1].blocks) == ["out", "more"], strategy
