"""The LiteLLM callback inside LiteLLM's own proxy (its ``litellm`` command and a config file), in
front of the fake provider server: what the upstream receives has its completed turns compacted."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from turnmemory.integrations import compact_request
from turnmemory.testing import FakeProviderServer, Reply

pytest.importorskip("litellm", reason="needs the litellm extra (pip install 'turnmemory[litellm]')")

from turnmemory.integrations.litellm import TurnMemoryCallback, wire_of

pytestmark = pytest.mark.timeout(300)  # LiteLLM's proxy imports for long on a busy machine

RAW = "RAW-TOOL-OUTPUT-c41d"
STARTUP = 150.0
CHAT = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "fix the test"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "Bash", "arguments": '{"command":"pytest"}'},
            },
            {
                "id": "call_2",
                "type": "function",
                "function": {"name": "Read", "arguments": '{"file_path":"a.py"}'},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": RAW},
    {"role": "tool", "tool_call_id": "call_2", "content": RAW},
    {"role": "assistant", "content": "Fixed."},
    {"role": "user", "content": "now the docs"},
]
ANTHROPIC = [
    {"role": "user", "content": "fix the test"},
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "run it", "signature": "sig-1"},
            {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "pytest"}},
        ],
    },
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": RAW}]},
    {"role": "assistant", "content": [{"type": "text", "text": "Fixed."}]},
    {"role": "user", "content": [{"type": "text", "text": "now the docs"}]},
]
RESPONSES = [
    {"role": "user", "content": "fix the test"},
    {"type": "function_call", "call_id": "call_1", "name": "Bash", "arguments": '{"command":"pytest"}'},
    {"type": "function_call_output", "call_id": "call_1", "output": RAW},
    {"role": "assistant", "content": "Fixed."},
    {"role": "user", "content": "now the docs"},
]
SCHEMA = {"type": "object", "properties": {"command": {"type": "string"}}}


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, FakeProviderServer]]:
    """LiteLLM's proxy on a loopback port, routing ``claude`` and ``gpt`` to the fake server."""
    command = shutil.which("litellm", path=str(Path(sys.executable).parent))
    if command is None:
        pytest.skip("LiteLLM's proxy command (litellm) is not installed")
    key = "sk-" + secrets.token_hex(16)
    with FakeProviderServer() as upstream:
        folder = tmp_path_factory.mktemp("litellm")
        config = folder / "config.yaml"
        config.write_text(
            f"""model_list:
  - model_name: claude
    litellm_params: {{model: anthropic/claude-x, api_base: "{upstream.url}", api_key: sk-ant-test}}
  - model_name: gpt
    litellm_params: {{model: openai/gpt-x, api_base: "{upstream.base_url("openai_chat")}", api_key: sk-test}}
litellm_settings:
  callbacks: ["turnmemory.integrations.litellm.turnmemory_callback"]
general_settings:
  master_key: {key}
"""
        )
        port = _free_port()
        env = {
            **os.environ,
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # no fetch of the price list
            "LITELLM_TELEMETRY": "False",
            "NO_PROXY": "*",
        }
        log = (folder / "litellm.log").open("w")
        process = subprocess.Popen(
            [command, "--config", str(config), "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            cwd=folder,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            _wait(url, process, folder / "litellm.log")
            yield url, key, upstream
        finally:
            process.terminate()
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            log.close()


def _wait(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    import httpx

    deadline = time.monotonic() + STARTUP
    while time.monotonic() < deadline:
        if process.poll() is not None:
            last = log.read_text(errors="replace").strip().splitlines()[-1:]
            pytest.skip(f"LiteLLM's proxy exited at startup: {''.join(last)[:200]}")
        try:
            if httpx.get(url + "/health/liveliness", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    pytest.skip(f"LiteLLM's proxy did not start within {STARTUP:g} s on this machine")


def test_openai_chat_through_litellm_is_compacted(gateway: tuple[str, str, FakeProviderServer]) -> None:
    import openai

    url, key, upstream = gateway
    upstream.reset()
    upstream.push(Reply(text="Docs built."))
    client = openai.OpenAI(api_key=key, base_url=url + "/v1", max_retries=0)
    tools: Any = [
        {"type": "function", "function": {"name": n, "parameters": SCHEMA}} for n in ("Bash", "Read")
    ]
    answer = client.chat.completions.create(model="gpt", messages=CHAT, tools=tools)  # type: ignore[arg-type]
    assert answer.choices[0].message.content == "Docs built."
    [request] = upstream.requests
    got = request.body["messages"]
    assert RAW not in json.dumps(got)
    assert got[-1] == CHAT[-1] and got[0] == CHAT[0]
    done = compact_request("openai_chat", {"model": "gpt-x", "messages": CHAT})
    assert done is not None and done.turns == 1
    assert [m["role"] for m in got] == [m["role"] for m in done.apply({"messages": CHAT})["messages"]]


def test_anthropic_messages_through_litellm_are_compacted(
    gateway: tuple[str, str, FakeProviderServer],
) -> None:
    import anthropic

    url, key, upstream = gateway
    upstream.reset()
    upstream.push(Reply(text="Docs built."))
    client = anthropic.Anthropic(api_key=key, base_url=url, max_retries=0)
    message = client.messages.create(
        model="claude",
        max_tokens=256,
        tools=[{"name": "Bash", "description": "Run.", "input_schema": SCHEMA}],  # type: ignore[list-item]
        messages=ANTHROPIC,  # type: ignore[arg-type]
    )
    assert message.content[0].text == "Docs built."  # type: ignore[union-attr]
    [request] = upstream.requests
    got = request.body["messages"]
    assert RAW not in json.dumps(got)
    done = compact_request("anthropic", {"messages": ANTHROPIC})
    assert done is not None
    assert got == done.apply({"messages": ANTHROPIC})["messages"]


def test_openai_responses_through_litellm_are_compacted(gateway: tuple[str, str, FakeProviderServer]) -> None:
    import openai

    url, key, upstream = gateway
    upstream.reset()
    upstream.push(Reply(text="Docs built."))
    client = openai.OpenAI(api_key=key, base_url=url + "/v1", max_retries=0)
    tools: Any = [{"type": "function", "name": "Bash", "parameters": SCHEMA}]
    response = client.responses.create(model="gpt", input=RESPONSES, tools=tools)  # type: ignore[arg-type]
    assert response.output_text == "Docs built."
    [request] = upstream.requests
    assert request.path.endswith("/responses")
    got = request.body["input"]
    assert RAW not in json.dumps(got)
    assert got[-1]["content"] in ("now the docs", [{"type": "input_text", "text": "now the docs"}])


@pytest.mark.parametrize(
    ("call_type", "wire"),
    [
        ("completion", "openai_chat"),
        ("acompletion", "openai_chat"),
        ("responses", "openai_responses"),
        ("aresponses", "openai_responses"),
        ("anthropic_messages", "anthropic"),
        ("aanthropic_messages", "anthropic"),
        ("embeddings", None),
        ("aembedding", None),
        ("image_generation", None),
        ("atranscription", None),
        ("_aresponses_websocket", None),
        ("", None),
    ],
)
def test_each_call_type_has_its_wire(call_type: str, wire: str | None) -> None:
    assert wire_of(call_type) == wire


@pytest.mark.parametrize(
    "data",
    [
        {"messages": "text"},
        {
            "messages": [
                {"role": "wizard", "content": "a"},
                {"role": "assistant", "content": "b"},
                {"role": "user", "content": "c"},
            ]
        },
        {"input": [{"type": "function_call", "call_id": 3}], "previous_response_id": "r"},
        {},
    ],
)
def test_the_hook_fails_open(data: dict[str, Any]) -> None:
    before = json.loads(json.dumps(data))
    for call_type in ("acompletion", "aresponses", "anthropic_messages"):
        assert TurnMemoryCallback().compact(data, call_type) == before


@pytest.mark.parametrize(
    ("call_type", "key", "history"),
    [
        ("acompletion", "messages", CHAT),
        ("anthropic_messages", "messages", ANTHROPIC),
        ("aresponses", "input", RESPONSES),
    ],
)
def test_the_callback_takes_the_boundary_policy(
    call_type: str, key: str, history: list[dict[str, Any]]
) -> None:
    data = {"model": "m", key: history}
    assert TurnMemoryCallback(boundary="never").compact(data, call_type) is data
    compacted = TurnMemoryCallback().compact(data, call_type)
    assert RAW not in json.dumps(compacted) and RAW in json.dumps(data)
    assert TurnMemoryCallback(boundary="every_turn").compact(data, call_type) == compacted
