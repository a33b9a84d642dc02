"""The ``turnmemory chat`` REPL driven through a pseudo-terminal against the fake server."""

from __future__ import annotations

import io
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pexpect
import pytest
from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document
from prompt_toolkit.input import DummyInput
from prompt_toolkit.output import DummyOutput
from rich.console import Console
from tests.agent._support import body_text

from turnmemory.agent.loop import Agent
from turnmemory.agent.repl import Repl, ReplCompleter, ReplView
from turnmemory.agent.store import SqliteStore
from turnmemory.llm import Event
from turnmemory.testing import FakeProviderServer, Reply, ToolCall

PROMPT = "›"


def _spawn(server: FakeProviderServer, workspace: Path, data_dir: Path, tmp_path: Path) -> pexpect.spawn:
    env = {key: value for key, value in os.environ.items() if not key.startswith("TURNMEMORY_")}
    env.update(
        TURNMEMORY_DATA_DIR=str(data_dir),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        OPENAI_API_KEY="test-key",
        TERM="xterm-256color",
        NO_COLOR="1",
        PROMPT_TOOLKIT_NO_CPR="1",
        TURNMEMORY_SANDBOX="off",  # bash is asked about, and its pid is the host's
    )
    child = pexpect.spawn(
        sys.executable,
        [
            "-m",
            "turnmemory.cli",
            "chat",
            "--provider",
            "openai_chat",
            "--base-url",
            server.base_url("openai_chat"),
        ],
        cwd=str(workspace),
        env=env,
        encoding="utf-8",
        timeout=30,
        dimensions=(50, 120),
    )
    child.logfile_read = open(tmp_path / "screen.txt", "w", encoding="utf-8")  # noqa: SIM115 - closed with the child
    return child


def test_a_turn_with_a_diff_a_permission_prompt_an_interrupt_and_recovery(
    server: FakeProviderServer, workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    (workspace / "app.py").write_text("value = 1\n")
    pid_file = workspace / "sleeper.pid"
    server.push(
        Reply(
            text="Let me fix it.",
            tool_calls=[
                ToolCall("edit_file", {"path": "app.py", "oldString": "value = 1", "newString": "value = 2"})
            ],
        ),
        Reply(text="Fixed the value."),
        Reply(
            text="Waiting.",
            tool_calls=[ToolCall("bash", {"command": f"echo $$ > {pid_file}; exec sleep 60"})],
        ),
        Reply(text="Picked up where we left."),
    )
    child = _spawn(server, workspace, data_dir, tmp_path)
    try:
        child.expect_exact(PROMPT)
        child.sendline("fix the value")
        child.expect_exact("Let me fix it.")
        child.expect_exact("-value = 1")
        child.expect_exact("+value = 2")
        child.expect_exact("edit: ")
        child.expect_exact("allow? [y] once  [a] edit in the workspace for this session  [n] deny:")
        child.sendline("y")
        child.expect_exact("edit_file app.py ok")
        child.expect_exact("Fixed the value.")
        child.expect_exact(PROMPT)
        assert (workspace / "app.py").read_text() == "value = 2\n"

        child.sendline("wait for it")
        child.expect_exact("bash: echo")
        child.expect_exact("allow? [y] once  [n] deny:")  # not a plain command: no session grant
        child.sendline("y")
        deadline = time.monotonic() + 20
        while not (pid_file.exists() and pid_file.read_text().strip()):
            assert time.monotonic() < deadline, "the command never started"
            time.sleep(0.05)
        child.sendintr()
        child.expect_exact("interrupted")
        child.expect_exact(PROMPT)
        sleeper = int(pid_file.read_text())
        deadline = time.monotonic() + 5
        while _alive(sleeper):
            assert time.monotonic() < deadline, "the interrupted command still runs"
            time.sleep(0.05)

        child.sendline("go on")
        child.expect_exact("Picked up where we left.")
        child.expect_exact(PROMPT)
        child.sendline("/memory")
        child.expect(r"edit_file\s+success\s+app\.py\s+app\.py")
        child.expect_exact(PROMPT)
        child.sendintr()
        child.expect_exact("Ctrl-C again to exit")
        child.expect_exact(PROMPT)
        child.sendintr()
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0

    recovery = body_text(server.requests[-1].body)
    assert "not run: the turn was interrupted" in recovery, (
        "the interrupted call went to the next turn as pending state"
    )
    with SqliteStore(data_dir / "sessions.sqlite3") as store:
        (summary,) = store.sessions()
        loaded = store.load(summary.id)
    turns = [event.data for event in loaded.events if event.kind == "assistant_turn"]
    assert [turn["status"] for turn in turns] == ["done", "interrupted", "done"]
    first = turns[0]["transcript"]
    assert [item["kind"] for item in first] == ["text", "tool", "diff", "permission", "text"]
    assert first[3]["decision"] == "allow_once"
    assert turns[1]["transcript"][2]["decision"] == "allow_once"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/re", ["/resume", "/rewind"]),
        ("/m", ["/model", "/memory"]),
        ("look at @sr", ["@src/"]),
        ("look at @src/", ["@src/app.py"]),
        ("@../", []),
    ],
)
def test_completion_of_commands_and_paths(workspace: Path, text: str, expected: list[str]) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "app.py").write_text("")
    completer = ReplCompleter(str(workspace))
    found = [
        c.text for c in completer.get_completions(Document(text), CompleteEvent(completion_requested=True))
    ]
    assert found == expected


# -- slash commands and rendering, in-process -----------------------------------------------------


def _repl(agent: Agent) -> tuple[Repl, io.StringIO]:
    screen = io.StringIO()
    console = Console(file=screen, width=120, color_system=None)
    view = ReplView(console, agent.workspace)
    return Repl(agent, console, view, PromptSession(input=DummyInput(), output=DummyOutput())), screen


def test_slash_commands(
    make_agent: Callable[..., Agent], server: FakeProviderServer, workspace: Path
) -> None:
    (workspace / "app.py").write_text("value = 1\n")
    server.push(
        Reply(text="Reading.", tool_calls=[ToolCall("read_file", {"path": "app.py"})]),
        Reply(text="Done."),
    )
    agent = make_agent("openai_chat")
    repl, screen = _repl(agent)
    agent.turn("read it")
    first = agent.session_id
    for line in ["/help", "/memory", "/context", "/model", "/sessions", "/bogus", "/resume nosuch"]:
        assert repl.command(line)
    out = screen.getvalue()
    assert "/context" in out and "what the next request will carry" in out
    assert "read_file" in out and "app.py" in out
    assert "historical tool blocks" in out and "pending" in out
    assert "openai_chat gpt-4.1" in out
    assert first[:8] + " *" in out
    assert "unknown command /bogus" in out and "no session 'nosuch'" in out

    assert repl.command("/model gpt-5-mini")
    assert agent.config.model == "gpt-5-mini" and agent.client.model == "gpt-5-mini"
    assert repl.command("/new")
    assert agent.session_id != first and agent.messages == []
    assert repl.command("/resume")
    assert agent.session_id == first and [m.content for m in agent.messages][:1] == ["read it"]
    assert "› read it" in screen.getvalue(), "resuming shows the original transcript"
    assert not repl.command("/exit")


def test_the_view_renders_prose_tools_diffs_and_endings(workspace: Path) -> None:
    screen = io.StringIO()
    view = ReplView(Console(file=screen, width=100, color_system=None), str(workspace))
    view.event(Event("text", text="Some **bold** prose"), None)
    view.event(Event("tool_start", call_id="c", name="bash", arguments={"command": "make test"}), None)
    view.event(Event("tool_end", call_id="c", name="bash", output={"exit_code": 2}), 1.25)
    view.diff("d", "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n")
    view.notice("a note")
    view.event(Event("incomplete", reason="api_error", error="stream broke"), None)
    out = screen.getvalue()
    assert "Some bold prose" in out
    assert "bash make test exit 2 1.2s" in out
    assert "-old\n+new\n" in out
    assert "a note" in out and "turn incomplete: stream broke" in out
