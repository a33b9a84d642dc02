"""Rewind (``turnmemory rewind``, ``/rewind``): the last turns leave the conversation and the files
write_file and edit_file changed go back, through the command line against the fake server; a file
changed by someone else since, a file the turn created, one over the checkpoint bound, hostile paths."""

from __future__ import annotations

import io
import json
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from prompt_toolkit import PromptSession
from prompt_toolkit.input import DummyInput
from prompt_toolkit.output import DummyOutput
from rich.console import Console
from tests.agent._support import Run, run_openai_chat

from turnmemory.agent.loop import Agent
from turnmemory.agent.repl import PermissionPrompter, Repl, ReplView
from turnmemory.agent.rewind import UNTRACKED
from turnmemory.agent.store._checkpoints import FILE_BYTES
from turnmemory.testing import FakeProviderServer, Reply, ToolCall


def _run(cli: Run, server: FakeProviderServer, *args: str) -> subprocess.CompletedProcess[str]:
    allowed = ("--allow", "write", "--allow", "edit", "--allow", "bash", "--sandbox", "off")
    return run_openai_chat(cli, server, *allowed, *args)


def _turn(server: FakeProviderServer, *calls: ToolCall) -> None:
    server.push(Reply(text="Changing.", tool_calls=list(calls)), Reply(text="Changed."))


def _prompts(server: FakeProviderServer) -> list[str]:
    return [m["content"] for m in server.requests[-1].body["messages"] if m["role"] == "user"]


def test_rewind_restores_writes_and_edits_across_turns_and_forgets_the_turns(
    cli: Run, server: FakeProviderServer, workspace: Path
) -> None:
    (workspace / "b.txt").write_text("b original\n")
    _turn(
        server,
        ToolCall("write_file", {"path": "a.txt", "content": "a one\n"}),
        ToolCall("edit_file", {"path": "b.txt", "oldString": "original", "newString": "edited once"}),
    )
    _run(cli, server, "turn one")
    _turn(
        server,
        ToolCall("edit_file", {"path": "a.txt", "oldString": "one", "newString": "two"}),
        ToolCall("edit_file", {"path": "b.txt", "oldString": "once", "newString": "twice"}),
        ToolCall("write_file", {"path": "new/c.txt", "content": "c\n"}),
        ToolCall("bash", {"command": "echo made by bash > d.txt"}),
    )
    _run(cli, server, "--continue", "turn two")
    assert (workspace / "b.txt").read_text() == "b edited twice\n"
    server.push(Reply(text="Kept."))
    _run(cli, server, "--continue", "turn three")

    done = cli("rewind", "--turns", "2")
    lines = done.stdout.splitlines()
    assert lines[0].startswith("rewound 2 turns of session ")
    assert sorted(lines[1:-1]) == [
        "deleted new/c.txt (a rewound turn created it)",
        "restored a.txt",
        "restored b.txt",
    ]
    assert lines[-1] == UNTRACKED
    assert (workspace / "a.txt").read_text() == "a one\n" and (
        workspace / "b.txt"
    ).read_text() == "b edited once\n"
    assert not (workspace / "new" / "c.txt").exists()
    assert (workspace / "d.txt").read_text() == "made by bash\n", "bash changes are not undone"

    server.push(Reply(text="Fresh."))
    _run(cli, server, "--continue", "after the rewind")
    assert _prompts(server) == ["turn one", "after the rewind"], "turns two and three left the conversation"
    shown = cli("show", "--format", "json", done.stdout.split("session ")[1].split()[0]).stdout
    assert '"kind": "rewind"' in shown
    again = cli("rewind", "--turns", "5")
    assert "only 2 turns can be rewound" in again.stdout, again.stdout
    assert (workspace / "b.txt").read_text() == "b original\n" and not (workspace / "a.txt").exists()
    assert _has_no_checkpoint_of(workspace.parent / "data", "a two")


def _has_no_checkpoint_of(data_dir: Path, text: str) -> bool:
    return not any(
        text.encode() in p.read_bytes() for p in (data_dir / "checkpoints").rglob("*") if p.is_file()
    )


def test_a_file_changed_since_is_reported_and_skipped_headless(
    cli: Run, server: FakeProviderServer, workspace: Path
) -> None:
    (workspace / "b.txt").write_text("before\n")
    _turn(server, ToolCall("write_file", {"path": "b.txt", "content": "by the agent\n"}))
    _run(cli, server, "one")
    (workspace / "b.txt").write_text("by a person\n")
    done = cli("rewind")
    assert "skipped b.txt: it was changed since the agent wrote it" in done.stdout.splitlines()
    assert (workspace / "b.txt").read_text() == "by a person\n"


def test_interactive_rewind_asks_before_overwriting(
    make_agent: Callable[..., Agent], server: FakeProviderServer, workspace: Path
) -> None:
    agent = make_agent("openai_chat", allow=("write",))
    (workspace / "b.txt").write_text("before\n")
    _turn(server, ToolCall("write_file", {"path": "b.txt", "content": "by the agent\n"}))
    agent.turn("one")
    (workspace / "b.txt").write_text("by a person\n")
    asked: list[str] = []
    lines = agent.rewind(1, ask=lambda question: asked.append(question) or True)
    assert asked == ["b.txt was changed since the agent wrote it: overwrite it with its content before?"]
    assert "restored b.txt" in lines and (workspace / "b.txt").read_text() == "before\n"
    assert agent.messages == [], "the turn left the live conversation too"


def test_a_file_over_the_checkpoint_bound_is_reported_not_restored(
    cli: Run, server: FakeProviderServer, workspace: Path
) -> None:
    big = "x" * (FILE_BYTES + 10) + "\n"
    (workspace / "big.txt").write_text(big)
    _turn(server, ToolCall("edit_file", {"path": "big.txt", "oldString": "x\n", "newString": "y\n"}))
    _run(cli, server, "edit the big file")
    done = cli("rewind")
    assert f"not restored big.txt: it was over the {FILE_BYTES // 1024} KiB checkpoint bound" in done.stdout
    assert (workspace / "big.txt").read_text().endswith("y\n"), "left as the agent wrote it"


def test_hostile_paths_and_checkpoints(
    cli: Run, server: FakeProviderServer, workspace: Path, tmp_path: Path, data_dir: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    hostile = "evil\x1b]0;owned\x07\nname.txt"
    (workspace / "sub").mkdir()
    (workspace / "sub" / "x.txt").write_text("x before\n")
    _turn(
        server,
        ToolCall("write_file", {"path": hostile, "content": "hostile\n"}),
        ToolCall("write_file", {"path": "sub/x.txt", "content": "x after\n"}),
        ToolCall("write_file", {"path": "plain.txt", "content": "plain\n"}),
    )
    _run(cli, server, "hostile names")
    checkpoint_dir = next((data_dir / "checkpoints").iterdir())
    assert stat.S_IMODE(checkpoint_dir.stat().st_mode) == 0o700
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in checkpoint_dir.iterdir())
    (workspace / "sub" / "x.txt").rename(outside / "x.txt")
    (workspace / "sub").rmdir()
    (workspace / "sub").symlink_to(outside)  # swapped in after the turn: rewind must not write through it
    done = cli("rewind")
    assert "\x1b" not in done.stdout and "evil\\x1b]0;owned" in done.stdout
    assert (outside / "x.txt").read_text() == "x after\n", "nothing written through the symlink"
    assert any(
        line.startswith("not restored sub/x.txt") or line.startswith("skipped sub/x.txt")
        for line in done.stdout.splitlines()
    )
    assert not (workspace / "plain.txt").exists()

    _turn(server, ToolCall("write_file", {"path": "plain.txt", "content": "again\n"}))
    _run(cli, server, "--continue", "again")
    manifest = next(
        p for p in next((data_dir / "checkpoints").iterdir()).iterdir() if p.name.startswith("turn-")
    )
    manifest.write_text(json.dumps([{"path": "/etc/passwd", "state": "saved", "blob": "../../x"}]))
    damaged = cli("rewind")
    assert "are unreadable (the manifest is not one of turnmemory's)" in damaged.stdout
    assert damaged.stdout.count("\n") == 3 and "Traceback" not in damaged.stderr
    assert (workspace / "plain.txt").read_text() == "again\n"


@pytest.mark.parametrize("turns", ["0", "x"])
def test_bad_arguments_are_one_line(cli: Run, turns: str) -> None:
    done = cli("rewind", "--turns", turns, expect=2)
    assert "Traceback" not in done.stderr
    nothing = cli("rewind", expect=2)
    assert (
        nothing.stderr.startswith("turnmemory: no session to continue in ")
        and nothing.stderr.count("\n") == 1
    )


class _Answers(PermissionPrompter):
    """A prompter that answers from a list and keeps the questions."""

    def __init__(self, console: Console, view: ReplView, answers: list[str]) -> None:
        super().__init__(console, view)
        self.answers = answers
        self.asked: list[str] = []

    def read(self, message: str) -> str:
        self.asked.append(message)
        return self.answers.pop(0)


@pytest.mark.parametrize(("answer", "kept"), [("y", "before\n"), ("n", "by a person\n")])
def test_the_repl_rewind_asks_about_a_file_changed_since(
    make_agent: Callable[..., Agent], server: FakeProviderServer, workspace: Path, answer: str, kept: str
) -> None:
    agent = make_agent("openai_chat", allow=("write",))
    screen = io.StringIO()
    console = Console(file=screen, width=100, color_system=None)
    view = ReplView(console, agent.workspace)
    prompter = _Answers(console, view, [answer])
    repl = Repl(agent, console, view, PromptSession(input=DummyInput(), output=DummyOutput()), prompter)
    (workspace / "b.txt").write_text("before\n")
    _turn(server, ToolCall("write_file", {"path": "b.txt", "content": "by the agent\n"}))
    agent.turn("one")
    (workspace / "b.txt").write_text("by a person\n")
    assert repl.command("/rewind nope") and "/rewind takes a number of turns" in screen.getvalue()
    assert repl.command("/rewind 1")
    assert prompter.asked == [
        "b.txt was changed since the agent wrote it: overwrite it with its content before? [y/N]: "
    ]
    assert (workspace / "b.txt").read_text() == kept
    assert UNTRACKED in screen.getvalue() and agent.messages == []
