"""The in-turn tool loop, shared by every wire format, and the client's pending provider state.

One turn is a loop of provider requests. Each request carries the formatted history, the pending
state of an earlier incomplete turn (verbatim, before the new user message), the new user message,
and everything this turn produced so far in the provider's own format: assistant messages with their
reasoning state (thinking signatures, encrypted reasoning items, thought signatures), tool calls and
their results. A retry re-sends the same request, so completed tools never run twice.

Outcomes, and what happens to the pending state:

- ``done``: the model answered without calling tools. Pending state is cleared.
- ``incomplete``: the turn ended abnormally after work accumulated (earlier pending state, or at
  least one completed tool iteration): a request failed for good, the context overflowed, the
  model returned nothing, or the tool-turn limit was reached. The earlier pending state plus this
  turn's work is saved as the new pending state.
- ``error``: it failed before anything recoverable accumulated. Nothing is saved.

Closing the event generator early (an interrupt) saves accumulated work the same way; calls of the
interrupted response that never ran get an error result, so the saved state stays well formed.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from contextlib import closing
from functools import partial
from typing import Any

from turnmemory._text import one_line
from turnmemory.llm._reduce import Reducer
from turnmemory.llm._retry import Failure, RetryPolicy, connection_failure, malformed_failure
from turnmemory.llm._sdk import Completion, Sdk, StreamInterrupted
from turnmemory.llm._tokens import Accounting, ContextLimits, TokenCounter, open_counter
from turnmemory.llm._tools import ToolSpec, call_problem, placeholder_tool, tool_table
from turnmemory.llm.events import Event, Reason
from turnmemory.memory import Message
from turnmemory.providers._read import record
from turnmemory.providers._render import Item
from turnmemory.providers._tools import Call, ToolResult, parse_output
from turnmemory.segments import TurnRecorder

__all__ = ["Client", "Execute"]

Execute = Callable[[str, str, dict[str, Any]], ToolResult]
"""Runs one tool call: ``execute(call_id, name, arguments) -> ToolResult``."""


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
        max_tool_turns: int,
        deadline: float | None = None,
        limits: ContextLimits | None = None,
        counter: TokenCounter | None = None,
    ) -> None:
        if max_tool_turns < 1:
            raise ValueError("max_tool_turns: expected at least 1")
        if deadline is not None and not deadline > 0:
            raise ValueError("deadline: expected a positive number of seconds or None")
        self.provider = provider
        self.model = model
        self.retry = retry
        self.max_tool_turns = max_tool_turns
        self.deadline = deadline
        """Seconds one turn may take, tools included, or ``None``: past it the turn ends (``deadline``).

        It is checked before each request, before each retry's wait and at each streamed event; a
        stream that sends nothing ends at the read timeout, which ``open_client`` keeps within it."""
        self.accounting = Accounting(counter or open_counter(), limits or ContextLimits.of(model))
        """The context window, the output reserve and the calibrated token estimate of requests."""
        self._sdk = sdk
        self._formatter = sdk.wire.Formatter()
        self._pending: list[Item] | None = None
        self._pending_history: tuple[Message, ...] = ()

    @property
    def pending(self) -> list[Item] | None:
        """A copy of the provider-native items of the last incomplete turn, or ``None``."""
        return copy.deepcopy(self._pending)

    def drop_pending(self, recorder: TurnRecorder | None = None) -> Message | None:
        """Clear the pending state and return it as a historical assistant ``Message``, or ``None``.

        Its prose is the assistant text in the pending items; its memory records every call there
        that has a result. Pass a ``recorder`` to choose the workspace and retention rules.
        """
        pending, self._pending, self._pending_history = self._pending, None, ()
        if not pending:
            return None
        recorder = recorder if recorder is not None else TurnRecorder()
        record(
            self._sdk.wire.pieces(pending),
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
        return self._format(messages, copy.deepcopy(self._pending or []))

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
        if self._pending is not None and conversation[: len(self._pending_history)] != self._pending_history:
            raise ValueError(
                "pending state of an incomplete turn belongs to another conversation; call drop_pending() first"
            )
        # What this turn's pending state will belong to: its history and its own prompt, so that even
        # a first turn's state (empty history) only enters a conversation that continues this one.
        owner = (*conversation, Message(role="user", content=prompt))
        return self._turn(history, prompt, table, execute, owner)

    def _turn(
        self,
        history: tuple[Message, ...],
        prompt: str,
        table: dict[str, ToolSpec],
        execute: Execute | None,
        owner: tuple[Message, ...],
    ) -> Iterator[Event]:
        ends_at = None if self.deadline is None else time.monotonic() + self.deadline
        wire = self._sdk.wire
        injected = self._pending or []
        messages = [*history, Message(role="user", content=prompt)]
        base = self._format(messages, copy.deepcopy(injected))
        turn_start = len(base[wire.ITEMS])
        reducer = Reducer(wire, self.accounting)
        replayed_before = dict.fromkeys(wire.replayed_tool_names(base))
        turn: list[Item] = []
        calls: Sequence[Call] = ()
        results: list[ToolResult] = []
        tool_turns = 0
        ended = False
        try:
            while True:
                request = {**base, wire.ITEMS: [*base[wire.ITEMS], *turn]}
                # The history's names are read once a turn; each iteration adds only its own items' names.
                replayed = {**replayed_before, **dict.fromkeys(wire.replayed_tool_names({wire.ITEMS: turn}))}
                specs = [*table.values(), *(placeholder_tool(name) for name in replayed if name not in table)]
                # A request that fits at one token per byte goes out before the tokenizer loads.
                bound = reducer.bound(request, specs)
                size = (
                    None
                    if bound is not None and reducer.fits(bound)
                    else reducer.measure(request, wire.ITEMS, specs)
                )
                if size is not None and not reducer.fits(size):
                    reduction = reducer.reduce(size, injected, turn)
                    if reduction.results or reduction.arguments:
                        injected, turn[:] = reduction.items[: len(injected)], reduction.items[len(injected) :]
                        if reduction.pending:
                            base = self._format(messages, copy.deepcopy(injected))
                            turn_start = len(base[wire.ITEMS])
                        request = {**base, wire.ITEMS: [*base[wire.ITEMS], *turn]}
                        size = reducer.measure(request, wire.ITEMS, specs)
                        yield Event("reduced", text=reduction.summary(), tokens=reduction.freed)
                    if not reducer.fits(size):
                        ended = True
                        yield self._end(
                            "context_overflow", reducer.overflow_message(size), injected, turn, owner
                        )
                        return
                outcome = yield from self._request(request, specs, turn_start, ends_at)
                if isinstance(outcome, Failure):
                    ended = True
                    yield self._end(_reason(outcome), outcome.message, injected, turn, owner)
                    return
                yield Event("usage", usage=outcome.usage)
                self.accounting.observe(
                    size if size is not None else partial(reducer.measure, request, wire.ITEMS, specs),
                    outcome.usage.input_tokens,
                )
                if not outcome.calls:
                    ended = True
                    if outcome.text:
                        yield self._end(outcome.stop, None, injected, turn, owner)
                    else:
                        yield self._end(
                            "empty_response", "the model returned an empty response", injected, turn, owner
                        )
                    return
                calls, results = outcome.calls, []
                turn.extend(outcome.items)
                for call in calls:
                    arguments = copy.deepcopy(call.arguments) if call.arguments is not None else {}
                    yield Event("tool_start", call_id=call.id, name=call.name, arguments=arguments)
                    result = _execute(call, table, execute)
                    results.append(result)
                    yield Event(
                        "tool_end", call_id=call.id, name=call.name, output=result.output, error=result.error
                    )
                turn.extend(wire.tool_results(calls, results))
                calls = ()
                tool_turns += 1
                if tool_turns >= self.max_tool_turns:
                    ended = True
                    yield self._end("tool_limit", None, injected, turn, owner)
                    return
        finally:
            if not ended:
                if calls:
                    unrun = ToolResult(error="not run: the turn was interrupted")
                    turn.extend(wire.tool_results(calls, [*results, *[unrun] * (len(calls) - len(results))]))
                self._keep(injected, turn, owner)

    def _end(
        self,
        reason: Reason,
        error: str | None,
        injected: list[Item],
        turn: list[Item],
        owner: tuple[Message, ...],
    ) -> Event:
        """The terminal event for ``reason``, after updating the pending state to match it."""
        if reason in ("stop", "max_tokens"):
            self._pending, self._pending_history = None, ()
            return Event("done", reason=reason)
        if self._keep(injected, turn, owner):
            return Event("incomplete", reason=reason, error=error)
        return Event("error", reason=reason, error=error)

    def _keep(self, injected: list[Item], turn: list[Item], owner: tuple[Message, ...]) -> bool:
        """Save the earlier pending items plus this turn's as pending state of the conversation
        ``owner`` (user and assistant messages, this turn's prompt last), if there are any."""
        if not injected and not turn:
            self._pending, self._pending_history = None, ()
            return False
        self._pending, self._pending_history = [*injected, *turn], owner
        return True

    def _request(
        self, request: dict[str, Any], specs: Sequence[ToolSpec], turn_start: int, ends_at: float | None
    ) -> Generator[Event, None, Completion | Failure]:
        """One iteration's request, retried as the policy allows: its ``Completion`` or final ``Failure``.

        Past ``ends_at`` (a ``time.monotonic`` value) no request starts, no retry waits and a stream
        is abandoned at its next event: the failure is then ``expired``.
        """
        policy = self.retry
        attempt = 1
        while True:
            if _expired(ends_at):
                return self._expired()
            try:
                completion: Completion | None = None
                with closing(self._sdk.stream(request, specs, turn_start)) as stream:
                    for item in stream:
                        if _expired(ends_at):
                            return self._expired()
                        if isinstance(item, Completion):
                            completion = item
                        else:
                            yield item
                if completion is None:
                    raise StreamInterrupted("the response stream ended early")
                return completion
            except Exception as error:
                failure = self._classify(error)
                if not failure.retryable or attempt >= policy.attempts:
                    return failure
                delay = policy.delay(attempt, failure.retry_after)
                if ends_at is not None and time.monotonic() + delay >= ends_at:
                    return Failure(
                        f"{failure.message} (no time left to retry: {self._expired().message})", expired=True
                    )
                attempt += 1
                yield Event("retry", error=failure.message, attempt=attempt, delay=delay)
                policy.sleep(delay)

    def _expired(self) -> Failure:
        return Failure(f"the turn took longer than its deadline of {self.deadline:g} s", expired=True)

    def _classify(self, error: Exception) -> Failure:
        """Any error of a request, as a ``Failure``: whatever the wire sends ends the turn cleanly."""
        failure = self._sdk.failure(error)
        if failure is not None:
            return failure
        if isinstance(error, ConnectionError | TimeoutError):
            return connection_failure(error)
        return malformed_failure(error)


def _reason(failure: Failure) -> Reason:
    if failure.overflow:
        return "context_overflow"
    return "deadline" if failure.expired else "api_error"


def _expired(ends_at: float | None) -> bool:
    return ends_at is not None and time.monotonic() >= ends_at


def _conversation(history: Sequence[Message]) -> tuple[Message, ...]:
    """The user and assistant messages of ``history``: what pending state belongs to."""
    return tuple(message for message in history if message.role != "system")


def _execute(call: Call, table: Mapping[str, ToolSpec], execute: Execute | None) -> ToolResult:
    """Run ``call`` if it names an offered tool with valid arguments; an error result otherwise."""
    problem = call_problem(call, table)
    if problem is not None:
        return ToolResult(error=problem)
    assert execute is not None and call.arguments is not None
    try:
        result = execute(call.id, call.name, copy.deepcopy(call.arguments))
    except Exception as error:
        return ToolResult(error=f"{call.name} failed: {one_line(str(error)) or type(error).__name__}")
    if not isinstance(result, ToolResult):
        return ToolResult(
            error=f"{call.name} failed: the tool returned {type(result).__name__}, not a ToolResult"
        )
    return result
