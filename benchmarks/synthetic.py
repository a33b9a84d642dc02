"""Deterministic synthetic sessions for the performance benchmarks.

A session of ``turns`` user turns; each assistant turn streams realistic prose in chunks and runs about
``tools_per_turn`` tool calls (reads, greps, edits, bash with some failures, an MCP call now and then)
across a few loop iterations, recorded with the real ``TurnRecorder``.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import turnmemory as tm

WORKSPACE = "/home/dev/project"

_WORDS = [
    "the",
    "handler",
    "now",
    "closes",
    "the",
    "stream",
    "after",
    "the",
    "last",
    "content",
    "block",
    "so",
    "the",
    "terminal",
    "event",
    "is",
    "never",
    "lost",
    "let",
    "me",
    "check",
    "how",
    "the",
    "retry",
    "path",
    "rewinds",
    "unsealed",
    "prose",
    "before",
    "the",
    "next",
    "attempt",
    "and",
    "whether",
    "the",
    "parser",
    "keeps",
    "byte",
    "offsets",
    "of",
    "multi-byte",
    "text",
    "such",
    "as",
    "café",
    "naïve",
    "日本語",
    "correct",
    "across",
    "chunks",
]


@dataclass(frozen=True, slots=True)
class ToolEvent:
    """One tool call of a synthetic turn: what the recorder receives."""

    call_id: str
    name: str
    arguments: dict[str, Any]
    output: dict[str, Any] | None
    error: str | None


def _prose(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words)).capitalize() + ". "


def _tool(rng: random.Random, turn: int, n: int) -> ToolEvent:
    call_id = f"call_{turn}_{n}"
    path = f"{WORKSPACE}/src/module_{rng.randrange(40)}/file_{rng.randrange(200)}.py"
    kind = rng.random()
    if kind < 0.35:
        content = "\n".join(f"    line {i}: {rng.choice(_WORDS)}" for i in range(rng.randrange(20, 200)))
        return ToolEvent(call_id, "read_file", {"path": path}, {"content": content, "path": path}, None)
    if kind < 0.55:
        args = {"pattern": rng.choice(["TODO", "def run", "retry", "offset"]), "path": f"{WORKSPACE}/src"}
        return ToolEvent(call_id, "grep", args, {"matches": [path] * rng.randrange(1, 30)}, None)
    if kind < 0.7:
        args = {"path": path, "oldString": "a = 1\n" * 5, "newString": "a = 2\n" * 5}
        return ToolEvent(call_id, "edit_file", args, {"file_changed": path, "replacements": 1}, None)
    if kind < 0.92:
        code = 1 if rng.random() < 0.2 else 0
        output = {"exit_code": code, "stdout": "ok\n" * rng.randrange(5, 300)}
        if code:
            output["failed_command"] = "python -m pytest tests -q"
        return ToolEvent(call_id, "bash", {"command": "python -m pytest tests -q"}, output, None)
    if kind < 0.97:
        args = {"server": "docs", "tool": "search", "arguments": {"query": "stream handler"}}
        return ToolEvent(
            call_id, "call_mcp_tool", args, {"server": "docs", "tool": "search", "content": "x" * 500}, None
        )
    return ToolEvent(call_id, "read_file", {"path": path}, None, "file not found")


def turn_script(rng: random.Random, turn: int, tools_per_turn: int) -> Iterator[str | ToolEvent | None]:
    """The events of one assistant turn: prose chunks (str), tool calls, ``None`` for a loop-iteration end."""
    remaining = tools_per_turn
    n = 0
    while True:
        text = _prose(rng, rng.randrange(8, 30))
        for start in range(0, len(text), 24):
            yield text[start : start + 24]
        if remaining <= 0:
            return
        batch = min(remaining, rng.randrange(1, 6))
        for _ in range(batch):
            yield _tool(rng, turn, n)
            n += 1
        remaining -= batch
        yield None


Turn = list[str | ToolEvent | None]
"""The events of one assistant turn, as ``turn_script`` yields them."""


def recorded(events: Turn) -> tm.TurnRecorder:
    """A real recorder fed one assistant turn (not finished yet: its segments are still there)."""
    rec = tm.TurnRecorder(WORKSPACE)
    for event in events:
        if event is None:
            rec.seal()
        elif isinstance(event, str):
            rec.text(event)
        else:
            rec.tool_start(event.call_id, event.name, event.arguments)
            rec.tool_end(event.call_id, output=event.output, error=event.error)
    return rec


def record_turn(events: Turn) -> tm.Message:
    """Record one assistant turn with the real recorder."""
    return recorded(events).finish()


def traced_session(turns: int, tools_per_turn: int = 20, seed: int = 7) -> list[tuple[str, Turn]]:
    """``turns`` pairs of (user text, assistant turn events), deterministic for a seed."""
    rng = random.Random(seed)
    return [
        (f"Turn {turn}: " + _prose(rng, rng.randrange(5, 40)), list(turn_script(rng, turn, tools_per_turn)))
        for turn in range(turns)
    ]


SYSTEM = "You are a careful coding agent working in " + WORKSPACE
FINAL_USER = "Please continue."


def session(turns: int, tools_per_turn: int = 20, seed: int = 7) -> list[tm.Message]:
    """A system message, then ``turns`` user/assistant pairs, then a final user message."""
    history = [tm.Message("system", SYSTEM)]
    for user, events in traced_session(turns, tools_per_turn, seed):
        history.append(tm.Message("user", user))
        history.append(record_turn(events))
    history.append(tm.Message("user", FINAL_USER))
    return history
