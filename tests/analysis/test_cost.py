from __future__ import annotations

import pytest
from tests.analysis._sessions import call, session, turn

from turnmemory.analysis import (
    STRATEGIES,
    Block,
    analyze_session,
    conversation,
    open_meter,
    request_cost,
    requests,
    shared_prefix,
    total_cost,
)


def b(text: str, size: int) -> Block:
    return Block(text, size)


U1, A1, U2, A2, U3 = b("u1", 10), b("a1", 20), b("u2", 5), b("a2", 30), b("u3", 7)
A1_COMPACT = b("a1 compact", 8)


def test_shared_prefix_stops_at_the_first_changed_block() -> None:
    assert shared_prefix([U1, A1, U2], [U1, A1, U2, A2]) == 35
    assert shared_prefix([U1, A1, U2], [U1, A1_COMPACT, U2]) == 10
    assert shared_prefix([], [U1]) == 0


def test_three_turns_by_hand() -> None:
    # Turn 1 writes U1: 1.25 * 10 = 12.5.
    # Turn 2 reads U1 (0.1 * 10 = 1) and writes A1 + U2 (1.25 * 25 = 31.25): 32.25.
    # Turn 3 rewrote A1: reads only U1 (1) and writes A1' + U2 + A2 + U3 (1.25 * 50 = 62.5): 63.5.
    requests = [[U1], [U1, A1, U2], [U1, A1_COMPACT, U2, A2, U3]]
    assert [request_cost(p, c) for p, c in zip([[], *requests], requests, strict=False)] == [
        12.5,
        32.25,
        63.5,
    ]
    assert total_cost(requests) == pytest.approx(108.25)
    # Without the rewrite, turn 3 reads 35 and writes 37: 3.5 + 46.25.
    assert total_cost([[U1], [U1, A1, U2], [U1, A1, U2, A2, U3]]) == pytest.approx(12.5 + 32.25 + 49.75)


def test_iterations_inside_a_turn_reread_the_cached_prefix() -> None:
    tool = b("tool result", 100)
    assert total_cost([[U1], [U1, A1, tool]]) == pytest.approx(12.5 + 1.0 + 1.25 * 120)


def test_a_three_turn_session_without_tools_costs_the_same_under_every_strategy() -> None:
    # Blocks (UTF-8 bytes): {"role":"user","content":"aa"} = 30, {"role":"assistant","content":"bbbb"} = 37,
    # {"role":"assistant","content":"dd"} = 35. Requests: [U1]; [U1, A1, U2]; [U1, A1, U2, A2, U3].
    # Cost: 1.25*30 + (0.1*30 + 1.25*67) + (0.1*97 + 1.25*65) = 37.5 + 86.75 + 90.95 = 215.2.
    report = analyze_session(
        session(turn("aa", ("bbbb", [])), turn("cc", ("dd", [])), turn("ee")), open_meter("bytes")
    )
    assert {name: report.strategies[name].cost for name in STRATEGIES} == dict.fromkeys(STRATEGIES, 215.2)
    assert report.strategies["full"].per_turn == (30, 97, 162)
    assert (report.strategies["full"].carried, report.strategies["full"].peak) == (97 + 162, 162)


def test_turnmemory_invalidates_the_cache_only_from_the_compacted_turn() -> None:
    meter = open_meter("bytes")
    turns = conversation(
        session(
            turn("one", ("a", [call("c1", "x" * 50)]), ("done", [])),
            turn("two", ("b", [call("c2", "y" * 50)]), ("done", [])),
            turn("three"),
        )
    )
    made = list(requests("turnmemory", turns, meter))
    last_of_two = next(r for r in reversed(made) if r.turn == 1)
    first_of_three = next(r for r in made if r.turn == 2)
    # Turn 2's last request holds: turn 1 compacted, "two", then turn 2's own full blocks.
    # Turn 3 keeps turn 1 compacted and "two" as they were, so the cache breaks only at turn 2's memory.
    compacted_one = len(next(r for r in made if r.turn == 1).blocks)  # compact(turn 1) + "two"
    assert last_of_two.blocks[:compacted_one] == first_of_three.blocks[:compacted_one]
    assert last_of_two.blocks[compacted_one] != first_of_three.blocks[compacted_one]
    assert shared_prefix(last_of_two.blocks, first_of_three.blocks) == sum(
        block.size for block in first_of_three.blocks[:compacted_one]
    )
