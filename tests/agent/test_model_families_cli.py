"""``turnmemory run`` against an OpenAI-compatible server: history takes the form the served model needs.

The model of turn 1 reads two files in one step (parallel calls). Turn 2's request must replay that
batch as single-call exchanges for models whose chat templates cannot take parallel calls, with
9-character alphanumeric ids for Mistral models, and in the spec's form for everything else; the config
file can force either behaviour.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from tests.agent._support import Run

from turnmemory.agent.config import ConfigError, Inputs, configure, load_config
from turnmemory.testing import FakeProviderServer, Reply, ToolCall

NINE = re.compile(r"[A-Za-z0-9]{9}")


def two_turns(cli: Run, server: FakeProviderServer, workspace: Path, *args: str) -> dict[str, Any]:
    """Run a turn with a parallel read of two files, then a second turn; the second turn's request."""
    (workspace / "a.txt").write_text("alpha\n")
    (workspace / "b.txt").write_text("beta\n")
    server.push(
        Reply(
            text="Reading both.",
            tool_calls=[ToolCall("read_file", {"path": "a.txt"}), ToolCall("read_file", {"path": "b.txt"})],
        ),
        Reply(text="Both are read."),
        Reply(text="Nothing else."),
    )
    common = ["--provider", "openai_chat", "--base-url", server.base_url("openai_chat"), *args]
    cli("run", *common, "read both files")
    cli("run", *common, "--continue", "anything else?")
    body: dict[str, Any] = server.requests[-1].body
    return body


def historical_calls(body: dict[str, Any]) -> list[list[str]]:
    """The call ids of each assistant message of the history, in order (messages without calls left out)."""
    return [
        [call["id"] for call in message["tool_calls"]]
        for message in body["messages"]
        if message["role"] == "assistant" and message.get("tool_calls")
    ]


@pytest.mark.parametrize(
    ("model", "single", "compact"),
    [
        ("meta-llama/Llama-3.1-8B-Instruct", True, False),
        ("/models/Mistral-Nemo-Instruct-2407-Q4_K_M.gguf", False, True),
        ("Qwen/Qwen3-8B", False, False),
    ],
)
def test_the_next_turn_replays_the_batch_as_the_served_model_needs(
    cli: Run, server: FakeProviderServer, workspace: Path, model: str, single: bool, compact: bool
) -> None:
    body = two_turns(cli, server, workspace, "--model", model)
    calls = historical_calls(body)
    ids = [call_id for message in calls for call_id in message]
    assert calls == ([[call_id] for call_id in ids] if single else [ids])
    assert len(ids) == 2 and len(set(ids)) == 2
    if compact:
        assert all(NINE.fullmatch(call_id) for call_id in ids)
    else:
        assert ids == ["historical_2_0", "historical_2_1"]
    assert "alpha" not in str(body) and "beta" not in str(body)


@pytest.mark.parametrize(
    ("model", "settings", "single", "compact"),
    [
        ("meta-llama/Llama-3.1-8B-Instruct", "single_calls = false", False, False),
        ("gpt-4.1", 'single_calls = true\nid_style = "compact"', True, True),
    ],
)
def test_the_config_file_forces_either_behaviour(
    cli: Run,
    server: FakeProviderServer,
    workspace: Path,
    tmp_path: Path,
    model: str,
    settings: str,
    single: bool,
    compact: bool,
) -> None:
    config = tmp_path / "turnmemory.toml"
    config.write_text(f"[providers.openai_chat]\n{settings}\n")
    body = two_turns(cli, server, workspace, "--model", model, "--config", str(config))
    calls = historical_calls(body)
    assert (max(len(c) for c in calls) == 1) is single
    assert all(NINE.fullmatch(call_id) for message in calls for call_id in message) is compact


@pytest.mark.parametrize(
    ("section", "expected"),
    [
        ('[providers.openai_chat]\nsingle_calls = "yes"', "single_calls must be true or false"),
        (
            '[providers.openai_chat]\nid_style = "short"',
            "id_style must be one of historical, compact, got 'short'",
        ),
        ("[providers.anthropic]\nsingle_calls = true", "unknown key 'single_calls' in [providers.anthropic]"),
    ],
)
def test_a_bad_setting_is_a_one_line_error(tmp_path: Path, section: str, expected: str) -> None:
    config = tmp_path / "turnmemory.toml"
    config.write_text(section + "\n")
    with pytest.raises(ConfigError) as raised:
        load_config(provider="openai_chat", config_path=config, env={"OPENAI_API_KEY": "k"})
    assert expected in str(raised.value) and "\n" not in str(raised.value)


def test_the_settings_reach_the_config() -> None:
    table = {"providers": {"openai_chat": {"single_calls": False, "id_style": "compact"}}}
    flags = {"provider": "openai_chat"}
    config = configure(Inputs(flags, {}, table, Path("config.toml")))
    assert (config.single_calls, config.id_style) == (False, "compact")
    unset = configure(Inputs(flags, {}, {}, Path("config.toml")))
    assert (unset.single_calls, unset.id_style) == (None, None)
