"""``turnmemory run``, ``sessions`` and ``show`` as subprocesses against the fake server in this process."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.agent._support import (
    COMMAND,
    FILE_SECRET,
    OUTPUT_SECRET,
    Run,
    body_text,
    conversation_of,
    expected_request,
    scenario_files,
    three_turn_script,
)

from turnmemory import Message, ToolActivity, TurnMemory
from turnmemory.agent.loop import Agent
from turnmemory.agent.prompt import system_prompt
from turnmemory.agent.store import SqliteStore
from turnmemory.providers.check import check_request
from turnmemory.testing import Failure, FakeProviderServer, Reply, ToolCall
from turnmemory.testing import Usage as WireUsage


def _session_of(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith("session ")]
    assert lines, stderr
    return lines[-1].split()[1]


@pytest.mark.parametrize("provider", ["anthropic", "openai_chat"])
def test_a_three_turn_session_through_the_command_line(
    provider: str, cli: Run, server: FakeProviderServer, workspace: Path
) -> None:
    scenario_files(workspace)
    server.push(*three_turn_script())
    common = ["--provider", provider, "--base-url", server.base_url(provider)]
    first = cli("run", *common, "look at the notes")
    assert first.stdout == "Reading notes.\nThey say hello.\n"  # the tool line on stderr fell between
    assert "read_file notes.txt -> ok" in first.stderr
    session = _session_of(first.stderr)

    second = cli("run", *common, "--continue", "--allow", "edit", "--allow", "bash", "bump the value")
    assert "edit_file app.py -> ok" in second.stderr
    assert f"bash {COMMAND} -> exit 4" in second.stderr
    assert _session_of(second.stderr) == session
    assert (workspace / "app.py").read_text() == "value = 22\n"

    third = cli("run", *common, "--session", session[:8], "--format", "json", "summarize")
    result = json.loads(third.stdout)
    usage = {
        "input_tokens": 10,
        "output_tokens": 5,
        "cached_tokens": 0,
        "cache_write_tokens": 0,
        "uncached_tokens": 10,
    }
    requests = len(server.requests)  # every request of the session's three turns, each 10 in and 5 out
    assert result == {
        "session_id": session,
        "status": "done",
        "text": "Summary.",
        "usage": usage,
        "turn_memory": {"tool_activity": []},
        "error": None,
        "segments": [{"type": "text", "text": "Summary."}],
        "requests": [{**usage, "miss": None, "kind": "turn"}],
        "cost": None,
        "session": {
            "usage": {key: value * requests for key, value in usage.items()},
            "cost": None,
        },
    }

    system = Message(role="system", content=system_prompt(str(workspace)))
    turn_1 = Message(
        role="assistant",
        content="Reading notes.They say hello.",
        turn_memory=TurnMemory((ToolActivity(text_offset=14, tool="read_file", target="notes.txt"),)),
    )
    turn_2 = Message(
        role="assistant",
        content="Editing.Checking.It failed.",
        turn_memory=TurnMemory(
            (
                ToolActivity(text_offset=8, tool="edit_file", target="app.py", file_changed="app.py"),
                ToolActivity(
                    text_offset=17, tool="bash", target=COMMAND, failed_command=COMMAND, exit_code=4
                ),
            )
        ),
    )
    users = [
        Message(role="user", content=text) for text in ("look at the notes", "bump the value", "summarize")
    ]
    bodies = [request.body for request in server.requests]
    second_request = expected_request(provider, [system, users[0], turn_1, users[1]])
    assert conversation_of(bodies[2], second_request) == second_request
    third_request = expected_request(provider, [system, users[0], turn_1, users[1], turn_2, users[2]])
    assert conversation_of(bodies[5], third_request) == third_request
    assert FILE_SECRET in body_text(bodies[1]) and OUTPUT_SECRET in body_text(bodies[4])
    for later in (bodies[2], bodies[5]):
        assert FILE_SECRET not in body_text(later)
        assert OUTPUT_SECRET not in body_text(later)


def test_resuming_in_a_new_process_sends_what_the_live_session_sends(
    cli: Run, server: FakeProviderServer, workspace: Path, make_agent: Callable[..., Agent]
) -> None:
    scenario_files(workspace)
    server.push(
        Reply(text="Reading.", tool_calls=[ToolCall("read_file", {"path": "notes.txt"})]),
        Reply(text="Read."),
        Reply(text="Again."),
        Reply(text="Again."),
    )
    live = make_agent("openai_chat")
    live.turn("look at the notes")
    common = [
        "--provider",
        "openai_chat",
        "--base-url",
        server.base_url("openai_chat"),
        "--model",
        live.config.model,
    ]
    live.store.release(live.session_id)  # one writer at a time: the live agent lets the new process write
    cli("run", *common, "--session", live.session_id, "next")
    live.turn("next")
    resumed, in_process = server.requests[-2:]
    assert resumed.body == in_process.body
    assert resumed.body["prompt_cache_key"] == live.session_id
    assert "historical_2_0" in body_text(resumed.body) and FILE_SECRET not in body_text(resumed.body)


def test_an_incomplete_turn_is_pending_state_for_the_next_process(
    cli: Run, server: FakeProviderServer, workspace: Path, data_dir: Path
) -> None:
    scenario_files(workspace)
    server.push(
        Reply(text="Reading.", tool_calls=[ToolCall("read_file", {"path": "notes.txt"})]),
        Failure(400, "stream broke", mid_stream=True, partial_text="Half"),
        Reply(text="Carrying on."),
        Reply(text="Later."),
    )
    common = ["--provider", "openai_chat", "--base-url", server.base_url("openai_chat")]
    failed = cli("run", *common, "read the notes", expect=1)
    last = failed.stderr.strip().splitlines()[-1]
    assert last.startswith("turnmemory: turn incomplete: ") and "stream broke" in last
    journals = list((data_dir / "journal").iterdir())
    assert [stat.S_IMODE(path.stat().st_mode) for path in journals] == [0o600]
    cli("run", *common, "--continue", "go on")
    recovery = server.requests[-1].body
    assert FILE_SECRET in body_text(recovery), "the journal's native result is replayed"
    assert "historical_" not in body_text(recovery), "the partial turn is not replayed twice"
    assert check_request("openai_chat", recovery) == []
    assert not list((data_dir / "journal").iterdir()), "a turn that ended done deletes the journal"

    cli("run", *common, "--continue", "and now?")
    later = body_text(server.requests[-1].body)
    assert FILE_SECRET not in later and "historical_" in later, "then it is compact history"


def test_a_dangerous_command_is_refused_headless_without_allow_dangerous(
    cli: Run, server: FakeProviderServer, workspace: Path
) -> None:
    (workspace / "build").mkdir()
    server.push(
        Reply(text="Cleaning.", tool_calls=[ToolCall("bash", {"command": "rm -rf build"})]),
        Reply(text="I could not clean."),
    )
    done = cli(
        "run",
        "--provider",
        "openai_chat",
        "--base-url",
        server.base_url("openai_chat"),
        "--allow",
        "bash",
        "clean up",
    )
    assert (workspace / "build").is_dir()
    assert "bash rm -rf build -> error: permission denied: refused dangerous command" in done.stderr
    assert "refused dangerous command (recursive force delete)" in body_text(server.requests[1].body)


def test_a_session_killed_mid_turn_keeps_its_completed_turns(
    cli: Run, server: FakeProviderServer, workspace: Path, data_dir: Path
) -> None:
    pid_file = workspace / "sleeper.pid"
    server.push(
        Reply(text="First answer."),
        Reply(
            text="Waiting.",
            tool_calls=[ToolCall("bash", {"command": f"echo $$ > {pid_file}; exec sleep 60"})],
        ),
    )
    url = server.base_url("anthropic")
    session = _session_of(cli("run", "--base-url", url, "first").stderr)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "turnmemory.cli",
            "run",
            "--base-url",
            url,
            "--continue",
            "--allow",
            "bash",
            "second",
        ],
        cwd=workspace,
        env=cli.env,  # type: ignore[attr-defined]
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while not pid_file.exists() or not pid_file.read_text().strip():
            assert time.monotonic() < deadline, "the command never started"
            time.sleep(0.05)
    finally:
        process.kill()  # its command dies with it (see test_shell_lifetime)
        process.wait()
    with SqliteStore(data_dir / "sessions.sqlite3") as store:
        loaded = store.load(session)
    assert [m.content for m in loaded.messages] == ["first", "First answer.", "second"]
    assert loaded.problems == ()

    listed = json.loads(cli("sessions", "--format", "json").stdout)
    assert [(row["id"], row["turns"], row["last_prompt"]) for row in listed] == [(session, 1, "second")]
    shown = cli("show", session[:6]).stdout
    assert "> first\nFirst answer.\n" in shown and shown.rstrip().endswith("> second")


def test_a_missing_key_is_a_one_line_error(cli: Run, server: FakeProviderServer) -> None:
    done = cli("run", "--provider", "gemini", "hello", expect=2)
    assert (
        done.stderr
        == "turnmemory: missing API key for gemini: set GEMINI_API_KEY or GOOGLE_API_KEY or [providers.gemini] api_key\n"
    )
    assert server.requests == []


def test_run_json_gives_the_cost_of_the_turn_and_of_the_session(
    cli: Run, server: FakeProviderServer, tmp_path: Path
) -> None:
    config = tmp_path / "config" / "turnmemory" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        "[providers.anthropic.prices]\ninput = 3.0\noutput = 15.0\ncached_input = 0.3\ncache_write = 3.75\n"
    )
    common = ["--provider", "anthropic", "--base-url", server.base_url("anthropic"), "--format", "json"]
    first_usage = WireUsage(input_tokens=4000, output_tokens=100, cached_tokens=0, cache_write_tokens=3000)
    server.push(Reply(text="One.", usage=first_usage))
    first = json.loads(cli("run", *common, "one").stdout)
    one = 1000 * 3e-6 + 3000 * 3.75e-6 + 100 * 15e-6
    assert first["cost"] == pytest.approx(one)
    assert first["requests"][0]["miss"] == "first_request"
    server.push(Reply(text="Two.", usage=WireUsage(input_tokens=4200, output_tokens=50, cached_tokens=3000)))
    second = json.loads(cli("run", *common, "--continue", "two").stdout)
    two = 1200 * 3e-6 + 3000 * 0.3e-6 + 50 * 15e-6
    assert second["cost"] == pytest.approx(two)
    assert second["session"]["cost"] == pytest.approx(one + two)  # the stored turn counts too
    assert second["session"]["usage"]["cache_write_tokens"] == 3000
