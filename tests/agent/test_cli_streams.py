"""``turnmemory run`` against providers that send garbage, never answer or trickle: one line, no traceback.

Each run is a subprocess on the fake server in this process (the ``cli`` fixture).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.agent._support import Run

from turnmemory.agent.config import ConfigError, load_config
from turnmemory.testing import FakeProviderServer, Hang, Reply, StreamEdit

NOT_JSON = {
    "anthropic": StreamEdit("insert", at=3, data="event: content_block_delta\ndata: {not json}\n\n"),
    "bedrock": StreamEdit("garble", at=1),
}
_ENV = {"GEMINI_API_KEY": "test-key", "AWS_REGION": "us-east-1", "TURNMEMORY_MODEL": "fake-model"}


def _run(cli: Run, server: FakeProviderServer, provider: str, *extra: str, expect: int) -> list[str]:
    """``turnmemory run`` on the fake server; the lines it wrote to stderr."""
    done = cli(
        "run", "--provider", provider, "--base-url", server.base_url(provider), *extra, "Hello",
        expect=expect, extra_env=_ENV,
    )  # fmt: skip
    assert "Traceback" not in done.stderr + done.stdout
    return [line for line in done.stderr.splitlines() if not line.startswith("session ")]


@pytest.mark.parametrize("provider", ["openai_chat", "bedrock"])  # all five: tests/llm/test_streams.py
def test_a_malformed_stream_is_one_line_and_a_failed_exit(
    provider: str, cli: Run, server: FakeProviderServer
) -> None:
    edit = NOT_JSON.get(provider, StreamEdit("insert", at=1, data="data: {not json}\n\n"))
    server.push(Reply(text="An answer long enough to stream.", edits=[edit]))
    lines = _run(cli, server, provider, expect=1)
    assert len(lines) == 1 and lines[0].startswith(
        "turnmemory: turn error: malformed response from the provider"
    )


@pytest.mark.timeout(60)
def test_a_server_that_never_answers_is_cut_off_at_the_timeout(cli: Run, server: FakeProviderServer) -> None:
    server.push(Hang(), Reply(text="Back again."))
    done = cli(
        "run", "--provider", "openai_chat", "--base-url", server.base_url("openai_chat"), "--timeout", "0.5",
        "Hello", expect=0,
    )  # fmt: skip
    assert "Back again." in done.stdout and "timed out waiting for the provider" in done.stderr


@pytest.mark.timeout(60)
def test_a_trickle_ends_at_the_deadline_in_one_line(
    cli: Run, server: FakeProviderServer, tmp_path: Path
) -> None:
    config = tmp_path / "config.toml"
    config.write_text("deadline = 600\ntimeout = 30\nconnect_timeout = 5\n")
    server.push(Reply(text=" ".join(["word"] * 400), pace=0.05))
    lines = _run(cli, server, "openai_chat", "--config", str(config), "--deadline", "1", expect=1)
    assert lines[-1] == "turnmemory: turn error: the turn took longer than its deadline of 1 s"


def test_a_bad_deadline_flag_is_one_line(cli: Run, server: FakeProviderServer) -> None:
    lines = _run(cli, server, "openai_chat", "--deadline", "-3", expect=2)
    assert lines == ["turnmemory: --deadline must be a positive number of seconds, got -3.0"]


def test_timeouts_come_from_flags_then_the_config_file(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("deadline = 60\ntimeout = 30\nconnect_timeout = 5\n")
    env = {"OPENAI_API_KEY": "test-key"}
    loaded = load_config(provider="openai_chat", config_path=config, env=env)
    assert (loaded.timeout, loaded.connect_timeout, loaded.deadline) == (30.0, 5.0, 60.0)
    loaded = load_config(provider="openai_chat", config_path=config, env=env, timeout=2, deadline=1.5)
    assert (loaded.timeout, loaded.connect_timeout, loaded.deadline) == (2.0, 5.0, 1.5)
    for line in (
        'timeout = "soon"',
        "deadline = 0",
        "connect_timeout = true",
        "timeout = nan",
        "deadline = inf",
    ):
        config.write_text(line + "\n")
        key = line.split()[0]
        with pytest.raises(ConfigError, match=f"^{config}: {key} must be a positive number of seconds"):
            load_config(provider="openai_chat", config_path=config, env=env)
    config.write_text("")
    empty = load_config(provider="openai_chat", config_path=config, env=env)
    assert (empty.timeout, empty.connect_timeout, empty.deadline) == (None, None, None)
    for flags in ({"timeout": 0.0}, {"deadline": float("nan")}):
        with pytest.raises(ConfigError, match="must be a positive number of seconds"):
            load_config(provider="openai_chat", config_path=config, env=env, **flags)
