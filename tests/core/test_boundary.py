"""The boundary policy: when compacting at a turn boundary pays, checked against the analysis' own
prompt-cache model (an independent computation of the same costs)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from turnmemory import boundary
from turnmemory.analysis import Block
from turnmemory.analysis._cost import Cache, CacheModel
from turnmemory.boundary import Boundary, should_compact

SIZES = st.integers(min_value=1, max_value=200_000)
READ = st.sampled_from([0.0, 0.05, 0.1, 0.25, 0.5])
WRITE = st.sampled_from([1.0, 1.25, 2.0])
IDLE = st.one_of(st.none(), st.floats(min_value=0, max_value=10_000, allow_nan=False))
TTL = st.one_of(st.none(), st.sampled_from([300.0, 3600.0]))


@st.composite
def boundaries(draw: st.DrawFn) -> Boundary:
    return Boundary(
        raw=draw(SIZES),
        compacted=draw(SIZES),
        idle=draw(IDLE),
        ttl=draw(TTL),
        requests_ahead=draw(st.integers(min_value=1, max_value=60)),
        read=draw(READ),
        write=draw(WRITE),
    )


def _turn_cost(b: Boundary, compact: bool) -> float:
    """The coming turn's requests priced by the analysis' cache, after the request that sent the raw
    turns (``prefix`` stands for the compacted history before them, ``u`` for the new user message,
    ``x<n>`` for what each request of the turn adds)."""
    model = CacheModel(read=b.read, write=b.write, ttl=b.ttl)
    cache = Cache(model)
    prefix, raw, compacted = Block("prefix", 1_000), Block("raw", b.raw), Block("compacted", b.compacted)
    cache.send((prefix, raw), at=0.0 if b.idle is not None else None)
    history = [prefix, compacted if compact else raw, Block("u", 10)]
    cost = 0.0
    for number in range(int(b.requests_ahead)):
        at = None if b.idle is None else b.idle + number
        cost += cache.send((*history, *(Block(f"x{n}", 50) for n in range(number))), at)
    return cost


@settings(max_examples=300, deadline=None)
@given(boundaries())
def test_it_compacts_exactly_when_the_cache_model_says_compacting_is_cheaper(b: Boundary) -> None:
    cheaper = _turn_cost(b, compact=True) < _turn_cost(b, compact=False) - 1e-6 * (b.raw + b.compacted)
    dearer = _turn_cost(b, compact=True) > _turn_cost(b, compact=False) + 1e-6 * (b.raw + b.compacted)
    if cheaper:
        assert should_compact(b, "when_it_pays")
    if dearer:
        assert not should_compact(b, "when_it_pays")


@given(boundaries())
def test_the_spec_compacts_at_every_boundary(b: Boundary) -> None:
    assert should_compact(b) and should_compact(b, "every_turn")
    assert boundary.DEFAULT_POLICY == "every_turn"


@given(boundaries())
def test_nothing_smaller_nothing_compacted(b: Boundary) -> None:
    if b.compacted >= b.raw:
        assert not should_compact(b, "when_it_pays")


@given(boundaries())
def test_a_cold_cache_compacts_whatever_is_smaller(b: Boundary) -> None:
    cold = Boundary(b.raw, b.compacted, idle=4000.0, ttl=300.0, requests_ahead=b.requests_ahead)
    assert cold.cold
    assert should_compact(cold, "when_it_pays") == (b.compacted < b.raw)


@given(boundaries(), st.integers(min_value=0, max_value=100), st.integers(min_value=0, max_value=100_000))
def test_more_requests_ahead_or_a_larger_raw_trace_never_turn_a_compaction_into_a_deferral(
    b: Boundary, more_requests: int, more_raw: int
) -> None:
    if should_compact(b, "when_it_pays"):
        longer = Boundary(
            b.raw, b.compacted, b.idle, b.ttl, b.requests_ahead + more_requests, b.read, b.write
        )
        larger = Boundary(b.raw + more_raw, b.compacted, b.idle, b.ttl, b.requests_ahead, b.read, b.write)
        assert should_compact(longer, "when_it_pays") and should_compact(larger, "when_it_pays")


def test_cold_needs_both_a_pause_and_a_lifetime() -> None:
    assert Boundary(1, 1, idle=301.0, ttl=300.0).cold
    assert not Boundary(1, 1, idle=300.0, ttl=300.0).cold
    assert not Boundary(1, 1, idle=None, ttl=300.0).cold
    assert not Boundary(1, 1, idle=10_000.0, ttl=None).cold


def test_the_example_of_the_docstring() -> None:
    # 48k raw, 6k compacted, a warm cache, 12 requests ahead: writing 6k (7,500) and reading 6k on
    # 11 requests (6,600) beats reading 48k on 12 (57,600).
    assert should_compact(
        Boundary(raw=48_000, compacted=6_000, idle=40.0, ttl=300.0, requests_ahead=12.0), "when_it_pays"
    )
    # One request ahead: writing 6k (7,500) costs more than reading 48k once (4,800).
    assert not should_compact(Boundary(raw=48_000, compacted=6_000, requests_ahead=1.0), "when_it_pays")


def test_the_module_imports_only_the_standard_library() -> None:
    tree = ast.parse(Path(boundary.__file__).read_text())
    imported = {
        (node.module or "").split(".")[0] if isinstance(node, ast.ImportFrom) else alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert imported and imported <= set(sys.stdlib_module_names) | {"__future__"}
