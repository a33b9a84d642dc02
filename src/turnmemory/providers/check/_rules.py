"""Checks every wire's rules share: calls answered in the next message, unique ids, JSON values."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ToolIds",
    "adjacent_pairing",
    "answer_problem",
    "duplicates",
    "is_json_text",
    "json_object",
    "role_problems",
    "turn_ids",
]


@dataclass(frozen=True, slots=True)
class ToolIds:
    """The ids of the calls and of the results one message holds, each with where it stands."""

    calls: tuple[tuple[str, str], ...] = ()
    results: tuple[tuple[str, str], ...] = ()


def role_problems(
    where: str, index: int, role: object, previous: object, *, assistant: str, noun: str, alternate: bool
) -> list[str]:
    """Problems with the ``role`` of the ``index``-th turn of a turn format: ``user`` or ``assistant``,
    a user turn first, and (``alternate``) never the role of the ``previous`` turn."""
    if role not in ("user", assistant):
        return [f"{where}: role must be 'user' or {assistant!r}, got {role!r}"]
    if index == 0 and role != "user":
        return [f"{where}: the first {noun} must be a user {noun}"]
    if alternate and role == previous:
        return [f"{where}: a second {role} {noun} in a row; roles must alternate"]
    return []


def turn_ids(
    messages: Sequence[object],
    check: Callable[[str, object, Mapping[str, Any], list[str]], ToolIds],
    out: list[str],
    *,
    alternate: bool,
) -> list[ToolIds]:
    """Check every message of an Anthropic or Converse request (an object with a valid role, each checked
    by ``check``), adding problems to ``out``; the call and result ids each message holds."""
    found: list[ToolIds] = []
    previous = None
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, Mapping):
            out.append(f"{where}: expected an object")
            found.append(ToolIds())
            continue
        role = message.get("role")
        out.extend(
            role_problems(
                where, i, role, previous, assistant="assistant", noun="message", alternate=alternate
            )
        )
        previous = role
        found.append(check(where, role, message, out))
    return found


def answer_problem(
    where: str, call_id: object, open_calls: dict[str, str], answered: set[str], *, result: str, stray: str
) -> str | None:
    """A result for ``call_id`` answers its open call (which moves to ``answered``); otherwise the problem:
    a second result, or one that answers nothing (``stray`` says what it should have answered)."""
    if call_id in open_calls:
        assert isinstance(call_id, str)
        del open_calls[call_id]
        answered.add(call_id)
        return None
    if call_id in answered:
        return f"{where}: second {result} for {call_id!r}"
    return f"{where}: {result} for {call_id!r} does not answer {stray}"


def adjacent_pairing(messages: Sequence[ToolIds], *, call: str, result: str) -> list[str]:
    """Problems with calls that must be answered, each exactly once, in the very next message."""
    out: list[str] = []
    open_calls: dict[str, str] = {}
    for ids in messages:
        answered: set[str] = set()
        for where, result_id in ids.results:
            stray = f"a {call} in the previous message"
            problem = answer_problem(where, result_id, open_calls, answered, result=result, stray=stray)
            out.extend([problem] if problem else [])
        out.extend(
            f"{where}: {call} {call_id!r} has no {result} in the next message"
            for call_id, where in open_calls.items()
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
