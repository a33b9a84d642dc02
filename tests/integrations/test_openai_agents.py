"""TurnMemoryInputFilter in a real OpenAI Agents SDK run over a fake ``Model`` that records its input."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents", reason="the agents extra is not installed")

from agents import Agent, ModelResponse, RunConfig, Runner, Usage, function_tool
from agents.models.interface import Model
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText
from tests.integrations._policies import check_policies

from turnmemory.integrations.openai_agents import TurnMemoryInputFilter

SECRET = "SECRET-FILE-CONTENTS-c0de"
FAILURE = "FAILED test_a.py::test_one RAW-OUTPUT-4b4b"


def _text(text: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id="msg_1",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
    )


def _call(call_id: str, name: str, **args: Any) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        type="function_call", call_id=call_id, name=name, arguments=json.dumps(args), id=f"fc_{call_id}"
    )


def _script(workspace: Path) -> Iterator[list[Any]]:
    path = str(workspace / "a.py")
    yield [_text("Reading the module."), _call("r1", "read_file", path=path)]
    yield [_call("e1", "edit_file", path=path, old="x", new="y"), _call("b1", "bash", command="pytest -q")]
    yield [_text("Edited a.py; one test still fails.")]
    yield [_text("Running them again."), _call("b2", "bash", command="pytest -q")]
    yield [_text("Still failing.")]
    yield [_text("Done.")]


class RecordingModel(Model):
    """A scripted model that keeps the input of every call."""

    def __init__(self, script: Iterator[list[Any]]) -> None:
        self.script = script
        self.seen: list[list[Any]] = []

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        self.seen.append(json.loads(json.dumps(input)))
        return ModelResponse(output=next(self.script), usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError


def _run(tmp_path: Path, **options: Any) -> tuple[list[list[Any]], list[str], list[Any]]:
    ran: list[str] = []

    @function_tool
    def read_file(path: str) -> str:
        """Read a file."""
        ran.append(f"read_file {path}")
        return SECRET

    @function_tool
    def edit_file(path: str, old: str, new: str) -> str:
        """Edit a file."""
        ran.append(f"edit_file {path} {old} {new}")
        return "edited"

    @function_tool
    def bash(command: str) -> str:
        """Run a command."""
        ran.append(f"bash {command}")
        return f"Process exited with code 1\n{FAILURE}"

    model = RecordingModel(_script(tmp_path))
    agent = Agent(
        name="coder", instructions="You are a coding agent.", tools=[read_file, edit_file, bash], model=model
    )
    config = RunConfig(
        call_model_input_filter=TurnMemoryInputFilter(workspace=str(tmp_path), **options),
        tracing_disabled=True,
    )
    history: list[Any] = []
    for prompt in ("Fix the bug in a.py", "Run the tests again", "Thanks"):
        result = Runner.run_sync(agent, [*history, {"role": "user", "content": prompt}], run_config=config)
        history = result.to_input_list()
    return model.seen, ran, history


def _plain(items: list[Any]) -> list[Any]:
    out: list[Any] = []
    for item in items:
        kind = item.get("type", "message")
        if kind == "message":
            content = item["content"]
            text = content if isinstance(content, str) else "".join(part["text"] for part in content)
            out.append((item["role"], text))
        elif kind == "function_call":
            out.append(("call", item["call_id"], item["name"], json.loads(item["arguments"])))
        elif kind == "function_call_output":
            output = item["output"]
            out.append(("output", item["call_id"], json.loads(output) if output.startswith("{") else output))
    return out


TURN_ONE = [
    ("user", "Fix the bug in a.py"),
    ("assistant", "Reading the module."),
    ("call", "historical_1_0", "read_file", {}),
    ("call", "historical_1_1", "edit_file", {}),
    ("call", "historical_1_2", "bash", {}),
    ("output", "historical_1_0", {"status": "success"}),
    ("output", "historical_1_1", {"status": "success", "file_changed": "a.py"}),
    ("output", "historical_1_2", {"status": "success", "failed_command": "pytest -q", "exit_code": 1}),
    ("assistant", "Edited a.py; one test still fails."),
]


def test_later_model_calls_receive_exactly_the_compact_records(tmp_path: Path) -> None:
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
        ("assistant", "Running them again."),
        ("call", "historical_3_0", "bash", {}),
        ("output", "historical_3_0", {"status": "success", "failed_command": "pytest -q", "exit_code": 1}),
        ("assistant", "Still failing."),
        ("user", "Thanks"),
    ]
    for request in (seen[3], seen[5]):
        assert (
            SECRET not in str(request)
            and "RAW-OUTPUT" not in str(request)
            and str(tmp_path) not in str(request)
        )
    # the run's own items keep the full trace
    assert SECRET in str(history)


def test_target_arguments_option(tmp_path: Path) -> None:
    seen, _, _ = _run(tmp_path, arguments="target")
    calls = [item[3] for item in _plain(seen[3]) if item[0] == "call"]
    assert calls == [{"path": "a.py"}, {"path": "a.py"}, {"command": "pytest -q"}]


def test_the_boundary_policy_decides_when_completed_turns_give_way(tmp_path: Path) -> None:
    check_policies(_run, _plain, tmp_path, "RAW-OUTPUT")
