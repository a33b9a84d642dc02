"""compact() on real sessions: the full trace compacts to exactly the formatter's request for the imported session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.integrations._sessions import (
    NEXT_USER,
    expected_history,
    full_anthropic,
    full_chat,
    sessions,
    shared_sessions,
)
from tests.providers.sdk_validators import validate

from turnmemory.integrations import Compactor, compact
from turnmemory.providers import anthropic, openai_chat
from turnmemory.providers.check import check_request


def _ids(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def _merged(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Adjacent same-role messages as one (what the Anthropic API does; our formatter writes them so)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if out and out[-1]["role"] == message["role"]:
            out[-1] = {"role": message["role"], "content": [*out[-1]["content"], *message["content"]]}
        else:
            out.append(message)
    return out


@pytest.fixture(scope="module")
def paths() -> list[Path]:
    return shared_sessions()


def test_every_shared_session_round_trips(paths: list[Path]) -> None:
    checked = 0
    for path, session in sessions(paths):
        if not session.turns:
            continue
        expected = expected_history(session)
        chat = compact(full_chat(session), "openai_chat", workspace=session.workspace)
        assert chat == openai_chat.to_request(expected)["messages"], _ids(path)
        blocks = compact(full_anthropic(session), "anthropic", workspace=session.workspace)
        assert _merged(blocks) == anthropic.to_request(expected)["messages"], _ids(path)
        for provider, messages in (("openai_chat", chat), ("anthropic", blocks)):
            assert check_request(provider, {"messages": messages}) == [], _ids(path)
            validate(provider, {"messages": messages})
        checked += 1
    assert checked >= 50, f"only {checked} shared sessions were imported"


def test_compacting_a_compacted_session_changes_nothing(paths: list[Path]) -> None:
    for path, session in sessions(paths[::7]):
        for provider, full in (("openai_chat", full_chat(session)), ("anthropic", full_anthropic(session))):
            once = compact(full, provider, workspace=session.workspace)
            assert compact(once, provider, workspace=session.workspace) == once, _ids(path)


def test_a_growing_conversation_keeps_its_prefix_and_matches_a_cold_compact(paths: list[Path]) -> None:
    """Turn by turn, the incremental Compactor equals a cold compact and never rewrites what it sent."""
    for path, session in sessions(paths[::5]):
        full = full_chat(session)
        users = [i for i, message in enumerate(full) if message["role"] == "user"]
        compactor = Compactor("openai_chat", workspace=session.workspace)
        previous: list[dict[str, object]] = []
        for end in users[1:]:
            history = full[: end + 1]
            request = compactor.compact(history)
            assert request == compact(history, workspace=session.workspace), _ids(path)
            sent = previous[: len(previous) - 1]  # all but the user message that ended the last request
            assert request[: len(sent)] == sent, _ids(path)
            previous = request
        assert previous == [] or previous[-1] == {"role": "user", "content": NEXT_USER}
