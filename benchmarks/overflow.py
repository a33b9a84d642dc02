"""Context overflow on real single-turn trajectories, without and with the in-turn reducer.

Each SWE-agent and mini-swe-agent trajectory in ``../shared/data/transcripts`` is one long user turn.
It is rebuilt as the OpenAI Chat requests its tool loop sends (the user message, then every earlier
assistant message with its calls and every tool result, as the ``openai_chat`` client writes them),
measured in o200k tokens (bytes / 3 when tiktoken's file is unavailable offline; the unit is
printed). For windows of 32k, 128k and 200k tokens it counts the requests that exceed the window as
they are, and the requests the client would send with its reducer (``turnmemory.llm._reduce``, the
real code, with the client's default reserve and chunk), which clears the oldest tool results before
a request would not fit::

    .venv/bin/python benchmarks/overflow.py [TRANSCRIPTS_DIR]

Tool definitions and the agents' system prompts are not part of the imported transcripts, so every
request here is smaller than the agent's real one by that constant.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from turnmemory.llm import ContextLimits, ToolResult, open_counter
from turnmemory.llm._reduce import Reducer
from turnmemory.llm._tokens import Accounting
from turnmemory.memory import Message
from turnmemory.providers import openai_chat
from turnmemory.providers._tools import Call
from turnmemory.transcripts import ImportedTurn, IterationEnd, Prose, ToolCall, load_session
from turnmemory.transcripts import ToolResult as ImportedResult

WINDOWS = (8_000, 16_000, 32_000, 128_000, 200_000)
"""The issue's three windows, and two small ones where these trajectories do outgrow the window."""
FORMATS = ("swe-agent", "mini-swe-agent")
DEFAULT_DIR = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "transcripts"


def iterations(turn: ImportedTurn) -> Iterator[tuple[str, list[ToolCall], list[ImportedResult]]]:
    """The turn's tool-loop iterations: the assistant's prose, its calls, and their results."""
    prose: list[str] = []
    calls: list[ToolCall] = []
    results: list[ImportedResult] = []
    for event in turn.events:
        if isinstance(event, Prose):
            prose.append(event.text)
        elif isinstance(event, ToolCall):
            calls.append(event)
        elif isinstance(event, ImportedResult):
            results.append(event)
        elif isinstance(event, IterationEnd):
            yield "".join(prose), calls, results
            prose, calls, results = [], [], []
    if prose or calls:
        yield "".join(prose), calls, results


def native_items(prose: str, calls: list[ToolCall], results: list[ImportedResult]) -> list[Any]:
    """One iteration as the OpenAI Chat client appends it: the assistant message, then the results."""
    message: dict[str, Any] = {"role": "assistant", "content": prose or None}
    if calls:
        message["tool_calls"] = [
            {
                "id": call.call_id,
                "type": "function",
                "function": {"name": call.source_name, "arguments": _arguments(call.source_input)},
            }
            for call in calls
        ]
    by_id = {result.call_id: result for result in results}
    answered = [call for call in calls if call.call_id in by_id]
    outputs = [
        ToolResult(error=by_id[c.call_id].text)
        if by_id[c.call_id].is_error
        else ToolResult(output=by_id[c.call_id].text)
        for c in answered
    ]
    native_calls = [Call(id=call.call_id, name=call.source_name, arguments={}) for call in answered]
    missing = [
        {"role": "tool", "tool_call_id": call.call_id, "content": "(no result recorded)"}
        for call in calls
        if call.call_id not in by_id
    ]
    return [message, *openai_chat.tool_results(native_calls, outputs), *missing]


def _arguments(source: str) -> str:
    try:
        value = json.loads(source)
    except ValueError:
        value = None
    return source if isinstance(value, dict) else json.dumps({"input": source}, ensure_ascii=False)


@dataclass
class Tally:
    """Counts for one window over a set of trajectories."""

    over_without: int = 0
    over_budget: int = 0
    over_with: int = 0
    reductions: int = 0
    overflowed: int = 0
    freed: int = 0


@dataclass
class Corpus:
    """One dataset's trajectories and requests."""

    sessions: int = 0
    requests: int = 0
    peak: int = 0
    tallies: dict[int, Tally] = field(default_factory=lambda: {window: Tally() for window in WINDOWS})


def simulate(turn: ImportedTurn, corpus: Corpus, counter: Any) -> None:
    """Every request of ``turn``, as it is and through the reducer, under each window."""
    steps = [native_items(*step) for step in iterations(turn)]
    base = openai_chat.to_request([Message(role="user", content=turn.user or "(task)")])
    for window in WINDOWS:
        tally = corpus.tallies[window]
        reducer = Reducer(openai_chat, Accounting(counter, ContextLimits.of("gpt-4.1", window=window)))
        plain: list[Any] = []
        trace: list[Any] = []
        failed = False
        for index, items in enumerate([[], *steps]):
            plain.extend(items)
            trace.extend(items)
            if index == len(steps):  # the last iteration's results answer no further request
                break
            raw = reducer.measure({**base, "messages": [*base["messages"], *plain]}, "messages", [])
            if window == WINDOWS[0]:
                corpus.requests += 1
                corpus.peak = max(corpus.peak, raw)
            tally.over_without += raw > window
            tally.over_budget += not reducer.fits(raw)
            if failed:
                continue
            size = reducer.measure({**base, "messages": [*base["messages"], *trace]}, "messages", [])
            if not reducer.fits(size):
                reduction = reducer.reduce(size, [], trace)
                trace[:] = reduction.items
                tally.reductions += 1
                tally.freed += reduction.freed
                size = reducer.measure({**base, "messages": [*base["messages"], *trace]}, "messages", [])
                if not reduction.fits:
                    failed = True
                    tally.overflowed += 1
                    continue
            tally.over_with += size > window


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else DEFAULT_DIR
    if not root.is_dir():
        print(f"no transcripts at {root}", file=sys.stderr)
        return 2
    counter = open_counter("o200k")
    print(f"unit: {counter.unit}" + (f" ({counter.note})" if counter.note else ""))
    print(
        "| data set | window | requests | largest | over the window, as is | over the budget, as is "
        "| over the window, reduced | reductions | overflowed turns | tokens freed |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in FORMATS:
        corpus = Corpus()
        for path in sorted((root / name).iterdir()):
            session = load_session(path)
            for turn in session.turns:
                corpus.sessions += 1
                simulate(turn, corpus, counter)
        for window in WINDOWS:
            t = corpus.tallies[window]
            print(
                f"| {name} ({corpus.sessions}) | {window // 1000}k | {corpus.requests} | {corpus.peak} "
                f"| {t.over_without} | {t.over_budget} | {t.over_with} | {t.reductions} | {t.overflowed} | {t.freed} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
