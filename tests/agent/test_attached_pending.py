"""A turn that sent attached files and ended with pending state: the next turn carries its work on."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from tests.agent._support import FILE_SECRET, body_text, scenario_files

from turnmemory.agent.loop import Agent
from turnmemory.providers import PROVIDERS
from turnmemory.testing import Failure, FakeProviderServer, Reply, ToolCall

MakeAgent = Callable[..., Agent]

ATTACHED = "<file path='spec.txt'>ATTACHED-ONLY-ONCE</file>"


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("ending", ["a failed request", "twice in a row"])
def test_the_pending_state_of_an_attached_turn_is_carried_natively_into_the_next(
    make_agent: MakeAgent, server: FakeProviderServer, workspace: Path, provider: str, ending: str
) -> None:
    scenario_files(workspace)
    reading = Reply(text="Reading.", tool_calls=[ToolCall("read_file", {"path": "notes.txt"})])
    server.push(reading, Failure(400, "stream broke"))
    if ending == "twice in a row":
        server.push(reading, Failure(400, "stream broke again"))
    server.push(Reply(text="Going on."))
    agent = make_agent(provider)
    assert agent.turn("read the notes", attachments=ATTACHED).status == "incomplete"
    if ending == "twice in a row":
        assert agent.turn("and the spec", attachments=ATTACHED).status == "incomplete"
    outcome = agent.turn("go on")
    assert outcome.status == "done", outcome.error
    body = body_text(server.requests[-1].body)
    assert FILE_SECRET in body, "the completed read is replayed natively"
    assert "ATTACHED-ONLY-ONCE" not in body, "attached files go with their own turn's request only"
    assert body.count("read the notes") == 1
