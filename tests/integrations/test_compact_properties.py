"""Properties of compact() on generated histories in all three message-list formats."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.providers.sdk_validators import validate

from turnmemory.integrations import Compactor, compact
from turnmemory.providers._render import Item
from turnmemory.providers.check import check_request
from turnmemory.providers.gemini import SKIP_THOUGHT_SIGNATURE

RAW = "RAW-OUTPUT"
PROVIDERS = ("openai_chat", "anthropic", "openai_responses", "gemini", "bedrock")


@dataclass(frozen=True)
class Call:
    id: str
    name: str
    arguments: dict[str, Any]
    result: str
    is_error: bool


Iteration = tuple[str, tuple[Call, ...]]

_TOOLS = st.sampled_from(
    [
        ("read_file", {"path": "/ws/src/a.py"}),
        ("edit_file", {"path": "/ws/src/a.py", "old": "x", "new": "y"}),
        ("write_file", {"path": "/ws/b.txt", "content": "secret"}),
        ("bash", {"command": "pytest -q"}),
        ("grep", {"pattern": "TODO", "path": "/ws"}),
        ("lookup_ticket", {"id": "T-1"}),
        ("mcp__github__search", {"q": "x"}),
    ]
)
_RESULTS = st.sampled_from(
    [
        f"{RAW} plain text",
        f"Exit code: 1\n{RAW}",
        f"Process exited with code 2\n{RAW}",
        f"<returncode>0</returncode>\n{RAW}",
        f"Error: tool failed {RAW}",
        json.dumps({"exit_code": 3, "stdout": RAW}),
        json.dumps({"error": RAW}),
        json.dumps({"file_changed": None, "output": RAW}),
        "",
    ]
)
# prose and user text: any letters, digits, spaces and punctuation, but never what the assertions look for
_TEXT = st.text(
    st.characters(categories=("L", "N", "Zs", "Po"), exclude_characters='/"\\'), max_size=12
).filter(lambda text: "historical" not in text)


@st.composite
def _iteration(draw: st.DrawFn, counter: list[int]) -> Iteration:
    calls = []
    for tool, arguments in draw(st.lists(_TOOLS, max_size=3)):
        counter[0] += 1
        calls.append(Call(f"call_{counter[0]}", tool, arguments, draw(_RESULTS), draw(st.booleans())))
    # Anthropic takes no blank text block and no request that ends in whitespace: nor do clients send them
    return (draw(_TEXT).rstrip(), tuple(calls))


@st.composite
def conversations(draw: st.DrawFn) -> list[tuple[str, list[Iteration]]]:
    counter = [0]
    turns = draw(st.integers(1, 4))
    return [
        (
            draw(_TEXT.filter(lambda t: bool(t.strip()))),
            [it for it in draw(st.lists(_iteration(counter), max_size=3)) if it[0] or it[1]],
        )
        for _ in range(turns)
    ]


def chat(conversation: list[tuple[str, list[Iteration]]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    for user, iterations in conversation:
        out.append({"role": "user", "content": user})
        for prose, calls in iterations:
            message: dict[str, Any] = {"role": "assistant", "content": prose or None}
            if calls:
                message["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
                    }
                    for c in calls
                ]
            out.append(message)
            out.extend({"role": "tool", "tool_call_id": c.id, "content": c.result} for c in calls)
    return out


def _turn_based(
    conversation: list[tuple[str, list[Iteration]]],
    assistant: str,
    key: str,
    text: Callable[[str], dict[str, Any]],
    call: Callable[[Call, bool], dict[str, Any]],
    result: Callable[[Call], dict[str, Any]],
) -> list[dict[str, Any]]:
    """A turn-based history; a user text joins the results before it, as clients usually send them."""
    out: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if out and out[-1]["role"] == role:
            out[-1][key].extend(blocks)
        elif blocks:
            out.append({"role": role, key: blocks})

    for user, iterations in conversation:
        add("user", [text(user)])
        for prose, calls in iterations:
            add(assistant, [text(prose)] * bool(prose) + [call(c, n == 0) for n, c in enumerate(calls)])
            add("user", [result(c) for c in calls])
    return out


def anthropic(conversation: list[tuple[str, list[Iteration]]]) -> list[dict[str, Any]]:
    return _turn_based(
        conversation,
        "assistant",
        "content",
        lambda text: {"type": "text", "text": text},
        lambda c, first: {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments},
        lambda c: {
            "type": "tool_result",
            "tool_use_id": c.id,
            "content": c.result or "-",
            "is_error": c.is_error,
        },
    )


def bedrock(conversation: list[tuple[str, list[Iteration]]]) -> list[dict[str, Any]]:
    return _turn_based(
        conversation,
        "assistant",
        "content",
        lambda text: {"text": text},
        lambda c, first: {"toolUse": {"toolUseId": c.id, "name": c.name, "input": c.arguments}},
        lambda c: {
            "toolResult": {
                "toolUseId": c.id,
                "content": [{"text": c.result or "-"}],
                "status": "error" if c.is_error else "success",
            }
        },
    )


def _gemini_call(c: Call, first: bool) -> dict[str, Any]:
    part: dict[str, Any] = {"function_call": {"id": c.id, "name": c.name, "args": c.arguments}}
    return {**part, "thought_signature": SKIP_THOUGHT_SIGNATURE} if first else part


def gemini(conversation: list[tuple[str, list[Iteration]]]) -> list[dict[str, Any]]:
    return _turn_based(
        conversation,
        "model",
        "parts",
        lambda text: {"text": text},
        _gemini_call,
        lambda c: {"function_response": {"id": c.id, "name": c.name, "response": {"output": c.result}}},
    )


def responses(conversation: list[tuple[str, list[Iteration]]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "developer", "content": "You are a coding agent."}]
    for user, iterations in conversation:
        out.append({"role": "user", "content": user})
        for prose, calls in iterations:
            if prose:
                out.append(
                    {
                        "id": f"msg_{len(out)}",
                        "type": "message",
                        "role": "assistant",
                        "status": "completed",
                        "content": [{"type": "output_text", "text": prose, "annotations": []}],
                    }
                )
            out.extend(
                {
                    "type": "function_call",
                    "call_id": c.id,
                    "name": c.name,
                    "arguments": json.dumps(c.arguments),
                }
                for c in calls
            )
            out.extend({"type": "function_call_output", "call_id": c.id, "output": c.result} for c in calls)
    return out


BUILD = {
    "openai_chat": chat,
    "anthropic": anthropic,
    "openai_responses": responses,
    "gemini": gemini,
    "bedrock": bedrock,
}


def _body(provider: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {{"openai_responses": "input", "gemini": "contents"}.get(provider, "messages"): messages}


def _result_ids(provider: str, messages: list[dict[str, Any]]) -> list[str]:
    if provider == "openai_chat":
        return [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    if provider == "openai_responses":
        return [m["call_id"] for m in messages if m.get("type") == "function_call_output"]
    if provider == "anthropic":
        return [
            b["tool_use_id"]
            for m in messages
            if isinstance(m["content"], list)
            for b in m["content"]
            if "tool_use_id" in b
        ]
    if provider == "bedrock":
        return [b["toolResult"]["toolUseId"] for m in messages for b in m["content"] if "toolResult" in b]
    return [b["function_response"]["id"] for m in messages for b in m["parts"] if "function_response" in b]


def _user_turns(messages: list[dict[str, Any]]) -> list[int]:
    """Where the user messages that start a turn stand (not those that only carry results)."""

    def is_user(m: dict[str, Any]) -> bool:
        if m.get("role") != "user" or m.get("type", "message") != "message":
            return False
        content = m.get("content", m.get("parts"))
        results = ("tool_result", "toolResult", "function_response")
        return isinstance(content, str) or any(b.get("type", next(iter(b))) not in results for b in content)

    return [i for i, m in enumerate(messages) if is_user(m)]


def _last_user(provider: str, messages: list[dict[str, Any]]) -> int:
    return max(_user_turns(messages))


# the served models' forms of OpenAI Chat: one call per message (Llama 3.x), 9-character ids (Mistral)
MODELS = ["meta-llama/Llama-3.1-8B-Instruct", "mistralai/Mistral-7B-Instruct-v0.3"]


@pytest.mark.parametrize(
    ("provider", "model"), [*((p, None) for p in PROVIDERS), *(("openai_chat", m) for m in MODELS)]
)
@settings(max_examples=60, deadline=None)
@given(conversation=conversations())
def test_compact_is_valid_idempotent_and_keeps_the_current_turn(
    provider: str, model: str | None, conversation: list[tuple[str, list[Iteration]]]
) -> None:
    full = BUILD[provider](conversation)
    out = compact(full, provider, workspace="/ws", model=model)  # type: ignore[arg-type]
    assert check_request(provider, _body(provider, out)) == []
    validate(provider, _body(provider, out))
    assert compact(out, provider, workspace="/ws", model=model) == out  # type: ignore[arg-type]
    last_in, last_out = _last_user(provider, full), _last_user(provider, out)
    assert out[last_out + 1 :] == full[last_in + 1 :]
    assert RAW not in json.dumps(out[: last_out + 1]) and "/ws" not in json.dumps(out[: last_out + 1])
    # the record keeps every answered call of the compacted turns, each paired with its result
    compacted_calls = sum(len(calls) for _, its in conversation[:-1] for _, calls in its)
    ids = _result_ids(provider, out[: last_out + 1])
    assert len(ids) == len(set(ids)) == compacted_calls


@pytest.mark.parametrize("provider", PROVIDERS)
@settings(max_examples=30, deadline=None)
@given(conversation=conversations(), more=conversations())
def test_a_longer_history_starts_with_the_same_request(
    provider: str, conversation: list[tuple[str, list[Iteration]]], more: list[tuple[str, list[Iteration]]]
) -> None:
    build = BUILD[provider]
    short, long = build(conversation), build([*conversation, *more])
    compactor = Compactor(provider, workspace="/ws")  # type: ignore[arg-type]
    first = compactor.compact(short)
    second = compactor.compact(long)
    assert second == compact(long, provider, workspace="/ws")  # type: ignore[arg-type]
    stable = first[: _last_user(provider, first)]  # everything before the user message that ended it
    assert second[: len(stable)] == stable


@pytest.mark.parametrize("provider", PROVIDERS)
def test_bad_input_is_a_clear_error(provider: str) -> None:
    with pytest.raises(TypeError, match=r"messages\[1\]: expected an object"):
        compact([{"role": "user", "content": "x"}, "oops"], provider)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="expected a list"):
        compact({"role": "user"}, provider)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="provider must be one of"):
        compact([], "cohere")  # type: ignore[arg-type]


def _prefixes(provider: str, full: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The histories a caller sends on the way to ``full``: one per request (each user message and
    each batch of results ends one), ``full`` last."""

    def answer(m: dict[str, Any]) -> bool:  # what a model response holds
        return m.get("role") in ("assistant", "model") or m.get("type") == "function_call"

    ends = [i for i in range(1, len(full)) if answer(full[i]) and not answer(full[i - 1])]
    return [*(full[:end] for end in ends), full]


@pytest.mark.parametrize("provider", PROVIDERS)
@settings(max_examples=20, deadline=None)
@given(conversation=conversations())
def test_the_default_policy_compacts_every_turn_and_never_sends_the_trace_as_given(
    provider: str, conversation: list[tuple[str, list[Iteration]]]
) -> None:
    full = BUILD[provider](conversation)
    today = compact(full, provider, workspace="/ws")  # type: ignore[arg-type]
    assert compact(full, provider, workspace="/ws", boundary="every_turn") == today  # type: ignore[arg-type]
    assert compact(full, provider, boundary="never") == full  # type: ignore[arg-type]
    # a Compactor that sees every request, with the cache cold before each: timing changes nothing
    compactor = Compactor(provider, workspace="/ws", cache_ttl=0.0)  # type: ignore[arg-type]
    for prefix in _prefixes(provider, full):
        assert compactor.compact(prefix) == compact(prefix, provider, workspace="/ws")  # type: ignore[arg-type]


def _cut(provider: str, full: list[dict[str, Any]], out: list[Item]) -> int:
    """The user message up to which ``out`` is ``full`` compacted (the rest as given); -1 when none."""
    for i in reversed(_user_turns(full)):
        if out == [*compact(full[: i + 1], provider, workspace="/ws"), *full[i + 1 :]]:  # type: ignore[arg-type]
            return i
    return -1


@pytest.mark.parametrize("provider", PROVIDERS)
@settings(max_examples=20, deadline=None)
@given(conversation=conversations(), cold=st.booleans())
def test_when_it_pays_sends_the_compacted_turns_then_the_deferred_ones_as_given(
    provider: str, conversation: list[tuple[str, list[Iteration]]], cold: bool
) -> None:
    """Whatever it decides, a request is today's compaction of the history up to one user message,
    then the rest as given: valid, and the cut never moves back while the conversation grows."""
    full = BUILD[provider](conversation)
    compactor = Compactor(provider, workspace="/ws", boundary="when_it_pays", cache_ttl=0.0 if cold else None)  # type: ignore[arg-type]
    cut = -1
    for prefix in _prefixes(provider, full):
        out = compactor.compact(prefix)
        assert check_request(provider, _body(provider, out)) == [], out
        now = _cut(provider, prefix, out)
        assert now >= max(cut, 0)
        cut = now
    alone = compact(full, provider, workspace="/ws", boundary="when_it_pays")  # type: ignore[arg-type]
    assert _cut(provider, full, alone) >= 0
