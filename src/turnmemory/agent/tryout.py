"""``turnmemory try``: the agent without a key, against the bundled fake provider playing a short script.

A fresh workspace holds a tiny project (``stats.py`` and its unittest file); the fake provider server
(:mod:`turnmemory.testing`) answers the REPL's requests from :func:`session_script`: the model reads
``stats.py``, edits it, runs the tests (they fail), fixes the edit and runs them again. The user
types any request, answers the permission prompts and sees tool lines, diffs, ``/context`` and
``/memory`` as with a real model. Nothing leaves the machine; the workspace and its own session
database stay in a temporary directory afterwards, apart from the user's sessions and configuration.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from turnmemory.agent.config import Inputs, configure
from turnmemory.testing import FakeProviderServer, Reply, ScriptItem, ToolCall, Usage

__all__ = ["MODEL", "PROJECT", "SUGGESTION", "run_try", "session_script", "write_project"]

MODEL = "scripted-demo"
"""The model name the fake provider is asked for (any name works; this one says what it is)."""
SUGGESTION = "add mean() to stats.py and make the tests pass"
"""The request the intro suggests; the script plays the same session whatever is typed."""
PROJECT = {
    "stats.py": '"""Small statistics helpers."""\n\n\ndef total(values):\n    return sum(values)\n',
    "test_stats.py": (
        "import unittest\n\nfrom stats import mean, total\n\n\n"
        "class StatsTest(unittest.TestCase):\n"
        "    def test_total(self):\n        self.assertEqual(total([1, 2, 3]), 6)\n\n"
        "    def test_mean(self):\n        self.assertEqual(mean([1, 2, 3]), 2)\n\n\n"
        'if __name__ == "__main__":\n    unittest.main()\n'
    ),
}
"""The workspace's files, by name."""
_CLOSING = (
    "That was the whole script of this scripted model. /context and /memory show what the session "
    "holds, /diff the last diff whole; /exit leaves. To work with a real model, set a provider key "
    "and run turnmemory chat (README: Use the agent)."
)
_SPARE_REPLIES = 50
"""Answers to requests after the script: each says the script is over (the server has no default)."""


def write_project(workspace: Path) -> None:
    """Write :data:`PROJECT` into ``workspace`` (created if absent)."""
    workspace.mkdir(parents=True, exist_ok=True)
    for name, text in PROJECT.items():
        (workspace / name).write_text(text, encoding="utf-8")


def session_script(python: str = "python3") -> list[ScriptItem]:
    """The scripted model's replies, one per request: read, edit, a failing test run, the fix, a
    passing run, a summary; then :data:`_SPARE_REPLIES` closing notes. ``python`` runs the tests."""
    tests = f"{python} -m unittest -v"
    added = "    return sum(values)\n\n\ndef mean(values):\n    return sum(values) / (len(values) - 1)\n"
    steps = [
        ("I'll read stats.py first.", ToolCall("read_file", {"path": "stats.py"})),
        (
            "It has total() only. I'll add mean() after it.",
            ToolCall(
                "edit_file", {"path": "stats.py", "oldString": "    return sum(values)\n", "newString": added}
            ),
        ),
        ("Now the tests.", ToolCall("bash", {"command": tests})),
        (
            "test_mean fails: mean() divides by len(values) - 1. It should divide by len(values).",
            ToolCall(
                "edit_file",
                {"path": "stats.py", "oldString": "/ (len(values) - 1)", "newString": "/ len(values)"},
            ),
        ),
        ("Running the tests again.", ToolCall("bash", {"command": tests})),
    ]
    script: list[ScriptItem] = [
        Reply(text=text, tool_calls=[call], usage=Usage(1200 + 400 * n, 60, 1000 * bool(n)))
        for n, (text, call) in enumerate(steps)
    ]
    script.append(
        Reply(
            text="Done: stats.py has mean(), and both tests pass.\n\n" + _CLOSING,
            usage=Usage(3400, 40, 3000),
        )
    )
    script += [Reply(text=_CLOSING, usage=Usage(3600, 40, 3200))] * _SPARE_REPLIES
    return script


def _python() -> tuple[str, tuple[str, ...]]:
    """The interpreter the tests run with, and the directories the sandbox must show for it to run
    (a toolchain under the home directory, such as pyenv's, is not inside by default)."""
    found = shutil.which("python3")
    if found is None:
        return shlex.quote(sys.executable), (sys.prefix, sys.base_prefix)
    prefixes = {os.path.dirname(os.path.dirname(path)) for path in (found, os.path.realpath(found))}
    return "python3", tuple(sorted(prefixes))


def _intro(workspace: Path) -> str:
    """What ``turnmemory try`` is and what to do, in lines that fit 80 columns."""
    return (
        "turnmemory try: a scripted model on a local fake provider. No key is needed and\n"
        "nothing leaves this machine. The workspace, a small project, is (and stays) in\n"
        f"  {workspace}\n"
        "Type any request, for example:\n"
        f"  {SUGGESTION}\n"
        "The model reads a file, edits it, runs a failing test and fixes it; you answer\n"
        "its permission prompts. Then try /context and /memory; /exit leaves.\n"
    )


def run_try() -> int:
    """Open the REPL on a fresh workspace against the scripted fake provider; the REPL's exit status."""
    from turnmemory.agent.repl import run_chat

    root = Path(tempfile.mkdtemp(prefix="turnmemory-try-"))
    workspace = root / "project"
    write_project(workspace)
    python, readable = _python()
    with FakeProviderServer(session_script(python), check=False) as server:
        flags = {"provider": "openai_chat", "model": MODEL, "base_url": server.base_url("openai_chat")}
        config = replace(
            configure(Inputs(flags, env={})),
            sandbox_readable=readable,
            store=f"sqlite://{root / 'sessions.sqlite3'}",  # apart from the user's own sessions
        )
        print(_intro(workspace), flush=True)
        return run_chat(config, workspace=str(workspace), session=None, latest=False)
