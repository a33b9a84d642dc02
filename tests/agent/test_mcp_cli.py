"""MCP end to end: ``turnmemory run`` with MCP servers from the config, against the fake provider server.

Within a turn the model gets the real results; the next turn's request replays each MCP call as
``call_mcp_tool`` with ``{}`` arguments and a status-only result, and carries neither the call's
arguments nor its result text.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from turnmemory.testing import FakeProviderServer, Reply, ToolCall

ECHO = str(Path(__file__).parent / "mcp_servers" / "echo_server.py")
MARK = "echo-7f3a9c"
ARGUMENT_SECRET = "PRIVATE-MCP-ARGUMENT-93c1"
REASON_SECRET = "PRIVATE-MCP-REASON-5d20"
MODELS = {"anthropic": "claude-sonnet-4-5", "openai_chat": "gpt-4.1"}

Run = Callable[..., dict[str, Any]]


@pytest.fixture
def run(data_dir: Path, workspace: Path, tmp_path: Path, server: FakeProviderServer) -> Callable[..., Run]:
    """``run(provider, servers)(prompt, *args)``: ``turnmemory run --format json`` with those MCP servers."""

    def for_provider(provider: str, servers: str) -> Run:
        config = tmp_path / "config.toml"
        config.write_text(f"[mcp]\nstartup_timeout = 60\n\n{servers}", encoding="utf-8")
        env = {key: value for key, value in os.environ.items() if not key.startswith("TURNMEMORY_")}
        env.update(
            TURNMEMORY_DATA_DIR=str(data_dir),
            XDG_CONFIG_HOME=str(tmp_path / "xdg"),
            ANTHROPIC_API_KEY="test-key",
            OPENAI_API_KEY="test-key",
        )

        def turn(prompt: str, *args: str) -> dict[str, Any]:
            command = [sys.executable, "-m", "turnmemory.cli", "run", prompt, "--format", "json"]
            command += ["--allow", "mcp", "--provider", provider, "--model", MODELS[provider]]
            command += ["--base-url", server.base_url(provider), "--config", str(config), *args]
            done = subprocess.run(
                command,
                cwd=workspace,
                env=env,
                capture_output=True,
                text=True,
                timeout=90,
                check=False,
            )
            assert done.returncode == 0, done.stderr
            return json.loads(done.stdout)  # type: ignore[no-any-return]

        return turn

    return for_provider


def tool_exchanges(provider: str, body: dict[str, Any]) -> tuple[list[tuple[str, Any]], list[str]]:
    """The ``(name, arguments)`` of every tool call in a request body, and every tool result's text."""
    calls: list[tuple[str, Any]] = []
    results: list[str] = []
    for message in body["messages"]:
        if provider == "openai_chat":
            for call in message.get("tool_calls") or ():
                calls.append((call["function"]["name"], json.loads(call["function"]["arguments"])))
            if message["role"] == "tool":
                results.append(message["content"])
            continue
        for block in message["content"] if isinstance(message["content"], list) else ():
            if block["type"] == "tool_use":
                calls.append((block["name"], block["input"]))
            elif block["type"] == "tool_result":
                content = block["content"]
                results.append(
                    content if isinstance(content, str) else "".join(part["text"] for part in content)
                )
    return calls, results


ECHO_SERVER = f"[mcp.servers.echo]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(ECHO)}]\n"


@pytest.mark.parametrize("provider", ["anthropic", "openai_chat"])
def test_mcp_calls_run_in_the_turn_and_replay_as_status_only(
    provider: str, server: FakeProviderServer, run: Callable[..., Run]
) -> None:
    turn = run(provider, ECHO_SERVER)
    server.push(
        Reply(
            text="Echoing first.",
            tool_calls=[
                ToolCall(
                    "call_mcp_tool",
                    {"server": "echo", "tool": "echo", "arguments": {"text": ARGUMENT_SECRET}},
                )
            ],
        ),
        Reply(
            text=" Now the failing one.",
            tool_calls=[
                ToolCall(
                    "call_mcp_tool",
                    {"server": "mcp:echo", "tool": "fail", "arguments": {"reason": REASON_SECRET}},
                )
            ],
        ),
        Reply(text=" Both ran."),
        Reply(text="Second turn."),
    )
    first = turn("Use the echo server")
    assert first["status"] == "done"
    second = turn("And now?", "--session", first["session_id"])
    assert second["status"] == "done"
    assert second["text"] == "Second turn."

    requests = [request.body for request in server.requests]
    assert len(requests) == 4
    assert "server echo (7 tools):" in json.dumps(requests[0])
    _, in_turn = tool_exchanges(provider, requests[1])
    assert any(f"{MARK}: {ARGUMENT_SECRET}" in result for result in in_turn)
    _, in_turn = tool_exchanges(provider, requests[2])
    assert any(f"deliberate failure: {REASON_SECRET}" in result for result in in_turn)

    calls, results = tool_exchanges(provider, requests[3])
    assert calls == [("call_mcp_tool", {}), ("call_mcp_tool", {})]
    assert [json.loads(result) for result in results] == [{"status": "success"}, {"status": "error"}]
    replayed = json.dumps(requests[3], ensure_ascii=False)
    for private in (ARGUMENT_SECRET, REASON_SECRET, MARK, "deliberate failure"):
        assert private not in replayed


def test_the_third_party_time_server_end_to_end(server: FakeProviderServer, run: Callable[..., Run]) -> None:
    time_server = (
        f"[mcp.servers.time]\ncommand = {json.dumps(sys.executable)}\n"
        'args = ["-m", "mcp_server_time", "--local-timezone", "UTC"]\n'
    )
    turn = run("anthropic", time_server)
    server.push(
        Reply(
            text="Checking the clock.",
            tool_calls=[
                ToolCall(
                    "call_mcp_tool",
                    {"server": "time", "tool": "get_current_time", "arguments": {"timezone": "UTC"}},
                )
            ],
        ),
        Reply(text=" It is now."),
        Reply(text="Later."),
    )
    first = turn("What time is it?")
    turn("And later?", "--session", first["session_id"])

    requests = [request.body for request in server.requests]
    assert len(requests) == 3
    _, in_turn = tool_exchanges("anthropic", requests[1])
    (result,) = in_turn
    answer = json.loads(result)
    assert (answer["server"], answer["tool"]) == ("time", "get_current_time")
    stamp = answer["structured"]["datetime"]
    assert stamp.endswith("+00:00")

    calls, results = tool_exchanges("anthropic", requests[2])
    assert calls == [("call_mcp_tool", {})]
    assert [json.loads(result) for result in results] == [{"status": "success"}]
    assert stamp not in json.dumps(requests[2])
    assert "get_current_time(timezone: string)" in json.dumps(requests[2])  # the catalogue, not the call
