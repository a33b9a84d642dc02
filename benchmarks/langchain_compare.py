"""Per-request history cost: turnmemory against LangChain's ``ClearToolUsesEdit`` and ``trim_messages``.

    make bench            # installs benchmarks/requirements.txt, then runs this and perf.py
    .venv/bin/python benchmarks/langchain_compare.py [--sizes 10,100,1000]

The same synthetic sessions (``synthetic.traced_session``) are built twice: as turnmemory ``Message``\\ s
(prose + TurnMemory) and as the equivalent LangChain message list with the full trace (``AIMessage``
with real tool-call arguments, ``ToolMessage`` with real outputs). For the request of a new user turn
the script times, side by side in one process:

- turnmemory's incremental ``Formatter`` (what the agent runs per turn) and a cold ``to_request``;
- ``ContextEditingMiddleware``'s work per model call: ``deepcopy`` of the messages, then
  ``ClearToolUsesEdit().apply`` with ``count_tokens_approximately`` (defaults: trigger 100k, keep 3);
- ``trim_messages`` to 100k approximate tokens (``strategy="last"``, ``start_on="human"``,
  ``include_system=True``);

and prints each as a ratio of turnmemory's per-turn time, plus the approximate tokens each history
leaves in the request.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import synthetic
import turnmemory as tm
from turnmemory.providers import openai_chat

try:
    from langchain.agents.middleware.context_editing import ClearToolUsesEdit
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
    from langchain_core.messages.utils import count_tokens_approximately, trim_messages
except ImportError:  # pragma: no cover - the benchmark environment installs them
    sys.exit("langchain_compare: install benchmarks/requirements.txt first (make bench does)")


def langchain_history(session: list[tuple[str, synthetic.Turn]]) -> list[BaseMessage]:
    """The full-trace LangChain message list of a traced session, ending with the next user message."""
    out: list[BaseMessage] = [SystemMessage(synthetic.SYSTEM)]
    for user, events in session:
        out.append(HumanMessage(user))
        out.extend(_turn_messages(events))
    out.append(HumanMessage(synthetic.FINAL_USER))
    return out


def _turn_messages(events: synthetic.Turn) -> list[BaseMessage]:
    """One assistant turn: an AIMessage (prose and tool calls) per loop iteration, then its ToolMessages."""
    out: list[BaseMessage] = []
    prose: list[str] = []
    calls: list[synthetic.ToolEvent] = []
    for event in [*events, None]:
        if isinstance(event, synthetic.ToolEvent):
            calls.append(event)
            continue
        if calls or (event is None and prose):
            tool_calls = [{"id": c.call_id, "name": c.name, "args": c.arguments} for c in calls]
            out.append(AIMessage(content="".join(prose), tool_calls=tool_calls))
            out.extend(
                ToolMessage(
                    content=json.dumps(c.output) if c.error is None else c.error,
                    tool_call_id=c.call_id,
                    name=c.name,
                )
                for c in calls
            )
            prose, calls = [], []
        if isinstance(event, str):
            prose.append(event)
    return out


def best(fn: Callable[[], object], repeat: int) -> float:
    """Best wall time of ``repeat`` calls."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def per_new_turn(history: list[tm.Message], repeat: int) -> float:
    """Incremental Formatter: the request after the last turn, given the one before it was built."""
    times = []
    for _ in range(repeat):
        formatter = openai_chat.Formatter()
        formatter.to_request(history[:-2])
        start = time.perf_counter()
        formatter.to_request(history)
        times.append(time.perf_counter() - start)
    return min(times)


def clear_tool_uses(messages: list[BaseMessage]) -> list[BaseMessage]:
    """What ContextEditingMiddleware does before each model call with the default edit."""
    edited = copy.deepcopy(messages)
    ClearToolUsesEdit().apply(edited, count_tokens=count_tokens_approximately)
    return edited


def trim(messages: list[BaseMessage]) -> list[BaseMessage]:
    """trim_messages to 100k approximate tokens, keeping the system message."""
    return trim_messages(
        messages,
        max_tokens=100_000,
        token_counter=count_tokens_approximately,
        strategy="last",
        start_on="human",
        include_system=True,
    )


def fmt(seconds: float) -> str:
    """Milliseconds."""
    return f"{seconds * 1e3:9.2f} ms"


def main() -> None:
    """Print the comparison table."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="10,100,1000")
    args = parser.parse_args()
    rows: list[list[str]] = []
    for turns in (int(s) for s in args.sizes.split(",")):
        repeat = 5 if turns <= 100 else 3
        traced = synthetic.traced_session(turns)
        history = synthetic.session(turns)
        lc = langchain_history(traced)
        ours = per_new_turn(history, repeat)
        cold = best(lambda h=history: openai_chat.to_request(h), repeat)
        cleared = best(lambda m=lc: clear_tool_uses(m), repeat)
        trimmed = best(lambda m=lc: trim(m), repeat)
        ours_tokens = count_tokens_approximately(
            [_as_langchain(m) for m in openai_chat.to_request(history)["messages"]]
        )
        rows.append(
            [
                f"{turns:,}",
                fmt(ours),
                f"{cold / ours:,.0f}x",
                f"{cleared / ours:,.0f}x",
                f"{trimmed / ours:,.0f}x",
                f"{ours_tokens:,}",
                f"{count_tokens_approximately(clear_tool_uses(lc)):,}",
                f"{count_tokens_approximately(trim(lc)):,}",
            ]
        )
    header = [
        "turns",
        "turnmemory per new turn",
        "cold to_request",
        "ClearToolUsesEdit",
        "trim_messages",
        "tokens: turnmemory",
        "tokens: cleared",
        "tokens: trimmed",
    ]
    print("\n### Per-request history work, as multiples of turnmemory's incremental Formatter\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---:" for _ in header) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print(
        "\nTokens are LangChain's count_tokens_approximately of each resulting history (turnmemory's"
        " request converted to LangChain messages); trim_messages drops whole early turns to fit 100k."
    )


def _as_langchain(message: dict[str, Any]) -> BaseMessage:
    """An OpenAI Chat message dict as a LangChain message, for a like-for-like token estimate."""
    role, content = message["role"], message.get("content") or ""
    if role == "system":
        return SystemMessage(content)
    if role == "user":
        return HumanMessage(content)
    if role == "tool":
        return ToolMessage(content=content, tool_call_id=message["tool_call_id"])
    calls = [
        {"id": c["id"], "name": c["function"]["name"], "args": json.loads(c["function"]["arguments"])}
        for c in message.get("tool_calls", ())
    ]
    return AIMessage(content=content, tool_calls=calls)


if __name__ == "__main__":
    main()
