"""The turn journal read back: a damaged or foreign journal is one line and is never replayed; a log
cut short by a stop reads back as its last whole write; a long turn writes bytes in proportion to it."""

from __future__ import annotations

import json
import shutil
import stat
import tempfile
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
    entry = Journal(path.parent, first.session_id).read()
    assert entry is not None
    DAMAGE[damage](entry.to_dict(), path)
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


def _entry(items: list[dict[str, Any]], turns: int = 1, latest: int = 0) -> JournalEntry:
    return JournalEntry("s", "anthropic", "m", 3, turns, latest, tuple(items))


_ITEMS = st.lists(
    st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]), "n": st.integers(0, 3)}),
    min_size=1,
    max_size=6,
)


@settings(max_examples=80, deadline=None)
@given(states=st.lists(_ITEMS, min_size=2, max_size=8), cut=st.integers(1, 10_000))
def test_the_log_reads_back_as_its_last_whole_write_wherever_a_stop_cuts_it(
    states: list[list[dict[str, Any]]], cut: int
) -> None:
    with tempfile.TemporaryDirectory() as root:
        journal = Journal(Path(root), "s")
        entries = [_entry(state, turns=1 + len(state) % 2, latest=len(state) // 2) for state in states]
        for entry in entries[:-1]:
            journal.write(entry)
        before = journal.path.read_bytes()
        journal.write(entries[-1])
        after = journal.path.read_bytes()
        assert Journal(Path(root), "s").read() == entries[-1]
        if after.startswith(before) and len(after) > len(before):  # the last write was appended
            journal.path.write_bytes(after[: len(before) + cut % (len(after) - len(before))])
            assert Journal(Path(root), "s").read() == entries[-2], "a line cut short is left out"


def test_a_whole_line_that_does_not_follow_is_damage(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal", "s")
    journal.write(_entry([{"role": "user", "n": 1}]))
    for line in ('{"at":5,"turns":1,"latest":0,"items":[]}', '{"at":0,"items":3}', "[1]", "{"):
        original = journal.path.read_bytes()
        journal.path.write_bytes(original + line.encode() + b"\n")
        with pytest.raises(JournalDamaged) as error:
            journal.read()
        assert "\n" not in str(error.value)
        journal.path.write_bytes(original)


def test_a_long_turn_writes_bytes_in_proportion_to_its_work(tmp_path: Path) -> None:
    """A turn journaled at each tool start and end: its bytes grow with its calls, not their square."""

    def turn(calls: int) -> tuple[int, int]:
        journal = Journal(tmp_path / f"journal{calls}", "s")
        items: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
        for n in range(calls):
            items.append({"role": "assistant", "call": n, "text": "x" * 200})
            journal.write(_entry([*items, {"role": "user", "result": "unknown"}]))
            items.append({"role": "user", "result": "r" * 2000})
            journal.write(_entry(items))
        return journal.bytes_written, journal.path.stat().st_size

    small, big = turn(50), turn(200)
    assert big[0] < 6 * small[0], f"bytes written grow faster than the calls: {small[0]} then {big[0]}"
    assert Journal(tmp_path / "journal200", "s").read() is not None
    assert big[1] < 3 * sum(len(json.dumps(i)) for i in [{"result": "r" * 2000}] * 200) + 2**17
