"""Hypothesis strategies: random histories (valid and invalid activities) and native pending state."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

import turnmemory as tm
from turnmemory.replay import compact_id

PIECES = ["a", "b", "Done.", " ", "  ", "\n", "\n\n", "\t", "é", "😀", "中文", " ok ", ".\n\n"]
prose = st.lists(st.sampled_from(PIECES), max_size=8).map("".join)

TOOL_NAMES = ["read_file", "bash", "edit_file", "write_file", "grep", "query-docs", "", "mcp/tool.x", "名前"]


@st.composite
def activity(draw: st.DrawFn, size: int) -> tm.ToolActivity:
    """An activity for a prose of ``size`` bytes: offsets may be negative, out of range or mid-character."""
    offset = draw(st.integers(-2, size + 2) | st.sampled_from([0, size]))
    exit_code = draw(st.none() | st.integers(1, 255))
    return tm.ToolActivity(
        text_offset=offset,
        tool=draw(st.sampled_from(TOOL_NAMES)),
        status=draw(st.sampled_from(["success", "success", "error", "weird", ""])),
        target=draw(st.none() | st.sampled_from(["a.go", "src/x.py", "go test ./..."])),
        server=draw(st.none() | st.sampled_from(["context7", "github"])),
        file_changed=draw(st.none() | st.just("a.go")),
        failed_command="go test ./..." if exit_code is not None else None,
        exit_code=exit_code,
    )


@st.composite
def assistant_message(draw: st.DrawFn) -> tm.Message:
    """An assistant message with random prose and random (sorted or shuffled) activities."""
    text = draw(prose)
    size = len(text.encode())
    activities = draw(st.lists(activity(size), max_size=6))
    if draw(st.booleans()):
        activities.sort(key=lambda a: a.text_offset)
    return tm.Message("assistant", text, tm.TurnMemory(tuple(activities)))


message = st.one_of(
    st.builds(tm.Message, st.just("user"), prose),
    st.builds(tm.Message, st.just("user"), st.sampled_from(["Fix it", "Next?", "继续"])),
    assistant_message(),
    st.builds(tm.Message, st.just("system"), prose),
)


@st.composite
def history(draw: st.DrawFn) -> list[tm.Message]:
    """A random conversation: usually system, user, assistant, ... and a final user message."""
    messages = [tm.Message("system", draw(prose))] if draw(st.booleans()) else []
    messages += draw(st.lists(message, max_size=8))
    if draw(st.integers(0, 4)):
        messages.append(tm.Message("user", draw(st.sampled_from(["next", "Go on", " 再来 "]))))
    return messages


COLLIDING_IDS = [
    "historical_1_0",
    "historical_2_0",
    "historical_2_1",
    "historical_3_0",
    compact_id(1, 0),
    compact_id(2, 1),
]


@dataclass(frozen=True)
class PendingCall:
    id: str
    name: str


pending_ids = st.sampled_from(COLLIDING_IDS) | st.from_regex(r"[a-z]{1,4}[0-9]{1,3}", fullmatch=True)


@st.composite
def pending_iterations(draw: st.DrawFn) -> list[tuple[str, list[PendingCall]]]:
    """An interrupted turn's loop iterations: prose (maybe empty) and at least one call each."""
    ids = draw(st.lists(pending_ids, min_size=1, max_size=5, unique=True))
    iterations: list[tuple[str, list[PendingCall]]] = []
    while ids:
        take = draw(st.integers(1, len(ids)))
        calls = [PendingCall(call_id, draw(st.sampled_from(["read_file", "bash"]))) for call_id in ids[:take]]
        iterations.append((draw(st.sampled_from(["", "Working.", "Let me look."])), calls))
        ids = ids[take:]
    return iterations


def native_pending(provider: str, iterations: list[tuple[str, list[PendingCall]]]) -> list[dict[str, Any]]:
    """The iterations in ``provider``'s own message shape, as an LLM client keeps pending state."""
    out: list[dict[str, Any]] = []
    for n, (text, calls) in enumerate(iterations):
        out.extend(_NATIVE[provider](n, text, calls))
    return out


def _anthropic(n: int, text: str, calls: list[PendingCall]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [{"type": "thinking", "thinking": "hmm", "signature": f"sig{n}"}]
    blocks += [{"type": "text", "text": text}] if text else []
    blocks += [{"type": "tool_use", "id": c.id, "name": c.name, "input": {"path": "a.py"}} for c in calls]
    results = [{"type": "tool_result", "tool_use_id": c.id, "content": "file text"} for c in calls]
    return [{"role": "assistant", "content": blocks}, {"role": "user", "content": results}]


def _openai_chat(n: int, text: str, calls: list[PendingCall]) -> list[dict[str, Any]]:
    tool_calls = [
        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": '{"path":"a.py"}'}}
        for c in calls
    ]
    return [
        {"role": "assistant", "content": text or None, "tool_calls": tool_calls},
        *({"role": "tool", "tool_call_id": c.id, "content": "file text"} for c in calls),
    ]


def _openai_responses(n: int, text: str, calls: list[PendingCall]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = [
        {"type": "reasoning", "id": f"rs_{n}", "summary": [], "encrypted_content": "enc"}
    ]
    if text:
        items.append({"type": "message", "role": "assistant", "content": text})
    items += [
        {"type": "function_call", "id": f"fc_{n}_{k}", "call_id": c.id, "name": c.name, "arguments": "{}"}
        for k, c in enumerate(calls)
    ]
    items += [{"type": "function_call_output", "call_id": c.id, "output": "file text"} for c in calls]
    return items


def _gemini(n: int, text: str, calls: list[PendingCall]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [{"text": text}] if text else []
    parts += [
        {"function_call": {"id": c.id, "name": c.name, "args": {"path": "a.py"}}, "thought_signature": "c2ln"}
        if k == 0
        else {"function_call": {"id": c.id, "name": c.name, "args": {"path": "a.py"}}}
        for k, c in enumerate(calls)
    ]
    responses = [
        {"function_response": {"id": c.id, "name": c.name, "response": {"output": "x"}}} for c in calls
    ]
    return [{"role": "model", "parts": parts}, {"role": "user", "parts": responses}]


def _bedrock(n: int, text: str, calls: list[PendingCall]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [{"text": text}] if text else []
    blocks += [{"toolUse": {"toolUseId": c.id, "name": c.name, "input": {"path": "a.py"}}} for c in calls]
    results = [
        {"toolResult": {"toolUseId": c.id, "content": [{"text": "file text"}], "status": "success"}}
        for c in calls
    ]
    return [{"role": "assistant", "content": blocks}, {"role": "user", "content": results}]


_NATIVE = {
    "anthropic": _anthropic,
    "openai_chat": _openai_chat,
    "openai_responses": _openai_responses,
    "gemini": _gemini,
    "bedrock": _bedrock,
}
