"""``turnmemory try``: the key-free way in, played end to end in a real terminal at 80 columns."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from turnmemory.agent.tryout import PROJECT, SUGGESTION, session_script, write_project
from turnmemory.testing import Reply

WIDTH = 80


class Pane:
    """A tmux pane running one command, read as its screen (wrapped lines joined)."""

    def __init__(self, command: str) -> None:
        self.name = f"tm-try-{time.monotonic_ns()}"
        subprocess.run(
            ["tmux", "new-session", "-d", "-s", self.name, "-x", str(WIDTH), "-y", "50", command], check=True
        )

    def screen(self) -> str:
        return subprocess.run(
            ["tmux", "capture-pane", "-p", "-J", "-t", self.name, "-S", "-"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout

    def send(self, text: str) -> None:
        subprocess.run(["tmux", "send-keys", "-t", self.name, text, "Enter"], check=True)

    def wait(self, text: str, count: int = 1, seconds: float = 60) -> str:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            screen = self.screen()
            if screen.count(text) >= count:
                return screen
            time.sleep(0.2)
        pytest.fail(f"{text!r} did not appear on the screen within {seconds:g} s:\n{self.screen()}")

    def close(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], check=False, capture_output=True)


def test_try_plays_the_scripted_session_in_a_real_terminal(tmp_path: Path) -> None:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (CI installs it)")
    env = {
        "HOME": str(tmp_path / "home"),
        "TMPDIR": str(tmp_path),
        "TURNMEMORY_DATA_DIR": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "TERM": "xterm-256color",
        "COLUMNS": str(WIDTH),
    }
    assignments = " ".join(f"{name}={shlex.quote(value)}" for name, value in env.items())
    command = f"env -u OPENAI_API_KEY {assignments} {shlex.quote(sys.executable)} -m turnmemory.cli try"
    command += "; echo __exit_$?__; sleep 60"
    pane = Pane(command)
    try:
        pane.wait("›")
        pane.send(SUGGESTION)
        answered = 0
        deadline = time.monotonic() + 90
        while "both tests pass" not in (screen := pane.screen()):
            if screen.count("allow? [") > answered:
                answered += 1
                if answered == 1:  # the first prompt, as the newcomer sees it
                    assert "● read_file stats.py ok" in screen
                    assert "+def mean(values):" in screen and "+++ b/stats.py" in screen
                    assert "permission edit:" in screen and "allow? [y] once" in screen
                pane.send("y")
            assert time.monotonic() < deadline, f"the scripted session did not finish:\n{screen}"
            time.sleep(0.2)
        assert answered >= 2, "each edit asks for permission"
        tests = [line for line in screen.splitlines() if line.startswith("● bash python3 -m unittest")]
        assert len(tests) == 2 and " exit 1 " in tests[0] and " ok " in tests[1], screen
        assert "-    return sum(values) / (len(values) - 1)" in screen
        pane.send("/context")
        pane.wait("next request")
        pane.send("/memory")
        screen = pane.wait("outcome")
        pane.send("/exit")
        screen = pane.wait("__exit_")
    finally:
        pane.close()
    assert "__exit_0__" in screen
    [workspace] = tmp_path.glob("turnmemory-try-*/project")
    assert (workspace.parent / "sessions.sqlite3").is_file()
    assert not (tmp_path / "data" / "sessions.sqlite3").exists(), "the user's sessions stay apart"
    wrapped = [line for line in screen.splitlines() if len(line) > WIDTH and str(workspace) not in line]
    assert not wrapped, "only a line naming the (long) workspace path may wrap at 80 columns"
    assert (workspace / "stats.py").read_text().endswith("    return sum(values) / len(values)\n")
    passed = subprocess.run(
        [sys.executable, "-m", "unittest", "-q"], cwd=workspace, capture_output=True, text=True, check=False
    )
    assert passed.returncode == 0, passed.stderr


def test_the_script_matches_the_project_it_edits(tmp_path: Path) -> None:
    """Every edit's old text is in the file as the previous steps leave it, exactly once."""
    write_project(tmp_path)
    text = PROJECT["stats.py"]
    edits = [
        call.arguments
        for item in session_script()
        if isinstance(item, Reply)
        for call in item.tool_calls
        if call.name == "edit_file"
    ]
    assert len(edits) == 2
    for edit in edits:
        assert text.count(edit["oldString"]) == 1
        text = text.replace(edit["oldString"], edit["newString"])
    (tmp_path / "stats.py").write_text(text)
    passed = subprocess.run(
        [sys.executable, "-m", "unittest", "-q"], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert passed.returncode == 0, passed.stderr
