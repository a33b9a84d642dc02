"""``turnmemory run`` against providers that send garbage, never answer or trickle: one line, no traceback.

Each run is a subprocess on the fake server in this process (the ``cli`` fixture).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.agent._support import Run

from turnmemory.testing import FakeProviderServer, Hang, Reply, StreamEdit

PROVIDERS = ["anthropic", "openai_chat", "openai_responses", "gemini", "bedrock"]
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


@pytest.mark.parametrize("provider", PROVIDERS)
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
def test_a_trickle_ends_at_the_deadline_in_one_line(cli: Run, server: FakeProviderServer) -> None:
    server.push(Reply(text=" ".join(["word"] * 400), pace=0.05))
    lines = _run(cli, server, "openai_chat", "--deadline", "1", expect=1)
    assert lines[-1] == "turnmemory: turn error: the turn took longer than its deadline of 1 s"


@pytest.mark.parametrize(("flag", "value"), [("--timeout", "0"), ("--deadline", "-3"), ("--timeout", "nan")])
def test_bad_timeouts_are_one_line(flag: str, value: str, cli: Run, server: FakeProviderServer) -> None:
    lines = _run(cli, server, "openai_chat", flag, value, expect=2)
    assert lines == [f"turnmemory: {flag} must be a positive number of seconds, got {float(value)!r}"]


@pytest.mark.timeout(60)
def test_the_config_file_sets_the_deadline_and_a_flag_wins(
    cli: Run, server: FakeProviderServer, tmp_path: Path
) -> None:
    config = tmp_path / "config.toml"
    config.write_text("deadline = 1\ntimeout = 30\nconnect_timeout = 5\n")
    server.push(Reply(text=" ".join(["word"] * 400), pace=0.05))
    lines = _run(cli, server, "openai_chat", "--config", str(config), expect=1)
    assert lines[-1] == "turnmemory: turn error: the turn took longer than its deadline of 1 s"
    server.push(Reply(text=" ".join(["word"] * 400), pace=0.05))
    lines = _run(cli, server, "openai_chat", "--config", str(config), "--deadline", "0.5", expect=1)
    assert lines[-1] == "turnmemory: turn error: the turn took longer than its deadline of 0.5 s"


@pytest.mark.parametrize("line", ['timeout = "soon"', "deadline = 0", "connect_timeout = true"])
def test_bad_timeouts_in_the_config_file_are_one_line(
    line: str, cli: Run, server: FakeProviderServer, tmp_path: Path
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(line + "\n")
    lines = _run(cli, server, "openai_chat", "--config", str(config), expect=2)
    key = line.split()[0]
    assert len(lines) == 1 and lines[0].startswith(f"turnmemory: {config}: {key} must be a positive number")
