"""Checks every wire's rules share: calls answered in the next message, unique ids, JSON values."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["ToolIds", "adjacent_pairing", "duplicates", "is_json_text", "json_object"]


@dataclass(frozen=True, slots=True)
class ToolIds:
    """The ids of the calls and of the results one message holds, each with where it stands."""

    calls: tuple[tuple[str, str], ...] = ()
    results: tuple[tuple[str, str], ...] = ()


def adjacent_pairing(messages: Sequence[ToolIds], *, call: str, result: str) -> list[str]:
    """Problems with calls that must be answered, each exactly once, in the very next message."""
    out: list[str] = []
    open_calls: dict[str, str] = {}
    for ids in messages:
        answered: set[str] = set()
        for where, result_id in ids.results:
            if result_id in answered:
                out.append(f"{where}: second {result} for {result_id!r}")
            elif result_id not in open_calls:
                out.append(
                    f"{where}: {result} for {result_id!r} does not answer a {call} in the previous message"
                )
            else:
                answered.add(result_id)
        out.extend(
            f"{where}: {call} {call_id!r} has no {result} in the next message"
            for call_id, where in open_calls.items()
            if call_id not in answered
        )
        open_calls = {call_id: where for where, call_id in ids.calls}
    out.extend(
        f"{where}: {call} {call_id!r} has no {result}: no message follows"
        for call_id, where in open_calls.items()
    )
    return out


def duplicates(ids: Iterable[tuple[str, str]], what: str) -> list[str]:
    """Problems for every id seen before, given ``(where, id)`` pairs in request order."""
    first: dict[str, str] = {}
    out: list[str] = []
    for where, value in ids:
        if value in first:
            out.append(f"{where}: {what} id {value!r} already used at {first[value]}")
        else:
            first[value] = where
    return out


def json_object(value: object) -> bool:
    """Whether ``value`` is a JSON object (a mapping with string keys)."""
    return isinstance(value, Mapping) and all(isinstance(key, str) for key in value)


def is_json_text(value: object) -> bool:
    """Whether ``value`` is a string holding JSON."""
    if not isinstance(value, str):
        return False
    try:
        json.loads(value)
    except ValueError:
        return False
    return True
