"""Token accounting (estimate, calibration, context windows) and the reducer on every wire's native items."""

from __future__ import annotations

import copy
import importlib
import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from turnmemory.llm import CLEARED, ContextLimits, ToolResult, context_window, open_counter
from turnmemory.llm._reduce import Reducer
from turnmemory.llm._tokens import Accounting
from turnmemory.memory import Message
from turnmemory.providers._read import Piece
from turnmemory.providers._tools import Call
from turnmemory.providers.check import check_request

PROVIDERS = ("anthropic", "openai_chat", "openai_responses", "gemini", "bedrock")


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("claude-sonnet-4-6", 200_000),
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", 200_000),
        ("anthropic.claude-3-5-haiku-20241022-v1:0", 200_000),
        ("gpt-4.1", 1_047_576),
        ("gpt-4.1-mini", 1_047_576),
        ("gpt-5", 400_000),
        ("gpt-5-mini-2025-08-07", 400_000),
        ("gpt-4o", 128_000),
        ("gpt-4o-mini", 128_000),
        ("gpt-4", 8_192),
        ("gemini-2.5-flash", 1_048_576),
        ("models/gemini-2.5-pro", 1_048_576),
        ("meta-llama/Llama-3.1-8B-Instruct", 131_072),
        ("meta.llama3-1-70b-instruct-v1:0", 128_000),
        ("Qwen/Qwen3-Coder-30B-A3B-Instruct", 262_144),
        ("qwen2.5-coder:7b", 32_768),
        ("mistralai/Mistral-7B-Instruct-v0.3", 32_768),
        ("some-local-model", 128_000),
        ("", 128_000),
    ],
)
def test_context_windows_by_longest_prefix(model: str, window: int) -> None:
    assert context_window(model) == window


def test_limits_reserve_the_output_and_a_margin() -> None:
    limits = ContextLimits.of("gpt-4o", max_tokens=4000)
    assert (limits.window, limits.reserve, limits.clear_at_least) == (128_000, 4000, 25_600)
    assert limits.budget == 128_000 - 4000 - 6400
    assert ContextLimits.of("x", window=8000).reserve == 2000  # at most a quarter of a small window
    for bad in ({"window": 100}, {"window": 8000, "reserve": 5000}, {"window": 8000, "clear_at_least": -1}):
        with pytest.raises(ValueError):
            ContextLimits.of("x", **bad)


def test_the_byte_estimate_is_labelled_and_conservative(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    counter = open_counter()
    assert counter.unit == "bytes" and counter.note and "bytes/3" in counter.note
    text = json.dumps({"content": "def f(x):\n    return x + 1\n" * 50})
    assert counter.text(text) == -(-len(text.encode()) // 3)
    assert open_counter("bytes").note is None
    with pytest.raises(ValueError):
        open_counter("words")  # type: ignore[arg-type]


def test_o200k_is_used_when_its_file_is_available_offline() -> None:
    counter = open_counter("o200k")
    if counter.unit != "o200k":
        pytest.skip(f"o200k unavailable here: {counter.note}")
    assert counter.text("hello world") == 2
    assert counter.value({"a": 1}) == counter.text('{"a":1}')


@settings(max_examples=100, deadline=None)
@given(st.integers(1024, 10**6), st.floats(0.01, 100))
def test_calibration_takes_plausible_ratios_only(raw: int, ratio: float) -> None:
    accounting = Accounting(open_counter("bytes"), ContextLimits.of("x"))
    reported = round(raw * ratio)
    accounting.observe(raw, reported)
    expected = reported / raw if 0.5 <= reported / raw <= 2.0 else 1.0
    assert accounting.ratio == expected
    assert accounting.scaled(raw) == math.ceil(raw * expected)
    small = Accounting(open_counter("bytes"), ContextLimits.of("x"))
    small.observe(100, 150)  # too small to say anything
    assert small.ratio == 1.0


# -- the reducer on each wire's native items --------------------------------------------------------


def wire_of(provider: str) -> Any:
    return importlib.import_module(f"turnmemory.providers.{provider}")  # what the reducer talks to


def assistant(provider: str, text: str, calls: list[Call]) -> list[dict[str, Any]]:
    """The assistant item(s) a response with ``text`` and ``calls`` leaves in the trace."""
    if provider == "anthropic":
        blocks = [{"type": "text", "text": text}]
        blocks += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in calls]
        return [{"role": "assistant", "content": blocks}]
    if provider == "openai_chat":
        tool_calls = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
            }
            for c in calls
        ]
        return [{"role": "assistant", "content": text, "tool_calls": tool_calls}]
    if provider == "openai_responses":
        message = {
            "type": "message",
            "role": "assistant",
            "id": f"msg_{calls[0].id}",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
        return [
            message,
            *(
                {
                    "type": "function_call",
                    "id": f"fc_{c.id}",
                    "call_id": c.id,
                    "name": c.name,
                    "arguments": json.dumps(c.arguments),
                    "status": "completed",
                }
                for c in calls
            ),
        ]
    if provider == "gemini":
        parts = [
            {"text": text},
            *({"function_call": {"id": c.id, "name": c.name, "args": c.arguments}} for c in calls),
        ]
        return [{"role": "model", "parts": parts}]
    content = [
        {"text": text},
        *({"toolUse": {"toolUseId": c.id, "name": c.name, "input": c.arguments}} for c in calls),
    ]
    return [{"role": "assistant", "content": content}]


def failed(result: Piece) -> bool:
    """Whether ``result`` is marked failed: by the wire, or by a folded record's status (Chat Completions
    has no error flag)."""
    return result.error or result.text == '{"status":"error"}'


rounds = st.lists(
    st.lists(st.tuples(st.integers(0, 3000), st.booleans(), st.integers(0, 3000)), min_size=1, max_size=4),
    min_size=1,
    max_size=8,
)


@pytest.mark.parametrize("provider", PROVIDERS)
@settings(max_examples=15, deadline=None)
@given(script=rounds, budget=st.integers(1500, 12_000))
def test_reduction_keeps_ids_pairing_names_and_status(
    provider: str, script: list[list[tuple[int, bool, int]]], budget: int
) -> None:
    wire = wire_of(provider)
    provider_module = importlib.import_module(f"turnmemory.providers.{provider}")
    trace: list[dict[str, Any]] = []
    for r, batch in enumerate(script):
        calls = [
            Call(id=f"call_{r}_{n}", name="write_file", arguments={"path": f"f{r}{n}", "content": "x " * arg})
            for n, (_, _, arg) in enumerate(batch)
        ]
        results = [
            ToolResult(error="failed " * size) if error else ToolResult(output="line " * size)
            for size, error, _ in batch
        ]
        trace += [*assistant(provider, f"Round {r}.", calls), *wire.tool_results(calls, results)]
    base = provider_module.to_request([Message(role="user", content="Go.")])
    key = wire.ITEMS
    window = budget * 2
    reducer = Reducer(
        wire, Accounting(open_counter(), ContextLimits(window=window, reserve=0, clear_at_least=budget // 4))
    )
    original = copy.deepcopy(trace)
    raw = reducer.measure({**base, key: [*base[key], *trace]}, key, [])
    reduction = reducer.reduce(raw, [], trace)

    assert trace == original  # never mutated in place
    before, after = wire.pieces(original), wire.pieces(reduction.items)
    calls = [p for p in after if p.kind == "call"]
    results = [p for p in after if p.kind == "result"]
    # Every call stays, in order, with its name, and its one result with its error status; a folded
    # call gets a new id, shared with its result.
    assert [p.name for p in calls] == [p.name for p in before if p.kind == "call"]
    assert [failed(r) for r in results] == [p.error for p in before if p.kind == "result"]
    assert all(r.call_id in ("", c.call_id) for c, r in zip(calls, results, strict=True))
    assert len({c.call_id for c in calls}) == len(calls)
    old_results = [p for p in before if p.kind == "result"]
    for old, new in zip(old_results, results, strict=True):
        if new.text != old.text:
            # A cleared output says what to do; a folded one is the record's status placeholder.
            noted = CLEARED in new.text and ("again" in new.text or "less of it" in new.text)
            assert noted or json.loads(new.text)["status"] == ("error" if old.error else "success")
        else:
            assert new.call_id == old.call_id
    request = {**base, key: [*base[key], *reduction.items]}
    assert check_request(provider, request) == []
    if reduction.fits:
        assert reducer.fits(reducer.measure(request, key, []))
    # A second reduction of the reduced trace never restores anything.
    again = reducer.reduce(reducer.measure(request, key, []), [], reduction.items)
    final = [p for p in wire.pieces(again.items) if p.kind == "result"]
    assert all(
        n.text != o.text for o, a, n in zip(old_results, results, final, strict=True) if a.text != o.text
    )
