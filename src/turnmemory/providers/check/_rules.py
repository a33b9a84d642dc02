"""Checks every wire's rules share: calls answered in the next message, unique ids, JSON values, and
OpenAI's ``prompt_cache_breakpoint`` markers (Chat Completions and Responses alike)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from turnmemory.providers._render import missing_names, takes_breakpoint

__all__ = [
    "BREAKPOINT",
    "Breakpoints",
    "ToolIds",
    "adjacent_pairing",
    "answer_problem",
    "duplicates",
    "is_json_text",
    "json_object",
    "mismatch",
    "objects",
    "role_problems",
    "turn_problems",
    "undeclared",
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


def objects(entries: Sequence[object], where: str, out: list[str]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """The entries of a list that are objects, each with where it stands (``where[i]``); a problem in
    ``out`` for each entry that is not."""
    for i, entry in enumerate(entries):
        at = f"{where}[{i}]"
        if isinstance(entry, Mapping):
            yield at, entry
        else:
            out.append(f"{at}: expected an object")


def turn_problems(
    messages: Sequence[object],
    check: Callable[[str, object, Mapping[str, Any], list[str]], ToolIds],
    out: list[str],
    *,
    alternate: bool,
    call: str,
    result: str,
) -> list[ToolIds]:
    """Check the messages of an Anthropic or Converse request, adding problems to ``out``: each an
    object with a valid role (and checked by ``check``), every ``call`` answered exactly once by a
    ``result`` in the very next message, no call id used twice. The call and result ids each message
    holds."""
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
    out.extend(adjacent_pairing(found, call=call, result=result))
    out.extend(duplicates((pair for ids in found for pair in ids.calls), call))
    return found


def undeclared(where: str, replayed: Iterable[str], declared: Iterable[object]) -> list[str]:
    """A problem at ``where`` for every ``replayed`` tool name that is not among the ``declared`` ones."""
    names = (name for name in declared if isinstance(name, str))
    return [f"{where}: {name!r} is replayed but not declared" for name in missing_names(replayed, names)]


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


def mismatch(where: str, what: str, value: object, pattern: re.Pattern[str], shown: str) -> list[str]:
    """A problem when ``value`` (``what`` names it) is not a string ``pattern`` matches in full (``shown``
    is how the provider writes the pattern)."""
    if isinstance(value, str) and pattern.fullmatch(value):
        return []
    return [f"{where}: {what} {value!r} does not match {shown}"]


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


BREAKPOINT = "prompt_cache_breakpoint"

_BREAKPOINT_TTLS = ("30m", "12h")


class Breakpoints:
    """The ``prompt_cache_breakpoint`` markers of one OpenAI request, checked as the wire takes them.

    The rules are those of the official SDK's request types (openai-python 3.57,
    ``types/chat/completion_create_params.py`` and ``types/responses/response_create_params.py``,
    ``PromptCacheOptions``; the content part types that declare the field): a marker is
    ``{"mode": "explicit"}``, with an optional ``ttl`` of ``"30m"`` or ``"12h"``; it goes on a content
    part of an input (Chat: ``text``, ``image_url``, ``input_audio`` and ``file`` parts of system,
    developer, user and tool messages; Responses: ``input_text``, ``input_image`` and ``input_file``
    parts of system, developer and user messages and of ``function_call_output`` outputs), never on
    a message or item itself nor on the assistant's output (LangChain4j's
    ``OpenAiOfficialPromptCacheBreakpoint``: "assistant output blocks are not among the block types
    OpenAI accepts a breakpoint on"); only GPT-5.6 and later take it; and a request writes the latest
    three explicit breakpoints (four under ``prompt_cache_options.mode = "explicit"``, which drops the
    implicit one): more are never written.
    """

    def __init__(self) -> None:
        self.problems: list[str] = []
        self.count = 0

    def on_item(self, where: str, item: Mapping[str, Any]) -> None:
        """A marker on a message or item itself (it belongs on one of its content parts)."""
        if item.get(BREAKPOINT) is not None:
            self.problems.append(f"{where}: {BREAKPOINT} goes on a content part, not on the {_kind(item)}")

    def in_parts(self, where: str, parts: object, takes: Iterable[str]) -> None:
        """The markers of a content list whose part types ``takes`` take one (none: no part does)."""
        if not isinstance(parts, list):
            return
        allowed = tuple(takes)
        for j, part in enumerate(parts):
            if not isinstance(part, Mapping) or part.get(BREAKPOINT) is None:
                continue
            at = f"{where}[{j}]"
            self.count += 1
            kind = part.get("type")
            if kind not in allowed:
                accepted = f" (only {', '.join(allowed)} parts do here)" if allowed else ""
                self.problems.append(f"{at}: a {kind!r} part does not take a {BREAKPOINT}{accepted}")
            self.problems.extend(_marker_problems(f"{at}.{BREAKPOINT}", part[BREAKPOINT]))

    def request_problems(self, body: Mapping[str, Any]) -> list[str]:
        """Every problem found, with those of the request as a whole: the model, the number of markers."""
        out = list(self.problems)
        options = body.get("prompt_cache_options")
        mode = options.get("mode", "implicit") if isinstance(options, Mapping) else "implicit"
        model = body.get("model")
        if (
            (self.count or isinstance(options, Mapping))
            and isinstance(model, str)
            and not takes_breakpoint(model)
        ):
            what = f"{BREAKPOINT} markers" if self.count else "prompt_cache_options"
            out.append(f"model {model!r} does not take {what} (GPT-5.6 and later do)")
        written = 4 if mode == "explicit" else 3
        if self.count > written:
            out.append(
                f"request: {self.count} {BREAKPOINT} markers, but only the latest {written} are written "
                f"(prompt_cache_options.mode {mode!r})"
            )
        if mode == "explicit" and not self.count:
            out.append(
                f"prompt_cache_options.mode is 'explicit' but no part carries a {BREAKPOINT}: nothing is cached"
            )
        return out


def _kind(item: Mapping[str, Any]) -> str:
    kind = item.get("type")
    return f"{kind} item" if isinstance(kind, str) and kind != "message" else "message"


def _marker_problems(where: str, value: object) -> list[str]:
    if not isinstance(value, Mapping) or value.get("mode") != "explicit":
        return [f'{where}: expected {{"mode": "explicit"}}, got {value!r:.80}']
    out = [f"{where}: unknown key {key!r}" for key in value if key not in ("mode", "ttl")]
    if "ttl" in value and value["ttl"] not in _BREAKPOINT_TTLS:
        out.append(f"{where}.ttl: expected one of {', '.join(_BREAKPOINT_TTLS)}, got {value['ttl']!r:.40}")
    return out
