"""The in-turn loop and pending state, through a deterministic in-memory wire format.

``ScriptedWire`` implements the loop's ``Wire`` protocol without any SDK: each request takes the next
scripted step, which streams some text and then completes (with tool calls or not) or fails. The
property tests check the loop's invariants over arbitrary scripts.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import turnmemory as tm
from turnmemory.llm import Event, RetryPolicy, ToolResult, ToolSpec, Usage, record
from turnmemory.llm._client import Client
from turnmemory.llm._retry import RequestFailure
from turnmemory.llm._sdk import Completion, Query, Settings
from turnmemory.llm._turn import TurnLimits
from turnmemory.providers._read import Piece
from turnmemory.providers._tools import Call

TOOL = ToolSpec(
    "probe", "Probe.", {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
)


@dataclass(frozen=True)
class Step:
    """One scripted request: streamed ``text``, then ``calls`` tool calls, or a failure."""

    text: str = ""
    calls: int = 0
    fail: str | None = None  # None, "retryable", "fatal" or "overflow"


class ScriptError(Exception):
    def __init__(self, kind: str) -> None:
        super().__init__(f"scripted {kind} failure")
        self.kind = kind


class ScriptedFormatter:
    """Renders messages as plain role/content dicts, with the pending items before the last one."""

    def to_request(
        self, messages: Sequence[tm.Message], *, pending: Sequence[dict[str, Any]] = (), **options: Any
    ) -> dict[str, Any]:
        rendered = [{"role": m.role, "content": m.content} for m in messages]
        return {"messages": [*rendered[:-1], *pending, rendered[-1]]}


class ScriptedFormat:
    """The scripted wire format: assistant items with ``calls``, tool items with ``results``."""

    ITEMS = "messages"
    TURNS = None
    Formatter = ScriptedFormatter

    def pieces(self, items: Sequence[Mapping[str, Any]]) -> list[Piece]:
        found: list[Piece] = []
        for index, item in enumerate(items):
            if item["role"] == "assistant":
                found.append(Piece(index, 0, "prose", text=item["content"]))
                found.extend(
                    Piece(index, slot, "call", call["id"], call["name"], arguments={})
                    for slot, call in enumerate(item.get("calls", ()))
                )
            elif item["role"] == "tool":
                found.extend(
                    Piece(
                        index,
                        slot,
                        "result",
                        call_id,
                        text=error if error is not None else json.dumps(output),
                        error=error is not None,
                    )
                    for slot, (call_id, output, error) in enumerate(item["results"])
                )
        return found

    def replace(self, item: dict[str, Any], piece: Piece, content: str | dict[str, Any]) -> dict[str, Any]:
        raise AssertionError("the scripted requests always fit")

    def tool_results(self, calls: Sequence[Call], results: Sequence[ToolResult]) -> list[dict[str, Any]]:
        return [
            {
                "role": "tool",
                "results": [[c.id, r.output, r.error] for c, r in zip(calls, results, strict=True)],
            }
        ]

    def replayed_tool_names(self, request: Mapping[str, Any]) -> list[str]:
        return [call["name"] for item in request["messages"] for call in item.get("calls", ())]


class ScriptedWire:
    """An SDK half whose requests are answered from a list of steps; it records every request."""

    wire = ScriptedFormat()
    settings = Settings(model="m")

    def __init__(self, steps: Sequence[Step]) -> None:
        self.steps = list(steps)
        self.requests: list[dict[str, Any]] = []
        self.served = 0

    def options(self) -> dict[str, Any]:
        return {}

    def injected(self, pending: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return pending

    def stream(self, query: Query) -> Generator[Event | Completion, None, None]:
        self.requests.append(copy.deepcopy(dict(query.body)))
        step = self.steps.pop(0) if self.steps else Step(text="end")
        self.served += 1
        if step.text:
            yield Event("text", text=step.text)
        if step.fail is not None:
            raise ScriptError(step.fail)
        calls = tuple(
            Call(id=f"c{self.served}_{n}", name="probe", arguments={"n": n}) for n in range(step.calls)
        )
        item = {
            "role": "assistant",
            "content": step.text,
            "calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in calls],
        }
        yield Completion(items=(item,), calls=calls, text=step.text, usage=Usage(1, 1, 0))

    def failure(self, error: Exception) -> RequestFailure | None:
        if isinstance(error, ScriptError):
            return RequestFailure(
                str(error), retryable=error.kind == "retryable", overflow=error.kind == "overflow"
            )
        return None


def make(
    steps: Sequence[Step], *, attempts: int = 3, max_tool_turns: int = 10
) -> tuple[Client, ScriptedWire, list[float]]:
    wire = ScriptedWire(steps)
    sleeps: list[float] = []
    policy = RetryPolicy(attempts=attempts, base_delay=0.5, max_delay=4.0, jitter=0.0, sleep=sleeps.append)
    return (
        Client(wire, provider="scripted", model="m", retry=policy, turn_limits=TurnLimits(max_tool_turns)),
        wire,
        sleeps,
    )


class Executor:
    def __init__(self) -> None:
        self.ran: list[str] = []

    def __call__(self, call_id: str, name: str, arguments: dict[str, Any]) -> ToolResult:
        self.ran.append(call_id)
        return ToolResult(output={"n": arguments["n"]})


steps = st.lists(
    st.one_of(
        st.builds(Step, text=st.sampled_from(["", "a", "é ", "Look. "]), calls=st.integers(0, 2)),
        st.builds(
            Step,
            text=st.sampled_from(["", "partial "]),
            fail=st.sampled_from(["retryable", "fatal", "overflow"]),
        ),
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=150, deadline=None)
@given(
    first=steps,
    second=steps,
    attempts=st.integers(1, 3),
    max_tool_turns=st.integers(1, 3),
)
def test_loop_invariants_hold_for_any_script(
    first: list[Step], second: list[Step], attempts: int, max_tool_turns: int
) -> None:
    client, wire, _ = make([*first, *second], attempts=attempts, max_tool_turns=max_tool_turns)
    history: list[tm.Message] = []
    for prompt in ("one", "two"):
        injected = client.pending or []
        executor = Executor()
        recorder = tm.TurnRecorder()
        served_before = len(wire.requests)
        events = []
        for event in client.run_turn(history, prompt, tools=[TOOL], execute=executor):
            record(event, recorder)
            events.append(event)
        ends = [e for e in events if e.terminal]
        assert len(ends) == 1 and events[-1] is ends[0]
        end = ends[0]
        requests = wire.requests[served_before:]

        # Every call ran at most once, and only calls the model made.
        assert len(executor.ran) == len(set(executor.ran))
        # Injected pending state sits, verbatim, just before the new user message, in every request.
        for request in requests:
            messages = request["messages"]
            user = len(history)
            assert messages[user : user + len(injected)] == injected
            assert messages[user + len(injected)] == {"role": "user", "content": prompt}
        # Each request completed (usage), failed and was retried, or failed for good.
        count = {kind: sum(1 for e in events if e.kind == kind) for kind in ("usage", "retry")}
        failed = 1 if end.reason in ("api_error", "context_overflow") else 0
        assert len(requests) == count["usage"] + count["retry"] + failed
        pending = client.pending
        if end.kind == "done":
            assert pending is None
        elif end.kind == "error":
            assert pending is None and not injected and not executor.ran
        else:
            assert pending is not None and pending[: len(injected)] == injected
            assert injected or executor.ran
        # Whatever the outcome, the recorder yields a message whose activities fit its prose.
        message = recorder.finish()
        assert tm.Message.from_dict(message.to_dict()) == message
        assert len(message.activities) == len(executor.ran)
        history = [*history, tm.Message("user", prompt)]
        if end.kind == "done":
            history.append(message)


@settings(max_examples=60, deadline=None)
@given(
    kinds=st.lists(st.sampled_from(["retryable", "fatal", "overflow"]), min_size=1, max_size=5),
    attempts=st.integers(1, 4),
)
def test_retries_only_what_can_succeed_and_stay_bounded(kinds: list[str], attempts: int) -> None:
    client, wire, sleeps = make([*(Step(fail=kind) for kind in kinds), Step(text="ok")], attempts=attempts)
    events = list(client.run_turn([], "go"))
    requests = len(wire.requests)
    assert requests <= attempts
    expected = 0
    for kind in kinds:
        expected += 1
        if kind != "retryable" or expected == attempts:
            break
    else:
        expected += 1
    assert requests == expected
    assert len(sleeps) == requests - 1 == len([e for e in events if e.kind == "retry"])
    assert all(a == b for a, b in zip(wire.requests, wire.requests[1:], strict=False))


def test_retry_waits_grow_and_are_capped() -> None:
    client, _, sleeps = make([Step(fail="retryable")] * 5 + [Step(text="ok")], attempts=6)
    events = list(client.run_turn([], "go"))
    assert events[-1].kind == "done"
    assert sleeps == [0.5, 1.0, 2.0, 4.0, 4.0]
    assert [e.attempt for e in events if e.kind == "retry"] == [2, 3, 4, 5, 6]
    assert [e.delay for e in events if e.kind == "retry"] == sleeps


def test_a_rejected_call_is_recorded_as_a_failed_activity() -> None:
    client, wire, _ = make([Step(text="Try. ", calls=1), Step(text="ok")])
    recorder = tm.TurnRecorder()
    executor = Executor()

    def refuse(call_id: str, name: str, arguments: dict[str, Any]) -> ToolResult:
        raise RuntimeError("disk on fire")

    for event in client.run_turn([], "go", tools=[TOOL], execute=refuse):
        record(event, recorder)
    assert executor.ran == []
    assert wire.requests[-1]["messages"][-1]["results"][0][2] == "probe failed: disk on fire"
    assert [(a.text_offset, a.tool, a.status) for a in recorder.finish().activities] == [
        (5, "probe", "error")
    ]


def test_bad_arguments_fail_at_once() -> None:
    client, wire, _ = make([Step(text="x")])
    with pytest.raises(ValueError, match="execute: required"):
        client.run_turn([], "go", tools=[TOOL])
    with pytest.raises(ValueError, match=r"history\[0\]: expected a turnmemory.Message"):
        client.run_turn([{"role": "user", "content": "hi"}], "go")  # type: ignore[list-item]
    with pytest.raises(ValueError, match="offered twice"):
        client.run_turn([], "go", tools=[TOOL, TOOL], execute=Executor())
    assert wire.requests == []


def test_an_unexpected_error_ends_the_turn_and_keeps_accumulated_work() -> None:
    class Broken(ScriptedWire):
        def failure(self, error: Exception) -> RequestFailure | None:
            return None

    wire = Broken([Step(text="a", calls=1), Step(fail="fatal")])
    client = Client(
        wire,
        provider="scripted",
        model="m",
        retry=RetryPolicy(sleep=lambda _: None),
        turn_limits=TurnLimits(5),
    )
    events = list(client.run_turn([], "go", tools=[TOOL], execute=Executor()))
    assert [event.kind for event in events if event.terminal] == ["incomplete"]
    assert events[-1].error == "malformed response from the provider (ScriptError)"
    assert client.pending is not None and json.dumps(client.pending)


def test_pending_belongs_to_the_conversation_not_to_the_system_prompt() -> None:
    client, wire, _ = make([Step(text="a", calls=1), Step(fail="fatal"), Step(text="ok")])
    first = [tm.Message("system", "v1"), tm.Message("user", "q"), tm.Message("assistant", "a.")]
    events = list(client.run_turn(first, "go", tools=[TOOL], execute=Executor()))
    assert events[-1].kind == "incomplete"
    with pytest.raises(ValueError, match="another conversation"):
        client.run_turn([tm.Message("user", "other")], "go")
    with pytest.raises(ValueError, match="another conversation"):
        client.run_turn(first[:2], "go")
    later = [tm.Message("system", "v2"), *first[1:], tm.Message("user", "go")]
    events = list(client.run_turn(later, "continue", tools=[TOOL], execute=Executor()))
    assert events[-1].kind == "done" and client.pending is None
    assert len(wire.requests) == 3


def test_a_blank_prompt_is_refused() -> None:
    client, wire, _ = make([])
    for prompt in ("", "  \n"):
        with pytest.raises(ValueError, match="prompt: expected non-blank text"):
            client.run_turn([], prompt)
    assert wire.requests == []


def test_event_arguments_are_the_callers_to_keep() -> None:
    client, wire, _ = make([Step(text="a", calls=1), Step(text="ok")])
    for event in client.run_turn([], "go", tools=[TOOL], execute=Executor()):
        if event.kind == "tool_start":
            assert isinstance(event.arguments, dict)
            event.arguments["n"] = "changed"
    assert wire.requests[-1]["messages"][-2]["calls"][0]["arguments"] == {"n": 0}
    assert wire.requests[-1]["messages"][-1]["results"][0][1] == {"n": 0}
