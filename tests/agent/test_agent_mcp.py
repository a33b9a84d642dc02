"""MCP in the agent: the wrapper tools, the catalogue in the system prompt, permissions, shutdown."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from tests.agent._support import MODELS, RecordingView, body_text

from turnmemory import ToolActivity
from turnmemory.agent._runtime import open_agent
from turnmemory.agent.config import AgentConfig
from turnmemory.agent.permissions import Access, Answer
from turnmemory.agent.tools import ToolError
from turnmemory.testing import FakeProviderServer, Reply, ToolCall

ECHO = str(Path(__file__).parent / "mcp_servers" / "echo_server.py")
MARK = "echo-7f3a9c"


def test_mcp_calls_ask_run_and_replay_as_the_wrapper(
    server: FakeProviderServer, data_dir: Path, workspace: Path
) -> None:
    asked: list[Access] = []
    answers = iter([Answer("deny", "not that one"), Answer("once")])

    def ask(access: Access) -> Answer:
        asked.append(access)
        return next(answers)

    call = ToolCall("call_mcp_tool", {"server": "echo", "tool": "echo", "arguments": {"text": "hello"}})
    server.push(
        Reply(text="Asking echo.", tool_calls=[call]),
        Reply(text="Again.", tool_calls=[call]),
        Reply(text="It answered."),
        Reply(text="Later."),
    )
    config = AgentConfig(
        provider="openai_chat",
        model=MODELS["openai_chat"],
        base_url=server.base_url("openai_chat"),
        api_key="test-key",
        mcp={"servers": {"echo": {"command": sys.executable, "args": [ECHO]}}},
    )
    view = RecordingView()
    with open_agent(config, workspace=str(workspace), view=view, ask=ask) as agent:
        assert "echo" in agent.system.content and "call_mcp_tool" in agent.tools.names
        assert "list_mcp_tools" in agent.tools.names
        outcome = agent.turn("use echo")
        agent.turn("and now?")
    assert [access.summary() for access in asked] == ["mcp: echo/echo", "mcp: echo/echo"]
    assert outcome.status == "done"
    assert list(outcome.message.activities) == [
        ToolActivity(text_offset=12, tool="echo", status="error", server="echo"),
        ToolActivity(text_offset=18, tool="echo", status="success", server="echo"),
    ]
    bodies = [request.body for request in server.requests]
    assert "the user denied mcp: echo/echo: not that one" in body_text(bodies[1])
    assert MARK in body_text(bodies[2]), "inside the turn the MCP result is sent"
    later = body_text(bodies[3])
    assert MARK not in later and "hello" not in later, "MCP arguments and results are not replayed"
    assert "historical_2_1" in later and "call_mcp_tool" in later
    with pytest.raises(ToolError, match="shut down"):
        agent.tools.prepare(
            "call_mcp_tool", {"server": "echo", "tool": "echo", "arguments": {"text": "x"}}, agent.context
        )
