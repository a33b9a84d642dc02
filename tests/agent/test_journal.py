"""The turn journal read back: a damaged or foreign journal is one line and is never replayed."""

from __future__ import annotations

import json
import shutil
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.agent._support import FILE_SECRET, RecordingView, body_text, scenario_files

from turnmemory.agent.loop import Agent
from turnmemory.agent.store._journal import Journal, JournalDamaged, JournalEntry
from turnmemory.testing import Failure, FakeProviderServer, Reply, ToolCall

MakeAgent = Callable[..., Agent]


def _incomplete(make_agent: MakeAgent, server: FakeProviderServer, workspace: Path) -> Agent:
    """A session whose turn ended incomplete after reading the notes: its journal holds the result."""
    scenario_files(workspace)
    server.push(
        Reply(text="Reading.", tool_calls=[ToolCall("read_file", {"path": "notes.txt"})]),
        Failure(400, "stream broke"),
    )
    agent = make_agent("anthropic")
    assert agent.turn("read the notes").status == "incomplete"
    return agent


def _path(agent: Agent) -> Path:
    return Journal(agent.store.local_dir / "journal", agent.session_id).path


def _resumed(make_agent: MakeAgent, server: FakeProviderServer, session_id: str) -> tuple[Agent, str]:
    """The session resumed by a new agent, and the body of its next turn's request."""
    server.push(Reply(text="Going on."))
    agent = make_agent("anthropic", session_id=session_id)
    assert agent.turn("go on").status == "done"
    return agent, body_text(server.requests[-1].body)


def test_an_incomplete_turns_journal_is_private_and_replayed_by_the_next_process(
    make_agent: MakeAgent, server: FakeProviderServer, workspace: Path
) -> None:
    first = _incomplete(make_agent, server, workspace)
    path = _path(first)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert FILE_SECRET not in json.dumps(
        [e.data for e in first.store.load(first.session_id, transcripts=False).events]
    )
    resumed, body = _resumed(make_agent, server, first.session_id)
    assert FILE_SECRET in body and "historical_" not in body
    assert not path.exists(), "the turn that replayed it ended done"
    assert isinstance(resumed.view, RecordingView)


def _directory(path: Path) -> None:
    path.unlink()
    path.mkdir()


DAMAGE: dict[str, Callable[[dict[str, Any], Path], object]] = {
    "not JSON": lambda entry, path: path.write_bytes(b"\xff{not json"),
    "another format": lambda entry, path: path.write_text(json.dumps({**entry, "format": "x"})),
    "another version": lambda entry, path: path.write_text(json.dumps({**entry, "version": 99})),
    "another session's": lambda entry, path: path.write_text(json.dumps({**entry, "session": "f" * 32})),
    "another turn's": lambda entry, path: path.write_text(json.dumps({**entry, "turn": 1})),
    "an unknown provider": lambda entry, path: path.write_text(json.dumps({**entry, "provider": "x"})),
    "items of another wire": lambda entry, path: path.write_text(
        json.dumps({**entry, "items": [{"role": "tool", "content": 5, "tool_call_id": []}]})
    ),
    "counts that do not fit": lambda entry, path: path.write_text(json.dumps({**entry, "latest": 99})),
    "a directory": lambda entry, path: _directory(path),
}


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_or_foreign_journal_is_one_line_and_never_replayed(
    make_agent: MakeAgent, server: FakeProviderServer, workspace: Path, damage: str
) -> None:
    first = _incomplete(make_agent, server, workspace)
    path = _path(first)
    DAMAGE[damage](json.loads(path.read_text()), path)
    resumed, body = _resumed(make_agent, server, first.session_id)
    assert isinstance(resumed.view, RecordingView)
    lines = [line for line in resumed.view.notices if "journal" in line]
    assert len(lines) == 1 and "is not replayed" in lines[0], resumed.view.notices
    assert "\n" not in lines[0]
    assert FILE_SECRET not in body, "nothing of it reached the request"


def test_a_journal_copied_from_another_session_is_not_replayed_there(
    make_agent: MakeAgent, server: FakeProviderServer, workspace: Path
) -> None:
    first = _incomplete(make_agent, server, workspace)
    server.push(Reply(text="Other."))
    other = make_agent("anthropic")
    assert other.turn("other work").status == "done"
    shutil.copy(_path(first), _path(other))
    resumed, body = _resumed(make_agent, server, other.session_id)
    assert isinstance(resumed.view, RecordingView)
    assert any("belongs to another session" in line for line in resumed.view.notices)
    assert FILE_SECRET not in body
    assert _path(first).exists(), "the session it belongs to keeps it"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data=st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=8),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
        max_leaves=12,
    )
)
def test_any_json_read_back_is_an_entry_or_one_damaged_line(data: Any, tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal", "s")
    journal.path.parent.mkdir(exist_ok=True)
    journal.path.write_text(json.dumps(data))
    try:
        entry = journal.read()
    except JournalDamaged as error:
        assert "\n" not in str(error) and str(error)
    else:
        assert isinstance(entry, JournalEntry) and entry.session == "s" and entry.items
