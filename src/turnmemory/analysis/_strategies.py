"""The history strategies compared, each replayed over a session request by request.

A strategy yields every provider request the session would have made under it: for turn ``k`` and
loop iteration ``j``, the history it keeps of turns before ``k``, the user message, and the turn's
own work so far (iterations before ``j``). Each is implemented from its public description:

``full``
    Everything retained, as most agents do within a session.
``prose_only``
    User text and assistant prose, no tool blocks: the physical limit of turn-boundary compaction.
``turnmemory`` / ``turnmemory_target``
    TurnMemory (``spec/turn-memory.md``): earlier turns are their prose plus historical tool blocks
    with ``{}`` arguments (or, for ``_target``, the bounded target under the tool's own parameter
    name) and status results, formatted by ``turnmemory.providers.openai_chat.to_request``.
``turnmemory_auto``
    TurnMemory with the ``when_it_pays`` boundary policy (:mod:`turnmemory.boundary`): at each user
    turn the turns not compacted yet are compacted only when the cache has gone cold (the pause since
    the last request exceeds the lifetime) or when the saving on the requests ahead (as many as the
    session's longest turn so far) exceeds the rewrite; until then they are sent as the full trace has
    them.
``mask10``
    Observation masking (Lindenbauer et al., *The Complexity Trap*, arXiv 2508.21433; SWE-agent
    ``LastNObservations``, ``sweagent/agent/history_processors.py``): on every request all but the
    last M=10 observations are replaced by ``Old environment output: (N lines omitted)``. The first
    observation (SWE-agent's instance template) is the first user message here, never elided.
``anthropic_clear``
    Anthropic context editing ``clear_tool_uses_20250919`` with its defaults (docs.claude.com,
    *Context editing*): when a request's input exceeds 100,000 tokens, the results of all but the 3
    most recent tool uses are replaced by a placeholder, inputs kept; applied server-side to each
    request, the client keeps the full history. Anthropic does not publish the placeholder text;
    LangChain's ``ClearToolUsesEdit``, which mirrors this edit, uses ``[cleared]``.
``opencode_prune``
    OpenCode ``SessionCompaction.prune`` (``packages/opencode/src/session/compaction.ts``), run when
    a turn's loop ends: walking backwards past the last 2 user turns, completed tool outputs are
    counted with OpenCode's estimate (characters / 4); once 40,000 are protected, older outputs are
    marked, and the marks are applied only if more than 20,000 would be pruned. The walk stops at an
    already pruned output; ``skill`` outputs are protected; pruned outputs persist as
    ``[Old tool result content cleared]``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from turnmemory.analysis._cost import CacheModel
from turnmemory.analysis._measure import Block, Meter
from turnmemory.analysis._trace import Call, Item, Turn, block, iteration_items, tool_block, user_block
from turnmemory.boundary import Boundary, should_compact
from turnmemory.memory import Message
from turnmemory.replay import ArgumentPolicy

__all__ = [
    "CLEAR_KEEP",
    "CLEAR_PLACEHOLDER",
    "CLEAR_TRIGGER",
    "MASK_KEEP",
    "PRUNE_MINIMUM",
    "PRUNE_PLACEHOLDER",
    "PRUNE_PROTECT",
    "STRATEGIES",
    "Request",
    "StrategyName",
    "mask_placeholder",
    "prune_marks",
    "requests",
]

StrategyName = Literal[
    "full",
    "prose_only",
    "turnmemory",
    "turnmemory_auto",
    "turnmemory_target",
    "mask10",
    "anthropic_clear",
    "opencode_prune",
]
STRATEGIES: tuple[StrategyName, ...] = get_args(StrategyName)
"""Every strategy, in report order."""

MASK_KEEP = 10
CLEAR_TRIGGER = 100_000
CLEAR_KEEP = 3
CLEAR_PLACEHOLDER = "[cleared]"
PRUNE_PROTECT = 40_000
PRUNE_MINIMUM = 20_000
PRUNE_PLACEHOLDER = "[Old tool result content cleared]"
_PRUNE_PROTECTED_TOOLS = ("skill",)
_OPENCODE_CHARS_PER_TOKEN = 4


@dataclass(frozen=True, slots=True)
class Request:
    """One provider request: its turn (0-based), whether it opens the turn, its blocks, and when it
    was sent (seconds since the epoch, ``None`` when the log does not say)."""

    turn: int
    first: bool
    blocks: tuple[Block, ...]
    at: float | None = None


def requests(
    strategy: StrategyName, turns: Sequence[Turn], meter: Meter, cache: CacheModel | None = None
) -> Iterator[Request]:
    """Every request of the session under ``strategy``, in order.

    ``cache`` (default: the idealised cache) is the model ``turnmemory_auto`` decides under.
    """
    if strategy == "turnmemory_auto":
        return _when_it_pays(turns, meter, cache or CacheModel())
    if strategy == "prose_only":
        return _compact(turns, meter, lambda turn: Message("assistant", turn.message.content), "empty")
    if strategy in ("turnmemory", "turnmemory_target"):
        policy: ArgumentPolicy = "target" if strategy == "turnmemory_target" else "empty"
        return _compact(turns, meter, lambda turn: turn.message, policy)
    if strategy == "opencode_prune":
        return _opencode_prune(turns, meter)
    view = {"full": _as_is, "mask10": _mask, "anthropic_clear": _clear}[strategy]
    return (
        Request(turn, first, view(items, meter), at) for turn, first, at, items in _full_trace(turns, meter)
    )


def _full_trace(turns: Sequence[Turn], meter: Meter) -> Iterator[tuple[int, bool, float | None, list[Item]]]:
    history: list[Item] = []
    for index, turn in enumerate(turns):
        history.append(Item(user_block(meter, turn.user)))
        current: list[Item] = []
        for number, iteration in enumerate(turn.iterations):
            yield index, number == 0, iteration.sent, history + current
            current.extend(iteration_items(meter, iteration))
        history.extend(current)


def _as_is(items: list[Item], meter: Meter) -> tuple[Block, ...]:
    return tuple(item.block for item in items)


def _replaced(
    items: list[Item], replace: set[int], placeholder: Callable[[Call], Block]
) -> tuple[Block, ...]:
    return tuple(
        placeholder(item.call) if item.call is not None and index in replace else item.block
        for index, item in enumerate(items)
    )


def _results(items: list[Item]) -> list[int]:
    return [index for index, item in enumerate(items) if item.call is not None]


def mask_placeholder(text: str) -> str:
    """SWE-agent's text for an elided observation."""
    return f"Old environment output: ({len(text.splitlines())} lines omitted)"


def _mask(items: list[Item], meter: Meter) -> tuple[Block, ...]:
    results = _results(items)
    elided = set(results[: max(0, len(results) - MASK_KEEP)])
    return _replaced(items, elided, lambda call: tool_block(meter, call, mask_placeholder(call.result)))


def _clear(items: list[Item], meter: Meter) -> tuple[Block, ...]:
    if meter.tokens(sum(item.block.size for item in items)) <= CLEAR_TRIGGER:
        return _as_is(items, meter)
    results = _results(items)
    cleared = set(results[: max(0, len(results) - CLEAR_KEEP)])
    return _replaced(items, cleared, lambda call: tool_block(meter, call, CLEAR_PLACEHOLDER))


def _opencode_prune(turns: Sequence[Turn], meter: Meter) -> Iterator[Request]:
    pruned: set[str] = set()

    def view(items: list[Item]) -> tuple[Block, ...]:
        marked = {index for index in _results(items) if items[index].call.id in pruned}  # type: ignore[union-attr]
        return _replaced(items, marked, lambda call: tool_block(meter, call, PRUNE_PLACEHOLDER))

    for index, first, at, items in _full_trace(turns, meter):
        if first and index > 0:
            pruned |= prune_marks(turns[:index], pruned)
        yield Request(index, first, view(items), at)


def prune_marks(done: Sequence[Turn], pruned: set[str]) -> set[str]:
    """The call ids OpenCode's prune marks after the turns ``done`` (given those already marked)."""
    total = candidates = 0
    marks: set[str] = set()
    for turn in reversed(done[:-2]):
        for iteration in reversed(turn.iterations):
            for call in reversed(iteration.calls):
                if call.is_error or call.name.lower() in _PRUNE_PROTECTED_TOOLS:
                    continue
                if call.id in pruned:
                    return marks if candidates > PRUNE_MINIMUM else set()
                estimate = round(len(call.result) / _OPENCODE_CHARS_PER_TOKEN)
                total += estimate
                if total <= PRUNE_PROTECT:
                    continue
                candidates += estimate
                marks.add(call.id)
    return marks if candidates > PRUNE_MINIMUM else set()


def _compact(
    turns: Sequence[Turn], meter: Meter, memory: Callable[[Turn], Message], policy: ArgumentPolicy
) -> Iterator[Request]:
    from turnmemory.providers import openai_chat

    messages: list[Message] = []
    for index, turn in enumerate(turns):
        messages.append(Message("user", turn.user))
        request = openai_chat.to_request(messages, arguments=policy)
        history = [block(meter, message) for message in request["messages"]]
        current: list[Block] = []
        for number, iteration in enumerate(turn.iterations):
            yield Request(index, number == 0, tuple(history + current), iteration.sent)
            current.extend(item.block for item in iteration_items(meter, iteration))
        messages.append(memory(turn))


def _when_it_pays(turns: Sequence[Turn], meter: Meter, cache: CacheModel) -> Iterator[Request]:
    from turnmemory.providers import openai_chat

    memory: list[Message] = []  # every turn before this one, as TurnMemory
    compacted: list[Block] = []  # the history's compacted part: the turns before ``raw`` as TurnMemory
    raw: list[Block] = []  # the turns not compacted yet, as the full trace has them
    longest = 0  # the most requests a turn of the session has made so far
    last: float | None = None  # when the last request was sent
    for index, turn in enumerate(turns):
        if raw:
            rendered = openai_chat.to_request(memory)["messages"]
            candidate = [block(meter, message) for message in rendered]
            sent = turn.iterations[0].sent
            boundary = Boundary(
                raw=sum(b.size for b in raw),
                compacted=sum(b.size for b in candidate) - sum(b.size for b in compacted),
                idle=sent - last if sent is not None and last is not None else None,
                ttl=cache.ttl,
                requests_ahead=longest,
                read=cache.read,
                write=cache.write,
            )
            if should_compact(boundary, "when_it_pays"):
                compacted, raw = candidate, []
        history = [*compacted, *raw, user_block(meter, turn.user)]
        current: list[Block] = []
        for number, iteration in enumerate(turn.iterations):
            yield Request(index, number == 0, tuple(history + current), iteration.sent)
            current.extend(item.block for item in iteration_items(meter, iteration))
        raw += [history[-1], *current]
        memory += [Message("user", turn.user), turn.message]
        longest = max(longest, len(turn.iterations))
        last = turn.iterations[-1].sent
