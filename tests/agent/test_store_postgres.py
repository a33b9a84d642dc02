"""What only a server store meets: a server restarted or a connection cut mid-turn, a server gone,
a writer that lost its claim while disconnected, and URLs that are never printed with a password.
Against a real PostgreSQL server (a throwaway cluster); the store suite itself runs on both backends."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.agent._postgres import Cluster
from tests.agent._support import RecordingView, Run

from turnmemory.agent.loop import Agent
from turnmemory.agent.store import SessionBusy, SessionStoreError, _postgres, open_store
from turnmemory.llm import Event
from turnmemory.memory import Message
from turnmemory.testing import FakeProviderServer, Reply, ToolCall

WS = "/home/dev/repo"


@pytest.fixture
def pg_url(postgres_cluster: Cluster, data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    url = postgres_cluster.fresh_url()
    monkeypatch.setenv("TURNMEMORY_STORE", url)
    return url


def _terminate_others(url: str) -> int:
    """Cut every turnmemory connection of the cluster (as a failover or an idle-session killer would)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as db:
        return len(
            db.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name LIKE 'turnmemory pid %' AND pid <> pg_backend_pid()"
            ).fetchall()
        )


class _OnToolStart(RecordingView):
    """Does something to the server when the turn's first tool starts (mid-turn, prompt stored)."""

    def __init__(self, act: Callable[[], None]) -> None:
        super().__init__()
        self.act = act

    def event(self, event: Event, elapsed: float | None) -> None:
        super().event(event, elapsed)
        if event.kind == "tool_start":
            self.act()


def _turn_with_a_tool(server: FakeProviderServer, agent: Agent, prompt: str) -> None:
    server.push(
        Reply(text="Looking.", tool_calls=[ToolCall("glob", {"pattern": "*"})]),
        Reply(text=f"Answered {prompt}."),
    )
    assert agent.turn(prompt).status == "done"


@pytest.mark.parametrize("cut", ["restart", "terminate"])
def test_a_server_restart_or_a_cut_connection_mid_turn_loses_no_turn(
    cut: str,
    pg_url: str,
    postgres_cluster: Cluster,
    server: FakeProviderServer,
    make_agent: Callable[..., Agent],
) -> None:
    agent = make_agent("openai_chat")
    _turn_with_a_tool(server, agent, "first")

    def act() -> None:
        if cut == "restart":
            postgres_cluster.stop()
            postgres_cluster.start()
        else:
            assert _terminate_others(pg_url) >= 1

    agent.view = _OnToolStart(act)
    _turn_with_a_tool(server, agent, "second")
    agent.view = RecordingView()
    _turn_with_a_tool(server, agent, "third")
    with open_store(pg_url) as store:
        loaded = store.load(agent.session_id)
    assert [m.content for m in loaded.messages] == [
        "first",
        "Looking.Answered first.",
        "second",
        "Looking.Answered second.",
        "third",
        "Looking.Answered third.",
    ]
    assert [e.seq for e in loaded.events] == list(range(1, 8)), "nothing written twice, nothing lost"
    assert not loaded.problems


def test_a_server_gone_mid_turn_is_one_line_and_the_stored_turns_are_kept(
    pg_url: str,
    postgres_cluster: Cluster,
    server: FakeProviderServer,
    make_agent: Callable[..., Agent],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_postgres, "RECONNECT_SECONDS", 1.0)
    agent = make_agent("openai_chat")
    _turn_with_a_tool(server, agent, "first")
    agent.view = _OnToolStart(postgres_cluster.stop)
    try:
        with pytest.raises(SessionStoreError) as failed:
            _turn_with_a_tool(server, agent, "second")
    finally:
        postgres_cluster.start()
    message = str(failed.value)
    assert "\n" not in message and "cannot reach the session store postgresql://" in message
    assert "the turns stored so far are kept" in message
    with open_store(pg_url) as store:
        kept = [m.content for m in store.load(agent.session_id).messages]
    assert kept == ["first", "Looking.Answered first.", "second"], "the prompt was stored before the turn"


def test_a_claim_taken_while_disconnected_is_refused_not_overwritten(pg_url: str) -> None:
    with open_store(pg_url) as store:
        session = store.create(WS, provider="p", model="m")
        store.add_user_message(session, "mine")
        _terminate_others(pg_url)  # this process's lock goes with its connection
        holder = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import sys, time; from turnmemory.agent.store import open_store\n"
                "store = open_store(sys.argv[1]); store.claim(sys.argv[2]); print('held', flush=True)\n"
                "sys.stdin.read()",
                pg_url,
                session,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert holder.stdout is not None and holder.stdout.readline() == "held\n"
            with pytest.raises(
                SessionBusy, match="was taken by another turnmemory process while the connection"
            ):
                store.add_user_message(session, "after losing it")
            assert [m.content for m in store.load(session).messages] == ["mine"], "reading is still fine"
        finally:
            holder.communicate("", timeout=60)
        time.sleep(0)  # the holder is gone: its lock with it
        with open_store(pg_url) as again:
            again.release(session)


def test_an_unreachable_store_is_one_line_without_its_password(cli: Run, tmp_path: Path) -> None:
    url = f"postgresql://agent:hunter2-secret@/turnmemory?host={tmp_path}/nowhere&connect_timeout=2"
    for args in (["sessions"], ["show", "abc"], ["run", "--provider", "openai_chat", "hi"]):
        done = cli(*args, expect=2, extra_env={"TURNMEMORY_STORE": url})
        assert done.stderr.startswith("turnmemory: cannot reach the session store postgresql://")
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
        assert "hunter2" not in done.stderr + done.stdout
    shown = cli("config", extra_env={"TURNMEMORY_STORE": url}).stdout
    assert (
        "postgresql://agent@/turnmemory" in shown and "TURNMEMORY_STORE" in shown and "hunter2" not in shown
    )


def test_the_store_is_chosen_by_its_url(
    cli: Run, pg_url: str, tmp_path: Path, server: FakeProviderServer, data_dir: Path
) -> None:
    server.push(Reply(text="Stored in PostgreSQL."))
    cli("run", "--provider", "openai_chat", "--base-url", server.base_url("openai_chat"), "hello")
    assert not (data_dir / "sessions.sqlite3").exists(), "nothing went to the SQLite default"
    with open_store(pg_url) as store:
        (found,) = store.sessions()
    assert found.last_prompt == "hello"
    config = tmp_path / "config.toml"
    config.write_text(f'[store]\nurl = "{pg_url}"\n')
    listed = cli("sessions", extra_env={"TURNMEMORY_STORE": "", "TURNMEMORY_CONFIG": str(config)})
    assert found.id[:8] in listed.stdout, "[store] url of the config file"
    wrong = cli("sessions", expect=2, extra_env={"TURNMEMORY_STORE": "mysql://db/x"})
    assert wrong.stderr == (
        "turnmemory: unsupported session store 'mysql': expected postgresql://… or sqlite:///PATH\n"
    )
    with open_store(f"sqlite://{tmp_path}/other.sqlite3") as other:
        assert other.sessions() == [] and (tmp_path / "other.sqlite3").exists()


def test_messages_round_trip_unicode_and_nul_escapes(pg_url: str) -> None:
    with open_store(pg_url) as store:
        session = store.create(WS, provider="p", model="m")
        text = "naïve ✓ 日本 \x00 nul, \u202e bidi, emoji 🦀"
        store.add_user_message(session, text)
        store.add_assistant_turn(
            session, Message(role="assistant", content=text), status="done", transcript=[]
        )
        assert [m.content for m in store.load(session).messages] == [text, text]
