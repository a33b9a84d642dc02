"""compact_request(): whole request bodies, the turn in progress left alone, cache breakpoints kept valid."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.providers.sdk_validators import validate

from turnmemory.integrations import WIRES, compact, compact_request
from turnmemory.integrations._request import MAX_BREAKPOINTS
from turnmemory.providers.check import check_request

RAW = "RAW-OUTPUT"
IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
REMINDER = {"type": "text", "text": "<system-reminder>todo list changed</system-reminder>"}
TOOLS = [
    {"name": "Bash", "description": "Run a command.", "input_schema": {"type": "object"}},
    {"name": "Read", "description": "Read a file.", "input_schema": {"type": "object"}},
]
_CALLS = st.sampled_from(
    [("Bash", {"command": "pytest -q"}, f"Exit code 1\n{RAW}"), ("Read", {"file_path": "/ws/a.py"}, RAW)]
)
_WORDS = st.text(st.characters(categories=("L", "N", "Zs")), min_size=1, max_size=8).filter(str.strip)

# one loop iteration: prose, its parallel calls, and what the client adds beside their results
_ITERATION = st.tuples(
    st.one_of(st.just(""), _WORDS),
    st.lists(_CALLS, max_size=3),
    st.booleans(),  # a reminder beside the results (as Claude Code sends one)
    st.booleans(),  # an image in the results
)
_TURN = st.tuples(_WORDS, st.booleans(), st.lists(_ITERATION, max_size=3))  # user text, with an image


def _anthropic(turns: list[Any]) -> list[dict[str, Any]]:
    """A Claude Code-shaped history: thinking with signatures, parallel calls, reminders beside results."""
    out: list[dict[str, Any]] = []
    n = 0
    for user, image, iterations in turns:
        out.append({"role": "user", "content": [{"type": "text", "text": user}, *[IMAGE] * image]})
        for prose, calls, reminder, picture in iterations:
            blocks: list[dict[str, Any]] = [{"type": "thinking", "thinking": "hm", "signature": f"sig{n}"}]
            blocks += [{"type": "text", "text": prose}] * bool(prose)
            results: list[dict[str, Any]] = []
            for name, arguments, result in calls:
                n += 1
                blocks.append({"type": "tool_use", "id": f"toolu_{n}", "name": name, "input": arguments})
                content: Any = [{"type": "text", "text": result}, IMAGE] if picture else result
                results.append({"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": content})
            if not calls and not prose:
                blocks.append({"type": "text", "text": "ok"})
            out.append({"role": "assistant", "content": blocks})
            if results:
                out.append({"role": "user", "content": [*results, *[REMINDER] * reminder]})
    return out


def _chat(turns: list[Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    n = 0
    for user, _, iterations in turns:
        out.append({"role": "user", "content": user})
        for prose, calls, _, _ in iterations:
            message: dict[str, Any] = {"role": "assistant", "content": prose or None}
            answers = []
            for name, arguments, result in calls:
                n += 1
                function = {"name": name, "arguments": json.dumps(arguments)}
                message.setdefault("tool_calls", []).append(
                    {"id": f"call_{n}", "type": "function", "function": function}
                )
                answers.append({"role": "tool", "tool_call_id": f"call_{n}", "content": result})
            if "tool_calls" not in message and not prose:
                message["content"] = "ok"
            out += [message, *answers]
    return out


def _responses(turns: list[Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "developer", "content": "You are a coding agent."}]
    n = 0
    for user, _, iterations in turns:
        out.append({"role": "user", "content": [{"type": "input_text", "text": user}]})
        for prose, calls, _, _ in iterations:
            out.append({"type": "reasoning", "id": f"rs_{n}", "summary": [], "encrypted_content": "opaque"})
            if prose or not calls:
                text = {"type": "output_text", "text": prose or "ok", "annotations": []}
                out.append(
                    {
                        "type": "message",
                        "id": f"msg_{n}",
                        "role": "assistant",
                        "status": "completed",
                        "content": [text],
                    }
                )
            for name, arguments, result in calls:
                n += 1
                out.append(
                    {
                        "type": "function_call",
                        "call_id": f"call_{n}",
                        "name": name,
                        "arguments": json.dumps(arguments),
                    }
                )
                out.append({"type": "function_call_output", "call_id": f"call_{n}", "output": result})
    return out


BUILD = {"anthropic": _anthropic, "openai_chat": _chat, "openai_responses": _responses}


def _body(wire: str, history: list[dict[str, Any]]) -> dict[str, Any]:
    if wire == "anthropic":
        return {
            "model": "claude-x",
            "max_tokens": 1024,
            "system": "Be brief.",
            "tools": TOOLS,
            "messages": history,
        }
    tools = [
        {"type": "function", "function": {"name": t["name"], "parameters": t["input_schema"]}} for t in TOOLS
    ]
    if wire == "openai_chat":
        return {"model": "gpt-x", "tools": tools, "messages": history, "stream": True}
    return {
        "model": "gpt-x",
        "tools": [{"type": "function", **t["function"]} for t in tools],
        "input": history,
        "store": False,
    }


def _key(wire: str) -> str:
    return "input" if wire == "openai_responses" else "messages"


def _last_turn_start(wire: str, turns: list[Any]) -> int:
    """The index of the last user text message in BUILD[wire](turns), counted independently."""
    history = BUILD[wire](turns)
    texts = [
        i
        for i, m in enumerate(history)
        if m.get("role") == "user" and (wire != "anthropic" or m["content"][0]["type"] == "text")
    ]
    return texts[-1]


@pytest.mark.parametrize("wire", WIRES)
@settings(max_examples=25, deadline=None)
@given(turns=st.lists(_TURN, min_size=1, max_size=4))
def test_the_turn_in_progress_is_left_as_it_came(wire: Any, turns: list[Any]) -> None:
    body = _body(wire, BUILD[wire](turns))
    items = body[_key(wire)]
    last = _last_turn_start(wire, turns)
    done = compact_request(wire, body)
    completed = sum(1 for _, _, iterations in turns[:-1] if iterations)
    if not completed:
        assert done is None
        return
    assert done is not None and done.turns == completed and done.replaced == last + 1
    out = done.apply(body)
    assert out[_key(wire)][len(done.items) :] == items[last + 1 :]  # the turn in progress, as it came
    assert {k: v for k, v in out.items() if k != _key(wire)} == {
        k: v for k, v in body.items() if k != _key(wire)
    }
    assert done.items == compact(
        items[: last + 1], wire, model=body["model"] if wire == "openai_chat" else None
    )
    assert RAW not in json.dumps(done.items)
    assert check_request(wire, out) == []
    validate(wire, {_key(wire): out[_key(wire)]})


def test_nothing_to_do_is_none() -> None:
    call = {"type": "function_call", "call_id": "c1", "name": "Bash", "arguments": "{}"}
    history = [
        {"role": "user", "content": "go"},
        call,
        {"type": "function_call_output", "call_id": "c1", "output": RAW},
        {"role": "user", "content": "next"},
    ]
    assert compact_request("openai_responses", {"input": history}) is not None
    assert compact_request("openai_responses", {"input": history, "previous_response_id": "resp_1"}) is None
    assert compact_request("openai_responses", {"input": history, "conversation": "conv_1"}) is None
    assert compact_request("openai_responses", {"input": "just text"}) is None
    assert compact_request("openai_chat", {"messages": [{"role": "user", "content": "hi"}]}) is None
    assert compact_request("openai_chat", {"messages": [{"role": "user", "content": "hi"}, "oops"]}) is None
    assert compact_request("openai_chat", {"messages": {"role": "user"}}) is None
    with pytest.raises(ValueError, match="wire must be one of"):
        compact_request("gemini", {"contents": []})  # type: ignore[arg-type]


# --- cache_control ---------------------------------------------------------------------------------------


def _marks(value: Any, where: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Mapping[str, Any]]]:
    """(path, block) of every block carrying a breakpoint."""
    if isinstance(value, Mapping):
        if value.get("cache_control") is not None:
            yield where, value
        for key, inner in value.items():
            yield from _marks(inner, (*where, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _marks(inner, (*where, index))


def _ttls_in_order(body: Mapping[str, Any]) -> list[str]:
    marks = [*_marks(body.get("tools")), *_marks(body.get("system")), *_marks(body["messages"])]
    return [block["cache_control"].get("ttl", "5m") for _, block in marks]


@st.composite
def _marked_body(draw: st.DrawFn) -> dict[str, Any]:
    """An Anthropic body with up to four breakpoints on random blocks of tools, system and messages."""
    body = json.loads(
        json.dumps(_body("anthropic", _anthropic(draw(st.lists(_TURN, min_size=2, max_size=4)))))
    )
    body["system"] = [{"type": "text", "text": "Be brief."}]
    places: list[dict[str, Any]] = [*body["tools"], *body["system"]]
    for message in body["messages"]:
        places += [b for b in message["content"] if b["type"] != "thinking"]
    chosen = draw(st.lists(st.sampled_from(range(len(places))), max_size=MAX_BREAKPOINTS, unique=True))
    for index in chosen:
        ttl = draw(st.sampled_from([None, "5m", "1h"]))
        places[index]["cache_control"] = {"type": "ephemeral", **({"ttl": ttl} if ttl else {})}
    if sorted(_ttls_in_order(body), key=lambda t: t != "1h") != _ttls_in_order(body):
        for _, block in _marks(body):  # the API refuses a 1h breakpoint after a 5m one
            block["cache_control"] = {"type": "ephemeral"}
    return body


@settings(max_examples=150, deadline=None)
@given(body=_marked_body())
def test_cache_breakpoints_stay_valid(body: dict[str, Any]) -> None:
    before = json.loads(json.dumps(body))
    done = compact_request("anthropic", body)
    assert body == before  # the caller's body is not changed
    if done is None:
        return
    out = done.apply(body)
    marks = [*_marks(out.get("tools")), *_marks(out.get("system")), *_marks(out["messages"])]
    assert len(marks) <= MAX_BREAKPOINTS
    ttls = _ttls_in_order(out)
    assert sorted(ttls, key=lambda t: t != "1h") == ttls  # no longer-lived one after a shorter-lived one
    for _, block in marks:
        assert block.get("type") not in ("thinking", "redacted_thinking")
        assert block.get("type") != "text" or block["text"].strip()
    kept = len(out["messages"]) - (len(body["messages"]) - done.replaced)
    assert out["tools"] == body["tools"] and out["system"] == body["system"]
    assert out["messages"][kept:] == body["messages"][done.replaced :]
    outside = [*_marks(body["tools"]), *_marks(body["system"]), *_marks(body["messages"][done.replaced :])]
    prefix = [path for path, _ in _marks(out["messages"][:kept])]
    if not [*_marks(body)] or len(outside) == MAX_BREAKPOINTS:
        assert len(prefix) <= len([*_marks(body["messages"][: done.replaced])])
        return
    # one marks the end of the compacted prefix: the last block before the user's own blocks
    user_blocks = len(body["messages"][done.replaced - 1]["content"])
    closing = out["messages"][kept - 1]["content"]
    end = (
        (kept - 1, len(closing) - user_blocks - 1)
        if len(closing) > user_blocks
        else (kept - 2, len(out["messages"][kept - 2]["content"]) - 1)
    )
    assert (end[0], "content", end[1]) in prefix


def test_no_breakpoint_is_added_for_a_client_that_uses_none() -> None:
    turns = [("go", False, [("", [("Bash", {"command": "ls"}, RAW)], False, False)]), ("next", False, [])]
    done = compact_request("anthropic", _body("anthropic", _anthropic(turns)))
    assert done is not None and not [*_marks(done.items)]
