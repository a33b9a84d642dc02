"""Real imported sessions as full-trace provider message lists, and as the formatter sees them.

The full trace carries every call under the project's tool name with the agent's real arguments, and
every result as the tool returned it: an error as a failed result (Anthropic ``is_error``, an OpenAI
``{"error": ...}`` object), a success as a JSON object with the output text and the outcome the
importer found (``exit_code``, ``file_changed``; ``file_changed: null`` for an edit that changed
nothing). Anthropic user texts are text blocks, as the formatter writes them, each user message its
own (the API accepts consecutive user messages; a merged pair would read as one user turn).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import turnmemory as tm
from turnmemory.retention import DEFAULT_RULES
from turnmemory.transcripts import (
    ImportedSession,
    ImportedTurn,
    IterationEnd,
    Prose,
    ToolCall,
    ToolResult,
    discover,
    load_session,
    replay_turn,
)

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "transcripts"
NEXT_USER = "And now the next task."


def shared_sessions() -> list[Path]:
    """Every shared real session file; skips the test when the folder is absent."""
    if not SHARED.is_dir():
        pytest.skip(f"shared transcripts not found at {SHARED}")
    return sorted(discover([str(SHARED)]))


def sessions(paths: list[Path]) -> Iterator[tuple[Path, ImportedSession]]:
    """The sessions this checkout imports (files of other formats, such as a README, are passed over)."""
    for path in paths:
        try:
            yield path, load_session(path)
        except ValueError:
            continue


def _user(text: str) -> str:
    return text if text.strip() else "(empty)"


def expected_history(session: ImportedSession) -> list[tm.Message]:
    """The session as the formatter sees it: users and replayed turns, then the next user message."""
    out: list[tm.Message] = []
    for turn in session.turns:
        out.append(tm.Message("user", _user(turn.user)))
        out.append(replay_turn(turn, session.workspace)[0])
    return [*out, tm.Message("user", NEXT_USER)]


def _iterations(turn: ImportedTurn) -> Iterator[tuple[str, list[ToolCall]]]:
    prose: list[str] = []
    calls: list[ToolCall] = []
    for event in [*turn.events, IterationEnd()]:
        if isinstance(event, IterationEnd) or (isinstance(event, Prose) and calls):
            if prose or calls:
                yield "".join(prose), calls
            prose, calls = [], []
        if isinstance(event, Prose):
            prose.append(event.text)
        elif isinstance(event, ToolCall):
            calls.append(event)


def _success(call: ToolCall, result: ToolResult) -> str:
    output: dict[str, Any] = {"output": result.text, **(result.outcome or {})}
    rule = DEFAULT_RULES.get(call.name)
    if rule is not None and rule.outcome == "file_change":
        output.setdefault("file_changed", None)
    return json.dumps(output, ensure_ascii=False)


def full_chat(session: ImportedSession) -> list[dict[str, Any]]:
    """The session as a full-trace OpenAI Chat message list."""
    out: list[dict[str, Any]] = []
    for turn in session.turns:
        out.append({"role": "user", "content": _user(turn.user)})
        results = {e.call_id: e for e in turn.events if isinstance(e, ToolResult)}
        for prose, calls in _iterations(turn):
            message: dict[str, Any] = {"role": "assistant", "content": prose or None}
            if calls:
                message["tool_calls"] = [
                    {
                        "id": c.call_id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
                    }
                    for c in calls
                ]
            out.append(message)
            for call in calls:
                result = results.get(call.call_id)
                if result is not None:
                    content = (
                        json.dumps({"error": result.text or "error"})
                        if result.is_error
                        else _success(call, result)
                    )
                    out.append({"role": "tool", "tool_call_id": call.call_id, "content": content})
    return [*out, {"role": "user", "content": NEXT_USER}]


def full_anthropic(session: ImportedSession) -> list[dict[str, Any]]:
    """The session as a full-trace Anthropic message list."""
    out: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        elif blocks:
            out.append({"role": role, "content": blocks})

    for turn in session.turns:
        out.append({"role": "user", "content": [{"type": "text", "text": _user(turn.user)}]})  # never merged
        results = {e.call_id: e for e in turn.events if isinstance(e, ToolResult)}
        for prose, calls in _iterations(turn):
            blocks = [{"type": "text", "text": prose}] if prose else []
            blocks.extend(
                {"type": "tool_use", "id": c.call_id, "name": c.name, "input": dict(c.arguments)}
                for c in calls
            )
            add("assistant", blocks)
            answers = []
            for call in calls:
                result = results.get(call.call_id)
                if result is None:
                    continue
                block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call.call_id}
                if result.is_error:
                    block.update(content=result.text or "error", is_error=True)
                else:
                    block["content"] = _success(call, result)
                answers.append(block)
            add("user", answers)
    return [*out, {"role": "user", "content": [{"type": "text", "text": NEXT_USER}]}]
