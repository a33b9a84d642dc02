"""The cache model on the shared real sessions: request times from every format that logs them, the
earlier figures reproduced by the idealised cache, and the boundary policy against TurnMemory and the
full trace."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from turnmemory.analysis import Block, Meter, conversation, open_meter, requests, shared_prefix
from turnmemory.analysis._cost import Cache, CacheModel
from turnmemory.analysis.command import register
from turnmemory.transcripts import detect_format, discover, load_session

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "data" / "transcripts"
EXAMPLES = REPO / "examples"
EARLIER = (
    "full",
    "prose_only",
    "turnmemory",
    "turnmemory_target",
    "mask10",
    "anthropic_clear",
    "opencode_prune",
)
IDEALISED = ("--cache-ttl", "none", "--pricing", "anthropic", "--jobs", "1")
TIMED_FORMATS = {"claude-code", "codex", "opencode", "openhands", "mini-swe-agent"}


def _shared() -> Path:
    if not SHARED.is_dir():
        pytest.skip(f"shared transcripts not found at {SHARED}")
    return SHARED


def _sessions(root: Path, *, below: int | None = None) -> list[Path]:
    return [
        path
        for path in discover([root])
        if detect_format(path) is not None and (below is None or path.stat().st_size < below)
    ]


def _earlier_cost(made: Sequence[Sequence[Block]]) -> float:
    """The cost model of earlier versions, as it was written: each request reads what it shares with
    the one before at 0.1 and writes the rest at 1.25, in a cache that never expires."""
    cost, previous = 0.0, ()
    for blocks in made:
        read = shared_prefix(previous, blocks)
        cost += 0.1 * read + 1.25 * (sum(block.size for block in blocks) - read)
        previous = blocks  # type: ignore[assignment]
    return round(cost, 1)


def test_the_idealised_cache_at_anthropic_prices_reproduces_the_earlier_figures() -> None:
    paths = [*_sessions(EXAMPLES), *(_sessions(SHARED, below=150_000) if SHARED.is_dir() else [])]
    app = typer.Typer()
    app.callback()(lambda: None)
    register(app)
    result = CliRunner().invoke(
        app,
        ["analyze", *map(str, paths), *("--format", "json", "--tokenizer", "bytes"), *IDEALISED],
    )
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["cache"] == {
        "pricing": "anthropic",
        "ttl": "none",
        "ttl_seconds": None,
        "read": 0.1,
        "write": 1.25,
        "minimum_tokens": 0,
        "system_tokens": 0,
    }
    meter = open_meter("bytes")
    by_path = {entry["path"]: entry for entry in document["sessions"]}
    assert len(by_path) == len(paths)
    for path in paths:
        turns = conversation(load_session(path))
        entry = by_path[str(path)]
        for name in EARLIER:
            made = [request.blocks for request in requests(name, turns, meter.fresh())]  # type: ignore[arg-type]
            assert entry["strategies"][name]["cost"] == _earlier_cost(made), (path.name, name)
            assert entry["strategies"][name]["requests"] == len(made)


def test_every_format_that_logs_times_gives_its_requests_times() -> None:
    sent_by_format: dict[str, list[float | None]] = {}
    for path in _sessions(_shared()):
        session = load_session(path)
        sent = [iteration.sent for turn in conversation(session) for iteration in turn.iterations]
        known = [moment for moment in sent if moment is not None]
        assert known == sorted(known), path.name  # times only go forward
        assert all(1.5e9 < moment < 2e9 for moment in known), path.name  # 2017 to 2033
        if session.format == "aider":  # aider logs only when a chat started
            starts = sum(1 for line in path.open(encoding="utf-8") if line.startswith("# aider chat started"))
            assert len(known) <= starts, path.name
        sent_by_format.setdefault(session.format, []).extend(sent)
    for fmt, sent in sent_by_format.items():
        share = sum(moment is not None for moment in sent) / len(sent)
        if fmt in TIMED_FORMATS:
            assert share >= 0.9, (fmt, share)
        elif fmt == "swe-agent":
            assert share == 0  # SWE-agent trajectories hold no times
    assert set(sent_by_format) == {*TIMED_FORMATS, "swe-agent", "aider"}


def _costs(model: CacheModel, meter: Meter, path: Path) -> dict[str, float]:
    turns = conversation(load_session(path))
    session_meter = meter.fresh()
    costs = {}
    for name in ("full", "turnmemory", "turnmemory_auto"):
        cache = Cache(model, session_meter.tokens)
        for request in requests(name, turns, session_meter, model):  # type: ignore[arg-type]
            cache.send(request.blocks, request.at)
        costs[name] = cache.bill.cost
    return costs


def test_turnmemory_when_it_pays_costs_less_than_turnmemory_and_never_more_than_the_full_trace() -> None:
    # Single-turn sessions have no boundary: all three strategies send the same requests there.
    paths = [path for path in _sessions(_shared()) if len(load_session(path).turns) >= 2]
    model, meter = CacheModel.of("anthropic", "5m"), open_meter("o200k")
    total = {"full": 0.0, "turnmemory": 0.0, "turnmemory_auto": 0.0}
    dearer = []
    for path in paths:
        costs = _costs(model, meter, path)
        for name, cost in costs.items():
            total[name] += cost
        if costs["turnmemory_auto"] > costs["full"] + 1e-6:
            dearer.append(path.name)
    assert total["turnmemory_auto"] < total["turnmemory"] < total["full"], total
    assert dearer == []
