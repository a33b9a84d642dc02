"""TurnMemory for a whole API request body: what a gateway applies to each request on its way upstream.

An Anthropic Messages, OpenAI Chat Completions or OpenAI Responses body has its completed turns
(everything before the last real user message) replaced by their TurnMemory replay through
:func:`~turnmemory.integrations.compact`; everything else in the body, and every item after that
user message (the turn in progress), is left as it came. A user message that answers tool calls is
not a real user message, whatever else it carries (Claude Code puts reminders beside the results):
the turn it belongs to is still in progress.

Anthropic ``cache_control`` breakpoints stay valid: those on blocks the compaction removed are gone,
and when the client uses breakpoints at all one more marks the end of the compacted prefix, which stays
the same on every request of a turn; earlier ones in the prefix give way so that at most four remain.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from turnmemory.boundary import DEFAULT_POLICY, BoundaryPolicy
from turnmemory.integrations._compact import ResultParser, compact, last_index
from turnmemory.retention import DEFAULT_RULES, ToolRule

__all__ = ["MAX_BREAKPOINTS", "WIRES", "CompactedRequest", "Wire", "compact_request"]

Wire = Literal["anthropic", "openai_chat", "openai_responses"]
"""The request bodies :func:`compact_request` reads: Anthropic Messages, OpenAI Chat, OpenAI Responses."""

WIRES: tuple[Wire, ...] = ("anthropic", "openai_chat", "openai_responses")

MAX_BREAKPOINTS = 4
"""How many ``cache_control`` breakpoints the Anthropic API accepts in one request."""

_INSTRUCTIONS = ("system", "developer")
_RESULTS = ("tool_result",)

Item = dict[str, Any]


@dataclass(frozen=True, slots=True)
class CompactedRequest:
    """A body's history with its completed turns replaced: ``items`` stand for its first ``replaced``
    entries of ``key`` (``"messages"`` or ``"input"``); ``turns`` completed turns were compacted."""

    key: str
    items: list[Item]
    replaced: int
    turns: int

    def apply(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """``body`` with the compacted history (a new dict; ``body`` is not changed)."""
        return {**body, self.key: [*self.items, *body[self.key][self.replaced :]]}


def _real_user(wire: Wire, item: Mapping[str, Any]) -> bool:
    if item.get("role") != "user":
        return False
    if wire == "openai_responses":
        return bool(item.get("type", "message") == "message")
    if wire == "openai_chat":
        return True
    content = item.get("content")
    if isinstance(content, str):
        return bool(content)
    return (
        isinstance(content, list)
        and bool(content)
        and not any(isinstance(block, Mapping) and block.get("type") in _RESULTS for block in content)
    )


def _work(wire: Wire, item: Mapping[str, Any]) -> bool:
    """Whether ``item`` is the model's work or its tools' (neither a real user message nor an instruction)."""
    if wire == "openai_responses" and item.get("type", "message") != "message":
        return True
    return not _real_user(wire, item) and item.get("role") not in _INSTRUCTIONS


def compact_request(
    wire: Wire,
    body: Mapping[str, Any],
    *,
    rules: Mapping[str, ToolRule] = DEFAULT_RULES,
    result_parser: ResultParser | None = None,
    workspace: str | None = None,
    boundary: BoundaryPolicy = DEFAULT_POLICY,
) -> CompactedRequest | None:
    """The compacted history of a request ``body`` of ``wire``, or ``None`` when there is nothing to do.

    Nothing is done to a body without a completed turn (or, under a ``boundary`` policy that defers,
    without one compacted yet), to a body whose ``messages`` (``input``) is
    not a list of objects, or to a Responses body continuing a history held upstream
    (``previous_response_id``, ``conversation``). ``rules``, ``result_parser``, ``workspace`` and
    ``boundary`` mean what they mean for :func:`~turnmemory.integrations.compact`; the body's ``model`` picks the
    OpenAI Chat form. Errors of :func:`compact` (a role the wire does not have) propagate.
    """
    if wire not in WIRES:
        raise ValueError(f"wire must be one of {', '.join(WIRES)}; got {wire!r}")
    key = "input" if wire == "openai_responses" else "messages"
    items = body.get(key)
    if not isinstance(items, list) or not all(isinstance(item, Mapping) for item in items):
        return None
    if wire == "openai_responses" and (body.get("previous_response_id") or body.get("conversation")):
        return None
    last = last_index(items, lambda item: _real_user(wire, item))
    if last is None:
        return None
    turns, working = 0, False
    for item in items[:last]:
        if _real_user(wire, item):
            working = False
        elif _work(wire, item) and not working:
            turns, working = turns + 1, True
    if not turns:
        return None
    model = body.get("model") if wire == "openai_chat" else None
    compacted = compact(
        items[: last + 1],
        wire,
        rules=rules,
        result_parser=result_parser,
        workspace=workspace,
        model=model if isinstance(model, str) else None,
        boundary=boundary,
    )
    if boundary != "every_turn" and compacted == items[: last + 1]:
        return None  # the policy deferred every completed turn: the body goes as it came
    if wire == "anthropic":
        compacted = _breakpoints(body, compacted, items[last], items[last + 1 :])
    return CompactedRequest(key, compacted, last + 1, turns)


def _marked(value: Any) -> Iterator[Mapping[str, Any]]:
    """Every object under ``value`` carrying a ``cache_control`` breakpoint, in request order."""
    if isinstance(value, Mapping):
        if value.get("cache_control") is not None:
            yield value
        for inner in value.values():
            if isinstance(inner, list | Mapping):
                yield from _marked(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _marked(inner)


def _blocks(message: Mapping[str, Any]) -> list[Any]:
    content = message.get("content")
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content or ())


def _breakpoints(
    body: Mapping[str, Any], compacted: list[Item], user: Mapping[str, Any], rest: Sequence[Any]
) -> list[Item]:
    """``compacted`` with one breakpoint at its end (before the user message that closes it), when
    the client uses breakpoints and the limit leaves room; earlier ones in it give way past the limit."""
    before = [*_marked(body.get("tools")), *_marked(body.get("system"))]
    after = [*_marked(list(rest))]
    room = MAX_BREAKPOINTS - len(before) - len(after)
    if room <= 0 or not (before or after or any(True for _ in _marked(body.get("messages")))):
        return compacted
    out = [dict(message) for message in compacted]
    own, closing = len(_blocks(user)), _blocks(out[-1])
    if len(closing) > own:  # the results answering the last compacted turn come first in the user message
        at, index = len(out) - 1, len(closing) - own - 1
    elif len(out) > 1:
        at, index = len(out) - 2, len(_blocks(out[-2])) - 1
    else:
        return compacted
    blocks = _blocks(out[at])
    if index < 0 or not isinstance(blocks[index], Mapping):
        return compacted
    if blocks[index].get("cache_control") is None:
        # a longer-lived breakpoint may not follow a shorter-lived one (the user's own blocks follow it)
        hour = any(_ttl(mark) == "1h" for mark in [*_marked(user), *after])
        mark: dict[str, Any] = {"type": "ephemeral", "ttl": "1h"} if hour else {"type": "ephemeral"}
        blocks[index] = {**blocks[index], "cache_control": mark}
    out[at] = {**out[at], "content": blocks}
    return _within_limit(out, at, index, room)


def _ttl(mark: Mapping[str, Any]) -> Any:
    control = mark["cache_control"]
    return control.get("ttl") if isinstance(control, Mapping) else None


def _within_limit(messages: list[Item], at: int, index: int, room: int) -> list[Item]:
    """``messages`` with the earliest breakpoints removed until ``room`` remain (the one at
    ``messages[at]`` block ``index`` stays)."""
    marks = [
        (m, b)
        for m, message in enumerate(messages)
        for b, block in enumerate(_blocks(message))
        if isinstance(block, Mapping) and any(True for _ in _marked(block))
    ]
    excess = len([*_marked(messages)]) - room
    for m, b in marks:
        if excess <= 0:
            break
        if (m, b) == (at, index):
            continue
        blocks = _blocks(messages[m])
        block, removed = _unmarked(blocks[b])
        blocks[b] = block
        messages[m] = {**messages[m], "content": blocks}
        excess -= removed
    return messages


def _unmarked(value: Any) -> tuple[Any, int]:
    """``value`` without any ``cache_control`` breakpoint, and how many it had."""
    if isinstance(value, Mapping):
        removed = int(value.get("cache_control") is not None)
        out: dict[str, Any] = {}
        for key, inner in value.items():
            if key == "cache_control":
                continue
            out[key], count = _unmarked(inner)
            removed += count
        return out, removed
    if isinstance(value, list):
        pairs = [_unmarked(inner) for inner in value]
        return [inner for inner, _ in pairs], sum(count for _, count in pairs)
    return value, 0
