"""The boundary policy of compact() and Compactor: when completed turns give way to their TurnMemory,
decided from what a message list lets us know (the pause since the previous call, the sizes of the raw
and the compacted turns, the longest turn so far)."""

from __future__ import annotations

import itertools
import json
import time
from typing import Any

import pytest

from turnmemory.integrations import Compactor, compact

OUTPUT = "RAW-OUTPUT " * 400  # a long tool result: compacting it saves much


def _turn(n: int, output: str, requests: int = 1) -> list[dict[str, Any]]:
    """A user turn of OpenAI Chat messages: ``requests - 1`` tool rounds, then the answer."""
    out: list[dict[str, Any]] = [{"role": "user", "content": f"task {n}"}]
    for k in range(requests - 1):
        call = f"c{n}_{k}"
        function = {"name": "read_file", "arguments": json.dumps({"path": f"/ws/f{k}.py"})}
        out.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": call, "type": "function", "function": function}],
            }
        )
        out.append({"role": "tool", "tool_call_id": call, "content": output})
    out.append({"role": "assistant", "content": f"Done with {n}."})
    return out


def _raw(messages: list[dict[str, Any]]) -> bool:
    return "RAW-OUTPUT" in json.dumps(messages)


def test_a_warm_cache_defers_a_small_turn_and_a_cold_one_compacts_it() -> None:
    """The same small turn (its record a little smaller than its trace): kept raw while the cache is
    warm, compacted once the pause before the new user message outlived the cache."""
    small = "ok " * 20
    done = [*_turn(1, small, requests=3), {"role": "user", "content": "next"}]
    assert compact(done) != done
    for ttl, pause, expected in ((None, 0.0, done), (60.0, 0.0, done), (0.01, 0.03, compact(done))):
        compactor = Compactor(boundary="when_it_pays", cache_ttl=ttl)
        compactor.compact(done[:-2])  # the turn's last request (its tool result just in)
        time.sleep(pause)
        assert compactor.compact(done) == expected, ttl


def test_a_long_turn_ahead_pays_for_compacting_a_large_one_at_once() -> None:
    history = [*_turn(1, OUTPUT, requests=6), {"role": "user", "content": "next"}]
    out = compact(history, boundary="when_it_pays")  # no pause known: the saving decides
    assert out == compact(history) and not _raw(out)


def test_deferred_turns_go_together_once_it_pays_and_the_prefix_holds_until_then() -> None:
    compactor = Compactor(boundary="when_it_pays", cache_ttl=0.5)
    history: list[dict[str, Any]] = []
    sent = []
    for n in range(1, 6):
        history = [*history, *_turn(n, "RAW-OUTPUT " * 8, requests=2)]
        if n == 5:
            time.sleep(0.6)  # a pause before the fifth prompt: the cache has gone cold
        request = [*history, {"role": "user", "content": f"after {n}"}]
        sent.append((request, compactor.compact(request)))
    for (request, out), (_, later) in itertools.pairwise(sent[:4]):
        assert out == request and later[: len(out) - 1] == out[:-1]  # sent as given, each extending the last
    request, out = sent[4]
    assert out == compact(request) and not _raw(out)  # all five at once


def test_never_sends_the_trace_as_given_and_every_turn_is_the_default() -> None:
    history = [*_turn(1, OUTPUT, requests=3), *_turn(2, OUTPUT, requests=2), {"role": "user", "content": "x"}]
    assert compact(history, boundary="never") == history
    assert compact(history, boundary="every_turn") == compact(history)
    assert not _raw(compact(history))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"boundary": "sometimes"}, "boundary must be one of every_turn, when_it_pays, never"),
        ({"boundary": "when_it_pays", "cache_ttl": -1}, "cache_ttl"),
        ({"cache_ttl": float("nan")}, "cache_ttl"),
    ],
)
def test_a_bad_policy_is_a_clear_error(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Compactor(**options)
