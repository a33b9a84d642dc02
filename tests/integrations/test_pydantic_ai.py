"""TurnMemoryProcessor in a real pydantic-ai Agent over a FunctionModel that records what it receives."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pydantic_ai", reason="the pydantic-ai extra is not installed")

from pydantic_ai import Agent, ModelRetry
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from tests.integrations._policies import check_policies

from turnmemory.integrations.pydantic_ai import turn_memory

SECRET = "SECRET-FILE-CONTENTS-5b1d"
FAILURE = "FAILED test_a.py::test_one RAW-OUTPUT-22e8"


def _script(workspace: Path) -> Iterator[ModelResponse]:
    path = str(workspace / "a.py")
    yield ModelResponse(
        [TextPart("Reading the module."), ToolCallPart("read_file", {"path": path}, tool_call_id="r1")]
    )
    yield ModelResponse(
        [
            ToolCallPart("edit_file", {"path": path, "old": "x", "new": "y"}, tool_call_id="e1"),
            ToolCallPart("bash", {"command": "pytest -q"}, tool_call_id="b1"),
            ToolCallPart("grep", {"pattern": "TODO"}, tool_call_id="g1"),
        ]
    )
    yield ModelResponse([TextPart("Edited a.py; one test still fails.")])
    yield ModelResponse(
        [TextPart("Running them again."), ToolCallPart("bash", {"command": "pytest -q"}, tool_call_id="b2")]
    )
    yield ModelResponse([TextPart("Still failing.")])
    yield ModelResponse([TextPart("Done.")])


def _plain(messages: list[ModelMessage]) -> list[Any]:
    out: list[Any] = []
    for message in messages:
        for part in message.parts:
            if isinstance(part, TextPart):
                out.append(("text", part.content))
            elif isinstance(part, ToolCallPart):
                out.append(("call", part.tool_call_id, part.tool_name, part.args_as_dict()))
            elif isinstance(part, ToolReturnPart):
                content = part.model_response_str()
                out.append(
                    ("return", part.tool_call_id, json.loads(content) if content.startswith("{") else content)
                )
            elif isinstance(part, UserPromptPart):
                out.append(("user", part.content))
            elif isinstance(part, SystemPromptPart):
                out.append(("system", part.content))
    return out


def _agent(
    workspace: Path, seen: list[list[ModelMessage]], ran: list[str], **options: Any
) -> Agent[None, str]:
    script = _script(workspace)

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(list(messages))
        return next(script)

    agent = Agent(
        FunctionModel(model),
        system_prompt="You are a coding agent.",
        capabilities=[turn_memory(workspace=str(workspace), **options)],
    )

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a file."""
        ran.append(f"read_file {path}")
        return SECRET

    @agent.tool_plain
    def edit_file(path: str, old: str, new: str) -> str:
        """Edit a file."""
        ran.append(f"edit_file {path} {old} {new}")
        return "edited"

    @agent.tool_plain
    def bash(command: str) -> dict[str, Any]:
        """Run a command."""
        ran.append(f"bash {command}")
        return {"exit_code": 1, "output": FAILURE}

    @agent.tool_plain
    def grep(pattern: str) -> str:
        """Search."""
        raise ModelRetry("grep is not available here")

    return agent


TURN_ONE = [
    ("system", "You are a coding agent."),
    ("user", "Fix the bug in a.py"),
    ("text", "Reading the module."),
    ("call", "historical_2_0", "read_file", {}),
    ("call", "historical_2_1", "edit_file", {}),
    ("call", "historical_2_2", "bash", {}),
    ("call", "historical_2_3", "grep", {}),
    ("return", "historical_2_0", {"status": "success"}),
    ("return", "historical_2_1", {"status": "success", "file_changed": "a.py"}),
    ("return", "historical_2_2", {"status": "success", "failed_command": "pytest -q", "exit_code": 1}),
    ("return", "historical_2_3", {"status": "error"}),
    ("text", "Edited a.py; one test still fails."),
]


def _run(tmp_path: Path, **options: Any) -> tuple[list[list[ModelMessage]], list[str], list[ModelMessage]]:
    seen: list[list[ModelMessage]] = []
    ran: list[str] = []
    agent = _agent(tmp_path, seen, ran, **options)
    history: list[ModelMessage] = []
    for prompt in ("Fix the bug in a.py", "Run the tests again", "Thanks"):
        history = agent.run_sync(prompt, message_history=history).all_messages()
    return seen, ran, history


def test_later_model_requests_receive_exactly_the_compact_records(tmp_path: Path) -> None:
    seen, ran, history = _run(tmp_path)
    assert len(seen) == 6
    assert ran == [
        f"read_file {tmp_path}/a.py",
        f"edit_file {tmp_path}/a.py x y",
        "bash pytest -q",
        "bash pytest -q",
    ]
    assert SECRET in str(seen[1]) and FAILURE in str(seen[2])
    assert _plain(seen[3]) == [*TURN_ONE, ("user", "Run the tests again")]
    assert _plain(seen[4])[: len(TURN_ONE) + 1] == _plain(seen[3])
    assert FAILURE in str(seen[4][-1])
    last = _plain(seen[5])
    assert last[: len(TURN_ONE) + 1] == _plain(seen[3])
    assert last[len(TURN_ONE) + 1 :] == [
        ("text", "Running them again."),
        ("call", "historical_4_0", "bash", {}),
        ("return", "historical_4_0", {"status": "success", "failed_command": "pytest -q", "exit_code": 1}),
        ("text", "Still failing."),
        ("user", "Thanks"),
    ]
    for request in (seen[3], seen[5]):
        assert (
            SECRET not in str(request)
            and "RAW-OUTPUT" not in str(request)
            and str(tmp_path) not in str(request)
        )
    # calls and returns stay paired in every request, in requests that follow their responses
    for request in seen:
        _assert_paired(request)
    # pydantic-ai stores what the processor returns: the stored history is compact up to the last run
    assert SECRET not in str(history) and _plain(history)[: len(TURN_ONE)] == TURN_ONE


def _assert_paired(messages: list[ModelMessage]) -> None:
    open_calls: set[str] = set()
    for message in messages:
        if isinstance(message, ModelResponse):
            assert not open_calls
            open_calls = {p.tool_call_id for p in message.parts if isinstance(p, ToolCallPart)}
        else:
            returns = {p.tool_call_id for p in message.parts if isinstance(p, ToolReturnPart)}
            assert returns <= open_calls
            open_calls -= returns
    assert not open_calls


def test_target_arguments_option(tmp_path: Path) -> None:
    seen, _, _ = _run(tmp_path, arguments="target")
    calls = [item for item in _plain(seen[3]) if item[0] == "call"]
    assert [call[3] for call in calls] == [
        {"path": "a.py"},
        {"path": "a.py"},
        {"command": "pytest -q"},
        {"pattern": "TODO"},
    ]


def test_the_last_user_request_keeps_its_metadata(tmp_path: Path) -> None:
    seen, _, _ = _run(tmp_path)
    requests = [m for m in seen[3] if isinstance(m, ModelRequest)]
    assert requests[-1].run_id is not None and requests[0].run_id is not None
    assert requests[-1].run_id != requests[0].run_id


def test_the_boundary_policy_decides_when_completed_turns_give_way(tmp_path: Path) -> None:
    check_policies(_run, _plain, tmp_path, "RAW-OUTPUT")
