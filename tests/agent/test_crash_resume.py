"""A process killed (SIGKILL) at each point of a scripted turn, on each provider, then `run --continue`.

The turn's tools append to a counter file, so a tool that ran twice shows. Each case kills one agent
process; the continuation runs in-process (the same command, `turnmemory run --continue`).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.agent._support import MODELS, Run

from turnmemory.agent._interrupted import NOTE
from turnmemory.agent.store._journal import Journal, JournalEntry
from turnmemory.cli import main
from turnmemory.llm import UNKNOWN
from turnmemory.providers import PROVIDERS, wire
from turnmemory.providers.check import check_request
from turnmemory.testing import FakeProviderServer, Hang, Reply, ToolCall

POINTS = ("before_request", "mid_stream", "after_start", "after_end", "next_request")
KEYS = {"GEMINI_API_KEY": "test-key", "AWS_REGION": "us-east-1"}
FIRST = ToolCall("bash", {"command": "echo a >> counter"})
SECOND = ToolCall("bash", {"command": "echo b >> counter; exec sleep 60"})
UNKNOWN_TEXT = UNKNOWN.error or "outcome unknown"
SLOW = 0.4  # seconds between the frames of a reply the kill lands in


def _common(provider: str, url: str) -> list[str]:
    model = "anthropic.claude-sonnet-4-5" if provider == "bedrock" else MODELS[provider]
    return ["--provider", provider, "--model", model, "--base-url", url]


def _wait(what: str, ready: Callable[[], bool], process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while not ready():
        assert process.poll() is None, f"the agent exited before {what}"
        assert time.monotonic() < deadline, f"never {what}"
        time.sleep(0.02)


def _prompt_stored(data_dir: Path) -> bool:
    try:
        with sqlite3.connect(f"file:{data_dir / 'sessions.sqlite3'}?mode=ro", uri=True) as db:
            return bool(db.execute("SELECT count(*) FROM events WHERE kind = 'user_message'").fetchone()[0])
    except sqlite3.Error:
        return False


def _journal_entry(data_dir: Path) -> JournalEntry | None:
    found = list((data_dir / "journal").glob("*.json")) if (data_dir / "journal").is_dir() else []
    return Journal(data_dir / "journal", found[0].stem).read() if found else None


def _ended(data_dir: Path) -> bool:
    """Whether the journal holds a call that ended and none that is running."""
    entry = _journal_entry(data_dir)
    return entry is not None and UNKNOWN_TEXT not in json.dumps(entry.items, ensure_ascii=False)


def _calls_and_results(provider: str, body: dict[str, object]) -> list[tuple[str, str, bool]]:
    """Each call of the request with its result, natively read: (command, result text, is error)."""
    module = wire(provider)
    items = body[module.ITEMS]
    assert isinstance(items, list)
    pieces = module.pieces(items)
    calls = [piece for piece in pieces if piece.kind == "call"]
    results = [piece for piece in pieces if piece.kind == "result"]
    assert len(calls) == len(results), "every replayed call is answered"
    return [
        (str((call.arguments or {}).get("command")), result.text, result.error)
        for call, result in zip(calls, results, strict=True)
    ]


@pytest.mark.parametrize("point", POINTS)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_turn_killed_at_any_point_loses_no_completed_tool_and_reruns_none(
    cli: Run,
    server: FakeProviderServer,
    workspace: Path,
    data_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    provider: str,
    point: str,
) -> None:
    counter = workspace / "counter"
    url = server.base_url(provider)
    silent = socket.socket()  # a provider that takes the connection and never reads it
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    if point == "before_request":
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
    elif point == "mid_stream":
        server.push(Reply(text="Counting " * 20, tool_calls=[FIRST], pace=SLOW))
    elif point == "after_end":  # the next request gets no answer: the kill lands after the end is journaled
        server.push(Reply(text="Counting.", tool_calls=[FIRST]), Hang())
    else:
        server.push(
            Reply(text="Counting.", tool_calls=[FIRST]),
            Reply(text="More.", tool_calls=[SECOND], pace=SLOW if point == "next_request" else 0.0),
        )
    server.push(Reply(text="Resumed."))
    command = [sys.executable, "-m", "turnmemory.cli", "run", *_common(provider, url)]
    process = subprocess.Popen(
        [*command, "--allow", "bash", "count"],
        cwd=workspace,
        env={**cli.env, **KEYS},  # type: ignore[attr-defined]
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        if point == "before_request":
            _wait("stored the prompt", lambda: _prompt_stored(data_dir), process)
        elif point == "mid_stream":
            _wait("sent its request", lambda: len(server.requests) == 1, process)
            time.sleep(SLOW * 1.5)  # a frame or two of the reply has arrived
        elif point == "after_start":
            _wait("started the second call", lambda: counter.exists() and "b" in counter.read_text(), process)
        elif point == "after_end":
            _wait(
                "journaled the first call's end",
                lambda: _ended(data_dir) and len(server.requests) == 2,
                process,
            )
        else:
            _wait("sent the next request", lambda: len(server.requests) == 2, process)
            time.sleep(SLOW * 1.5)
    finally:
        os.killpg(process.pid, signal.SIGKILL)  # the agent and its command, as a crash takes both
        process.wait()
        silent.close()
    if point != "before_request":
        journals = list((data_dir / "journal").iterdir()) if point != "mid_stream" else []
        assert all(stat.S_IMODE(path.stat().st_mode) == 0o600 for path in journals)
    ran = counter.read_text().split() if counter.exists() else []

    monkeypatch.chdir(workspace)
    for key, value in {**cli.env, **KEYS}.items():  # type: ignore[attr-defined]
        monkeypatch.setenv(key, value)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main(
            ["run", *_common(provider, server.base_url(provider)), "--continue", "--format", "json", "go on"]
        )
    output = capsys.readouterr()
    assert exited.value.code in (0, None), output.err
    assert json.loads(output.out)["status"] == "done"
    assert "Traceback" not in output.err

    assert (counter.read_text().split() if counter.exists() else []) == ran, "no tool ran again"
    body = server.requests[-1].body
    assert check_request(provider, body) == []
    replayed = _calls_and_results(provider, body)
    expected = {
        "before_request": [],
        "mid_stream": [],
        "after_start": ["a", "b"],
        "after_end": ["a"],
        "next_request": ["a"],
    }[point]
    assert ran == expected
    assert [command for command, _, _ in replayed] == [
        {"a": FIRST, "b": SECOND}[name].arguments["command"] for name in expected
    ]
    if "b" in expected:
        assert replayed[-1][2] and UNKNOWN_TEXT in replayed[-1][1], "the interrupted call: outcome unknown"
    assert all(not error for _, _, error in replayed[: 1 if "b" in expected else None])
    system = json.dumps(body, ensure_ascii=False)
    assert NOTE in system, "the model is told the previous turn was interrupted"
    assert system.count(NOTE) == 1
    assert not (data_dir / "journal").is_dir() or not list((data_dir / "journal").iterdir())

    session = json.loads(output.out)["session_id"]
    with pytest.raises(SystemExit):
        main(["show", session])
    shown = capsys.readouterr().out
    assert "[turn interrupted: the agent's process stopped before the turn ended]" in shown
    if "b" in expected:
        assert "-> error: outcome unknown" in shown
