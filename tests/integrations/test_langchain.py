"""TurnMemoryMiddleware in a real LangChain v1 agent (``create_agent``) over a recording fake chat model."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain", reason="the langchain extra is not installed")

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field
from tests.integrations._policies import check_policies

from turnmemory.integrations.langchain import TurnMemoryMiddleware

SECRET = "SECRET-FILE-CONTENTS-7f3a"
FAILURE = "FAILED tests/test_a.py::test_one - AssertionError: RAW-OUTPUT-91c2"


class RecordingModel(GenericFakeChatModel):
    """A fake chat model that keeps every message list it was called with."""

    seen: list[list[BaseMessage]] = Field(default_factory=list)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> RecordingModel:  # type: ignore[override]
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def _call(name: str, call_id: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


def _script(workspace: Path) -> Iterator[AIMessage]:
    path = str(workspace / "a.py")
    yield AIMessage("Reading the module.", tool_calls=[_call("read_file", "r1", path=path)])
    yield AIMessage(
        "",
        tool_calls=[
            _call("edit_file", "e1", path=path, old="x", new="y"),
            _call("bash", "b1", command="pytest -q"),
        ],
    )
    yield AIMessage("Edited a.py; one test still fails.")
    yield AIMessage("Running them again.", tool_calls=[_call("bash", "b2", command="pytest -q")])
    yield AIMessage("Still failing.")
    yield AIMessage("Done.")


def _tools(workspace: Path, ran: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    @tool
    def read_file(path: str) -> str:
        """Read a file."""
        ran.append(("read_file", {"path": path}))
        return SECRET

    @tool
    def edit_file(path: str, old: str, new: str) -> str:
        """Edit a file."""
        ran.append(("edit_file", {"path": path, "old": old, "new": new}))
        return f"Edited {path}"

    @tool
    def bash(command: str) -> str:
        """Run a command."""
        ran.append(("bash", {"command": command}))
        return f"Exit code: 1\n{FAILURE}"

    return [read_file, edit_file, bash]


def _plain(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, AIMessage):
            calls = [(c["id"], c["name"], c["args"]) for c in message.tool_calls]
            out.append({"ai": message.content, "calls": calls})
        elif isinstance(message, ToolMessage):
            content = message.content
            out.append(
                {
                    "tool": message.tool_call_id,
                    "content": json.loads(content) if content[0] == "{" else content,
                }
            )
        elif isinstance(message, HumanMessage):
            out.append({"human": message.content})
    return out


TURN_ONE = [
    {"human": "Fix the bug in a.py"},
    {
        "ai": "Reading the module.",
        "calls": [
            ("historical_1_0", "read_file", {}),
            ("historical_1_1", "edit_file", {}),
            ("historical_1_2", "bash", {}),
        ],
    },
    {"tool": "historical_1_0", "content": {"status": "success"}},
    {"tool": "historical_1_1", "content": {"status": "success", "file_changed": "a.py"}},
    {
        "tool": "historical_1_2",
        "content": {"status": "success", "failed_command": "pytest -q", "exit_code": 1},
    },
    {"ai": "Edited a.py; one test still fails.", "calls": []},
]


def _run(tmp_path: Path, **options: Any) -> tuple[list[list[BaseMessage]], list[Any], Any]:
    ran: list[tuple[str, dict[str, Any]]] = []
    model = RecordingModel(messages=_script(tmp_path))
    agent = create_agent(
        model,
        tools=_tools(tmp_path, ran),
        system_prompt="You are a coding agent.",
        middleware=[TurnMemoryMiddleware(workspace=str(tmp_path), **options)],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "t"}}
    for prompt in ("Fix the bug in a.py", "Run the tests again", "Thanks"):
        state = agent.invoke({"messages": [HumanMessage(prompt)]}, config)
    return model.seen, ran, state


def test_later_model_calls_see_exactly_the_compact_records(tmp_path: Path) -> None:
    seen, ran, state = _run(tmp_path)
    assert len(seen) == 6
    assert all(request[0].type == "system" for request in seen)
    # the current turn runs with full fidelity: real arguments in, raw outputs back to the model
    assert ran[0] == ("read_file", {"path": str(tmp_path / "a.py")})
    assert [name for name, _ in ran] == ["read_file", "edit_file", "bash", "bash"]
    assert SECRET in str(seen[1]) and FAILURE in str(seen[2])
    # turn two opens on the compact record of turn one
    assert _plain(seen[3]) == [*TURN_ONE, {"human": "Run the tests again"}]
    # inside turn two, turn one stays compact and turn two's own trace is raw
    assert _plain(seen[4])[: len(TURN_ONE) + 1] == _plain(seen[3])
    assert FAILURE in str(seen[4][-1].content)
    # turn three: both earlier turns compact, no raw output anywhere, and the prefix is unchanged
    last = _plain(seen[5])
    assert last[: len(TURN_ONE) + 1] == _plain(seen[3])
    assert last[len(TURN_ONE) + 1 :] == [
        {"ai": "Running them again.", "calls": [("historical_3_0", "bash", {})]},
        {
            "tool": "historical_3_0",
            "content": {"status": "success", "failed_command": "pytest -q", "exit_code": 1},
        },
        {"ai": "Still failing.", "calls": []},
        {"human": "Thanks"},
    ]
    for request in seen[3:4] + seen[5:]:
        assert (
            SECRET not in str(request)
            and "RAW-OUTPUT" not in str(request)
            and str(tmp_path) not in str(request)
        )
    # the graph state keeps the full trace by default
    assert any(SECRET in str(m.content) for m in state["messages"])


def test_replace_history_compacts_the_state_at_turn_boundaries(tmp_path: Path) -> None:
    seen, _, state = _run(tmp_path, replace_history=True)
    assert _plain(seen[3]) == [*TURN_ONE, {"human": "Run the tests again"}]
    stored = _plain(state["messages"])
    assert stored[: len(TURN_ONE)] == TURN_ONE
    assert SECRET not in str(stored)
    # the last turn (in progress when the agent started) is still raw in the state
    assert stored[-1] == {"ai": "Done.", "calls": []}


def test_target_arguments_option(tmp_path: Path) -> None:
    seen, _, _ = _run(tmp_path, arguments="target")
    calls = _plain(seen[3])[1]["calls"]
    assert calls == [
        ("historical_1_0", "read_file", {"path": "a.py"}),
        ("historical_1_1", "edit_file", {"path": "a.py"}),
        ("historical_1_2", "bash", {"command": "pytest -q"}),
    ]


def test_async_agent_sees_the_same_requests(tmp_path: Path) -> None:
    sync_seen, _, _ = _run(tmp_path)
    ran: list[tuple[str, dict[str, Any]]] = []
    model = RecordingModel(messages=_script(tmp_path))
    agent = create_agent(
        model,
        tools=_tools(tmp_path, ran),
        middleware=[TurnMemoryMiddleware(workspace=str(tmp_path))],
        checkpointer=InMemorySaver(),
    )

    async def run() -> None:
        config = {"configurable": {"thread_id": "t"}}
        for prompt in ("Fix the bug in a.py", "Run the tests again", "Thanks"):
            await agent.ainvoke({"messages": [HumanMessage(prompt)]}, config)

    asyncio.run(run())
    assert [_plain(m) for m in model.seen] == [_plain(m) for m in sync_seen]


def test_compact_id_style(tmp_path: Path) -> None:
    seen, _, _ = _run(tmp_path, id_style="compact")
    ids = [call[0] for call in _plain(seen[3])[1]["calls"]]
    assert len(ids) == 3 and all(len(i) == 9 and i.isalnum() for i in ids)
    assert {m["tool"] for m in _plain(seen[3]) if "tool" in m} == set(ids)


def test_the_boundary_policy_decides_when_completed_turns_give_way(tmp_path: Path) -> None:
    check_policies(_run, _plain, tmp_path, "RAW-OUTPUT")
