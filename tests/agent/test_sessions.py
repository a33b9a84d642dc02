"""The sessions store, on SQLite and on PostgreSQL: round trips, listing, prefixes, malformed rows,
concurrent writers, transcript items."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.agent._support import tamper

from turnmemory import Message, ToolActivity, TurnMemory, TurnRecorder
from turnmemory.agent.store import (
    PREVIEW_BYTES,
    SessionStore,
    data_dir,
    open_store,
    transcript_items,
)
from turnmemory.agent.store._records import LATEST_TIME

WS = "/home/dev/repo"


@pytest.fixture
def store(store_url: str) -> Iterator[SessionStore]:
    with open_store(store_url) as opened:
        yield opened


def _assistant(text: str, *activities: ToolActivity) -> Message:
    return Message(role="assistant", content=text, turn_memory=TurnMemory(activities) if activities else None)


def test_a_session_round_trips(store: SessionStore) -> None:
    session = store.create(WS, provider="anthropic", model="m")
    answer = _assistant("Read it.", ToolActivity(text_offset=0, tool="read_file", target="a.py"))
    store.add_user_message(session, "read a.py")
    store.add_assistant_turn(
        session, answer, status="done", transcript=[{"kind": "text", "text": "Read it."}]
    )
    store.add_user_message(session, "and?")
    store.add_assistant_turn(session, _assistant(""), status="error", error="boom", transcript=[])
    loaded = store.load(session)
    assert loaded.messages == (
        Message(role="user", content="read a.py"),
        answer,
        Message(role="user", content="and?"),
    )
    assert [event.kind for event in loaded.events] == [
        "session_started",
        "user_message",
        "assistant_turn",
        "user_message",
        "assistant_turn",
    ]
    assert (loaded.info.workspace, loaded.info.provider, loaded.info.model) == (WS, "anthropic", "m")
    assert loaded.events[-1].data["error"] == "boom"


def test_partial_turns_join_the_conversation_and_dropped_pending_does_not(store: SessionStore) -> None:
    session = store.create(WS, provider="p", model="m")
    partial = _assistant("Reading.", ToolActivity(text_offset=8, tool="read_file"))
    store.add_user_message(session, "go")
    store.add_assistant_turn(session, partial, status="incomplete", error="stream broke", transcript=[])
    store.add_pending_drop(session, partial, reason="switched model")
    assert store.load(session).messages == (Message(role="user", content="go"), partial)


def test_malformed_rows_are_reported_in_one_line_and_skipped(store: SessionStore, store_url: str) -> None:
    session = store.create(WS, provider="p", model="m")
    store.add_user_message(session, "first")
    store.add_assistant_turn(session, _assistant("one"), status="done", transcript=[])
    store.add_user_message(session, "second")
    store.add_assistant_turn(session, _assistant("two"), status="done", transcript=[])
    store.add_user_message(session, "third")
    tamper(store_url, "UPDATE {events} SET data = '{{broken' WHERE session_id = ? AND seq = 3", (session,))
    tamper(
        store_url,
        'UPDATE {events} SET data = \'{{"message": {{"role": "assistant", "content": 5}}}}\' '
        "WHERE session_id = ? AND seq = 5",
        (session,),
    )
    loaded = store.load(session)
    assert [m.content for m in loaded.messages] == ["first", "second", "third"]
    assert len(loaded.problems) == 2
    assert all("\n" not in problem for problem in loaded.problems)
    assert "event 3 (assistant_turn) skipped" in loaded.problems[0]
    assert "message.content: expected a string" in loaded.problems[1]


def test_invalid_activities_are_dropped_and_the_message_kept(store: SessionStore) -> None:
    session = store.create(WS, provider="p", model="m")
    store.append(
        session,
        "assistant_turn",
        {
            "message": {
                "role": "assistant",
                "content": "ab",
                "turn_memory": {
                    "tool_activity": [{"text_offset": 99, "tool": "bash"}, {"text_offset": 1, "tool": "glob"}]
                },
            },
            "status": "done",
        },
    )
    (message,) = store.load(session).messages
    assert message == _assistant("ab", ToolActivity(text_offset=1, tool="glob"))


def test_listing_prefixes_and_latest(store: SessionStore) -> None:
    first = store.create(WS, provider="p", model="m")
    other = store.create("/elsewhere", provider="p", model="m")
    store.add_user_message(first, "hello")
    store.add_assistant_turn(first, _assistant("hi"), status="done", transcript=[])
    store.add_user_message(first, "bye")
    listed = store.sessions()
    assert [s.id for s in listed] == [first, other], "most recently active first"
    assert (listed[0].turns, listed[0].last_prompt, listed[0].workspace) == (1, "bye", WS)
    assert (listed[1].turns, listed[1].last_prompt) == (0, None)
    assert [s.id for s in store.sessions("/elsewhere")] == [other]
    assert store.latest(WS) == first and store.latest("/nowhere") is None
    assert store.resolve(first[:6]) == first
    assert store.resolve(first.upper()) == first
    with pytest.raises(KeyError, match="no session"):
        store.resolve("zz")
    with pytest.raises(KeyError, match="no session"):
        store.load("missing")
    with pytest.raises(KeyError, match="no session"):
        store.add_user_message("missing", "x")


def test_an_ambiguous_prefix_is_refused(store: SessionStore) -> None:
    ids = {store.create(WS, provider="p", model="m") for _ in range(40)}
    shared = next(a[:1] for a in ids if sum(b.startswith(a[:1]) for b in ids) > 1)
    with pytest.raises(KeyError, match="ambiguous"):
        store.resolve(shared)


def test_concurrent_writers_never_collide(store_url: str) -> None:
    with open_store(store_url) as setup:
        session = setup.create(WS, provider="p", model="m")

    def write(n: int) -> None:
        with open_store(store_url) as mine:
            for i in range(20):
                mine.add_user_message(session, f"{n}-{i}")

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with open_store(store_url) as check:
        loaded = check.load(session)
    assert sorted(m.content for m in loaded.messages) == sorted(
        f"{n}-{i}" for n in range(4) for i in range(20)
    )
    assert [e.seq for e in loaded.events] == list(range(1, 82))


def test_the_data_directory_can_be_overridden(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TURNMEMORY_DATA_DIR", str(tmp_path / "x"))
    assert data_dir() == tmp_path / "x"
    with open_store() as opened:
        assert opened.path == tmp_path / "x" / "sessions.sqlite3"
        assert opened.path.stat().st_mode & 0o077 == 0, "the database is private to its owner"


def test_transcript_items_keep_bounded_redacted_previews_and_no_arguments() -> None:
    recorder = TurnRecorder(workspace=WS)
    recorder.text("Writing.")
    recorder.tool_start("c1", "write_file", {"path": f"{WS}/a.py", "content": "SECRET-CONTENT-xyz"})
    recorder.diff("c1", "+SECRET-CONTENT-xyz\n")
    recorder.permission("c1", "write: a.py", "allow_once")
    recorder.tool_end("c1", output={"path": f"{WS}/a.py", "file_changed": f"{WS}/a.py"})
    recorder.tool_start("c2", "bash", {"command": "cat log"})
    recorder.tool_end("c2", output={"exit_code": 1, "stdout": "token=sk-ant-abcdefghijklmnop " + "x" * 5000})
    recorder.tool_start("c3", "read_file", {"path": "b.py"})
    items = transcript_items(recorder.segments, durations={"c1": 0.25}, workspace=WS)
    assert [item["kind"] for item in items] == ["text", "tool", "diff", "permission", "tool", "tool"]
    write = items[1]
    assert write == {
        "kind": "tool",
        "call_id": "c1",
        "name": "write_file",
        "target": "a.py",
        "status": "success",
        "file_changed": "a.py",
        "preview": '{"path": "/home/dev/repo/a.py", "file_changed": "/home/dev/repo/a.py"}',
        "duration": 0.25,
    }
    assert "SECRET-CONTENT" not in str(items[1]), "written content is not kept with the tool"
    bash = items[4]
    assert bash["exit_code"] == 1
    assert "sk-ant-" not in bash["preview"] and "[REDACTED]" in bash["preview"]
    assert len(bash["preview"].encode()) <= PREVIEW_BYTES + 3
    assert items[5]["status"] == "unfinished"


_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)


@st.composite
def _turns(draw: st.DrawFn) -> list[Message]:
    messages: list[Message] = []
    for _ in range(draw(st.integers(0, 5))):
        messages.append(Message(role="user", content=draw(_TEXT)))
        prose = draw(_TEXT)
        size = len(prose.encode())
        offsets = sorted(draw(st.lists(st.integers(0, size), max_size=3)))
        activities = tuple(
            ToolActivity(text_offset=o, tool=draw(st.sampled_from(["bash", "glob"]))) for o in offsets
        )
        messages.append(Message.from_dict(_assistant(prose, *activities).to_dict()))
    return messages


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_turns())
def test_loading_gives_back_what_was_stored(store: SessionStore, messages: list[Message]) -> None:
    session = store.create(WS, provider="p", model="m")
    for message in messages:
        if message.role == "user":
            store.add_user_message(session, message.content)
        else:
            store.add_assistant_turn(session, message, status="done", transcript=[])
    kept = [m for m in messages if m.role == "user" or m.content or m.turn_memory is not None]
    assert list(store.load(session).messages) == kept


_COLUMN_VALUES = st.one_of(
    st.floats(allow_nan=False),
    st.integers(-(2**63), 2**63 - 1),
    st.text(max_size=20),
    st.binary(max_size=20),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(created=_COLUMN_VALUES, updated=_COLUMN_VALUES, event=_COLUMN_VALUES, workspace=_COLUMN_VALUES)
def test_any_column_value_reads_as_a_time_in_range_or_one_line(
    tmp_path: Path, created: object, updated: object, event: object, workspace: object
) -> None:
    url = f"sqlite://{tmp_path}/property.sqlite3"
    with open_store(url) as store:
        session = store.create(WS, provider="p", model="m")
        store.add_user_message(session, "hello")
    tamper(
        url,
        "UPDATE {sessions} SET created_at = ?, updated_at = ?, workspace = ?",
        (created, updated, workspace),
    )
    tamper(url, "UPDATE {events} SET created_at = ?", (event,))
    with open_store(url) as store:
        (listed,) = [s for s in store.sessions() if s.id == session]
        loaded = store.load(session)
    for value in (
        listed.created_at,
        listed.updated_at,
        loaded.info.created_at,
        *(e.created_at for e in loaded.events),
    ):
        assert 0 <= value <= LATEST_TIME
    assert [m.content for m in loaded.messages] == ["hello"], "the session stays readable"
    for problem in (*listed.problems, *loaded.problems):
        assert "\n" not in problem and session[:8] in problem
    time_problems = [p for p in listed.problems if "is not a time" in p]
    numbers = [v for v in (created, updated) if isinstance(v, (int, float))]  # kept as numbers by SQLite
    assert len(time_problems) >= sum(not 0 <= v <= LATEST_TIME for v in numbers)
    if len(numbers) == 2 and all(0 <= v <= LATEST_TIME for v in numbers):
        assert not time_problems and (listed.created_at, listed.updated_at) == (created, updated)
