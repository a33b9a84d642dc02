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
MODELS = {"anthropic": "claude-sonnet-4-5"}

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


def tool_exchanges(body: dict[str, Any]) -> tuple[list[tuple[str, Any]], list[str]]:
    """The ``(name, input)`` of every tool call in an Anthropic request body, and every tool result's text."""
    calls: list[tuple[str, Any]] = []
    results: list[str] = []
    for message in body["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else ():
            if block["type"] == "tool_use":
                calls.append((block["name"], block["input"]))
            elif block["type"] == "tool_result":
                content = block["content"]
                results.append(
                    content if isinstance(content, str) else "".join(part["text"] for part in content)
                )
    return calls, results


SERVERS = (
    f"[mcp.servers.echo]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(ECHO)}]\n\n"
    f"[mcp.servers.time]\ncommand = {json.dumps(sys.executable)}\n"
    'args = ["-m", "mcp_server_time", "--local-timezone", "UTC"]\n'
)


def mcp_call(server: str, tool: str, arguments: dict[str, Any]) -> ToolCall:
    return ToolCall("call_mcp_tool", {"server": server, "tool": tool, "arguments": arguments})


def test_mcp_calls_run_in_the_turn_and_replay_as_status_only(
    server: FakeProviderServer, run: Callable[..., Run]
) -> None:
    turn = run("anthropic", SERVERS)
    server.push(
        Reply(text="Echoing first.", tool_calls=[mcp_call("echo", "echo", {"text": ARGUMENT_SECRET})]),
        Reply(
            text=" Now the failing one.", tool_calls=[mcp_call("mcp:echo", "fail", {"reason": REASON_SECRET})]
        ),
        Reply(
            text=" And the clock.",
            tool_calls=[mcp_call("time", "time/get_current_time", {"timezone": "UTC"})],
        ),
        Reply(text=" All ran."),
        Reply(text="Second turn."),
    )
    first = turn("Use the MCP servers")
    assert first["status"] == "done"
    second = turn("And now?", "--session", first["session_id"])
    assert second["status"] == "done"
    assert second["text"] == "Second turn."

    requests = [request.body for request in server.requests]
    assert len(requests) == 5
    catalogue = json.dumps(requests[0])
    assert "server echo (7 tools):" in catalogue
    assert "get_current_time(timezone: string)" in catalogue
    in_turn = [tool_exchanges(body)[1][-1] for body in requests[1:4]]
    assert f"{MARK}: {ARGUMENT_SECRET}" in in_turn[0]
    assert f"deliberate failure: {REASON_SECRET}" in in_turn[1]
    clock = json.loads(in_turn[2])
    assert (clock["server"], clock["tool"]) == ("time", "get_current_time")
    stamp = clock["structured"]["datetime"]
    assert stamp.endswith("+00:00")

    calls, results = tool_exchanges(requests[4])
    assert calls == [("call_mcp_tool", {})] * 3
    assert [json.loads(result) for result in results] == [
        {"status": "success"},
        {"status": "error"},
        {"status": "success"},
    ]
    replayed = json.dumps(requests[4], ensure_ascii=False)
    for private in (ARGUMENT_SECRET, REASON_SECRET, MARK, "deliberate failure", stamp):
        assert private not in replayed


def test_a_server_that_fails_to_start_is_a_tool_error_not_a_crash(
    server: FakeProviderServer, run: Callable[..., Run], tmp_path: Path
) -> None:
    missing = tmp_path / "no-such-mcp-server"
    turn = run("anthropic", f"[mcp.servers.broken]\ncommand = {json.dumps(str(missing))}\n")
    server.push(
        Reply(text="Trying it.", tool_calls=[mcp_call("broken", "anything", {})]),
        Reply(text=" It is broken."),
    )
    outcome = turn("Use the broken server")
    assert outcome["status"] == "done"
    requests = [request.body for request in server.requests]
    failure = f"MCP server 'broken' failed to start: command not found: {missing}"
    assert f"server broken: unavailable ({failure})" in json.dumps(requests[0], ensure_ascii=False)
    (result,) = tool_exchanges(requests[1])[1]
    assert failure in result
