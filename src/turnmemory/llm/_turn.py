"""One assistant turn, readable in one place: a loop of steps, each one request and the tools it calls.

A turn is ``run`` → ``step`` until a step says how the turn ended. A step builds the request (the
formatted history, the pending state of an earlier incomplete turn before the new user message, and
everything this turn produced so far, in the provider's own format), ``fit``\\ s it into the context
window (the in-turn reducer), ``query``\\ s the provider (retrying what can succeed when sent again, so
completed tools never run twice) and ``execute``\\ s the calls of the response. The :class:`Turn` owns
the partial turn while it runs: :meth:`Turn.partial` is what an incomplete turn leaves behind, and the
client that ran it keeps that as its pending state.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass
from functools import partial
from typing import Any

from turnmemory._text import compact_json, one_line
from turnmemory.llm._reduce import Reducer
from turnmemory.llm._retry import RequestFailure, RetryPolicy, connection_failure, malformed_failure
from turnmemory.llm._sdk import Completion, Query, Sdk, StreamInterrupted
from turnmemory.llm._tokens import Accounting
from turnmemory.llm._tools import ToolSpec, call_problem, placeholder_tool
from turnmemory.llm.events import Event, Reason
from turnmemory.providers._images import Image
from turnmemory.providers._render import Item
from turnmemory.providers._tools import Call, ToolResult

__all__ = [
    "DEFAULT_MAX_ARGUMENT_BYTES",
    "DEFAULT_MAX_CALLS",
    "DEFAULT_MAX_TOOL_TURNS",
    "UNKNOWN",
    "Execute",
    "Outcome",
    "Turn",
    "TurnLimits",
]

DEFAULT_MAX_TOOL_TURNS = 10_000
"""Tool rounds one turn may run: a guard against a model that never stops, far past ordinary long
work (the window is kept by the reducer, the time by the turn's deadline)."""

DEFAULT_MAX_CALLS = 100
"""Calls of one response that run."""

DEFAULT_MAX_ARGUMENT_BYTES = 1_000_000
"""The largest arguments of one call that run (UTF-8 bytes of their compact JSON)."""


Execute = Callable[[str, str, dict[str, Any]], ToolResult]
"""Runs one tool call: ``execute(call_id, name, arguments) -> ToolResult``."""

_UNRUN = ToolResult(error="not run: the turn was interrupted")
UNKNOWN = ToolResult(
    error="outcome unknown: the turn was interrupted while this call ran; it may have partly run "
    "(check its effects before repeating it); it is not run again"
)
"""The result of a call that started and never ended: whatever it did is not known, and it never reruns."""


@dataclass(frozen=True, slots=True)
class TurnLimits:
    """What one turn may do; a ``ValueError`` for a limit out of its range."""

    max_tool_turns: int = DEFAULT_MAX_TOOL_TURNS
    """The most tool rounds (responses with calls) one turn may run before it ends ``tool_limit``."""
    max_calls: int = DEFAULT_MAX_CALLS
    """The most calls of one response that run; the rest are answered that they did not."""
    max_argument_bytes: int = DEFAULT_MAX_ARGUMENT_BYTES
    """The largest arguments (UTF-8 bytes of compact JSON) a call may carry and still run."""
    deadline: float | None = None
    """Seconds one turn may take, tools included, or ``None``: past it the turn ends (``deadline``).

    It is checked before each request, before each retry's wait and at each streamed event; a
    stream that sends nothing ends at the read timeout, which ``open_client`` keeps within it."""

    def __post_init__(self) -> None:
        for name in ("max_tool_turns", "max_calls", "max_argument_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}: expected a whole number of at least 1, got {value!r}")
        if self.deadline is not None and not self.deadline > 0:
            raise ValueError("deadline: expected a positive number of seconds or None")


@dataclass(frozen=True, slots=True)
class Outcome:
    """Why a turn ended, and the provider's message when a request failed."""

    reason: Reason
    error: str | None = None

    @property
    def done(self) -> bool:
        """Whether the model finished (it answered, or ran out of output tokens)."""
        return self.reason in ("stop", "max_tokens")


class Turn:
    """One running turn: its requests, and the partial turn they build.

    ``pending`` holds the native items of earlier incomplete turns (injected before the new user
    message); ``items`` this turn's own responses and results.
    """

    def __init__(
        self,
        sdk: Sdk,
        request: Callable[[list[Item]], dict[str, Any]],
        pending: list[Item],
        tools: Mapping[str, ToolSpec],
        execute: Execute | None,
        *,
        accounting: Accounting,
        retry: RetryPolicy,
        limits: TurnLimits,
        images: Sequence[Image] = (),
    ) -> None:
        self._sdk = sdk
        self._images = tuple(images)
        self._format = request
        self._tools = tools
        self._execute = execute
        self._accounting = accounting
        self._retry = retry
        self._limits = limits
        self._ends_at = None if limits.deadline is None else time.monotonic() + limits.deadline
        self._reducer = Reducer(
            sdk.wire,
            accounting,
            options=sdk.options(),
            images=sum(sdk.wire.image_tokens(image) for image in self._images),
        )
        self.pending = pending
        self.items: list[Item] = []
        self._answering: tuple[Sequence[Call], list[ToolResult]] = ((), [])
        self._running = False  # the next call of those being answered is announced and has no result yet
        self._tool_turns = 0
        self.requests = 0
        """How many requests completed."""
        self.last_request: float | None = None
        """When the last of them completed (``time.monotonic()``)."""
        self._history = request(copy.deepcopy(pending))
        self._replayed = dict.fromkeys(sdk.wire.replayed_tool_names(self._history))
        """The tool names the history (pending state included) and this turn's calls replay: read once a
        turn, then extended by each response's calls."""
        self._ids: set[str] | None = None
        """The call ids the next request holds (:meth:`held_ids`), extended by each response's calls;
        ``None`` until read, and after a reduction renamed some."""

    def partial(self) -> list[Item]:
        """The partial turn so far: the earlier pending items and this turn's, every call answered: a call
        announced (``tool_start``) that has not ended is :data:`UNKNOWN`, calls of the response that
        never started get an error result saying they did not run."""
        calls, results = self._answering
        running = [UNKNOWN] if self._running else []
        unanswered = [*results, *running, *[_UNRUN] * (len(calls) - len(results) - len(running))]
        answers = self._sdk.wire.tool_results(calls, unanswered) if calls else []
        return [*self.pending, *self.items, *answers]

    def run(self) -> Generator[Event, None, Outcome]:
        """Every step of the turn, until one says how it ended."""
        while True:
            outcome = yield from self.step()
            if outcome is not None:
                return outcome

    def step(self) -> Generator[Event, None, Outcome | None]:
        """One iteration: fit the request into the window, send it, run the calls of the response."""
        request, tools = self.request()
        fitted = yield from self.fit(request, tools)
        if isinstance(fitted, Outcome):
            return fitted
        request, tools, size = fitted
        reply = yield from self.query(request, tools)
        if isinstance(reply, RequestFailure):
            return Outcome(_reason(reply), reply.message)
        self.requests += 1
        self.last_request = time.monotonic()
        yield Event("usage", usage=reply.usage)
        key = self._sdk.wire.ITEMS
        measured = partial(self._reducer.measure, request, key, tools)
        self._accounting.observe(size if size is not None else measured, reply.usage.input_tokens)
        if not reply.calls and not reply.text:
            return Outcome("empty_response", "the model returned an empty response")
        if not reply.calls:
            self.items.extend(reply.items)  # the turn's raw trace, whole (a finished turn has no partial)
            return Outcome(reply.stop)
        yield from self.execute(reply)
        self._tool_turns += 1
        if self._tool_turns < self._limits.max_tool_turns:
            return None
        return Outcome(
            "tool_limit", f"the turn reached its limit of {self._limits.max_tool_turns} tool rounds"
        )

    def request(self) -> tuple[dict[str, Any], list[ToolSpec]]:
        """The next request, and the tools it declares (placeholders for replayed tools not offered)."""
        key = self._sdk.wire.ITEMS
        specs = [
            *self._tools.values(),
            *(placeholder_tool(name) for name in self._replayed if name not in self._tools),
        ]
        return {**self._history, key: [*self._history[key], *self.items]}, specs

    def fit(
        self, request: dict[str, Any], tools: list[ToolSpec]
    ) -> Generator[Event, None, tuple[dict[str, Any], list[ToolSpec], int | None] | Outcome]:
        """``request`` made to fit the window, the tools it declares, and its raw size when it was
        measured; the overflow when nothing is left to clear. A request that fits at one token per byte
        goes out unmeasured."""
        reducer, wire = self._reducer, self._sdk.wire
        bound = reducer.bound(request, tools)
        if bound is not None and reducer.fits(bound):
            return request, tools, None
        size = reducer.measure(request, wire.ITEMS, tools)
        if reducer.fits(size):
            return request, tools, size
        reduction = reducer.reduce(size, self.pending, self.items, taken=self.held_ids(request))
        if reduction.changed:
            self._ids = None
            self.pending = reduction.items[: reduction.injected]
            self.items = reduction.items[reduction.injected :]
            if reduction.pending:
                self._history = self._format(copy.deepcopy(self.pending))
            if reduction.folded:  # a folded call may replay under another name (an MCP call's wrapper)
                self._replayed.update(dict.fromkeys(wire.replayed_tool_names({wire.ITEMS: reduction.items})))
            request, tools = self.request()
            size = reducer.measure(request, wire.ITEMS, tools)
            yield Event("reduced", text=reduction.summary(), tokens=reduction.freed)
        if not reducer.fits(size):
            return Outcome("context_overflow", reducer.overflow_message(size))
        return request, tools, size

    def held_ids(self, request: dict[str, Any]) -> set[str]:
        """The call ids ``request`` (the history, the pending state and this turn's items) holds: read
        from it once, and again after a reduction."""
        if self._ids is None:
            wire = self._sdk.wire
            self._ids = {piece.call_id for piece in wire.pieces(request[wire.ITEMS]) if piece.call_id}
        return self._ids

    def query(
        self, request: dict[str, Any], tools: Sequence[ToolSpec]
    ) -> Generator[Event, None, Completion | RequestFailure]:
        """One request, retried as the policy allows: its ``Completion`` or its final ``RequestFailure``.

        Past the deadline no request starts, no retry waits and a stream is abandoned at its next
        event: the failure is then ``expired``.
        """
        turn_start = len(self._history[self._sdk.wire.ITEMS])
        query = Query(
            self._with_images(request, turn_start),
            tools,
            turn_start,
            self._limits.max_argument_bytes,
            frozenset(self.held_ids(request)),
        )
        attempt = 1
        while True:
            if self._expired():
                return self._expiry()
            try:
                completion = yield from self._stream(query)
                if completion is None:
                    return self._expiry()
                return completion
            except Exception as error:
                failure = self._classify(error)
                if not failure.retryable or attempt >= self._retry.attempts:
                    return failure
                delay = self._retry.delay(attempt, failure.retry_after)
                if self._ends_at is not None and time.monotonic() + delay >= self._ends_at:
                    return RequestFailure(
                        f"{failure.message} (no time left to retry: {self._expiry().message})", expired=True
                    )
                attempt += 1
                yield Event("retry", error=failure.message, attempt=attempt, delay=delay)
                self._retry.sleep(delay)

    def _with_images(self, request: dict[str, Any], turn_start: int) -> dict[str, Any]:
        """``request`` with this turn's images in its prompt, the last user message before the turn's
        own items. They join only the request sent: what is measured, kept or saved never holds them."""
        if not self._images:
            return request
        key, wire = self._sdk.wire.ITEMS, self._sdk.wire
        items = list(request[key])
        prompt = max((i for i in range(turn_start) if items[i].get("role") == "user"), default=None)
        if prompt is not None:
            items[prompt] = wire.with_images(items[prompt], self._images)
        return {**request, key: items}

    def execute(self, reply: Completion) -> Generator[Event, None, None]:
        """Run the calls of ``reply``, in order, and add the response and their results to the turn.

        Calls past the first ``max_calls`` of a response do not run: each is answered with one line
        saying so, without tool events."""
        self.items.extend(reply.items)
        if self._ids is not None:
            self._ids.update(call.id for call in reply.calls)
        self._replayed.update(
            dict.fromkeys(self._sdk.wire.replayed_tool_names({self._sdk.wire.ITEMS: list(reply.items)}))
        )
        results: list[ToolResult] = []
        self._answering = (reply.calls, results)
        for call in reply.calls[: self._limits.max_calls]:
            arguments = copy.deepcopy(call.arguments) if call.arguments is not None else {}
            self._running = True
            yield Event("tool_start", call_id=call.id, name=call.name, arguments=arguments)
            result = self._run(call)
            results.append(result)
            self._running = False
            yield Event("tool_end", call_id=call.id, name=call.name, output=result.output, error=result.error)
        excess = len(reply.calls) - len(results)
        if excess > 0:
            refused = ToolResult(
                error=f"not run: one response may make at most {self._limits.max_calls} tool calls and this one made "
                f"{len(reply.calls)}; make fewer calls per response"
            )
            results.extend([refused] * excess)
        self.items.extend(self._sdk.wire.tool_results(reply.calls, results))
        self._answering = ((), [])

    def _stream(self, query: Query) -> Generator[Event, None, Completion | None]:
        """Stream one attempt; its ``Completion``, or ``None`` when the deadline passed meanwhile."""
        completion: Completion | None = None
        with closing(self._sdk.stream(query)) as stream:
            for item in stream:
                if self._expired():
                    return None
                if isinstance(item, Completion):
                    completion = item
                else:
                    yield item
        if completion is None:
            raise StreamInterrupted("the response stream ended early")
        return completion

    def _run(self, call: Call) -> ToolResult:
        """Run ``call`` if it names an offered tool with valid arguments; an error result otherwise."""
        size = _argument_bytes(call)
        if size > self._limits.max_argument_bytes:
            return ToolResult(
                error=f"not run: the arguments of {call.name} are {size} bytes, more than the "
                f"{self._limits.max_argument_bytes} one call may carry; send the content in smaller parts"
            )
        problem = call_problem(call, self._tools)
        if problem is not None:
            return ToolResult(error=problem)
        assert self._execute is not None and call.arguments is not None
        try:
            result = self._execute(call.id, call.name, copy.deepcopy(call.arguments))
        except Exception as error:
            return ToolResult(error=f"{call.name} failed: {one_line(str(error)) or type(error).__name__}")
        if not isinstance(result, ToolResult):
            return ToolResult(
                error=f"{call.name} failed: the tool returned {type(result).__name__}, not a ToolResult"
            )
        return result

    def _expired(self) -> bool:
        return self._ends_at is not None and time.monotonic() >= self._ends_at

    def _expiry(self) -> RequestFailure:
        return RequestFailure(
            f"the turn took longer than its deadline of {self._limits.deadline:g} s", expired=True
        )

    def _classify(self, error: Exception) -> RequestFailure:
        """Any error of a request, as a ``RequestFailure``: whatever the SDK raises ends the turn cleanly."""
        failure = self._sdk.failure(error)
        if failure is not None:
            return failure
        if isinstance(error, ConnectionError | TimeoutError):
            return connection_failure(error)
        return malformed_failure(error)


def _argument_bytes(call: Call) -> int:
    """The UTF-8 size of a call's arguments: as streamed when they were too large to keep, otherwise
    their compact JSON (or the text the model sent when it is not an object)."""
    if call.dropped_bytes:
        return call.dropped_bytes
    text = compact_json(call.arguments) if call.arguments is not None else call.raw_arguments
    return len(text.encode("utf-8"))


def _reason(failure: RequestFailure) -> Reason:
    if failure.overflow:
        return "context_overflow"
    return "deadline" if failure.expired else "api_error"
