"""OpenAI ``prompt_cache_breakpoint`` markers in ``check_request``: where they may stand, how many, on
which models, and what a marker is (the official SDK's own types are the reference for the value)."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError
from tests.images import png
from tests.providers.strategies import history

import turnmemory as tm
from turnmemory.providers import openai_chat, openai_responses
from turnmemory.providers.check import check_request

MARK = {"mode": "explicit"}
WIRES = {"openai_chat": openai_chat, "openai_responses": openai_responses}


def _text(kind: str, text: str = "x", **extra: Any) -> dict[str, Any]:
    return {"type": kind, "text": text, **extra}


def _chat(*messages: dict[str, Any], model: str | None = "gpt-5.6", **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"messages": list(messages), **extra}
    return {**body, "model": model} if model else body


def _responses(*items: dict[str, Any], model: str | None = "gpt-5.6", **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"input": list(items), **extra}
    return {**body, "model": model} if model else body


def _marked(role: str, kind: str = "text") -> dict[str, Any]:
    return {"role": role, "content": [_text(kind, prompt_cache_breakpoint=MARK)]}


PNG_URL = "data:image/png;base64," + base64.b64encode(png()).decode()


def _marked_image(**part: Any) -> dict[str, Any]:
    return {"role": "user", "content": [{**part, "prompt_cache_breakpoint": MARK}]}


VALID = [
    ("openai_chat", _chat(_marked("system"), {"role": "user", "content": "hi"})),
    ("openai_chat", _chat(_marked("developer"), _marked("user"))),
    (
        "openai_chat",
        _chat({"role": "user", "content": "hi"}, model=None),
    ),  # no marker, no model: nothing to say
    ("openai_chat", _chat(_marked("user"), model=None)),  # the model unknown: not judged
    (
        "openai_chat",
        _chat(
            {
                "role": "user",
                "content": [
                    {"type": "image_url", "image_url": {"url": PNG_URL}, "prompt_cache_breakpoint": MARK}
                ],
            },
            model="gpt-6",
        ),
    ),
    (
        "openai_chat",
        _chat(
            {"role": "user", "content": "q"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ],
            },
            {
                "role": "tool",
                "tool_call_id": "c1",
                "content": [_text("text", prompt_cache_breakpoint={"mode": "explicit", "ttl": "12h"})],
            },
            model="gpt-5.6-mini",
        ),
    ),
    ("openai_chat", _chat(*[_marked("user")] * 3)),  # three under the implicit breakpoint
    ("openai_chat", _chat(*[_marked("user")] * 4, prompt_cache_options={"mode": "explicit"})),
    ("openai_responses", _responses(_marked("user", "input_text"))),
    ("openai_responses", _responses(_marked("developer", "input_text"), _marked("system", "input_file"))),
    (
        "openai_responses",
        _responses(
            {"role": "user", "content": "q"},
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
            {
                "type": "function_call_output",
                "call_id": "c1",
                "output": [_text("input_text", prompt_cache_breakpoint=MARK)],
            },
            model="gpt-5.7",
        ),
    ),
    (
        "openai_responses",
        _responses(
            *[_marked_image(type="input_image", image_url=PNG_URL, detail="auto")] * 4,
            prompt_cache_options={"mode": "explicit"},
        ),
    ),
    ("openai_responses", _responses({"role": "user", "content": "q", "prompt_cache_breakpoint": None})),
]

INVALID = [
    # on a part type the wire does not mark
    ("openai_chat", _chat(_marked("assistant")), "a 'text' part does not take"),
    ("openai_chat", _chat(_marked("system", "image_url")), "a 'image_url' part does not take"),
    ("openai_chat", _chat(_marked("user", "refusal")), "a 'refusal' part does not take"),
    (
        "openai_responses",
        _responses(_marked("assistant", "output_text")),
        "a 'output_text' part does not take",
    ),
    ("openai_responses", _responses(_marked("user", "text")), "a 'text' part does not take"),
    # on the message or item itself
    (
        "openai_chat",
        _chat({"role": "user", "content": "q", "prompt_cache_breakpoint": MARK}),
        "not on the message",
    ),
    (
        "openai_responses",
        _responses(
            {
                "type": "function_call",
                "call_id": "c",
                "name": "f",
                "arguments": "{}",
                "prompt_cache_breakpoint": MARK,
            },
            {"type": "function_call_output", "call_id": "c", "output": "ok"},
        ),
        "not on the function_call item",
    ),
    # a malformed value
    (
        "openai_chat",
        _chat({"role": "user", "content": [_text("text", prompt_cache_breakpoint={"mode": "implicit"})]}),
        'expected {"mode": "explicit"}',
    ),
    (
        "openai_chat",
        _chat({"role": "user", "content": [_text("text", prompt_cache_breakpoint={})]}),
        'expected {"mode": "explicit"}',
    ),
    (
        "openai_chat",
        _chat({"role": "user", "content": [_text("text", prompt_cache_breakpoint="explicit")]}),
        'expected {"mode": "explicit"}',
    ),
    (
        "openai_chat",
        _chat({"role": "user", "content": [_text("text", prompt_cache_breakpoint=True)]}),
        'expected {"mode": "explicit"}',
    ),
    (
        "openai_chat",
        _chat(
            {
                "role": "user",
                "content": [_text("text", prompt_cache_breakpoint={"mode": "explicit", "ttl": "1h"})],
            }
        ),
        ".ttl: expected one of 30m, 12h",
    ),
    (
        "openai_responses",
        _responses(
            {
                "role": "user",
                "content": [
                    _text("input_text", prompt_cache_breakpoint={"mode": "explicit", "type": "ephemeral"})
                ],
            }
        ),
        "unknown key 'type'",
    ),
    # too many
    (
        "openai_chat",
        _chat(*[_marked("user")] * 4),
        "4 prompt_cache_breakpoint markers, but only the latest 3",
    ),
    (
        "openai_responses",
        _responses(*[_marked("user", "input_text")] * 5, prompt_cache_options={"mode": "explicit"}),
        "only the latest 4",
    ),
    # explicit mode with nothing marked caches nothing
    (
        "openai_chat",
        _chat({"role": "user", "content": "q"}, prompt_cache_options={"mode": "explicit"}),
        "nothing is cached",
    ),
    # on models that do not take it
    (
        "openai_chat",
        _chat(_marked("user"), model="gpt-5"),
        "model 'gpt-5' does not take prompt_cache_breakpoint",
    ),
    ("openai_chat", _chat(_marked("user"), model="gpt-4.1-mini"), "does not take prompt_cache_breakpoint"),
    ("openai_chat", _chat(_marked("user"), model="qwen3-coder"), "does not take prompt_cache_breakpoint"),
    (
        "openai_responses",
        _responses(_marked("user", "input_text"), model="o3"),
        "does not take prompt_cache_breakpoint",
    ),
    (
        "openai_responses",
        _responses(
            {"role": "user", "content": "q"}, model="gpt-5.5", prompt_cache_options={"mode": "implicit"}
        ),
        "does not take prompt_cache_options",
    ),
]


@pytest.mark.parametrize(("provider", "body"), VALID)
def test_markers_where_the_wire_takes_them_are_valid(provider: str, body: dict[str, Any]) -> None:
    assert check_request(provider, body) == []


@pytest.mark.parametrize(("provider", "body", "problem"), INVALID)
def test_markers_the_wire_does_not_take_are_named(provider: str, body: dict[str, Any], problem: str) -> None:
    problems = check_request(provider, body)
    assert len(problems) == 1, problems
    assert problem in problems[0]


def _markable(wire: Any, items: list[dict[str, Any]]) -> list[int]:
    return [i for i, item in enumerate(items) if wire.mark_cache(item) is not None]


@settings(max_examples=40, deadline=None)
@given(
    provider=st.sampled_from(sorted(WIRES)),
    messages=history(),
    data=st.data(),
)
def test_what_our_formatters_mark_is_always_valid(
    provider: str, messages: list[tm.Message], data: st.DataObject
) -> None:
    """Any history, up to the markers a request writes at any items ``mark_cache`` takes: valid for a
    model that takes them, and each marker named for one that does not."""
    wire = WIRES[provider]
    request = wire.to_request(messages)
    assume(check_request(provider, request) == [])
    items = request[wire.ITEMS]
    markable = _markable(wire, items)
    explicit = data.draw(st.booleans())
    chosen = (
        data.draw(st.lists(st.sampled_from(markable), unique=True, max_size=4 if explicit else 3))
        if markable
        else []
    )
    marked = [wire.mark_cache(item) if i in chosen else item for i, item in enumerate(items)]
    options = {"prompt_cache_options": {"mode": "explicit"}} if explicit and chosen else {}
    body = {**request, wire.ITEMS: marked, **options}
    assert check_request(provider, {**body, "model": "gpt-5.6"}) == []
    problems = check_request(provider, {**body, "model": "gpt-4o"})
    assert len(problems) == (1 if chosen else 0), problems


_MARKERS = st.one_of(
    st.fixed_dictionaries(
        {"mode": st.sampled_from(["explicit", "implicit", "", "EXPLICIT"])},
        optional={"ttl": st.sampled_from(["30m", "12h", "1h", "5m", "", "24h"])},
    ),
    st.sampled_from([{}, "explicit", 1, [], {"ttl": "30m"}]),
)


@settings(max_examples=60, deadline=None)
@given(marker=_MARKERS, provider=st.sampled_from(sorted(WIRES)))
def test_a_marker_is_refused_exactly_when_the_official_sdk_refuses_it(provider: str, marker: Any) -> None:
    if provider == "openai_chat":
        from openai.types.chat import ChatCompletionContentPartTextParam as Part
    else:
        from openai.types.responses import ResponseInputTextParam as Part
    kind = "text" if provider == "openai_chat" else "input_text"
    part = {"type": kind, "text": "x", "prompt_cache_breakpoint": marker}
    try:
        TypeAdapter(Part).validate_python(part)
        sdk_takes = True
    except ValidationError:
        sdk_takes = False
    message = {"role": "user", "content": [part]}
    body = _chat(message) if provider == "openai_chat" else _responses(message)
    assert (check_request(provider, body) == []) == sdk_takes
