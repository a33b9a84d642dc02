"""Property tests: whatever the memory holds, every request is valid, complete, deterministic and prefix-stable."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.providers.sdk_validators import validate
from tests.providers.strategies import assistant_message, history, native_pending, pending_iterations

import turnmemory as tm
from turnmemory.memory import valid_activities
from turnmemory.providers import PROVIDERS, anthropic, bedrock, gemini, openai_chat, openai_responses
from turnmemory.providers._render import is_blank
from turnmemory.providers.check import check_request

MODULES: dict[str, Any] = {
    "anthropic": anthropic,
    "openai_chat": openai_chat,
    "openai_responses": openai_responses,
    "gemini": gemini,
    "bedrock": bedrock,
}
TURN_BASED = {"anthropic", "gemini", "bedrock"}
PROPERTY = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
options = st.fixed_dictionaries(
    {
        "arguments": st.sampled_from(["empty", "target"]),
        "id_style": st.sampled_from(["historical", "compact"]),
    }
)


def entries(provider: str, request: dict[str, Any]) -> Iterator[tuple[str, str, Any, Any]]:
    """``(role, kind, piece, unit)`` for every piece of a request, kind one of text/call/result/other.

    ``unit`` is the top-level list element holding the piece (a message, an item or a content block),
    by which pending state is recognised.
    """
    if provider == "openai_chat":
        for message in request["messages"]:
            if message["role"] == "tool":
                yield "tool", "result", message, message
                continue
            if isinstance(message.get("content"), str):
                yield message["role"], "text", message, message
            for call in message.get("tool_calls", ()):
                yield message["role"], "call", call, message
        return
    if provider == "openai_responses":
        kinds = {"function_call": "call", "function_call_output": "result", "message": "text"}
        for item in request["input"]:
            yield item.get("role", ""), kinds.get(item["type"], "other"), item, item
        return
    key = "parts" if provider == "gemini" else "content"
    kinds = {
        "anthropic": {"text": "text", "tool_use": "call", "tool_result": "result"},
        "gemini": {"text": "text", "function_call": "call", "function_response": "result"},
        "bedrock": {"text": "text", "toolUse": "call", "toolResult": "result"},
    }[provider]
    for message in request["contents" if provider == "gemini" else "messages"]:
        for block in message[key]:
            kind = block.get("type") if provider == "anthropic" else next(k for k in kinds if k in block)
            yield message["role"], kinds.get(kind, "other"), block, block


def text_of(provider: str, piece: dict[str, Any]) -> str:
    return piece["content"] if provider.startswith("openai") else piece["text"]


def pending_pieces(provider: str, pending: Sequence[dict[str, Any]]) -> list[Any]:
    if provider.startswith("openai"):
        return list(pending)
    key = "parts" if provider == "gemini" else "content"
    return [block for message in pending for block in message[key]]


def included(provider: str, messages: Sequence[tm.Message]) -> list[tm.Message]:
    """The assistant messages a request replays (turn-based formats skip those before the first user text)."""
    out, opened = [], provider not in TURN_BASED
    for message in messages:
        opened = opened or (message.role == "user" and not is_blank(message.content))
        if message.role == "assistant" and opened:
            out.append(message)
    return out


def squeeze(text: str) -> str:
    return "".join(text.split())


@st.composite
def scenario(draw: st.DrawFn, provider: str) -> tuple[list[tm.Message], list[dict[str, Any]] | None]:
    """A history with some user text, and (when a user message precedes the insertion point) pending state."""
    messages = draw(history().filter(lambda h: any(m.role == "user" and not is_blank(m.content) for m in h)))
    final = len(messages) - 1 if messages and messages[-1].role == "user" else len(messages)
    has_user_before = any(m.role == "user" and not is_blank(m.content) for m in messages[:final])
    pending = (
        native_pending(provider, draw(pending_iterations()))
        if has_user_before and draw(st.booleans())
        else None
    )
    return messages, pending


@pytest.mark.parametrize("provider", PROVIDERS)
@PROPERTY
@given(data=st.data(), opts=options)
def test_every_request_is_valid_complete_and_keeps_the_prose(
    provider: str, data: st.DataObject, opts: dict[str, Any]
) -> None:
    messages, pending = data.draw(scenario(provider))
    request = MODULES[provider].to_request(messages, pending=pending, **opts)

    assert check_request(provider, request) == []
    validate(provider, request)

    ours = list(entries(provider, request))
    foreign = {id(unit) for unit in pending_pieces(provider, pending or [])}
    own = [(role, kind, piece) for role, kind, piece, unit in ours if id(unit) not in foreign]
    replayed = included(provider, messages)
    prose = "".join(
        text_of(provider, piece)
        for role, kind, piece in own
        if kind == "text" and role in ("assistant", "model")
    )
    assert squeeze(prose) == squeeze("".join(m.content for m in replayed))
    expected_calls = sum(len(valid_activities(m.content.encode(), m.activities)) for m in replayed)
    assert sum(kind == "call" for _, kind, _ in own) == expected_calls
    assert sum(kind == "result" for _, kind, _ in own) == expected_calls

    # Pending state is there verbatim, in order, in one run.
    pieces = list({id(unit): unit for *_, unit in ours}.values())
    wanted = pending_pieces(provider, pending or [])
    if wanted:
        start = next(i for i, piece in enumerate(pieces) if piece is wanted[0])
        assert all(a is b for a, b in zip(pieces[start : start + len(wanted)], wanted, strict=True))

    again = MODULES[provider].to_request(messages, pending=pending, **opts)
    assert json.dumps(again) == json.dumps(request)


def is_prefix(provider: str, short: dict[str, Any], full: dict[str, Any]) -> bool:
    """Whether ``short`` is a prefix of ``full``; for turn-based formats the last turn may grow."""
    for key, value in short.items():
        other = full.get(key)
        if other is None:
            return False
        if isinstance(value, str):
            ok = other.startswith(value)
        elif key == "system_instruction":
            ok = other["parts"][: len(value["parts"])] == value["parts"]
        elif key == "system":
            ok = other[: len(value)] == value
        else:
            ok = _list_prefix(provider, value, other)
        if not ok:
            return False
    return True


def _list_prefix(provider: str, short: list[Any], full: list[Any]) -> bool:
    if not short:
        return True
    n = len(short)
    if len(full) < n or full[: n - 1] != short[:-1]:
        return False
    last, counterpart = short[-1], full[n - 1]
    if provider not in TURN_BASED:
        return bool(last == counterpart)
    key = "parts" if provider == "gemini" else "content"
    return bool(last["role"] == counterpart["role"] and counterpart[key][: len(last[key])] == last[key])


@PROPERTY
@given(st.sampled_from(PROVIDERS), history(), options)
def test_formatting_is_prefix_stable_at_every_user_message(
    provider: str, messages: list[tm.Message], opts: dict[str, Any]
) -> None:
    module = MODULES[provider]
    full = module.to_request(messages, **opts)
    for k in range(1, len(messages) + 1):
        last = messages[k - 1]
        if last.role == "user" and not is_blank(last.content):
            short = module.to_request(messages[:k], **opts)
            assert is_prefix(provider, short, full), (k, short, full)


@PROPERTY
@given(st.sampled_from(PROVIDERS), assistant_message())
def test_whitespace_moves_but_is_never_lost(provider: str, message: tm.Message) -> None:
    request = MODULES[provider].to_request([tm.Message("user", "u"), message, tm.Message("user", "n")])
    prose = "".join(
        text_of(provider, piece)
        for role, kind, piece, _ in entries(provider, request)
        if kind == "text" and role in ("assistant", "model")
    )
    assert prose == ("" if is_blank(message.content) else message.content)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_pending_id_that_collides_with_a_synthetic_one_renames_the_synthetic_one(provider: str) -> None:
    from tests.providers.strategies import PendingCall

    messages = [
        tm.Message("user", "u"),
        tm.Message("assistant", "Done.", tm.TurnMemory((tm.ToolActivity(0, "bash"),))),
        tm.Message("user", "n"),
    ]
    pending = native_pending(provider, [("", [PendingCall("historical_1_0", "read_file")])])
    request = MODULES[provider].to_request(messages, pending=pending)
    assert check_request(provider, request) == []
    text = json.dumps(request)
    assert "historical_1_0_1" in text
    assert MODULES[provider].replayed_tool_names(request) == ["bash", "read_file"]


def test_compact_ids_stay_nine_alphanumerics_when_renamed() -> None:
    from tests.providers.strategies import PendingCall

    from turnmemory.replay import compact_id

    messages = [
        tm.Message("user", "u"),
        tm.Message("assistant", "Done.", tm.TurnMemory((tm.ToolActivity(0, "bash"),))),
        tm.Message("user", "n"),
    ]
    taken = compact_id(1, 0)
    pending = native_pending("openai_chat", [("", [PendingCall(taken, "read_file")])])
    request = openai_chat.to_request(messages, pending=pending, id_style="compact")
    ids = [call["id"] for m in request["messages"] for call in m.get("tool_calls", ())]
    assert ids[0] != taken and len(ids[0]) == 9 and ids[0].isalnum()
    assert ids[1] == taken
    assert check_request("openai_chat", request) == []
