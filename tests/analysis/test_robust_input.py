"""Hostile and broken input to ``turnmemory analyze``: one line each, an honest exit status, bounded
memory and output, and nothing that hangs."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from turnmemory.transcripts import _build, load_session

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
TURNMEMORY = str(Path(sys.executable).with_name("turnmemory"))
GOOD = (EXAMPLES / "claude-code-session.jsonl").read_text()


def analyze(*args: str | Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``turnmemory analyze ARGS --format json --tokenizer bytes`` as a subprocess (a hang fails)."""
    return subprocess.run(
        [TURNMEMORY, "analyze", *map(str, args), "--format", "json", "--tokenizer", "bytes"],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
    )


def no_traceback(result: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in result.stderr and "Error:" not in result.stderr.split("\n")[0][:6]


@pytest.mark.parametrize(
    "line",
    [
        "[" * 200_000,
        '{"a":' * 200_000,
        "[" * 200_000 + "]" * 200_000,
    ],
    ids=["open-lists", "open-objects", "closed-lists"],
)
def test_a_deeply_nested_line_is_one_problem_line(tmp_path: Path, line: str) -> None:
    log = tmp_path / "deep.jsonl"
    log.write_text(GOOD + line + "\n")
    result = analyze(log)
    no_traceback(result)
    assert result.returncode == 0  # one bad line of many: analysed, and said to be partly read
    assert "deep.jsonl:" in result.stderr and "partly read" in result.stderr
    (session,) = json.loads(result.stdout)["sessions"]
    assert session["user_turns"] == 3


@pytest.mark.parametrize("suffix", [".json", ".traj", ".traj.json"])
def test_a_deeply_nested_document_is_one_line_and_exit_1(tmp_path: Path, suffix: str) -> None:
    document = tmp_path / f"deep{suffix}"
    document.write_text('{"messages":' + "[" * 200_000)
    result = analyze(document, EXAMPLES / "codex-rollout.jsonl")
    no_traceback(result)
    assert result.returncode == 1
    problem_lines = [line for line in result.stderr.splitlines() if "deep" in line]
    assert problem_lines and all(len(line) < 200 for line in problem_lines)
    assert [s["format"] for s in json.loads(result.stdout)["sessions"]] == ["codex"]


def test_pipes_devices_and_sockets_are_refused_not_read(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    to_zero = tmp_path / "zero.jsonl"
    to_zero.symlink_to("/dev/zero")
    to_random = tmp_path / "random.json"
    to_random.symlink_to("/dev/urandom")
    sock_path = tmp_path / "s.jsonl"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock_path))
    try:
        for path in (fifo, to_zero, to_random, sock_path):
            result = analyze(path, EXAMPLES / "codex-rollout.jsonl", timeout=30)
            no_traceback(result)
            assert result.returncode == 1, path
            assert f"skipped: {path}: not a regular file" in result.stderr
            assert len(json.loads(result.stdout)["sessions"]) == 1
        # inside a directory they are passed over; the regular session next to them is read
        (tmp_path / "real.jsonl").write_text(GOOD)
        result = analyze(tmp_path, timeout=30)
        assert result.returncode == 0, result.stderr
        assert [Path(s["path"]).name for s in json.loads(result.stdout)["sessions"]] == ["real.jsonl"]
    finally:
        server.close()


def test_the_open_itself_refuses_what_is_not_a_file(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    for path, kind in (
        (fifo, "a pipe"),
        (Path("/dev/null"), "a character device"),
        (tmp_path, "a directory"),
    ):
        with pytest.raises(ValueError, match=f"not a regular file \\({kind}\\)"):
            _build.open_regular(path)


@pytest.mark.parametrize(("bad", "good", "exit_code"), [(70, 20, 1), (20, 70, 0), (45, 45, 0), (46, 44, 1)])
def test_a_mostly_unreadable_file_fails_and_every_file_says_how_much_was_read(
    tmp_path: Path, bad: int, good: int, exit_code: int
) -> None:
    lines = [line for line in GOOD.splitlines() if line.strip()]
    records = (lines * (good // len(lines) + 1))[:good]
    log = tmp_path / "mixed.jsonl"
    log.write_text("\n".join(records + [f"junk {n} {{" for n in range(bad)]) + "\n")
    result = analyze(log, EXAMPLES / "codex-rollout.jsonl")
    no_traceback(result)
    assert result.returncode == exit_code
    said = f"{good:,} of {good + bad:,} lines readable"
    assert said in result.stderr
    names = [Path(s["path"]).name for s in json.loads(result.stdout)["sessions"]]
    assert ("mixed.jsonl" in names) == (exit_code == 0)


def test_a_large_junk_file_keeps_few_problems_and_prints_few_lines(tmp_path: Path) -> None:
    junk = tmp_path / "junk.jsonl"
    with junk.open("w") as handle:
        handle.write(GOOD)
        for number in range(200_000):
            handle.write(f"not json at all, line {number} " + "x" * 40 + "\n")
    session = load_session(junk, "claude-code")
    assert session.unreadable == 200_000 and len(session.problems) == _build.MAX_PROBLEMS
    assert len(session.turns) == 3
    result = analyze(junk, EXAMPLES / "codex-rollout.jsonl")
    no_traceback(result)
    assert result.returncode == 1
    assert len(result.stderr.splitlines()) < 40
    assert "more unreadable lines" in result.stderr and "mostly unreadable" in result.stderr


def test_an_overlong_line_is_skipped_without_being_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_build, "MAX_LINE_BYTES", 20_000)
    log = tmp_path / "long.jsonl"
    lines = GOOD.splitlines(keepends=True)
    middle = len(lines) // 2
    log.write_text(
        "".join([*lines[:middle], '{"type":"user","message":"' + "y" * 50_000 + '"}\n', *lines[middle:]])
    )
    session = load_session(log, "claude-code")
    assert session.unreadable == 1
    assert any("line longer than 20,000 bytes" in problem for problem in session.problems)
    assert len(session.turns) == len(load_session(EXAMPLES / "claude-code-session.jsonl").turns)


def test_an_empty_file_given_by_name_is_not_a_session(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    result = analyze(empty, EXAMPLES / "codex-rollout.jsonl")
    no_traceback(result)
    assert result.returncode == 1
    assert "not a recognized session format" in result.stderr
