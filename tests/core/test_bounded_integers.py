"""Persisted integers are bounded at load: an exit code or offset beyond 64 bits never reaches a request.

Python refuses to turn an integer of more than 4,300 digits into text, so one such ``exit_code`` in a
session file used to load fine and then make every ``to_request`` (a ``json.dumps``) raise.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import turnmemory as tm
from turnmemory import providers

INT64 = range(-(2**63), 2**63)
HUGE = [10**5000, -(10**5000), 2**63, -(2**63) - 1, 2**64, 10**4301]
HUGE_IDS = ["10^5000", "-10^5000", "2^63", "-2^63-1", "2^64", "10^4301"]
integers = st.integers() | st.sampled_from(HUGE) | st.integers(-(2**70), 2**70)


def stored(exit_code: Any = 1, text_offset: Any = 5) -> dict[str, Any]:
    activity = {"text_offset": text_offset, "tool": "bash", "failed_command": "make", "exit_code": exit_code}
    return {"role": "assistant", "content": "Build. Done.", "turn_memory": {"tool_activity": [activity]}}


@pytest.mark.parametrize("provider", providers.PROVIDERS)
@pytest.mark.parametrize("exit_code", HUGE, ids=HUGE_IDS)
def test_a_huge_exit_code_is_dropped_and_every_request_still_builds(provider: str, exit_code: int) -> None:
    message = tm.Message.from_dict(stored(exit_code=exit_code))
    (activity,) = message.activities
    assert activity.exit_code is None and activity.failed_command == "make"
    history = [tm.Message("user", "go"), message, tm.Message("user", "next")]
    request = getattr(providers, provider).to_request(history)
    assert "make" in json.dumps(request) and "exit_code" not in json.dumps(request)


@pytest.mark.parametrize("offset", [10**5000, 2**63, 2**64], ids=["10^5000", "2^63", "2^64"])
def test_a_huge_offset_drops_the_activity_even_without_its_prose(offset: int) -> None:
    memory = tm.TurnMemory.from_dict(stored(text_offset=offset)["turn_memory"])
    assert memory.tool_activity == ()
    json.dumps(memory.to_dict())


def test_an_activity_built_in_code_keeps_no_exit_code_beyond_64_bits() -> None:
    assert tm.ToolActivity(0, "bash", exit_code=2**63).exit_code is None
    assert tm.ToolActivity(0, "bash", exit_code=-(2**63)).exit_code == -(2**63)
    assert tm.ToolActivity(0, "bash", exit_code=2**63 - 1).exit_code == 2**63 - 1


@settings(max_examples=100, deadline=None)
@given(exit_code=integers, text_offset=integers)
def test_any_integer_loads_bounded_and_round_trips(exit_code: int, text_offset: int) -> None:
    memory = tm.TurnMemory.from_dict(stored(exit_code, text_offset)["turn_memory"])
    if text_offset < 0 or text_offset not in INT64:
        assert memory.tool_activity == ()
        return
    (activity,) = memory.tool_activity
    assert activity.exit_code == (exit_code if exit_code in INT64 else None)
    text = json.dumps(memory.to_dict())
    assert tm.TurnMemory.from_dict(json.loads(text)) == memory
