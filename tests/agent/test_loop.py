"""The agent loop in-process against the fake provider server: history, pending state, permissions."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.agent._support import (
    COMMAND,
    FILE_SECRET,
    OUTPUT_SECRET,
    PROVIDERS,
    RecordingView,
    body_text,
    conversation_of,
    expected_request,
    scenario_files,
    three_turn_script,
)

from turnmemory import Message, ToolActivity, TurnMemory
from turnmemory.agent.loop import Agent
from turnmemory.agent.permissions import Access, Answer
from turnmemory.testing import Failure, FakeProviderServer, Reply, ToolCall

MakeAgent = Callable[..., Agent]


TURN_1 = Message(
    role="assistant",
    content="Reading notes.They say hello.",
    turn_memory=TurnMemory((ToolActivity(text_offset=14, tool="read_file", target="notes.txt"),)),
)
TURN_2 = Message(
    role="assistant",
    content="Editing.Checking.It failed.",
    turn_memory=TurnMemory(
        (
            ToolActivity(text_offset=8, tool="edit_file", target="app.py", file_changed="app.py"),
            ToolActivity(text_offset=17, tool="bash", target=COMMAND, failed_command=COMMAND, exit_code=4),
        )
    ),
)


def user(text: str) -> Message:
    return Message(role="user", content=text)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_three_turns_carry_exactly_the_historical_blocks(
    provider: str, make_agent: MakeAgent, server: FakeProviderServer, workspace: Path
) -> None:
    scenario_files(workspace)
    server.push(*three_turn_script())
    agent = make_agent(provider, allow=("edit", "bash"))
    outcomes = [agent.turn(prompt) for prompt in ("look at the notes", "bump the value", "summarize")]
    assert [outcome.status for outcome in outcomes] == ["done", "done", "done"]
    assert outcomes[0].message == TURN_1
    assert outcomes[1].message == TURN_2
    assert (workspace / "app.py").read_text() == "value = 22\n"

    requests = [request.body for request in server.requests]
    assert len(requests) == 6
    assert FILE_SECRET in body_text(requests[1]), "inside the turn the raw output is sent"
    assert OUTPUT_SECRET in body_text(requests[4])

    system = agent.system
    second = expected_request(provider, [system, user("look at the notes"), TURN_1, user("bump the value")])
    assert conversation_of(requests[2], second) == second
    third = expected_request(
        provider,
        [system, user("look at the notes"), TURN_1, user("bump the value"), TURN_2, user("summarize")],
    )
    assert conversation_of(requests[5], third) == third
    for later in (requests[2], requests[5]):
        text = body_text(later)
        assert FILE_SECRET not in text
        assert OUTPUT_SECRET not in text
        assert "value = 22" not in text, "edit arguments are not replayed"

    resumed = agent.store.load(agent.session_id)
    assert list(resumed.messages) == agent.messages
    assert resumed.problems == ()


def test_a_resumed_agent_sends_the_same_request(
    make_agent: MakeAgent, server: FakeProviderServer, workspace: Path
) -> None:
    scenario_files(workspace)
    server.push(*three_turn_script()[:5], Reply(text="Summary."), Reply(text="Summary."))
    live = make_agent("anthropic", allow=("edit", "bash"))
    live.turn("look at the notes")
    live.turn("bump the value")
    resumed = make_agent("anthropic", session_id=live.session_id)
    assert resumed.request_history() == live.request_history()
    live.turn("summarize")
    resumed.turn("summarize")
    first, second = server.requests[-2:]
    assert first.body == second.body


@pytest.mark.parametrize("provider", ["anthropic", "openai_chat"])
def test_an_incomplete_turn_recovers_through_pending_state(
    provider: str, make_agent: MakeAgent, server: FakeProviderServer, workspace: Path
) -> None:
    scenario_files(workspace)
    server.push(
        Reply(text="Reading.", tool_calls=[ToolCall("read_file", {"path": "notes.txt"})]),
        Failure(500, "stream broke", mid_stream=True, partial_text="Half"),
        Reply(text="Recovered."),
        Reply(text="Later."),
    )
    agent = make_agent(provider)
    first = agent.turn("read the notes")
    assert first.status == "incomplete"
    assert first.message.activities[0].tool == "read_file"
    assert agent.client.pending is not None

    second = agent.turn("go on")
    assert second.status == "done"
    recovery = body_text(server.requests[2].body)
    assert FILE_SECRET in recovery, "the pending native blocks carry the in-turn result"
    assert "historical_" not in recovery, "the partial turn is not replayed twice"
    assert agent.client.pending is None

    agent.turn("and now?")
    later = body_text(server.requests[3].body)
    assert FILE_SECRET not in later
    assert "historical_" in later, "after recovery the partial turn replays as compact history"
    assert "Reading." in later
    assert list(agent.store.load(agent.session_id).messages) == agent.messages


def test_ctrl_c_during_a_permission_prompt_keeps_the_work_for_the_next_turn(
    make_agent: MakeAgent, server: FakeProviderServer, workspace: Path
) -> None:
    scenario_files(workspace)

    def interrupt(access: Access) -> Answer:
        raise KeyboardInterrupt

    server.push(
        Reply(
            text="Reading, then writing.",
            tool_calls=[
                ToolCall("read_file", {"path": "notes.txt"}),
                ToolCall("write_file", {"path": "out.txt", "content": "x"}),
            ],
        ),
        Reply(text="Picking up."),
    )
    agent = make_agent("anthropic", ask=interrupt)
    outcome = agent.turn("read and write")
    assert outcome.status == "interrupted"
    write = outcome.message.activities[1]
    assert [a.tool for a in outcome.message.activities] == ["read_file", "write_file"]
    assert write.status == "error", "the interrupted write is recorded as the pending state has it"
    assert not (workspace / "out.txt").exists()
    pending = body_text(agent.client.pending)
    assert FILE_SECRET in pending and "outcome unknown: the turn was interrupted" in pending
    assert agent.turn("continue").status == "done"
    assert FILE_SECRET in body_text(server.requests[1].body)


def test_a_dangerous_command_is_refused_headless_even_with_bash_allowed(
    make_agent: MakeAgent, server: FakeProviderServer, workspace: Path
) -> None:
    (workspace / "build").mkdir()
    server.push(
        Reply(text="Cleaning.", tool_calls=[ToolCall("bash", {"command": "rm -rf build"})]),
        Reply(text="Could not clean."),
    )
    agent = make_agent("anthropic", allow=("bash",))
    outcome = agent.turn("clean up")
    assert (workspace / "build").is_dir()
    assert outcome.message.activities[0].status == "error"
    assert "refused dangerous command (recursive force delete)" in body_text(server.requests[1].body)
    transcript = agent.store.load(agent.session_id).events[-1].data["transcript"]
    assert {"kind": "permission", "decision": "refused"}.items() <= next(
        item for item in transcript if item["kind"] == "permission"
    ).items()


def test_permission_answers_reach_the_model_and_session_grants_stick(
    make_agent: MakeAgent, server: FakeProviderServer, workspace: Path
) -> None:
    answers = iter([Answer("deny", "use the Makefile"), Answer("session")])
    asked: list[str] = []

    def ask(access: Access) -> Answer:
        asked.append(access.summary())
        return next(answers)

    server.push(
        Reply(tool_calls=[ToolCall("bash", {"command": "pytest"})]),
        Reply(tool_calls=[ToolCall("bash", {"command": "echo one"})]),
        Reply(tool_calls=[ToolCall("bash", {"command": "echo two"})]),
        Reply(text="Done."),
    )
    agent = make_agent("anthropic", ask=ask, sandbox="off")
    assert agent.turn("test it").status == "done"
    assert asked == ["bash: pytest", "bash: echo one"]
    assert "the user denied bash: pytest: use the Makefile" in body_text(server.requests[1].body)
    assert [a.status for a in agent.messages[-1].activities] == ["error", "success", "success"]


def test_diffs_are_shown_before_the_permission_prompt(
    make_agent: MakeAgent, server: FakeProviderServer, workspace: Path
) -> None:
    scenario_files(workspace)
    order: list[str] = []

    def ask(access: Access) -> Answer:
        order.append(f"ask {access.kind}")
        return Answer("once")

    server.push(
        Reply(tool_calls=[ToolCall("edit_file", {"path": "app.py", "oldString": "1", "newString": "2"})]),
        Reply(text="Edited."),
    )
    agent = make_agent("anthropic", ask=ask)
    view = agent.view
    assert isinstance(view, RecordingView)
    original = view.diff
    view.diff = lambda call_id, diff: (order.append("diff"), original(call_id, diff))  # type: ignore[method-assign]
    agent.turn("edit")
    assert order == ["diff", "ask edit"]
    assert "-value = 1\n+value = 2\n" in view.diffs[0]


def test_switching_model_drops_pending_and_persists_it(
    make_agent: MakeAgent, server: FakeProviderServer, workspace: Path
) -> None:
    scenario_files(workspace)
    server.push(
        Reply(text="Reading.", tool_calls=[ToolCall("read_file", {"path": "notes.txt"})]),
        Failure(400, "rejected"),
        Reply(text="Fresh start."),
    )
    agent = make_agent("anthropic")
    assert agent.turn("read").status == "incomplete"
    agent.switch_model(None, "claude-other")
    assert agent.client.pending is None and agent.client.model == "claude-other"
    dropped = [event for event in agent.store.load(agent.session_id).events if event.kind == "pending_drop"]
    assert len(dropped) == 1
    assert dropped[0].data["message"]["turn_memory"]["tool_activity"][0]["tool"] == "read_file"
    assert isinstance(agent.view, RecordingView) and "dropped the pending state" in agent.view.notices[0]
    agent.turn("again")
    body = server.requests[-1].body
    assert body["model"] == "claude-other"
    assert FILE_SECRET not in body_text(body) and "historical_" in body_text(body)


def test_pending_state_never_leaks_into_another_session(
    make_agent: MakeAgent, server: FakeProviderServer, workspace: Path
) -> None:
    scenario_files(workspace)
    server.push(
        Reply(text="Reading.", tool_calls=[ToolCall("read_file", {"path": "notes.txt"})]),
        Failure(400, "rejected"),
        Reply(text="New here."),
        Reply(text="Back."),
    )
    agent = make_agent("anthropic")
    first_session = agent.session_id
    agent.turn("read")
    agent.new_session()
    agent.turn("hello")
    alone = expected_request("anthropic", [agent.system, user("hello")])
    assert conversation_of(server.requests[2].body, alone) == alone
    agent.resume(first_session)
    agent.turn("resume")
    back = body_text(server.requests[3].body)
    assert "Reading." in back and FILE_SECRET not in back
    assert [m.content for m in agent.messages if m.role == "user"] == ["read", "resume"]


def test_delegate_task_runs_a_read_only_subagent(
    make_agent: MakeAgent, server: FakeProviderServer, workspace: Path
) -> None:
    scenario_files(workspace)
    server.push(
        Reply(
            text="Delegating.",
            tool_calls=[ToolCall("delegate_task", {"agent": "finder", "task": "find the value"})],
        ),
        Reply(tool_calls=[ToolCall("grep", {"pattern": "value"})]),
        Reply(text="value is set in app.py line 1"),
        Reply(text="The finder says app.py."),
    )
    agent = make_agent("anthropic")
    outcome = agent.turn("where is value set?")
    assert outcome.status == "done"
    assert outcome.message.activities[0] == ToolActivity(
        text_offset=11, tool="delegate_task", target="finder"
    )
    sub_request = server.requests[1].body
    assert sorted(tool["name"] for tool in sub_request["tools"]) == ["glob", "grep", "read_file"]
    assert "where is value set?" not in body_text(sub_request)
    assert "value is set in app.py line 1" in body_text(server.requests[3].body)
    assert agent.client.pending is None


def test_context_layers_measure_the_next_request(
    make_agent: MakeAgent, server: FakeProviderServer, workspace: Path
) -> None:
    scenario_files(workspace)
    server.push(
        Reply(text="Reading.", tool_calls=[ToolCall("read_file", {"path": "notes.txt"})]),
        Failure(400, "rejected"),
    )
    agent = make_agent("anthropic")
    before = {layer.name: layer.size for layer in agent.context_layers()}
    assert (
        before["user"]
        == before["assistant prose"]
        == before["pending"]
        == before["historical tool blocks"]
        == 0
    )
    assert before["system"] == len(agent.system.content.encode())
    agent.turn("read")
    after = {layer.name: layer.size for layer in agent.context_layers()}
    assert after["user"] == len(b"read")
    assert after["pending"] > len(FILE_SECRET), "the pending layer holds the in-turn result"
    assert after["assistant prose"] == 0, "the partial turn is carried by the pending state"


def test_consecutive_incomplete_turns_keep_every_piece_of_work(
    make_agent: MakeAgent, server: FakeProviderServer, workspace: Path
) -> None:
    scenario_files(workspace)
    read = ToolCall("read_file", {"path": "notes.txt"})
    server.push(
        Reply(text="One.", tool_calls=[read]),
        Failure(400, "first failure"),
        Reply(text="Two.", tool_calls=[read]),
        Failure(400, "second failure"),
        Reply(text="Three."),
        Reply(text="Four."),
    )
    agent = make_agent("anthropic")
    assert [agent.turn(p).status for p in ("a", "b", "c")] == ["incomplete", "incomplete", "done"]
    recovery = body_text(server.requests[4].body)
    assert recovery.count(FILE_SECRET) == 2, "both partial turns travel as pending native blocks"
    assert "historical_" not in recovery
    agent.turn("d")
    later = body_text(server.requests[5].body)
    assert FILE_SECRET not in later and "One." in later and "Two." in later
    assert list(agent.store.load(agent.session_id).messages) == agent.messages


@pytest.mark.parametrize("provider", ["anthropic", "openai_responses"])
def test_full_tool_history_sends_the_raw_trace_and_never_stores_it(
    provider: str,
    make_agent: Callable[..., Agent],
    server: FakeProviderServer,
    workspace: Path,
    data_dir: Path,
) -> None:
    (workspace / "notes.txt").write_text(f"{FILE_SECRET}\n")
    agent = make_agent(provider, tool_history="full")
    server.push(
        Reply(text="Reading.", tool_calls=[ToolCall("read_file", {"path": "notes.txt"})]), Reply(text="Read.")
    )
    assert agent.turn("read the notes").status == "done"
    server.push(Reply(text="Yes."))
    assert agent.turn("what did they say?").status == "done"
    assert FILE_SECRET in json.dumps(server.requests[-1].body)  # the earlier turn's raw trace
    agent.set_tool_history("memory")  # back to the records at the next boundary
    server.push(Reply(text="Fine."))
    assert agent.turn("and now?").status == "done"
    assert FILE_SECRET not in json.dumps(server.requests[-1].body)
    agent.store.close()
    stored = b"".join(path.read_bytes() for path in sorted(data_dir.glob("sessions.sqlite3*")))
    # The store keeps records and the display transcript, never the native trace (results as sent).
    assert stored and b"tool_result" not in stored and b"function_call_output" not in stored
