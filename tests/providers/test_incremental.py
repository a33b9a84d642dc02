"""The incremental formatters build the same requests as a cold ``to_request``, turn after turn."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.providers.strategies import message, native_pending, pending_iterations

import turnmemory as tm
from turnmemory import providers

PROVIDERS = providers.PROVIDERS


def module(name: str) -> Any:
    return getattr(providers, name)


def dumps(request: dict[str, Any]) -> str:
    return json.dumps(request, sort_keys=False, ensure_ascii=False)


@pytest.mark.parametrize("provider", PROVIDERS)
@settings(max_examples=40, deadline=None)
@given(
    turns=st.lists(st.lists(message, min_size=1, max_size=3), min_size=1, max_size=6),
    iterations=pending_iterations(),
    with_pending=st.lists(st.booleans(), min_size=6, max_size=6),
    options=st.sampled_from([{}, {"arguments": "target"}, {"id_style": "compact"}]),
)
def test_growing_conversation_matches_cold_builds(
    provider: str,
    turns: list[list[tm.Message]],
    iterations: Any,
    with_pending: list[bool],
    options: dict[str, Any],
) -> None:
    formatter = module(provider).Formatter()
    history: list[tm.Message] = [tm.Message("system", "S")]
    pending = native_pending(provider, iterations)
    for n, added in enumerate(turns):
        history = [*history, *added, tm.Message("user", f"question {n}")]
        use = pending if with_pending[n] else None
        built = formatter.to_request(history, pending=use, **options)
        cold = module(provider).to_request(history, pending=use, **options)
        assert dumps(built) == dumps(cold)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_changed_history_is_not_served_from_the_cache(provider: str) -> None:
    memory = tm.TurnMemory((tm.ToolActivity(3, "read_file", target="a.py"),))
    first = [
        tm.Message("user", "go"),
        tm.Message("assistant", "Ok. done", memory),
        tm.Message("user", "more"),
    ]
    formatter = module(provider).Formatter()
    formatter.to_request(first)
    # The same positions, other objects and other content: a rewritten history (for example a compaction).
    rewritten = [
        tm.Message("user", "go"),
        tm.Message("assistant", "Different prose"),
        tm.Message("user", "more"),
    ]
    assert dumps(formatter.to_request(rewritten)) == dumps(module(provider).to_request(rewritten))
    shorter = rewritten[:1]
    assert dumps(formatter.to_request(shorter)) == dumps(module(provider).to_request(shorter))


@pytest.mark.parametrize("provider", PROVIDERS)
def test_results_of_earlier_requests_stay_as_they_were(provider: str) -> None:
    memory = tm.TurnMemory((tm.ToolActivity(3, "bash", target="make", failed_command="make", exit_code=2),))
    history = [
        tm.Message("user", "go"),
        tm.Message("assistant", "Ok. done ", memory),
        tm.Message("user", "more"),
    ]
    formatter = module(provider).Formatter()
    first = formatter.to_request(history)
    snapshot = dumps(first)
    longer = [*history, tm.Message("assistant", "second answer"), tm.Message("user", "and more")]
    formatter.to_request(longer)
    formatter.to_request(longer, pending=native_pending(provider, [("pending text", [])]))
    assert dumps(first) == snapshot


@pytest.mark.parametrize("provider", PROVIDERS)
def test_pending_ids_that_look_synthetic_bypass_the_cache(provider: str) -> None:
    from tests.providers.strategies import PendingCall

    memory = tm.TurnMemory((tm.ToolActivity(0, "read_file"),))
    history = [tm.Message("user", "go"), tm.Message("assistant", "x", memory), tm.Message("user", "next")]
    clash = native_pending(provider, [("t", [PendingCall("historical_1_0", "bash")])])
    formatter = module(provider).Formatter()
    formatter.to_request(history)
    assert dumps(formatter.to_request(history, pending=clash)) == dumps(
        module(provider).to_request(history, pending=clash)
    )


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_history_kept_in_a_tuple_or_changed_in_place_is_served_right(provider: str) -> None:
    memory = tm.TurnMemory((tm.ToolActivity(1, "grep", target="TODO"),))
    history = [tm.Message("user", "go"), tm.Message("assistant", "found", memory), tm.Message("user", "next")]
    formatter = module(provider).Formatter()
    formatter.to_request(tuple(history))
    longer = (*history, tm.Message("assistant", "more"), tm.Message("user", "last"))
    assert dumps(formatter.to_request(longer)) == dumps(module(provider).to_request(longer))
    edited = list(longer)
    edited[1] = tm.Message("assistant", "rewritten in place")
    assert dumps(formatter.to_request(edited)) == dumps(module(provider).to_request(edited))
