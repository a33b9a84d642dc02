from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
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
)
from turnmemory.analysis._cost import PRICING, Bill, Cache, CacheModel
from turnmemory.transcripts import ImportedTurn, IterationEnd, Prose


def total_cost(requests: list[list[Block]]) -> float:
    """The input cost of a session's requests, in order, in the idealised cache."""
    cache = Cache()
    for blocks in requests:
        cache.send(blocks)
    return cache.bill.cost


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


# The cache model of this round: lifetimes, provider prices, minimum sizes.

_SEQUENCES = st.lists(
    st.tuples(
        st.lists(st.sampled_from([U1, A1, U2, A2, U3, A1_COMPACT, b("big", 5_000)]), max_size=6),
        st.one_of(st.none(), st.floats(min_value=0, max_value=20_000, allow_nan=False)),
    ),
    max_size=8,
)
_MODELS = st.builds(
    CacheModel.of,
    st.sampled_from(["anthropic", "openai", "gemini"]),
    st.sampled_from(["5m", "1h", "none"]),
    st.sampled_from([0, 2_000]),
)


def _bill(model: CacheModel, sequence: list[tuple[list[Block], float | None]]) -> Bill:
    cache = Cache(model)
    times = sorted(at for _, at in sequence if at is not None)
    ordered = iter(times)
    for blocks, at in sequence:  # times only go forward
        cache.send(blocks, next(ordered) if at is not None else None)
    return cache.bill


@given(_MODELS, _SEQUENCES)
def test_every_token_is_read_written_or_sent_uncached_and_priced_so(
    model: CacheModel, sequence: list[tuple[list[Block], float | None]]
) -> None:
    bill = _bill(model, sequence)
    assert bill.read + bill.written + bill.uncached == sum(
        block.size for blocks, _ in sequence for block in blocks
    )
    assert bill.cost == pytest.approx(model.read * bill.read + model.write * bill.written + bill.uncached)
    assert 0 <= bill.expired <= max(0, len(sequence) - 1)


@given(_SEQUENCES)
def test_the_idealised_cache_is_the_model_of_earlier_versions(
    sequence: list[tuple[list[Block], float | None]],
) -> None:
    assert CacheModel.of("anthropic", "none") == CacheModel()
    bill = _bill(CacheModel(), sequence)
    assert (bill.uncached, bill.expired) == (0, 0)
    assert bill.cost == pytest.approx(total_cost([blocks for blocks, _ in sequence]))


@pytest.mark.parametrize(("ttl", "seconds"), [("5m", 300), ("1h", 3600)])
def test_a_pause_longer_than_the_lifetime_writes_everything_again(ttl: str, seconds: int) -> None:
    model = CacheModel.of("anthropic", ttl)  # type: ignore[arg-type]
    big = b("big", 5_000)
    for pause, expired in ((seconds, 0), (seconds + 1, 1)):
        cache = Cache(model)
        cache.send([big, U1], at=1_000.0)
        cost = cache.send([big, U1, A1], at=1_000.0 + pause)
        assert cache.bill.expired == expired
        read = 0 if expired else 5_010
        assert cost == pytest.approx(model.read * read + model.write * (5_030 - read))
    unknown = Cache(model)
    unknown.send([big, U1], at=1_000.0)
    unknown.send([big, U1, A1], at=None)  # a request the log gives no time: the cache stays warm
    assert (unknown.bill.expired, unknown.bill.read) == (0, 5_010)


def test_provider_prices_and_lifetimes() -> None:
    writes = {
        (name, ttl): (CacheModel.of(name, ttl).write, CacheModel.of(name, ttl).read)  # type: ignore[arg-type]
        for name in PRICING
        for ttl in ("5m", "1h")
    }
    assert writes == {
        ("anthropic", "5m"): (1.25, 0.1),
        ("anthropic", "1h"): (2.0, 0.1),
        ("openai", "5m"): (1.25, 0.1),
        ("openai", "1h"): (1.25, 0.1),
        ("gemini", "5m"): (1.0, 0.1),
        ("gemini", "1h"): (1.0, 0.1),
    }
    assert [CacheModel.of(name).minimum for name in PRICING] == [1024, 1024, 4096]  # type: ignore[arg-type]
    assert all(PRICING[name].source.count(".") >= 2 for name in PRICING)  # each names where it is written


def test_a_prompt_below_the_minimum_is_sent_uncached_and_leaves_nothing_to_read() -> None:
    model = CacheModel.of("gemini", "5m")
    small = [b("small", 3_000)]
    cache = Cache(model)
    assert cache.send(small) == 3_000  # below 4,096 tokens: the base price, no write premium
    grown = [*small, b("more", 2_000)]
    assert cache.send(grown) == pytest.approx(model.write * 5_000)  # nothing cached to read
    assert cache.send([*grown, U1]) == pytest.approx(model.read * 5_000 + model.write * 10)
    # the system prompt and tools (not in the logs) count toward the minimum
    with_system = Cache(CacheModel.of("gemini", "5m", system_tokens=2_000))
    with_system.send(small)
    assert with_system.bill.uncached == 0 and with_system.bill.written == 3_000


def test_the_bytes_meter_counts_four_bytes_per_token_toward_the_minimum() -> None:
    meter = open_meter("bytes")
    cache = Cache(CacheModel.of("anthropic", "5m"), meter.tokens)
    cache.send([b("k", 4 * 1024 - 1)])
    cache.send([b("l", 4 * 1024)])
    assert (cache.bill.uncached, cache.bill.written) == (4 * 1024 - 1, 4 * 1024)


def _timed(*turns: tuple[str, float, float]) -> object:
    """A session whose turns (user text, start, end of the first iteration) each run a call."""
    built = []
    for index, (user, started, ended) in enumerate(turns):
        start, done = call(f"c{index}", "x" * 4_000)
        built.append(
            ImportedTurn(user, (Prose("Looking."), start, done, IterationEnd(ended), Prose("Done.")), started)
        )
    return session(*built)


def test_sessions_priced_by_their_own_pauses() -> None:
    meter = open_meter("bytes")
    quick = _timed(("one", 1_000.0, 1_030.0), ("two", 1_100.0, 1_130.0), ("three", 1_200.0, 1_230.0))
    paused = _timed(("one", 1_000.0, 1_030.0), ("two", 2_000.0, 2_030.0), ("three", 9_000.0, 9_030.0))
    for pricing in ("anthropic", "openai", "gemini"):
        five = CacheModel.of(pricing, "5m", system_tokens=5_000)  # type: ignore[arg-type]
        hour = CacheModel.of(pricing, "1h", system_tokens=5_000)  # type: ignore[arg-type]
        for imported, expired_5m, expired_1h in ((quick, 0, 0), (paused, 2, 1)):
            at_5m = analyze_session(imported, meter, five)  # type: ignore[arg-type]
            at_1h = analyze_session(imported, meter, hour)  # type: ignore[arg-type]
            assert at_5m.timed and at_1h.timed
            for name in STRATEGIES:
                assert at_5m.strategies[name].expired == expired_5m
                assert at_1h.strategies[name].expired == expired_1h
    untimed = analyze_session(
        session(turn("one", ("a", [call("c1", "x")])), turn("two")), meter, CacheModel.of("anthropic", "5m")
    )
    assert not untimed.timed and all(result.expired == 0 for result in untimed.strategies.values())
