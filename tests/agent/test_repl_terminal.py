"""The REPL's screen tells the truth, in a real terminal: an interrupted reply is drawn once, typeahead
waits for the prompt, ``/thinking`` forgets a cleared session, a resumed session and ``show`` look as
the live screen did, ``/context`` adds up, and ``@file`` says what it attached."""

from __future__ import annotations

import base64
import json
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pexpect
import pytest
from tests.agent._support import Run, chat_env, spawn_chat
from tests.images import png

from turnmemory.testing import FakeProviderServer, Reply, ToolCall

PROMPT = "›"


def _exit(child: pexpect.spawn) -> None:
    child.sendline("/exit")
    child.expect(pexpect.EOF)


# -- a real terminal emulator: tmux at 80 columns ---------------------------------------------------


@contextmanager
def _tmux(
    command: str, env: dict[str, str], cwd: Path
) -> Iterator[tuple[Callable[..., str], Callable[..., None]]]:
    """A tmux session of 80 x 40 running ``command``; yields ``screen(wait_for=None)`` (the pane's text,
    once it shows ``wait_for``) and ``send(*keys)``."""
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (CI installs it)")
    name = f"tm-repl-{time.monotonic_ns()}"
    exports = " ".join(f"{key}={shlex.quote(value)}" for key, value in env.items())
    subprocess.run(
        [
            "tmux",
            "new-session",
            "-d",
            "-s",
            name,
            "-x",
            "80",
            "-y",
            "40",
            f"cd {cwd} && env {exports} {command}",
        ],
        check=True,
    )

    def screen(wait_for: str | None = None, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while True:
            shown = subprocess.run(
                ["tmux", "capture-pane", "-p", "-t", name, "-S", "-400"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            if wait_for is None or wait_for in shown:
                return shown
            if time.monotonic() > deadline:
                pytest.fail(f"{wait_for!r} never showed; the screen:\n{shown}")
            time.sleep(0.05)

    def send(*keys: str) -> None:
        subprocess.run(["tmux", "send-keys", "-t", name, *keys], check=True)

    try:
        yield screen, send
    finally:
        subprocess.run(["tmux", "send-keys", "-t", name, "C-d"], check=False)
        subprocess.run(["tmux", "kill-session", "-t", name], check=False)


def test_an_interrupted_reply_is_drawn_once_and_typeahead_waits_for_the_prompt(
    server: FakeProviderServer, workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    def paragraphs(word: str) -> str:
        return "\n\n".join(f"{word} {n} goes on for a few words here." for n in range(30))

    server.push(  # the first reply is taller than the screen, the second is interrupted
        Reply(text=f"A short first reply, line one.\n\n{paragraphs('Paragraph')}", pace=0.02),
        Reply(text=f"The first line of the second reply.\n\n{paragraphs('Section')}", pace=0.05),
    )
    command = shlex.join(
        [sys.executable, "-m", "turnmemory.cli", "chat", "--base-url", server.base_url("anthropic")]
    )
    env = chat_env(data_dir, tmp_path, colour=True)
    with _tmux(command, env, workspace) as (screen, send):
        screen(wait_for="/help for commands")
        send("look", "Enter")
        screen(wait_for="Paragraph 2 ")
        send("typed ahead")  # typed while the reply streams, not sent
        shown = screen(wait_for="tokens:")
        assert "typed ahead" not in shown.split("tokens:")[0], "typeahead is not echoed into the reply"
        shown = screen(wait_for=f"{PROMPT} typed ahead")  # it waited for the prompt
        send("Enter")
        screen(wait_for="Section 3 ")
        send("C-c")
        shown = screen(wait_for="interrupted")
        assert shown.count("The first line of the second reply.") == 1, shown
        assert shown.count("A short first reply, line one.") == 1, shown
        assert "^C" not in shown
        assert all(len(line) <= 80 for line in shown.splitlines())


# -- /thinking and /diff forget a cleared session --------------------------------------------------


def test_thinking_and_diff_forget_a_cleared_session_and_follow_a_resumed_one(
    server: FakeProviderServer, workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    (workspace / "app.py").write_text("value = 1\n")
    server.push(
        Reply(
            reasoning="weighing the old value carefully",
            text="Editing.",
            tool_calls=[
                ToolCall("edit_file", {"path": "app.py", "oldString": "value = 1", "newString": "value = 2"})
            ],
        ),
        Reply(text="Edited."),
    )
    child = spawn_chat(server, workspace, data_dir, tmp_path)
    try:
        child.expect_exact(PROMPT)
        child.sendline("edit it")
        child.expect_exact("allow?")
        child.sendline("y")
        child.expect_exact("Edited.")
        child.expect_exact(PROMPT)
        child.sendline("/thinking")
        child.expect_exact("weighing the old value carefully")
        child.expect_exact(PROMPT)
        child.sendline("/clear")
        child.expect_exact("new session")
        child.expect_exact(PROMPT)
        for command, empty in (("/thinking", "no reasoning shown yet"), ("/diff", "no diff yet")):
            child.sendline(command)
            child.expect_exact(empty)
            child.expect_exact(PROMPT)
            assert "weighing" not in child.before and "+value = 2" not in child.before
        child.sendline("/resume")
        child.expect_exact("resumed session")
        child.expect_exact(PROMPT)
        child.sendline("/thinking")
        child.expect_exact("weighing the old value carefully")  # the resumed session's reasoning
        child.expect_exact(PROMPT)
        child.sendline("/diff")
        child.expect_exact("+value = 2")
        child.expect_exact(PROMPT)
        _exit(child)
    finally:
        child.close(force=True)


# -- resume and show draw the session as it looked live --------------------------------------------


def _edit_and_command_session(
    server: FakeProviderServer, workspace: Path, data_dir: Path, tmp_path: Path
) -> str:
    """A live session with a diff and an edit allowed once, then a command allowed for the session
    and one it then covers; what the live screen showed."""
    (workspace / "app.py").write_text("value = 1\n")
    server.push(
        Reply(
            text="Editing.",
            tool_calls=[
                ToolCall("edit_file", {"path": "app.py", "oldString": "value = 1", "newString": "value = 2"})
            ],
        ),
        Reply(text="Listing.", tool_calls=[ToolCall("bash", {"command": "ls"})]),
        Reply(text="Again.", tool_calls=[ToolCall("bash", {"command": "ls -a"})]),
        Reply(text="All done."),
    )
    child = spawn_chat(server, workspace, data_dir, tmp_path, TURNMEMORY_SANDBOX="off")
    try:
        child.expect_exact(PROMPT)
        child.sendline("work")
        child.expect_exact("allow?")
        child.sendline("y")
        child.expect_exact("allow?")
        child.sendline("a")
        child.expect_exact("All done.")
        child.expect_exact(PROMPT)
        _exit(child)
    finally:
        child.close(force=True)
    return Path(child.logfile_read.name).read_text(encoding="utf-8")


def _order(screen: str, *marks: str) -> list[int]:
    """Where each mark first shows on ``screen`` (see :func:`_flat`)."""
    return [_flat(screen).index(mark) for mark in marks]


def _marks(tool_line: str) -> tuple[str, ...]:
    """What the session shows, in order, with tool lines in the form ``tool_line``."""
    edit, ls = tool_line.format("edit_file app.py"), tool_line.format("bash ls")
    return ("-value = 1", "+value = 2", "permission edit: ", edit, "permission bash: ls", ls)


def test_resume_and_show_draw_permissions_in_words_before_the_tool_line(
    server: FakeProviderServer, workspace: Path, data_dir: Path, tmp_path: Path, cli: Run
) -> None:
    live = _edit_and_command_session(server, workspace, data_dir, tmp_path)
    repl = _marks("● {} ok")
    assert _order(live, *repl) == sorted(_order(live, *repl)), "the live order"
    assert _flat(live).count("permission") == 2, "live, a grant's later use asks nothing"
    resumed = spawn_chat(server, workspace, data_dir, tmp_path, "--continue", TURNMEMORY_SANDBOX="off")
    try:
        resumed.expect_exact("/help for commands")
        replay = resumed.before
        resumed.expect_exact(PROMPT)
        _exit(resumed)
    finally:
        resumed.close(force=True)
    (session,) = json.loads(cli("sessions", "--format", "json").stdout)
    shown = cli("show", session["id"]).stdout
    for screen, order, later in (
        (replay, repl, "● bash ls -a ok"),
        (shown, _marks("{} -> ok"), "bash ls -a -> ok"),
    ):
        assert _order(screen, *order) == sorted(_order(screen, *order)), screen
        flat = _flat(screen)
        assert "permission edit: " in flat and "· allowed once" in flat
        assert "permission bash: ls · allowed for this session" in flat
        assert "permission bash: ls -a · allowed for this session" in flat, "the grant it went by"
        grant = _order(screen, "permission bash: ls -a", later)
        assert grant == sorted(grant)
        assert not re.search(r"allow_(once|session|rule)|\brefused\b", screen), screen


def _flat(screen: str) -> str:
    """``screen`` without escape sequences, its whitespace (line wraps included) collapsed."""
    return " ".join(re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen).split())


# -- /context adds up; @file says what it attached ---------------------------------------------------


_ROW = re.compile(
    r"^\s*(system|tool definitions|user|assistant prose|historical tool blocks|pending|framing)\s+([\d,]+)\s",
    re.M,
)


def test_context_rows_add_up_to_the_next_request(
    server: FakeProviderServer, workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    (workspace / "app.py").write_text("value = 1\n")
    server.push(
        Reply(text="Reading.", tool_calls=[ToolCall("read_file", {"path": "app.py"})]),
        Reply(text="It sets value to one."),
    )
    child = spawn_chat(server, workspace, data_dir, tmp_path)
    try:
        child.expect_exact(PROMPT)
        for step in ("/context", "what is in app.py?", "/context"):
            child.sendline(step)
            if step.startswith("/"):
                child.expect_exact("the new message comes on top")
                table = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", child.before)
                rows = {name: int(count.replace(",", "")) for name, count in _ROW.findall(table)}
                (total,) = [int(n.replace(",", "")) for n in re.findall(r"next request\s+([\d,]+)", table)]
                assert "framing" in rows and sum(rows.values()) == total, (rows, total)
            child.expect_exact(PROMPT)
        _exit(child)
    finally:
        child.close(force=True)


def test_attachments_are_confirmed_missing_ones_said_and_a_refusal_asks_no_reason(
    server: FakeProviderServer, workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    (workspace / "notes.md").write_text("attached words\n")
    shot = png(4, 3)
    (workspace / "shot.png").write_bytes(shot)
    outside = tmp_path / "outside.txt"
    outside.write_text("outside words\n")
    server.push(Reply(text="Seen."), Reply(text="Seen again."))
    child = spawn_chat(server, workspace, data_dir, tmp_path)
    try:
        child.expect_exact(PROMPT)
        child.sendline("read @notes.md and @nope.txt, ask @someone about @shot.png")
        child.expect_exact("@notes.md attached (15 bytes)")
        child.expect_exact("@nope.txt not attached: No such file or directory")
        child.expect_exact(f"@shot.png attached (PNG 4x3, {len(shot)} bytes, ~1 tokens)")
        child.expect(r"attachments: 1 image, ~\d+ tokens \(\d+\.\d% of the window\), this message only")
        child.expect_exact("Seen.")
        child.expect_exact(PROMPT)
        assert "@someone" not in child.before, "a mention that names no path is just a word"
        child.sendline("/context")
        child.expect_exact(f"the last message's attachments: [image shot.png, {len(shot)} bytes]")
        child.expect_exact(PROMPT)
        child.sendline(f"and @{outside}")
        child.expect_exact("allow?")
        child.sendline("n")
        index = child.expect(["reason for the model", "attached: denied"])
        assert index == 1, "denying an attachment asks for no reason: no model reads it"
        child.expect_exact("Seen again.")
        child.expect_exact(PROMPT)
        _exit(child)
    finally:
        child.close(force=True)
    assert "attached words" in str(server.requests[0].body)
    assert "outside words" not in str(server.requests[1].body)
    encoded = base64.b64encode(shot).decode()
    assert encoded in str(server.requests[0].body) and encoded not in str(server.requests[1].body)
