"""Invariants of the replay that hold for any session."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.analysis._sessions import call, session, turn

from turnmemory.analysis import (
    CACHE_READ,
    CACHE_WRITE,
    STRATEGIES,
    analyze_session,
    conversation,
    open_meter,
    requests,
)

_ITERATION = st.tuples(
    st.text(max_size=20),
    st.lists(st.tuples(st.text(max_size=300), st.booleans()), max_size=3),
)
_TURN = st.tuples(st.text(min_size=1, max_size=20), st.lists(_ITERATION, max_size=4))


def _session(raw: list[tuple[str, list[tuple[str, list[tuple[str, bool]]]]]]) -> object:
    counter = iter(range(10_000))
    turns = []
    for user, iterations in raw:
        built = [
            (prose, [call(f"c{next(counter)}", text, error=error) for text, error in calls])
            for prose, calls in iterations
        ]
        turns.append(turn(user, *built))
    return session(*turns)


@settings(max_examples=60, deadline=None)
@given(st.lists(_TURN, min_size=1, max_size=5))
def test_every_strategy_makes_the_same_requests_and_costs_within_the_cache_bounds(raw: list) -> None:  # type: ignore[type-arg]
    imported = _session(raw)
    meter = open_meter("bytes")
    turns = conversation(imported)  # type: ignore[arg-type]
    shapes = set()
    for name in STRATEGIES:
        made = list(requests(name, turns, meter))
        shapes.add(tuple((r.turn, r.first) for r in made))
        assert [r.turn for r in made if r.first] == list(range(len(turns)))
    assert len(shapes) == 1
    report = analyze_session(imported, meter)  # type: ignore[arg-type]
    first_turn = {report.strategies[name].per_turn[0] for name in STRATEGIES}
    assert len(first_turn) == 1  # the first request holds only the first user message, under every strategy
    for name in STRATEGIES:
        result = report.strategies[name]
        sizes = [sum(b.size for b in r.blocks) for r in requests(name, turns, meter)]
        assert CACHE_READ * sum(sizes) - 0.1 <= result.cost <= CACHE_WRITE * sum(sizes) + 0.1
        assert result.carried == sum(result.per_turn[1:])
        assert report.strategies["prose_only"].per_turn[-1] <= result.per_turn[-1]
