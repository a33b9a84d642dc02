"""The client a caller keeps: one provider and model, and the pending state of an incomplete turn.

Each turn runs as a :class:`~turnmemory.llm._turn.Turn` (the loop of requests and tool runs); when it
ends, the client settles its pending state, in one place, by how it ended:

- ``done``: the model answered without calling tools. Pending state is cleared.
- ``incomplete``: the turn ended abnormally after work accumulated (earlier pending state, or at
  least one completed tool iteration): a request failed for good, the context overflowed, the
  model returned nothing, or the tool-turn limit was reached. The earlier pending state plus this
  turn's work is saved as the new pending state.
- ``error``: it failed before anything recoverable accumulated. Nothing is saved.

Closing the event generator early (an interrupt) saves accumulated work the same way; a call that
started and never ended gets an outcome-unknown result, and calls of the interrupted response that
never started an error result, so the saved state stays well formed. The
pending state belongs to the conversation it was left in (its prompts last), and counts the
interrupted turns it carries.

At a turn boundary the finished turn is replaced by its TurnMemory (the spec, ``boundary="every_turn"``).
With ``"when_it_pays"`` the client keeps the raw trace of each finished turn, in memory only, and sends
it in place of the turn's record until compacting pays for its cache rewrite
(:func:`turnmemory.boundary.should_compact`, from the pause since the last request, the cache lifetime
and the longest turn so far); with ``"never"`` it keeps them all, for this process, while they fit the
window. A trace belongs to the conversation it was made in: a history that no longer continues it
(compacted, rewound, another session) drops it.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from turnmemory.boundary import DEFAULT_POLICY, Boundary, BoundaryPolicy, should_compact
from turnmemory.llm._reduce import Reducer
from turnmemory.llm._retry import RetryPolicy
from turnmemory.llm._sdk import Sdk
from turnmemory.llm._tokens import Accounting, ContextLimits, TokenCounter, open_counter
from turnmemory.llm._tools import ToolSpec, tool_table
from turnmemory.llm._turn import Execute, Outcome, Turn, TurnLimits
from turnmemory.llm.events import Event
from turnmemory.memory import Message
from turnmemory.providers import Wire
from turnmemory.providers._read import record
from turnmemory.providers._render import Item
from turnmemory.providers._tools import parse_output
from turnmemory.providers.check import check_request
from turnmemory.segments import TurnRecorder

__all__ = [
    "DEFAULT_CACHE_TTL",
    "Client",
    "Pending",
    "Trace",
    "record_items",
]

DEFAULT_CACHE_TTL = 300.0
"""Seconds a prompt-cache entry lives unused (Anthropic's and OpenAI's in-memory default)."""


@dataclass(frozen=True, slots=True)
class Pending:
    """What an incomplete turn left: its native ``items``, the ``conversation`` it belongs to (its user
    and assistant messages, the interrupted prompts last), how many interrupted ``turns`` it carries,
    and where the latest of them begins in ``items`` (``latest``: the earlier ones' items come first)."""

    items: tuple[Item, ...]
    conversation: tuple[Message, ...]
    turns: int
    latest: int = 0


@dataclass(frozen=True, slots=True)
class Trace:
    """The raw native ``items`` of a finished turn, and the ``conversation`` it answered (its prompt last)."""

    conversation: tuple[Message, ...]
    items: tuple[Item, ...]


class Client:
    """A streaming LLM client for one provider and model, with its pending provider state.

    Create it with :func:`turnmemory.llm.open_client`. One turn runs at a time.
    """

    def __init__(
        self,
        sdk: Sdk,
        *,
        provider: str,
        model: str,
        retry: RetryPolicy,
        turn_limits: TurnLimits | None = None,
        limits: ContextLimits | None = None,
        counter: TokenCounter | None = None,
        boundary: BoundaryPolicy = DEFAULT_POLICY,
        cache_ttl: float | None = DEFAULT_CACHE_TTL,
    ) -> None:
        self.provider = provider
        self.model = model
        self.retry = retry
        self.turn_limits = turn_limits or TurnLimits()
        """What one turn may do: its tool rounds, the calls of one response, one call's arguments, its
        duration; may change between turns."""
        self.accounting = Accounting(counter or open_counter(), limits or ContextLimits.of(model))
        """The context window, the output reserve and the calibrated token estimate of requests."""
        self.boundary: BoundaryPolicy = boundary
        """When a finished turn is replaced by its TurnMemory; may change between turns."""
        self.cache_ttl = cache_ttl
        """The provider's cache lifetime in seconds (``None``: it never expires), for ``when_it_pays``."""
        self._sdk = sdk
        self._formatter = sdk.wire.Formatter()
        self._pending: Pending | None = None
        self._running: tuple[Turn, tuple[Message, ...]] | None = None
        self._traces: list[Trace] = []
        self._longest = 1  # the most requests a turn took
        self._last_request: float | None = None

    @property
    def traced_turns(self) -> int:
        """How many finished turns the client keeps raw (sent in place of their records)."""
        return len(self._traces)

    @property
    def pending(self) -> list[Item] | None:
        """A copy of the provider-native items of the last incomplete turn, or ``None``."""
        return None if self._pending is None else copy.deepcopy(list(self._pending.items))

    @property
    def pending_turns(self) -> int:
        """How many interrupted turns the pending state carries (their prompts end its conversation): the
        records of those turns are what a history leaves out while the pending state carries their work."""
        return 0 if self._pending is None else self._pending.turns

    def pending_state(self) -> Pending | None:
        """The pending state as it stands, or ``None``: while a turn runs, what the turn would leave if it
        stopped now (a call that started and has not ended is ``UNKNOWN`` in it); between turns, the
        pending state kept. What a journal of the turn keeps, for :meth:`restore_pending` to bring back
        after the process stopped."""
        if self._running is None:
            return self._pending
        turn, owner = self._running
        items = turn.partial()
        return Pending(tuple(items), owner, self.pending_turns + 1, len(turn.pending)) if items else None

    def restore_pending(self, pending: Pending) -> None:
        """Carry ``pending`` (a journal's :meth:`running` or settled state, read back) into the next turn,
        in place of any pending state: its work is replayed as an incomplete turn's is. ``ValueError``
        when its items are not this provider's, or ``turns`` and ``latest`` do not fit them."""
        items = list(pending.items)
        if not all(isinstance(item, dict) for item in items) or not 0 <= pending.latest <= len(items):
            raise ValueError("the pending items are not native items of this provider")
        if not 1 <= pending.turns <= sum(1 for m in pending.conversation if m.role == "user"):
            raise ValueError("the pending state carries more turns than its conversation has prompts")
        try:
            self._sdk.wire.pieces(items)
            request = self._format([*pending.conversation, Message(role="user", content="next")], items)
            problems = check_request(self.provider, request, require_tools=False)
        except (KeyError, TypeError, ValueError, AttributeError, RecursionError) as error:
            raise ValueError(f"the pending items are not native items of this provider ({error})") from None
        if problems:
            raise ValueError(f"the pending items do not make a valid {self.provider} request: {problems[0]}")
        self._pending = Pending(
            tuple(copy.deepcopy(items)), pending.conversation, pending.turns, pending.latest
        )

    def rebase_pending(self, history: Sequence[Message]) -> None:
        """Let the pending state belong to ``history`` from now on: the same conversation, rewritten before
        its interrupted turns (a compaction that replaced the oldest turns by a summary).

        ``history`` must end with the prompts of the interrupted turns; otherwise ``ValueError``.
        """
        if self._pending is None:
            return
        conversation = _conversation(history)
        turns = self._pending.turns
        if conversation[-turns:] != self._pending.conversation[-turns:]:
            raise ValueError("rebase_pending: the history does not end with the interrupted turns' prompts")
        self._pending = Pending(self._pending.items, conversation, turns, self._pending.latest)

    def drop_pending(self, recorder: TurnRecorder | None = None) -> Message | None:
        """Clear the pending state and return it as a historical assistant ``Message``, or ``None``.

        Its prose is the assistant text in the pending items; its memory records every call there
        that has a result. Pass a ``recorder`` to choose the workspace and retention rules.
        """
        pending, self._pending = self._pending, None
        if pending is None:
            return None
        recorder = recorder if recorder is not None else TurnRecorder()
        record_items(self._sdk.wire, pending.items, recorder)
        return recorder.finish()

    def request_tokens(
        self, history: Sequence[Message], prompt: str, *, tools: Sequence[ToolSpec] = ()
    ) -> int:
        """The calibrated token estimate of the first request a turn for ``prompt`` after ``history``
        would send, offering ``tools`` (the pending state included)."""
        request = self._first_request(history, prompt)
        raw = Reducer(self._sdk.wire, self.accounting).measure(request, self._sdk.wire.ITEMS, tools)
        return self.accounting.scaled(raw)

    def request_bound(
        self, history: Sequence[Message], prompt: str, *, tools: Sequence[ToolSpec] = ()
    ) -> int | None:
        """A calibrated upper bound on :meth:`request_tokens` taken without loading the tokenizer, or
        ``None`` once it is loaded (counting is cheap then)."""
        raw = Reducer(self._sdk.wire, self.accounting).bound(self._first_request(history, prompt), tools)
        return None if raw is None else self.accounting.scaled(raw)

    def _first_request(self, history: Sequence[Message], prompt: str) -> dict[str, Any]:
        messages = [*history, Message(role="user", content=prompt)]
        return self._format(messages, self.pending or [])

    def _format(self, messages: Sequence[Message], pending: list[Item]) -> dict[str, Any]:
        """The request for ``messages`` (the new user message last), with ``pending`` before it."""
        request: dict[str, Any] = self._formatter.to_request(
            messages, pending=self._sdk.injected(pending), **self._sdk.options()
        )
        return request

    def run_turn(
        self,
        history: Sequence[Message],
        prompt: str,
        *,
        tools: Sequence[ToolSpec] = (),
        execute: Execute | None = None,
    ) -> Iterator[Event]:
        """Run one assistant turn for ``prompt`` after ``history``; yield its events.

        ``history`` holds the earlier messages (a system message first, if any). After an
        ``incomplete`` turn keep its user message in the history you pass next; the pending state
        carries the work that followed it. Raises ``ValueError`` at once for bad arguments, and when
        pending state exists for another conversation: the user and assistant messages of
        ``history`` must extend those of the interrupted turn's history followed by its prompt (the
        system prompt may change); otherwise call :meth:`drop_pending` first.
        """
        history = tuple(history)
        for index, message in enumerate(history):
            if not isinstance(message, Message):
                raise ValueError(
                    f"history[{index}]: expected a turnmemory.Message, got {type(message).__name__}"
                )
        if not isinstance(prompt, str) or not prompt.strip():
            raise ValueError(f"prompt: expected non-blank text, got {prompt!r:.40}")
        table = tool_table(tools)
        if table and execute is None:
            raise ValueError("execute: required when tools are offered")
        conversation = _conversation(history)
        if (
            self._pending is not None
            and conversation[: len(self._pending.conversation)] != self._pending.conversation
        ):
            raise ValueError(
                "pending state of an incomplete turn belongs to another conversation; call drop_pending() first"
            )
        # What this turn's pending state will belong to: its history and its own prompt, so that even
        # a first turn's state (empty history) only enters a conversation that continues this one.
        owner = (*conversation, Message(role="user", content=prompt))
        return self._run(history, prompt, table, execute, owner)

    def _run(
        self,
        history: tuple[Message, ...],
        prompt: str,
        tools: dict[str, ToolSpec],
        execute: Execute | None,
        owner: tuple[Message, ...],
    ) -> Iterator[Event]:
        """The events of one turn; its end, however it comes, settles the pending state."""
        head, traced = self._traced(history, prompt, tools)
        messages = [*head, Message(role="user", content=prompt)]
        turn = Turn(
            self._sdk,
            lambda pending: self._format(messages, [*traced, *pending]),
            list(self._pending.items) if self._pending is not None else [],
            tools,
            execute,
            accounting=self.accounting,
            retry=self.retry,
            limits=self.turn_limits,
        )
        outcome: Outcome | None = None
        self._running = (turn, owner)
        fresh = self._pending is None
        try:
            outcome = yield from turn.run()
        finally:
            self._running = None
            end = self._settle(turn, outcome, owner)
            if outcome is not None and outcome.done and fresh and self.boundary != "every_turn":
                self._traces.append(Trace(owner, tuple(turn.items)))
            self._longest = max(self._longest, turn.requests)
            self._last_request = turn.last_request or self._last_request
        if end is not None:
            yield end

    def _traced(
        self, history: tuple[Message, ...], prompt: str, tools: dict[str, ToolSpec]
    ) -> tuple[tuple[Message, ...], list[Item]]:
        """The history to format, and the native items sent after it in place of the turns kept raw.

        The kept turns must be the latest of ``history``; otherwise, and whenever the policy says to
        compact now (or the raw turns would not fit the window), they are dropped: their records go.
        """
        conversation = _conversation(history)
        traces = self._traces
        first = len(conversation) - 2 * len(traces)
        if (
            self.boundary == "every_turn"
            or not traces
            or first < 0
            or any(
                conversation[: first + 2 * n + 1] != trace.conversation
                or conversation[first + 2 * n + 1].role != "assistant"
                for n, trace in enumerate(traces)
            )
        ):
            self._traces = []
            return history, []
        counter = self.accounting.counter
        raw = sum(counter.value(list(trace.items)) for trace in traces)
        compacted = sum(counter.value(m.to_dict()) for m in conversation[first:])
        idle = None if self._last_request is None else time.monotonic() - self._last_request
        boundary = Boundary(raw, compacted, idle=idle, ttl=self.cache_ttl, requests_ahead=self._longest)
        if should_compact(boundary, self.boundary):
            self._traces = []
            return history, []
        native: list[Item] = []
        for trace in traces:
            native.extend(
                self._sdk.wire.Formatter().to_request([trace.conversation[-1]])[self._sdk.wire.ITEMS]
            )
            native.extend(copy.deepcopy(list(trace.items)))
        start = [i for i, m in enumerate(history) if m.role != "system"][first]
        head = history[:start]
        request = self._format(
            [*head, Message(role="user", content=prompt)], [*native, *(self.pending or [])]
        )
        reducer = Reducer(self._sdk.wire, self.accounting)
        if not reducer.fits(reducer.measure(request, self._sdk.wire.ITEMS, list(tools.values()))):
            self._traces = []
            return history, []
        return head, native

    def _settle(self, turn: Turn, outcome: Outcome | None, owner: tuple[Message, ...]) -> Event | None:
        """The one exit of every turn: the pending state set by how the turn ended, and its terminal
        event (``None`` for a turn closed early, which keeps its partial turn as an incomplete one does).

        A finished turn clears the pending state; any other keeps the partial turn, belonging to the
        conversation ``owner`` (the turn's prompt last), unless nothing accumulated.
        """
        if outcome is not None and outcome.done:
            self._pending = None
            return Event("done", reason=outcome.reason)
        items = turn.partial()
        earlier = self.pending_turns
        self._pending = Pending(tuple(items), owner, earlier + 1, len(turn.pending)) if items else None
        if outcome is None:
            return None
        return Event("incomplete" if items else "error", reason=outcome.reason, error=outcome.error)


def record_items(wire: Wire, items: Sequence[Item], recorder: TurnRecorder) -> None:
    """Feed the work in native ``items`` of ``wire`` (prose, and every call that has a result) to
    ``recorder``, as a historical turn records it."""
    record(
        wire.pieces(list(items)),
        recorder,
        lambda call, result: parse_output(result.text, is_error=result.error),
    )


def _conversation(history: Sequence[Message]) -> tuple[Message, ...]:
    """The user and assistant messages of ``history``: what pending state belongs to."""
    return tuple(message for message in history if message.role != "system")
