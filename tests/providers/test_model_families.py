"""``openai_chat`` with ``model=``: the family a name belongs to, and the forms families get.

The forms must stay valid requests (our checker and the OpenAI SDK's types), carry the same calls and
results in the same order as the default form, keep Mistral ids 9 alphanumerics unique even in their
last 9 characters, and build incrementally byte for byte as cold.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.providers.sdk_validators import validate
from tests.providers.strategies import history, message, native_pending, pending_iterations
from tests.providers.test_properties import scenario

import turnmemory as tm
from turnmemory.providers import openai_chat
from turnmemory.providers.check import check_request

PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

SPELLINGS: dict[str, list[str]] = {
    "llama-3": [
        "meta-llama/Llama-3.1-8B-Instruct",
        "meta-llama/Meta-Llama-3.1-70B-Instruct",
        "meta-llama/Llama-3.3-70B-Instruct",
        "llama3.1:8b",
        "llama3.2",
        "llama3.3:70b-instruct-q4_K_M",
        "Llama-3.2-3B-Instruct",
        "llama-3.3-70b-versatile",
        "hf.co/bartowski/Llama-3.2-3B-Instruct-GGUF:Q4_K_M",
        "/models/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf",
        "/models/llama-3.1-8b-instruct/model.gguf",
        "C:\\models\\Llama-3.1-8B-Instruct.Q8_0.gguf",
        "unsloth/Llama-3.1-8B-Instruct-bnb-4bit",
        "  meta-llama/llama-3.1-8b-instruct  ",
    ],
    "gpt-oss": [
        "openai/gpt-oss-120b",
        "gpt-oss:20b",
        "gpt-oss-20b",
        "GPT_OSS_120B.gguf",
        "openai/gpt-oss-20b",
    ],
    "phi-4-mini": ["microsoft/Phi-4-mini-instruct", "phi4-mini:3.8b", "Phi-4-mini-instruct-Q4_K_M.gguf"],
    "mistral": [
        "mistralai/Mistral-Nemo-Instruct-2407",
        "mistral-small-latest",
        "mistral-large-2411",
        "open-mistral-nemo",
        "mistral:7b",
        "mistralai/Mistral-7B-Instruct-v0.3",
        "mistralai/Mistral-Small-3.2-24B-Instruct-2506",
        "/models/Mistral-Nemo-Instruct-2407-Q4_K_M.gguf",
        "mistralai/Mixtral-8x7B-Instruct-v0.1",
        "mixtral:8x22b",
        "mistralai/Ministral-8B-Instruct-2410",
        "ministral-3b-latest",
        "mistralai/Devstral-Small-2507",
        "devstral:24b",
        "unsloth/Devstral-Small-2507-GGUF",
        "codestral-latest",
        "codestral:22b",
        "magistral-medium-latest",
        "mistralai/Magistral-Small-2506",
        "pixtral-12b-2409",
        "mistralai/Pixtral-Large-Instruct-2411",
    ],
    "gemma-3": ["google/gemma-3-27b-it", "gemma3:12b", "gemma-3-4b-it-Q4_K_M.gguf"],
    "default": [
        "gpt-4.1",
        "gpt-4o-mini",
        "o3",
        "claude-sonnet-4-5",
        "Qwen/Qwen2.5-7B-Instruct",
        "qwen3:30b",
        "meta-llama/Llama-4-Scout-17B-16E-Instruct",
        "llama4:scout",
        "meta-llama/Llama-2-7b-chat-hf",
        "codellama:34b",
        "llama-30b",
        "NousResearch/Hermes-3-Llama-3.1-8B",
        "NousResearch/Hermes-2-Pro-Mistral-7B",
        "deepseek-ai/DeepSeek-R1-Distill-Llama-8B",
        "Salesforce/Llama-xLAM-2-8b-fc-r",
        "fireworks-ai/llama-3-firefunction-v2",
        "meetkai/functionary-medium-v3.2",
        "google/gemma-4-31B-it",
        "gemma-3n-e4b-it",
        "microsoft/phi-4",
        "deepseek-chat",
        "",
        "/models/model.gguf",
    ],
}


@pytest.mark.parametrize(
    ("expected", "name"), [(family, name) for family, names in SPELLINGS.items() for name in names]
)
def test_model_names_match_their_family_however_they_are_written(expected: str, name: str) -> None:
    assert openai_chat.family(name).name == expected


def test_no_model_is_the_default_family() -> None:
    assert openai_chat.family(None) == openai_chat.family("gpt-4.1") == openai_chat.family("")


# -- one message, every form ----------------------------------------------------------------------------

MEMORY = tm.TurnMemory(
    (
        tm.ToolActivity(9, "read_file", target="a.py"),
        tm.ToolActivity(9, "grep", target="TODO"),
        tm.ToolActivity(9, "bash", failed_command="make", exit_code=2),
    )
)
TURN = [
    tm.Message("user", "go"),
    tm.Message("assistant", "Looking. Found it.", MEMORY),
    tm.Message("user", "next"),
]


def _call(call_id: str, name: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


def _result(call_id: str, content: dict[str, Any]) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": json.dumps(content, separators=(",", ":"))}


OK = {"status": "success"}
FAILED = {"status": "success", "failed_command": "make", "exit_code": 2}


def test_a_batch_becomes_single_call_exchanges_with_the_prose_in_the_first() -> None:
    request = openai_chat.to_request(TURN, single_calls=True)
    assert request["messages"][1:-1] == [
        {"role": "assistant", "content": "Looking. ", "tool_calls": [_call("historical_1_0", "read_file")]},
        _result("historical_1_0", OK),
        {"role": "assistant", "tool_calls": [_call("historical_1_1", "grep")]},
        _result("historical_1_1", OK),
        {"role": "assistant", "tool_calls": [_call("historical_1_2", "bash")]},
        _result("historical_1_2", FAILED),
        {"role": "assistant", "content": "Found it."},
    ]


def test_llama_gets_single_calls_and_its_prose_apart_from_them() -> None:
    request = openai_chat.to_request(TURN, model="meta-llama/Llama-3.1-8B-Instruct")
    assert request["messages"][1:-1] == [
        {"role": "assistant", "content": "Looking. "},
        {"role": "assistant", "tool_calls": [_call("historical_1_0", "read_file")]},
        _result("historical_1_0", OK),
        {"role": "assistant", "tool_calls": [_call("historical_1_1", "grep")]},
        _result("historical_1_1", OK),
        {"role": "assistant", "tool_calls": [_call("historical_1_2", "bash")]},
        _result("historical_1_2", FAILED),
        {"role": "assistant", "content": "Found it."},
    ]


def test_mistral_gets_compact_ids_string_content_and_a_closing_assistant_message() -> None:
    ending = tm.Message("assistant", "Running.", tm.TurnMemory((tm.ToolActivity(8, "bash"),)))
    request = openai_chat.to_request(
        [tm.Message("user", "go"), ending, tm.Message("user", "next")], model="mistral-small-latest"
    )
    call_id = request["messages"][1]["tool_calls"][0]["id"]
    assert re.fullmatch(r"[A-Za-z0-9]{9}", call_id)
    assert request["messages"][1:] == [
        {"role": "assistant", "content": "Running.", "tool_calls": [_call(call_id, "bash")]},
        _result(call_id, OK),
        {"role": "assistant", "content": ""},
        {"role": "user", "content": "next"},
    ]
    at_zero = openai_chat.to_request(
        [
            tm.Message("user", "go"),
            tm.Message("assistant", "Done.", tm.TurnMemory((tm.ToolActivity(0, "bash"),))),
        ],
        model="devstral:24b",
    )
    assert at_zero["messages"][1]["content"] == ""


def test_explicit_choices_override_the_family() -> None:
    batch = openai_chat.to_request(TURN)
    assert openai_chat.to_request(TURN, model="llama3.1:8b", single_calls=False) == batch
    assert openai_chat.to_request(TURN, model="gpt-4.1") == batch
    historical = openai_chat.to_request(TURN, model="mistral-nemo", id_style="historical")
    assert historical["messages"][1]["tool_calls"][0]["id"] == "historical_1_0"
    compact = openai_chat.to_request(TURN, model="gpt-4.1", id_style="compact")
    assert re.fullmatch(r"[A-Za-z0-9]{9}", compact["messages"][1]["tool_calls"][0]["id"])
    forced = openai_chat.to_request(TURN, model="Qwen/Qwen3-8B", single_calls=True)
    assert forced == openai_chat.to_request(TURN, single_calls=True)


# -- properties -------------------------------------------------------------------------------------------

MODELS = [
    None,
    "gpt-4.1",
    "meta-llama/Llama-3.1-8B-Instruct",
    "gpt-oss:20b",
    "phi4-mini",
    "mistral-small-latest",
    "gemma3:27b",
]
choices = st.fixed_dictionaries(
    {"model": st.sampled_from(MODELS)},
    optional={
        "single_calls": st.booleans(),
        "id_style": st.sampled_from(["historical", "compact"]),
        "arguments": st.sampled_from(["empty", "target"]),
    },
)


def _exchanges(request: dict[str, Any], skip: set[str]) -> list[tuple[str, str]]:
    """The (name, result) pairs of the request's historical calls, in order."""
    names: dict[str, str] = {}
    out: list[tuple[str, str]] = []
    for item in request["messages"]:
        for call in item.get("tool_calls", ()):
            names[call["id"]] = call["function"]["name"]
        if item["role"] == "tool" and item["tool_call_id"] not in skip:
            out.append((names[item["tool_call_id"]], item["content"]))
    return out


def _prose(request: dict[str, Any], skip: list[dict[str, Any]]) -> str:
    return "".join(
        m.get("content") or ""
        for m in request["messages"]
        if m["role"] == "assistant" and not any(m is p for p in skip)
    )


@PROPERTY
@given(data=st.data(), chosen=choices)
def test_every_form_is_valid_and_replays_the_same_calls_and_prose(
    data: st.DataObject, chosen: dict[str, Any]
) -> None:
    messages, pending = data.draw(scenario("openai_chat"))
    request = openai_chat.to_request(messages, pending=pending, **chosen)
    assert check_request("openai_chat", request) == []
    validate("openai_chat", request)
    default = openai_chat.to_request(messages, pending=pending, arguments=chosen.get("arguments", "empty"))
    pending_ids = {m["tool_call_id"] for m in pending or () if m["role"] == "tool"}
    assert [c for _, c in _exchanges(request, pending_ids)] == [
        c for _, c in _exchanges(default, pending_ids)
    ]
    assert [n for n, _ in _exchanges(request, pending_ids)] == [
        n for n, _ in _exchanges(default, pending_ids)
    ]
    assert _prose(request, pending or []) == _prose(default, pending or [])

    found = openai_chat.family(chosen["model"])
    single = chosen.get("single_calls", found.single_calls)
    historical = [m for m in request["messages"] if not any(m is p for p in pending or ())]
    if single:
        assert all(len(m.get("tool_calls", ())) <= 1 for m in historical)
    ids = [call["id"] for m in request["messages"] for call in m.get("tool_calls", ())]
    assert len({i[-9:] for i in ids}) == len(ids), (
        "ids must be unique in their last 9 characters (vLLM Mistral)"
    )
    if chosen.get("id_style", found.id_style) == "compact":
        synthetic = [call["id"] for m in historical for call in m.get("tool_calls", ())]
        assert all(re.fullmatch(r"[A-Za-z0-9]{9}", i) for i in synthetic)
    if found.alternating:
        assert all(isinstance(m.get("content"), str) for m in historical if m["role"] == "assistant")
        after = [*request["messages"][1:], {"role": "end"}]
        assert all(
            nxt["role"] in ("tool", "assistant", "end")
            for m, nxt in zip(request["messages"], after, strict=True)
            if m["role"] == "tool"
        ), "results must be followed by an assistant message before the next user message"


@PROPERTY
@given(messages=history(), more=st.lists(message, max_size=4), chosen=choices)
def test_the_forms_are_prefix_stable(
    messages: list[tm.Message], more: list[tm.Message], chosen: dict[str, Any]
) -> None:
    """The messages of a history render the same in every later request (prompt caching holds)."""
    first = openai_chat.to_request([*messages, tm.Message("user", "q1")], **chosen)["messages"]
    grown = [*messages, tm.Message("user", "q1"), *more, tm.Message("user", "q2")]
    later = openai_chat.to_request(grown, **chosen)["messages"]
    assert json.dumps(later[: len(first)]) == json.dumps(first)


@settings(max_examples=40, deadline=None)
@given(
    turns=st.lists(st.lists(message, min_size=1, max_size=3), min_size=1, max_size=5),
    iterations=pending_iterations(),
    with_pending=st.lists(st.booleans(), min_size=5, max_size=5),
    chosen=choices,
)
def test_incremental_equals_cold_in_every_form(
    turns: list[list[tm.Message]], iterations: Any, with_pending: list[bool], chosen: dict[str, Any]
) -> None:
    formatter = openai_chat.Formatter()
    conversation: list[tm.Message] = [tm.Message("system", "S")]
    pending = native_pending("openai_chat", iterations)
    for n, added in enumerate(turns):
        conversation = [*conversation, *added, tm.Message("user", f"question {n}")]
        use = pending if with_pending[n] else None
        built = formatter.to_request(conversation, pending=use, **chosen)
        assert json.dumps(built) == json.dumps(openai_chat.to_request(conversation, pending=use, **chosen))


def test_a_formatter_switching_models_does_not_serve_the_old_form() -> None:
    formatter = openai_chat.Formatter()
    formatter.to_request(TURN, model="gpt-4.1")
    assert formatter.to_request(TURN, model="llama3.1") == openai_chat.to_request(TURN, model="llama3.1")
    assert formatter.to_request(TURN, model="mistral-nemo") == openai_chat.to_request(
        TURN, model="mistral-nemo"
    )
