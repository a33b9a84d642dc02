"""A damaged sessions store and two processes on one session: one line each, never a traceback,
and the sessions stay writable (rows and writers on SQLite and PostgreSQL, files on SQLite).

Damage comes in every form a disk, a crash or a hand edit leaves: garbage or truncated files, bytes
overwritten mid-file, rows with garbage or 200k-deep JSON, wrong-typed fields, a text ``seq``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.agent._support import Run, tamper
from tests.agent._support import run_openai_chat as _run

from turnmemory.agent.store import SessionBusy, SessionStoreError, SqliteStore, open_store
from turnmemory.memory import Message
from turnmemory.testing import FakeProviderServer, Reply, ToolCall

WS = "/home/dev/repo"


def _filled(path: Path, sessions: int = 3, turns: int = 4) -> list[str]:
    ids = []
    with SqliteStore(path) as store:
        for _ in range(sessions):
            session = store.create(WS, provider="p", model="m")
            for turn in range(turns):
                store.add_user_message(session, f"prompt {turn} " + "x" * 1500)
                store.add_assistant_turn(
                    session, Message(role="assistant", content=f"answer {turn}"), status="done", transcript=[]
                )
            ids.append(session)
    return ids


def _still_writable(path: Path) -> None:
    with SqliteStore(path) as store:
        session = store.create(WS, provider="p", model="m")
        store.add_user_message(session, "after the damage")
        assert [m.content for m in store.load(session).messages] == ["after the damage"]
        assert store.latest(WS) == session


def _one_line(text: str) -> None:
    assert text and "\n" not in text and "Traceback" not in text


# -- whole files ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [b"garbage" * 100, os.urandom(8192), b"SQLite format 3\0" + os.urandom(4000), b"\0" * 4096, b"{}"],
)
def test_an_unreadable_file_is_moved_aside_and_a_new_database_started(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "sessions.sqlite3"
    path.write_bytes(content)
    with SqliteStore(path) as store:
        assert len(store.notices) == 1
        _one_line(store.notices[0])
        assert str(path) in store.notices[0] and "moved to" in store.notices[0]
    kept = [p for p in tmp_path.iterdir() if p.name.startswith("sessions.sqlite3.damaged-")]
    assert [p.read_bytes() for p in kept] == [content], "the damaged file is kept for recovery"
    _still_writable(path)


@given(st.floats(0.0, 0.999))
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_truncated_file_is_moved_aside(tmp_path: Path, fraction: float) -> None:
    directory = tmp_path / f"t{time.monotonic_ns()}"
    directory.mkdir()
    path = directory / "sessions.sqlite3"
    _filled(path)
    size = path.stat().st_size
    with open(path, "r+b") as file:
        file.truncate(max(100, int(size * fraction)))
    with SqliteStore(path) as store:
        assert len(store.notices) == 1 and "truncated" in store.notices[0]
        _one_line(store.notices[0])
    _still_writable(path)


@given(st.lists(st.tuples(st.floats(0.0, 1.0), st.binary(min_size=1, max_size=64)), min_size=1, max_size=4))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_overwritten_bytes_give_one_line_or_nothing(
    tmp_path: Path, damage: list[tuple[float, bytes]]
) -> None:
    directory = tmp_path / f"d{time.monotonic_ns()}"
    directory.mkdir()
    path = directory / "sessions.sqlite3"
    ids = _filled(path, sessions=2, turns=3)
    size = path.stat().st_size
    with open(path, "r+b") as file:
        for where, garbage in damage:
            file.seek(int(where * (size - len(garbage))))
            file.write(garbage)
    try:
        with SqliteStore(path) as store:
            for notice in store.notices:
                _one_line(notice)
            store.sessions()
            for session in ids:
                try:
                    for problem in store.load(session).problems:
                        _one_line(problem)
                except KeyError:
                    pass
            store.add_user_message(store.create(WS, provider="p", model="m"), "more")
    except SessionStoreError as error:
        _one_line(str(error))
        assert str(path) in str(error) and "move it aside" in str(error)
        for suffix in ("", "-wal", "-shm"):
            if Path(f"{path}{suffix}").exists():
                os.replace(f"{path}{suffix}", f"{path}.damaged{suffix}")
    _still_writable(path)


# -- rows -----------------------------------------------------------------------------------------

BAD_ROWS = {
    "garbage JSON": ("data", "{not json"),
    "200k-deep JSON": ("data", "[" * 200_000 + "]" * 200_000),
    "deep JSON under the limit of Python": ("data", '{"a":' * 500 + "1" + "}" * 500),
    "a JSON array": ("data", "[1, 2]"),
    "data as a number": ("data", 5),
    "data as a blob": ("data", b"\x00\xff"),
    "kind as a blob": ("kind", b"\x00k"),
    "kind not UTF-8": ("kind", b"\xffk"),
    "data not UTF-8": ("data", b'{"content": "\xff"}'),
    "text seq": ("seq", "zzz"),
    "real seq": ("seq", 2.5),
    "content as a number": ("data", '{"content": 5}'),
    "message as text": ("data", '{"message": "hi", "status": "done"}'),
    "transcript as a number": ("data", '{"message": {"role": "assistant", "content": "x"}, "transcript": 5}'),
}


NOT_IN_POSTGRES = {
    "data as a blob": "a text column of PostgreSQL holds no bytes",
    "kind as a blob": "a text column of PostgreSQL holds no bytes",
    "kind not UTF-8": "a UTF8 database of PostgreSQL holds no invalid UTF-8",
    "data not UTF-8": "a UTF8 database of PostgreSQL holds no invalid UTF-8",
    "text seq": "seq is a BIGINT column in PostgreSQL",
    "real seq": "seq is a BIGINT column in PostgreSQL",
}


@pytest.mark.parametrize("damage", list(BAD_ROWS), ids=list(BAD_ROWS))
def test_a_damaged_row_is_skipped_with_one_line_and_the_session_stays_writable(
    store_url: str, damage: str
) -> None:
    if store_url.startswith("postgresql") and damage in NOT_IN_POSTGRES:
        pytest.skip(NOT_IN_POSTGRES[damage])
    column, value = BAD_ROWS[damage]
    with open_store(store_url) as store:
        session = store.create(WS, provider="p", model="m")
        store.add_user_message(session, "first")
        store.add_assistant_turn(
            session, Message(role="assistant", content="one"), status="done", transcript=[]
        )
        store.add_user_message(session, "second")
        store.add_assistant_turn(
            session, Message(role="assistant", content="two"), status="done", transcript=[]
        )
    other = value if column != "seq" else value + "y" if isinstance(value, str) else 2.75  # seq is a key
    # the first turn (seq 3) and the second user message (seq 4)
    tamper(
        store_url, f"UPDATE {{events}} SET {column} = ? WHERE session_id = ? AND seq = 3", (value, session)
    )
    tamper(
        store_url, f"UPDATE {{events}} SET {column} = ? WHERE session_id = ? AND seq = 4", (other, session)
    )
    with open_store(store_url) as store:
        loaded = store.load(session)
        assert len(loaded.problems) == 2
        for problem in loaded.problems:
            _one_line(problem)
            assert session[:8] in problem and "skipped" in problem
        assert [m.content for m in loaded.messages] == ["first", "two"]
        store.add_user_message(session, "third")
        store.add_assistant_turn(
            session, Message(role="assistant", content="three"), status="done", transcript=[]
        )
        assert [m.content for m in store.load(session).messages][-2:] == ["third", "three"]
        assert [s.last_prompt for s in store.sessions()] == ["third"]


def test_wrong_typed_session_rows_list_and_load(tmp_path: Path) -> None:
    path = tmp_path / "sessions.sqlite3"
    with SqliteStore(path) as store:
        session = store.create(WS, provider="p", model="m")
        store.add_user_message(session, "hello")
    with sqlite3.connect(path) as raw:
        raw.execute(
            "UPDATE sessions SET created_at = 'yesterday', updated_at = x'00', workspace = 5 WHERE id = ?",
            (session,),
        )
        raw.execute("UPDATE events SET created_at = 'now' WHERE session_id = ?", (session,))
        raw.execute("INSERT INTO sessions VALUES (42, 'ws', 1, 2)")
    with SqliteStore(path) as store:
        listed = {s.id: s for s in store.sessions()}
        assert listed[session].created_at == 0.0 and listed[session].workspace == "5"
        loaded = store.load(store.resolve(session[:6]))
        assert loaded.info.created_at == 0.0 and [e.created_at for e in loaded.events] == [0.0, 0.0]
        store.add_user_message(session, "again")


# -- through the command line ---------------------------------------------------------------------


def test_the_command_line_recovers_from_a_garbage_database(
    cli: Run, server: FakeProviderServer, data_dir: Path
) -> None:
    data_dir.mkdir(parents=True)
    (data_dir / "sessions.sqlite3").write_bytes(os.urandom(5000))
    listed = cli("sessions")
    assert listed.stdout.startswith("no sessions")
    notices = listed.stderr.splitlines()
    assert len(notices) == 1 and "moved to" in notices[0], listed.stderr
    server.push(Reply(text="Hello."))
    done = _run(cli, server, "hi")
    assert "Traceback" not in done.stderr
    assert "hi" in cli("sessions").stdout


def test_damaged_rows_are_reported_and_the_session_continues(
    cli: Run, server: FakeProviderServer, store_url: str
) -> None:
    server.push(Reply(text="One."), Reply(text="Two."), Reply(text="Three."))
    _run(cli, server, "first")
    _run(cli, server, "--continue", "second")
    tamper(store_url, "UPDATE {events} SET data = ? WHERE seq = 3", ("[" * 200_000,))
    tamper(store_url, "UPDATE {events} SET data = ? WHERE seq = 4", ('{"content": 5}',))
    done = _run(cli, server, "--continue", "third")
    problems = [line for line in done.stderr.splitlines() if "skipped" in line]
    assert len(problems) == 2 and "Traceback" not in done.stderr, done.stderr
    shown = cli("show", "--format", "json", "--", done.stderr.split("session ")[-1].split()[0])
    assert '"content":"third"' in shown.stdout.replace(" ", "") and "Traceback" not in shown.stderr


def test_a_session_has_one_writer_and_a_killed_writer_lets_go(
    cli: Run, server: FakeProviderServer, workspace: Path, store_url: str, tmp_path: Path
) -> None:
    """On PostgreSQL the refused processes have a home (data directory) of their own, as on another host."""
    elsewhere = (
        {"TURNMEMORY_DATA_DIR": str(tmp_path / "other-home")} if store_url.startswith("postgresql") else {}
    )
    server.push(Reply(text="Started."))
    first = _run(cli, server, "start")
    session = first.stderr.split("session ")[-1].split()[0]
    pid_file = workspace / "holder.pid"
    server.push(
        Reply(
            text="Working.",
            tool_calls=[ToolCall("bash", {"command": f"echo $$ > {pid_file}; exec sleep 60"})],
        ),
        Reply(text="Continued."),
    )
    args = [
        "run",
        "--provider",
        "openai_chat",
        "--base-url",
        server.base_url("openai_chat"),
        "--allow",
        "bash",
    ]
    holder = subprocess.Popen(
        [sys.executable, "-m", "turnmemory.cli", *args, "--sandbox", "off", "--continue", "work"],
        cwd=workspace,
        env={**cli.env, "TURNMEMORY_STORE": store_url},  # type: ignore[attr-defined]
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while not (pid_file.exists() and pid_file.read_text().strip()):
            assert time.monotonic() < deadline and holder.poll() is None, "the holder never ran its command"
            time.sleep(0.05)
        assert "> start" in cli("show", session[:8]).stdout, "reading a session in use is fine"
        for refused in (
            _run(cli, server, "--continue", "meanwhile", expect=2, extra_env=elsewhere),
            _run(cli, server, "--session", session[:8], "meanwhile", expect=2, extra_env=elsewhere),
            cli("chat", "--resume", session[:8], expect=2, extra_env=elsewhere),
        ):
            assert refused.stderr == (
                f"turnmemory: session {session[:8]} is in use by another turnmemory process (pid {holder.pid}): "
                "wait for it to finish, or start a new session\n"
            )
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        if pid_file.exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
    done = _run(cli, server, "--continue", "after the kill")
    assert f"session {session}" in done.stderr


def test_claims_are_per_process_and_released_on_close(store_url: str) -> None:
    with open_store(store_url) as first:
        session = first.create(WS, provider="p", model="m")
        with open_store(store_url) as second:
            second.add_user_message(session, "same process, same writer")
        code = (
            "import sys; from turnmemory.agent.store import open_store, SessionBusy\n"
            "store = open_store(sys.argv[1])\n"
            "try:\n    store.claim(sys.argv[2])\nexcept SessionBusy as e:\n    print(e)\n"
        )
        busy = subprocess.run(
            [sys.executable, "-c", code, store_url, session],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        assert "is in use by another turnmemory process" in busy.stdout
        first.release(session)
        free = subprocess.run(
            [sys.executable, "-c", code, store_url, session],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        assert free.stdout == ""
    assert issubclass(SessionBusy, SessionStoreError)


# -- hostile column values ----------------------------------------------------------------------

HOSTILE_TIMES = {
    "sqlite": ["1e300", "1e999", "-1e999", "9223372036854775807", "'yesterday'", "x'00ff'"],
    "postgresql": ["1e300", "'NaN'", "'Infinity'", "'-Infinity'", "-1", "9.2e18"],
}


@pytest.mark.parametrize("column", ["created_at", "updated_at"])
def test_hostile_times_are_one_line_each_through_show_and_sessions(
    cli: Run, server: FakeProviderServer, store_url: str, column: str
) -> None:
    backend = store_url.partition(":")[0]
    server.push(Reply(text="One."), Reply(text="Two."))
    _run(cli, server, "first")
    _run(cli, server, "--continue", "second")
    with open_store(store_url) as store:
        session = store.sessions()[0].id
    values = HOSTILE_TIMES[backend]
    tamper(store_url, f"UPDATE {{sessions}} SET {column} = {values[0]}")
    for seq, value in enumerate(values[1:], start=1):  # the session's row, then one per event
        tamper(store_url, f"UPDATE {{events}} SET created_at = {value} WHERE seq = ?", (seq,))
    listed = cli("sessions")
    assert "Traceback" not in listed.stderr
    assert session[:8] in listed.stdout and "second" in listed.stdout, "the session is still listed"
    assert [line for line in listed.stderr.splitlines() if "is not a time" in line] == [
        f"turnmemory: session {session[:8]}: {column} 1e+300 is not a time; shown as unknown"
    ]
    if column == "created_at":
        assert "unknown" in listed.stdout
    assert '"updated": 0.0' in cli("sessions", "--format", "json").stdout or column != "updated_at"
    shown = cli("show", session[:8])
    assert "Traceback" not in shown.stderr
    assert "> first" in shown.stdout and "> second" in shown.stdout and "Two." in shown.stdout
    problems = [line for line in shown.stderr.splitlines() if "is not a time" in line]
    assert len(problems) == 5 + (column == "created_at"), shown.stderr
    assert cli("show", "--format", "json", session[:8]).stdout.count('"created_at": 0.0') == 5
    server.push(Reply(text="Three."))
    assert "Three." in _run(cli, server, "--continue", "third").stdout, "the session is still writable"


def test_hostile_text_columns_and_json_constants_are_read_safely(
    cli: Run, server: FakeProviderServer, store_url: str
) -> None:
    server.push(Reply(text="One."), Reply(text="Two."))
    _run(cli, server, "first")
    _run(cli, server, "--continue", "second")
    with open_store(store_url) as store:
        session = store.sessions()[0].id
    tamper(store_url, "UPDATE {sessions} SET workspace = ?", ("/ws\x1b]0;pwned\x07\x1b[2J",))
    tamper(store_url, "UPDATE {events} SET data = ? WHERE seq = 2", ('{"content": NaN}',))
    tamper(
        store_url, "UPDATE {events} SET data = ? WHERE seq = 3", ('{"message": 1e999999, "status": "done"}',)
    )
    tamper(store_url, "UPDATE {events} SET seq = 9223372036854775807 WHERE seq = 4")
    for args in (["sessions"], ["show", session[:8]], ["sessions", "--format", "json"]):
        done = cli(*args)
        assert "Traceback" not in done.stderr and "\x1b" not in done.stdout + done.stderr, args
    shown = cli("show", session[:8])
    assert "\\x1b]0;pwned" in shown.stdout, "the hostile workspace is shown as visible escapes"
    skipped = [line for line in shown.stderr.splitlines() if "skipped" in line]
    assert len(skipped) == 2 and "NaN is not a JSON number" in skipped[0], shown.stderr
    server.push(Reply(text="Three."))
    _run(cli, server, "--session", session, "third")
    with open_store(store_url) as store:
        loaded = store.load(session)
    contents = [m.content for m in loaded.messages]
    assert contents[-3:] == ["third", "Three.", "second"], "the row with the huge seq sorts last"
    assert max(e.seq for e in loaded.events) == 9223372036854775807, "the huge seq is kept, not overflowed"
