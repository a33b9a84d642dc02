from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.analysis._sessions import call, session, turn

from turnmemory import Message
from turnmemory.analysis import (
    STRATEGIES,
    analyze_session,
    build_report,
    conversation,
    open_meter,
    render_markdown,
    report_json,
    requests,
)
from turnmemory.providers import openai_chat
from turnmemory.transcripts import discover, load_session, replay_turn

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "data" / "transcripts"


def _example() -> object:
    return session(
        turn("fix it", ("Running the tests.", [call("c1", "FAILED\n" * 40)]), ("Fixed.", [])),
        turn("and now?", ("Checking.", [call("c2", "ok\n" * 30)]), ("All good.", [])),
        turn("thanks"),
    )


def test_turnmemory_history_is_the_providers_chat_request() -> None:
    meter = open_meter("bytes")
    imported = _example()
    turns = conversation(imported)  # type: ignore[arg-type]
    first_of_turn_3 = next(r for r in requests("turnmemory", turns, meter) if r.turn == 2)
    memory = [replay_turn(t, "/w")[0] for t in imported.turns[:2]]  # type: ignore[attr-defined]
    history = [
        Message("user", "fix it"),
        memory[0],
        Message("user", "and now?"),
        memory[1],
        Message("user", "thanks"),
    ]
    expected = openai_chat.to_request(history)["messages"]
    assert [json.loads(block.text) for block in first_of_turn_3.blocks] == expected
    assert memory[0].activities[0].tool == "bash"


def test_strategies_order_on_a_small_session() -> None:
    report = analyze_session(_example(), open_meter("bytes"))  # type: ignore[arg-type]
    carried = {name: report.strategies[name].carried for name in STRATEGIES}
    assert carried["prose_only"] < carried["turnmemory"] < carried["full"]
    assert carried["turnmemory"] <= carried["turnmemory_target"] < carried["full"]
    assert (
        carried["anthropic_clear"] == carried["opencode_prune"] == carried["full"]
    )  # far below their thresholds


def test_json_output_has_the_contract_keys() -> None:
    meter = open_meter("bytes")
    report = build_report([analyze_session(_example(), meter)], meter)  # type: ignore[arg-type]
    document = report_json(report)
    assert document["unit"] == "bytes"
    (entry,) = document["sessions"]
    assert {"path", "format", "user_turns", "tool_calls", "strategies"} <= set(entry)
    assert (entry["user_turns"], entry["tool_calls"]) == (3, 2)
    assert list(entry["strategies"]) == list(STRATEGIES) == list(document["total"])
    for values in (*entry["strategies"].values(), *document["total"].values()):
        assert {"carried", "peak", "cost"} <= set(values)
    assert entry["strategies"]["full"]["tool_share_removed"] == 0
    assert entry["strategies"]["prose_only"]["tool_share_removed"] == 1
    assert len(entry["strategies"]["turnmemory"]["per_turn"]) == 3
    json.dumps(document)


def test_markdown_renders_the_totals_and_multi_turn_sessions() -> None:
    meter = open_meter("bytes")
    report = build_report([analyze_session(_example(), meter)], meter)  # type: ignore[arg-type]
    text = render_markdown(report)
    assert "| strategy | carried | vs full | peak | cost | vs full | tool traffic removed |" in text
    assert text.count("| TurnMemory |") == 2
    assert "**mem.jsonl** (test, 3 user turns, 2 tool calls)" in text


def test_on_real_sessions_turnmemory_carries_the_least_but_prose() -> None:
    if not SHARED.is_dir():
        pytest.skip(f"shared transcripts not found at {SHARED}")
    meter = open_meter("bytes")
    paths = [p for p in discover([SHARED / "claude-code", SHARED / "codex"]) if p.stat().st_size < 1_000_000]
    report = build_report([analyze_session(load_session(p), meter) for p in paths], meter)
    total = report.total
    others = [name for name in STRATEGIES if name not in ("prose_only", "turnmemory")]
    assert all(total["turnmemory"].carried < total[name].carried for name in others)
    assert total["prose_only"].carried < total["turnmemory"].carried
