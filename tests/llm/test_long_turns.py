"""Long sequential turns (one call per response) through the real SDK clients and the fake server.

A turn of hundreds or a thousand calls in a 60k window must end ``done`` on every provider: every
request valid for ``check_request`` and within the window, every call paired with its one result,
and every result carried in full by the request after its call (the model read it before anything
cleared it). The earliest iterations fold into TurnMemory batches, a run at a time, so the prefix
of the request changes rarely; the same holds for the pending state an incomplete turn leaves.
"""

from __future__ import annotations

import hashlib
import itertools
import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import pytest

from turnmemory._text import compact_json
from turnmemory.llm import CLEARED, Client, Event, ToolResult, ToolSpec, open_counter
from turnmemory.memory import Message
from turnmemory.providers import PROVIDERS, wire
from turnmemory.providers.check import check_request
from turnmemory.testing import FakeProviderServer, Reply, ToolCall

READ = ToolSpec(
    "read_file",
    "Read a file.",
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)
WINDOW = 60_000
RESERVE = 4096
FOLDED = compact_json({"status": "success"})


def body(n: int, lines: int = 40) -> str:
    """A distinct file (about 1.2 KB of 40 lines), its first line a marker to find its result by."""
    return "\n".join([f"marker-{n:05d}", *(f"value_{n}_{j} = compute({j}, {n})" for j in range(lines))])


class Reader:
    """Answers each ``read_file`` with the next distinct body."""

    def __init__(self, lines: int = 40) -> None:
        self.count = itertools.count()
        self.lines = lines

    def __call__(self, call_id: str, name: str, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult(output=body(next(self.count), self.lines))


def sequential(calls: int, start: int = 0) -> list[Reply]:
    """``calls`` responses of one call each, then an answer."""
    return [
        *(
            Reply(tool_calls=[ToolCall("read_file", {"path": f"m{k}.py"})])
            for k in range(start, start + calls)
        ),
        Reply(text="Everything is read."),
    ]


class Sizes:
    """Token counts of request bodies, item by item, each distinct item counted once."""

    def __init__(self) -> None:
        self.counter = open_counter()
        self.seen: dict[str, int] = {}

    def of(self, value: Any) -> int:
        text = compact_json(value)
        found = self.seen.get(text)
        if found is None:
            found = self.seen[text] = self.counter.text(text)
        return found

    def body(self, provider: str, request: dict[str, Any]) -> int:
        key = wire(provider).ITEMS
        rest = {k: v for k, v in request.items() if k != key}
        return self.of(rest) + sum(self.of(item) for item in request[key])


def check_turn(
    provider: str, bodies: Sequence[dict[str, Any]], first: int, window: int = WINDOW - RESERVE
) -> list[list[Any]]:
    """Every request of a sequential turn valid, within the window, its calls paired, and the result of
    each call (marker ``first + k``) in full in the request after it; the requests' item lists."""
    w, sizes = wire(provider), Sizes()
    views = []
    for k, request in enumerate(bodies):
        assert check_request(provider, request) == [], k
        assert sizes.body(provider, request) <= window, k
        pieces = [piece for piece in w.pieces(request[w.ITEMS]) if piece.kind in ("call", "result")]
        calls = [piece for piece in pieces if piece.kind == "call"]
        results = [piece for piece in pieces if piece.kind == "result"]
        assert len(calls) == len(results) and len({c.call_id for c in calls}) == len(calls)
        assert {r.call_id for r in results} <= {c.call_id for c in calls} | {""}
        if k:
            newest = results[-1].text
            assert f"marker-{first + k - 1:05d}" in newest and CLEARED not in newest, k
        views.append(request[w.ITEMS])
    return views


def rewrites(provider: str, views: Sequence[list[Any]]) -> int:
    """How many requests do not extend the one before (cache markers aside, which move by design)."""

    def plain(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items() if k not in ("cache_control",)}
        if isinstance(value, list):
            return [plain(v) for v in value if not (isinstance(v, dict) and "cachePoint" in v)]
        return value

    cleaned = [plain(view) for view in views]
    return sum(1 for before, after in itertools.pairwise(cleaned) if after[: len(before) - 1] != before[:-1])


@pytest.fixture
def sequential_client(make_client: Callable[..., Client]) -> Callable[..., Client]:
    def make(provider: str, **options: Any) -> Client:
        settings = {"context_window": WINDOW, "context_reserve": RESERVE, **options}
        return make_client(provider, attempts=1, **settings)

    return make


def run(client: Client, history: list[Message], prompt: str, reader: Reader | None = None) -> list[Event]:
    return list(client.run_turn(history, prompt, tools=[READ], execute=reader or Reader()))


def folded_cost(provider: str, items: list[Any]) -> float:
    """Tokens per folded call of the items that hold folded calls: a run of iterations folds into one
    batch, far less than a response and a result message per call (about 90 tokens)."""
    pieces = [p for p in wire(provider).pieces(items) if p.kind in ("call", "result")]
    folded = {p.call_id for p in pieces if p.kind == "result" and p.text == FOLDED}
    held = {p.item for p in pieces if p.call_id in folded}
    counter = open_counter()
    return sum(counter.value(items[i]) for i in held) / len(folded)


def folded_calls(provider: str, items: list[Any]) -> int:
    return sum(1 for p in wire(provider).pieces(items) if p.kind == "result" and p.text == FOLDED)


@pytest.mark.skipif(
    os.environ.get("TURNMEMORY_LONG_TESTS") != "1",
    reason="a thousand requests of up to 50k tokens each take a minute per provider: set TURNMEMORY_LONG_TESTS=1",
)
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_thousand_sequential_calls_end_done_in_a_60k_window(
    provider: str, server: FakeProviderServer, sequential_client: Callable[..., Client]
) -> None:
    calls = 1000
    server.push(*sequential(calls))
    events = run(sequential_client(provider), [], "Read every module.")

    assert events[-1].kind == "done", events[-1]
    assert sum(1 for event in events if event.kind == "tool_end") == calls
    bodies = [request.body for request in server.requests]
    assert len(bodies) == calls + 1
    views = check_turn(provider, bodies, 0)
    assert folded_calls(provider, views[-1]) > calls // 2
    assert folded_cost(provider, views[-1]) < 60
    assert rewrites(provider, views) <= len(bodies) // 5
    reduced = [event for event in events if event.kind == "reduced"]
    assert any("folded" in event.text for event in reduced)
    assert not any("does not fit" in compact_json(body) for body in bodies)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_pending_state_of_an_incomplete_turn_folds_the_same_way(
    provider: str, server: FakeProviderServer, sequential_client: Callable[..., Client]
) -> None:
    # A small window and small results (the property does not depend on their size), so that the
    # cleared pending state no longer fits after some 60 calls.
    small = {"context_window": 6000, "context_reserve": 512, "clear_at_least": 1000}
    client, reader = sequential_client(provider, max_tool_turns=30, **small), Reader(lines=8)
    server.push(*sequential(30)[:-1])
    first = run(client, [], "Read every module.", reader)
    assert first[-1].kind == "incomplete" and first[-1].reason == "tool_limit"
    assert client.pending is not None

    client.turn_limits = replace(client.turn_limits, max_tool_turns=10_000)
    server.reset()
    server.push(*sequential(60, start=30))
    second = run(client, [Message(role="user", content="Read every module.")], "Go on.", reader)

    assert second[-1].kind == "done", second[-1]
    bodies = [request.body for request in server.requests]
    views = check_turn(provider, bodies, 30, window=6000 - 512)
    w = wire(provider)
    last = views[-1]
    prompt = next(i for i, item in enumerate(last) if "Go on." in compact_json(item))
    before = [p for p in w.pieces(last[: prompt + 1]) if p.kind == "result"]  # results may share its item
    # Every call of the pending state is still there, before the prompt, and folded by now; its
    # batches stay before the prompt and later requests extend them.
    assert len(before) == 30 and all(p.text == FOLDED for p in before)
    assert folded_cost(provider, last) < 60
    # Only a reduction changes what was sent before.
    assert rewrites(provider, views) <= sum(1 for event in second if event.kind == "reduced")
    assert client.pending is None


def test_a_round_that_fits_is_never_cleared_unread(
    server: FakeProviderServer, sequential_client: Callable[..., Client]
) -> None:
    """The rest of the turn leaves a round no room, though it fits a window by itself: the turn ends
    ``context_overflow`` with its work kept, instead of clearing what the model has not read."""
    # Assistant prose is never cleared nor folded; long hex words stream as few deltas.
    prose = " ".join(hashlib.sha256(str(n).encode()).hexdigest() * 8 for n in range(260))
    server.push(Reply(text=prose, tool_calls=[ToolCall("read_file", {"path": "a.py"})]), Reply(text="Read."))
    client = sequential_client("anthropic")
    events = run(client, [], "Read.")

    final = events[-1]
    assert final.kind == "incomplete" and final.reason == "context_overflow", final
    assert len(server.requests) == 1
    assert client.pending is not None and "marker-00000" in compact_json(client.pending)
    assert CLEARED not in compact_json(client.pending)
    server.reset()
