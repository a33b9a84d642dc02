"""The request checker: every rule rejects a hand-made bad request; the goldens pass."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.providers.test_goldens import END_BATCH_GOLDENS, SPEC_GOLDENS

from turnmemory.providers import PROVIDERS, anthropic, bedrock
from turnmemory.providers.check import RequestInvalid, assert_valid, check_request, main

Body = dict[str, Any]


def spec(provider: str) -> Body:
    return copy.deepcopy(SPEC_GOLDENS[provider])


def end(provider: str) -> Body:
    return copy.deepcopy(END_BATCH_GOLDENS[provider])


def edit(body: Body, change: Callable[[Body], object]) -> Body:
    change(body)
    return body


def swap(items: list[Any], i: int, j: int) -> None:
    items[i], items[j] = items[j], items[i]


# (provider, bad body, expected fragment of a problem)
CASES: list[tuple[str, Callable[[], Body], str]] = [
    # Anthropic
    ("anthropic", lambda: {"messages": []}, "messages: expected a non-empty list"),
    (
        "anthropic",
        lambda: edit(spec("anthropic"), lambda b: b["messages"].pop(0)),
        "first message must be a user",
    ),
    (
        "anthropic",
        lambda: edit(spec("anthropic"), lambda b: b["messages"][2]["content"][0].update(tool_use_id="x")),
        "messages[2].content[0]: tool_result for 'x' does not answer a tool_use in the previous message",
    ),
    (
        "anthropic",
        lambda: edit(spec("anthropic"), lambda b: b["messages"][2]["content"][0].update(tool_use_id="x")),
        "messages[1].content[0]: tool_use 'historical_2_0' has no tool_result in the next message",
    ),
    (
        "anthropic",
        lambda: edit(end("anthropic"), lambda b: b["messages"][2]["content"].reverse()),
        "results must open the message",
    ),
    (
        "anthropic",
        lambda: edit(
            end("anthropic"), lambda b: b["messages"][2]["content"].insert(1, b["messages"][2]["content"][0])
        ),
        "second tool_result for 'historical_1_0'",
    ),
    (
        "anthropic",
        lambda: edit(spec("anthropic"), lambda b: b["messages"][3]["content"][1].update(id="historical_2_0")),
        "tool_use id 'historical_2_0' already used at messages[1].content[0]",
    ),
    (
        "anthropic",
        lambda: edit(spec("anthropic"), lambda b: b["messages"][1]["content"][0].update(id="call:1")),
        "does not match ^[a-zA-Z0-9_-]+$",
    ),
    (
        "anthropic",
        lambda: edit(spec("anthropic"), lambda b: b["messages"][1]["content"][0].update(name="mcp/tool")),
        "tool_use name 'mcp/tool' does not match",
    ),
    (
        "anthropic",
        lambda: edit(spec("anthropic"), lambda b: b["messages"][1]["content"][0].update(input=None)),
        "tool_use input must be an object",
    ),
    (
        "anthropic",
        lambda: edit(spec("anthropic"), lambda b: b["messages"][5]["content"][0].update(text="")),
        "messages[5].content[0]: text block is empty or whitespace only",
    ),
    (
        "anthropic",
        lambda: edit(spec("anthropic"), lambda b: b["messages"][5]["content"][0].update(text=" \n")),
        "text block is empty or whitespace only",
    ),
    (
        "anthropic",
        lambda: edit(spec("anthropic"), lambda b: b["system"].append({"type": "text", "text": " "})),
        "system[1]",
    ),
    (
        "anthropic",
        lambda: edit(
            spec("anthropic"), lambda b: b["messages"][0]["content"].insert(0, b["messages"][1]["content"][0])
        ),
        "tool_use outside an assistant message",
    ),
    (
        "anthropic",
        lambda: edit(spec("anthropic"), lambda b: b["messages"][2]["content"][0].update(is_error="yes")),
        "is_error must be a boolean",
    ),
    (
        "anthropic",
        lambda: edit(
            spec("anthropic"),
            lambda b: b["messages"][-1].update(role="assistant", content=[{"type": "text", "text": "a "}]),
        ),
        "final assistant content ends with whitespace",
    ),
    (
        "anthropic",
        lambda: edit(
            spec("anthropic"), lambda b: b["messages"][4:] and b["messages"].__delitem__(slice(4, None))
        ),
        "tool_use 'historical_2_1' has no tool_result: no message follows",
    ),
    ("anthropic", lambda: edit(spec("anthropic"), lambda b: b.update(model="m")), "tools: missing"),
    (
        "anthropic",
        lambda: edit(
            spec("anthropic"), lambda b: b.update(model="m", tools=[anthropic.placeholder_tool("edit_file")])
        ),
        "tools: 'call_mcp_tool' is replayed but not declared",
    ),
    # OpenAI Chat
    ("openai_chat", lambda: {"messages": "hi"}, "messages: expected a non-empty list"),
    (
        "openai_chat",
        lambda: edit(spec("openai_chat"), lambda b: b["messages"][3].update(tool_call_id="x")),
        "messages[3]: tool message for 'x' does not answer a tool_call of the preceding assistant message",
    ),
    (
        "openai_chat",
        lambda: edit(spec("openai_chat"), lambda b: b["messages"].pop(3)),
        "tool_call 'historical_2_0' has no tool message before messages[3]",
    ),
    (
        "openai_chat",
        lambda: edit(end("openai_chat"), lambda b: b["messages"].insert(3, b["messages"][2])),
        "second tool message for 'historical_1_0'",
    ),
    (
        "openai_chat",
        lambda: edit(spec("openai_chat"), lambda b: b["messages"][6].update(tool_calls=[])),
        "tool_calls: must be a non-empty list",
    ),
    (
        "openai_chat",
        lambda: edit(spec("openai_chat"), lambda b: b["messages"][2]["tool_calls"][0].update(id="x" * 41)),
        "must be a string of 1 to 40 characters",
    ),
    (
        "openai_chat",
        lambda: edit(
            spec("openai_chat"), lambda b: b["messages"][2]["tool_calls"][0]["function"].update(arguments={})
        ),
        "arguments must be a JSON string",
    ),
    (
        "openai_chat",
        lambda: edit(spec("openai_chat"), lambda b: b["messages"][6].pop("content")),
        "assistant message needs content or tool_calls",
    ),
    (
        "openai_chat",
        lambda: edit(
            spec("openai_chat"), lambda b: b["messages"][4]["tool_calls"][0].update(id="historical_2_0")
        ),
        "tool_call id 'historical_2_0' already used",
    ),
    (
        "openai_chat",
        lambda: edit(spec("openai_chat"), lambda b: b["messages"].__delitem__(slice(3, None))),
        "tool_call 'historical_2_0' has no tool message",
    ),
    # OpenAI Responses
    ("openai_responses", lambda: {"input": 3}, "input: expected a string or a list of items"),
    (
        "openai_responses",
        lambda: edit(spec("openai_responses"), lambda b: b["input"][2].update(call_id="x")),
        "input[2]: function_call_output for 'x' does not answer an earlier function_call",
    ),
    (
        "openai_responses",
        lambda: edit(spec("openai_responses"), lambda b: b["input"][2].update(call_id="x")),
        "input[1]: function_call 'historical_2_0' has no function_call_output",
    ),
    (
        "openai_responses",
        lambda: edit(spec("openai_responses"), lambda b: b["input"].insert(1, b["input"].pop(2))),
        "does not answer an earlier function_call",
    ),
    (
        "openai_responses",
        lambda: edit(spec("openai_responses"), lambda b: b["input"].insert(3, b["input"][2])),
        "second function_call_output for 'historical_2_0'",
    ),
    (
        "openai_responses",
        lambda: edit(spec("openai_responses"), lambda b: b["input"][1].update(id="call_1")),
        "item id 'call_1' must start with 'fc'",
    ),
    (
        "openai_responses",
        lambda: edit(
            spec("openai_responses"),
            lambda b: (b["input"][1].update(call_id="c" * 65), b["input"][2].update(call_id="c" * 65)),
        ),
        "must be a string of 1 to 64 characters",
    ),
    (
        "openai_responses",
        lambda: edit(spec("openai_responses"), lambda b: b["input"][1].update(arguments="{")),
        "arguments must be a JSON string",
    ),
    (
        "openai_responses",
        lambda: edit(spec("openai_responses"), lambda b: b["input"][4].update(call_id="historical_2_0")),
        "function_call call_id id 'historical_2_0' already used",
    ),
    (
        "openai_responses",
        lambda: edit(spec("openai_responses"), lambda b: b.update(instructions=1)),
        "instructions",
    ),
    # Gemini
    ("gemini", lambda: {"contents": []}, "contents: expected a non-empty list"),
    (
        "gemini",
        lambda: edit(spec("gemini"), lambda b: b["contents"].pop(0)),
        "the first content must be a user content",
    ),
    (
        "gemini",
        lambda: edit(
            spec("gemini"), lambda b: b["contents"].insert(1, {"role": "user", "parts": [{"text": "u"}]})
        ),
        "contents[1]: a second user content in a row; roles must alternate",
    ),
    (
        "gemini",
        lambda: edit(end("gemini"), lambda b: b["contents"][2]["parts"].pop(0)),
        "contents[2]: 1 function_response part(s) for the 2 function_call part(s) of contents[1]",
    ),
    (
        "gemini",
        lambda: edit(end("gemini"), lambda b: swap(b["contents"][2]["parts"], 0, 1)),
        "order must match",
    ),
    (
        "gemini",
        lambda: edit(
            spec("gemini"), lambda b: b["contents"][0]["parts"].append(b["contents"][2]["parts"][0])
        ),
        "does not answer a function_call in the previous content",
    ),
    (
        "gemini",
        lambda: edit(spec("gemini"), lambda b: b["contents"][5]["parts"][0].update(text="")),
        "contents[5].parts[0]: empty text part",
    ),
    (
        "gemini",
        lambda: edit(
            spec("gemini"), lambda b: b["contents"][2]["parts"][0]["function_response"].update(response="ok")
        ),
        "function_response response must be an object",
    ),
    (
        "gemini",
        lambda: edit(
            spec("gemini"), lambda b: b["contents"][0]["parts"].append(b["contents"][1]["parts"][0])
        ),
        "function_call outside a model content",
    ),
    (
        "gemini",
        lambda: edit(spec("gemini"), lambda b: b["contents"].__delitem__(slice(2, None))),
        "has no function_response: no content follows",
    ),
    (
        "gemini",
        lambda: edit(spec("gemini"), lambda b: b["contents"][1].update(parts=[])),
        "contents[1].parts: expected a non-empty list",
    ),
    (
        "gemini",
        lambda: edit(spec("gemini"), lambda b: b.update(system_instruction={"parts": [{"text": ""}]})),
        "system_instruction.parts[0]: empty text part",
    ),
    # Bedrock
    ("bedrock", lambda: {"messages": None}, "messages: expected a non-empty list"),
    (
        "bedrock",
        lambda: edit(spec("bedrock"), lambda b: b["messages"].pop(0)),
        "the first message must be a user message",
    ),
    (
        "bedrock",
        lambda: edit(
            spec("bedrock"), lambda b: b["messages"].insert(0, {"role": "user", "content": [{"text": "u"}]})
        ),
        "messages[1]: a second user message in a row; roles must alternate",
    ),
    (
        "bedrock",
        lambda: edit(
            spec("bedrock"), lambda b: b["messages"][2]["content"][0]["toolResult"].update(toolUseId="x")
        ),
        "messages[1].content[0]: toolUse 'historical_2_0' has no toolResult in the next message",
    ),
    (
        "bedrock",
        lambda: edit(
            spec("bedrock"), lambda b: b["messages"][2]["content"][0]["toolResult"].update(toolUseId="x")
        ),
        "toolResult for 'x' does not answer a toolUse in the previous message",
    ),
    (
        "bedrock",
        lambda: edit(
            spec("bedrock"), lambda b: b["messages"][1]["content"][0]["toolUse"].update(toolUseId="bad id")
        ),
        "toolUseId 'bad id' does not match",
    ),
    (
        "bedrock",
        lambda: edit(spec("bedrock"), lambda b: b["messages"][1]["content"][0]["toolUse"].update(input=None)),
        "toolUse input must be an object",
    ),
    (
        "bedrock",
        lambda: edit(spec("bedrock"), lambda b: b["messages"][5]["content"][0].update(text="  ")),
        "messages[5].content[0]: the text field is blank",
    ),
    (
        "bedrock",
        lambda: edit(
            spec("bedrock"),
            lambda b: b["messages"][2]["content"][0]["toolResult"].update(content=[{"json": "ok"}]),
        ),
        "json must be an object",
    ),
    (
        "bedrock",
        lambda: edit(
            end("bedrock"), lambda b: b["messages"][2]["content"][0]["toolResult"].update(content=[])
        ),
        "toolResult content cannot be empty when status is error",
    ),
    (
        "bedrock",
        lambda: edit(spec("bedrock"), lambda b: b["messages"][5]["content"][0].update(image={})),
        "a content block must have exactly one member",
    ),
    (
        "bedrock",
        lambda: edit(
            spec("bedrock"),
            lambda b: b["messages"][3]["content"][1]["toolUse"].update(toolUseId="historical_2_0"),
        ),
        "toolUse id 'historical_2_0' already used",
    ),
    (
        "bedrock",
        lambda: edit(spec("bedrock"), lambda b: b.update(modelId="m")),
        "toolConfig: must be defined",
    ),
    (
        "bedrock",
        lambda: edit(
            spec("bedrock"), lambda b: b.update(toolConfig={"tools": [bedrock.placeholder_tool("edit_file")]})
        ),
        "toolConfig: 'call_mcp_tool' is replayed but not declared",
    ),
]


@pytest.mark.parametrize(("provider", "make", "expected"), CASES, ids=[f"{c[0]}:{c[2][:40]}" for c in CASES])
def test_each_rule_rejects_its_bad_example(provider: str, make: Callable[[], Body], expected: str) -> None:
    problems = check_request(provider, make())
    assert any(expected in problem for problem in problems), problems


@pytest.mark.parametrize("provider", PROVIDERS)
def test_goldens_pass(provider: str) -> None:
    assert check_request(provider, SPEC_GOLDENS[provider]) == []
    assert check_request(provider, END_BATCH_GOLDENS[provider]) == []


def test_declared_tools_satisfy_the_tools_rules() -> None:
    body = {**spec("anthropic"), "model": "m", "tools": anthropic.placeholder_tools(spec("anthropic"), [])}
    assert check_request("anthropic", body) == []
    params = {
        **spec("bedrock"),
        "modelId": "m",
        "toolConfig": {"tools": bedrock.placeholder_tools(spec("bedrock"), [])},
    }
    assert check_request("bedrock", params) == []
    assert check_request("bedrock", spec("bedrock"), require_tools=True) != []
    assert check_request("bedrock", {**spec("bedrock"), "modelId": "m"}, require_tools=False) == []


def test_gemini_accepts_the_camel_case_wire_spelling() -> None:
    wire = json.loads(
        json.dumps(spec("gemini"))
        .replace('"function_call"', '"functionCall"')
        .replace('"function_response"', '"functionResponse"')
        .replace('"thought_signature"', '"thoughtSignature"')
        .replace('"system_instruction"', '"systemInstruction"')
    )
    assert check_request("gemini", wire) == []
    wire["contents"][2]["parts"][0]["functionResponse"]["name"] = "other"
    assert any("order must match" in problem for problem in check_request("gemini", wire))


def test_assert_valid_raises_a_value_error_naming_the_first_problems() -> None:
    assert_valid("openai_chat", spec("openai_chat"))
    bad = edit(spec("openai_chat"), lambda b: b["messages"][3].update(tool_call_id="x"))
    with pytest.raises(RequestInvalid) as caught:
        assert_valid("openai_chat", bad)
    assert isinstance(caught.value, ValueError)
    assert caught.value.problems == check_request("openai_chat", bad)
    assert str(caught.value).startswith("invalid openai_chat request: messages[3]: tool message for 'x'")


def test_unknown_provider_and_non_object_body() -> None:
    with pytest.raises(ValueError, match="unknown provider 'cohere'"):
        check_request("cohere", {})
    assert check_request("anthropic", [])  # type: ignore[arg-type]


def test_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(spec("bedrock")))
    bad.write_text(json.dumps(edit(spec("bedrock"), lambda b: b["messages"].pop(0))))
    assert main(["bedrock", str(good)]) == 0
    assert main(["bedrock", str(bad)]) == 1
    assert "the first message must be a user message" in capsys.readouterr().out
    assert main(["nope", str(good)]) == 2
    assert main(["bedrock", str(tmp_path / "missing.json")]) == 2


def test_gemini_empty_text_part_with_a_thought_signature_is_accepted() -> None:
    """Gemini returns such parts itself (a signature on an empty text); replaying them is valid."""
    for key in ("thought_signature", "thoughtSignature"):
        body = edit(
            spec("gemini"), lambda b, k=key: b["contents"][5]["parts"][0].update({"text": "", k: "c2ln"})
        )
        assert check_request("gemini", body) == []
