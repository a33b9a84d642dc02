"""The client a caller keeps: one provider and model, and the pending state of an incomplete turn.

Each turn runs as a :class:`~turnmemory.llm._turn.Turn` (the loop of requests and tool runs); when it
ends, the client settles its pending state, in one place, by how it ended:

- ``done``: the model answered without calling tools. Pending state is cleared.
- ``incomplete``: the turn ended abnormally after work accumulated (earlier pending state, or at
  least one completed tool iteration): a request failed for good, the context overflowed, the
  model returned nothing, or the tool-turn limit was reached. The earlier pending state plus this
  turn's work is saved as the new pending state.
- ``error``: it failed before anything recoverable accumulated. Nothing is saved.

Closing the event generator early (an interrupt) saves accumulated work the same way; calls of the
interrupted response that never ran get an error result, so the saved state stays well formed. The
pending state belongs to the conversation it was left in (its prompts last), and counts the
interrupted turns it carries.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from turnmemory.llm._reduce import Reducer
from turnmemory.llm._retry import RetryPolicy
from turnmemory.llm._sdk import Sdk
from turnmemory.llm._tokens import Accounting, ContextLimits, TokenCounter, open_counter
from turnmemory.llm._tools import ToolSpec, tool_table
from turnmemory.llm._turn import Execute, Outcome, Turn
from turnmemory.llm.events import Event
from turnmemory.memory import Message
from turnmemory.providers._read import record
from turnmemory.providers._render import Item
from turnmemory.providers._tools import parse_output
from turnmemory.segments import TurnRecorder

__all__ = ["DEFAULT_MAX_ARGUMENT_BYTES", "DEFAULT_MAX_CALLS", "DEFAULT_MAX_TOOL_TURNS", "Client", "Pending"]

DEFAULT_MAX_TOOL_TURNS = 10_000
"""Tool rounds one turn may run: a guard against a model that never stops, far past ordinary long
work (the window is kept by the reducer, the time by the turn's deadline)."""

DEFAULT_MAX_CALLS = 100
"""Calls of one response that run."""

DEFAULT_MAX_ARGUMENT_BYTES = 1_000_000
"""The largest arguments of one call that run (UTF-8 bytes of their compact JSON)."""


@dataclass(frozen=True, slots=True)
class Pending:
    """What an incomplete turn left: its native ``items``, the ``conversation`` it belongs to (its user
    and assistant messages, the interrupted prompts last) and how many interrupted ``turns`` it carries."""

    items: tuple[Item, ...]
    conversation: tuple[Message, ...]
    turns: int


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
        max_tool_turns: int = DEFAULT_MAX_TOOL_TURNS,
        max_calls: int = DEFAULT_MAX_CALLS,
        max_argument_bytes: int = DEFAULT_MAX_ARGUMENT_BYTES,
        deadline: float | None = None,
        limits: ContextLimits | None = None,
        counter: TokenCounter | None = None,
    ) -> None:
        for name, value in (
            ("max_tool_turns", max_tool_turns),
            ("max_calls", max_calls),
            ("max_argument_bytes", max_argument_bytes),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}: expected a whole number of at least 1, got {value!r}")
        if deadline is not None and not deadline > 0:
            raise ValueError("deadline: expected a positive number of seconds or None")
        self.provider = provider
        self.model = model
        self.retry = retry
        self.max_tool_turns = max_tool_turns
        """The most tool rounds (responses with calls) one turn may run before it ends ``tool_limit``."""
        self.max_calls = max_calls
        """The most calls of one response that run; the rest are answered that they did not."""
        self.max_argument_bytes = max_argument_bytes
        """The largest arguments (UTF-8 bytes of compact JSON) a call may carry and still run."""
        self.deadline = deadline
        """Seconds one turn may take, tools included, or ``None``: past it the turn ends (``deadline``).

        It is checked before each request, before each retry's wait and at each streamed event; a
        stream that sends nothing ends at the read timeout, which ``open_client`` keeps within it."""
        self.accounting = Accounting(counter or open_counter(), limits or ContextLimits.of(model))
        """The context window, the output reserve and the calibrated token estimate of requests."""
        self._sdk = sdk
        self._formatter = sdk.wire.Formatter()
        self._pending: Pending | None = None

    @property
    def pending(self) -> list[Item] | None:
        """A copy of the provider-native items of the last incomplete turn, or ``None``."""
        return None if self._pending is None else copy.deepcopy(list(self._pending.items))

    @property
    def pending_turns(self) -> int:
        """How many interrupted turns the pending state carries (their prompts end its conversation): the
        records of those turns are what a history leaves out while the pending state carries their work."""
        return 0 if self._pending is None else self._pending.turns

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
        self._pending = Pending(self._pending.items, conversation, turns)

    def drop_pending(self, recorder: TurnRecorder | None = None) -> Message | None:
        """Clear the pending state and return it as a historical assistant ``Message``, or ``None``.

        Its prose is the assistant text in the pending items; its memory records every call there
        that has a result. Pass a ``recorder`` to choose the workspace and retention rules.
        """
        pending, self._pending = self._pending, None
        if pending is None:
            return None
        recorder = recorder if recorder is not None else TurnRecorder()
        record(
            self._sdk.wire.pieces(pending.items),
            recorder,
            lambda call, result: parse_output(result.text, is_error=result.error),
        )
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
        messages = [*history, Message(role="user", content=prompt)]
        turn = Turn(
            self._sdk,
            lambda pending: self._format(messages, pending),
            list(self._pending.items) if self._pending is not None else [],
            tools,
            execute,
            accounting=self.accounting,
            retry=self.retry,
            max_tool_turns=self.max_tool_turns,
            max_calls=self.max_calls,
            max_argument_bytes=self.max_argument_bytes,
            deadline=self.deadline,
        )
        outcome: Outcome | None = None
        try:
            outcome = yield from turn.run()
        finally:
            end = self._settle(turn, outcome, owner)
        if end is not None:
            yield end

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
        self._pending = Pending(tuple(items), owner, earlier + 1) if items else None
        if outcome is None:
            return None
        return Event("incomplete" if items else "error", reason=outcome.reason, error=outcome.error)


def _conversation(history: Sequence[Message]) -> tuple[Message, ...]:
    """The user and assistant messages of ``history``: what pending state belongs to."""
    return tuple(message for message in history if message.role != "system")
