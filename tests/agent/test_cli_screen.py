"""What a new user sees of the command line: help, version, config, the run output and its status."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from tests.agent._support import Run

from turnmemory.testing import Failure, FakeProviderServer, Reply, ToolCall

COMMANDS = ("analyze", "run", "chat", "sessions", "show", "config")


def test_version_and_short_help(cli: Run) -> None:
    version = cli("--version")
    assert re.fullmatch(r"turnmemory \d+\.\d+\.\d+\S*\n", version.stdout)
    for command in ((), *((name,) for name in COMMANDS)):
        short, long = cli(*command, "-h"), cli(*command, "--help")
        assert short.stdout == long.stdout and short.stdout.startswith("Usage: turnmemory")


@pytest.mark.parametrize("command", COMMANDS)
def test_help_fits_80_columns_and_shows_flags_as_flags(cli: Run, command: str) -> None:
    text = cli(command, "--help", extra_env={"COLUMNS": "80"}).stdout
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "<bool>" not in text and "\x1b[" not in text and "╭" not in text
    for flag in re.findall(r"^\s+(?:-h, )?(--[a-z-]+) <", text, re.M):
        assert flag not in ("--continue", "--resume", "--all", "--help")


def test_continue_is_a_flag(cli: Run, server: FakeProviderServer) -> None:
    server.push(Reply(text="One."), Reply(text="Two."))
    common = ["--provider", "openai_chat", "--base-url", server.base_url("openai_chat")]
    first = cli("run", *common, "hello")
    second = cli("run", *common, "--continue", "again")
    assert second.stdout == "Two.\n"
    assert first.stderr.splitlines()[-1] == second.stderr.splitlines()[-1]  # the same session
    wrong = cli("run", *common, "--continue", "true", "hi", expect=2)
    assert "Traceback" not in wrong.stderr


def test_sessions_help_agrees_with_itself(cli: Run) -> None:
    text = " ".join(cli("sessions", "--help").stdout.split())
    assert "every workspace" in text and "unless --workspace" in text
    assert "default: the current one" not in text


def test_empty_sessions_are_hidden_unless_asked(cli: Run, server: FakeProviderServer) -> None:
    server.push(Reply(text="Done."), Failure(status=400, message="bad request"))
    common = ["--provider", "openai_chat", "--base-url", server.base_url("openai_chat")]
    cli("run", *common, "a real turn")
    cli("run", *common, "a failed turn", expect=1)
    listed = cli("sessions").stdout.splitlines()
    everything = cli("sessions", "--all").stdout.splitlines()
    assert len(listed) == 2 and "a real turn" in listed[1]
    assert len(everything) == 3 and any("a failed turn" in line for line in everything)
    assert all(len(line) <= 80 for line in everything)


def test_config_says_where_each_value_came_from(cli: Run, tmp_path: Path) -> None:
    config = tmp_path / "tm.toml"
    config.write_text('provider = "openai_chat"\n[providers.openai_chat]\nmodel = "qwen3-coder"\n')
    shown = cli("config", "--config", str(config), "--sandbox", "off").stdout
    lines: dict[str, str] = {}
    name = ""
    for line in shown.splitlines():
        if line.startswith(" "):  # a source that did not fit beside its value
            lines[name] += " " + line.strip()
        else:
            name = line.split()[0]
            lines[name] = line
    assert "openai_chat" in lines["provider"] and "config file (tm.toml): provider" in lines["provider"]
    assert "qwen3-coder" in lines["model"] and "[providers.openai_chat] model" in lines["model"]
    assert "(--sandbox)" in lines["sandbox"]
    assert "OPENAI_API_KEY" in shown and "test-key" not in shown
    assert all(len(line) <= 80 for line in shown.splitlines())
    env_model = cli("config", "--format", "json", extra_env={"TURNMEMORY_MODEL": "claude-x"}).stdout
    document = json.loads(env_model)
    assert document["model"] == {"value": "claude-x", "source": "TURNMEMORY_MODEL"}
    assert document["session database"]["source"] == "TURNMEMORY_DATA_DIR"


def test_config_as_json_gives_values_not_display_strings(cli: Run, tmp_path: Path) -> None:
    config = tmp_path / "tm.toml"
    config.write_text(
        'timeout = 30\ncontext_window = 100000\n[permissions]\nallow = ["bash:git status"]\n'
        '[mcp.servers.files]\ncommand = "true"\n'
    )
    document = json.loads(cli("config", "--config", str(config), "--format", "json").stdout)
    values = {name: entry["value"] for name, entry in document.items()}
    assert values["timeout"] == 30 and values["deadline"] is None and values["connect_timeout"] is None
    assert values["context_window"] == 100_000 and isinstance(values["context_reserve"], int)
    assert values["allow"] == ["bash:git status"] and values["mcp servers"] == ["files"]
    assert values["base_url"] is None and values["config file"] == str(config)
    shown = cli("config", "--config", str(config)).stdout
    assert "100,000 tokens" in shown and "30 s" in shown  # the text form keeps its units
    for name, value in values.items():  # no unit or prose where a value is plain
        if isinstance(value, str) and name != "api key":
            assert not re.search(r"\d[\d,]* (tokens|s)$|\(|none", value), (name, value)


def test_config_without_a_key_still_shows_everything_and_says_what_is_missing(cli: Run) -> None:
    shown = cli("config", extra_env={"ANTHROPIC_API_KEY": ""}, expect=1).stdout
    assert "MISSING: set ANTHROPIC_API_KEY" in shown and "session database" in shown


@pytest.mark.parametrize("content", [b'model = "\xff"\n', b"\xfe\xff\x00m\x00o", b"[providers\n"])
def test_a_bad_config_file_is_one_line(cli: Run, tmp_path: Path, content: bytes) -> None:
    config = tmp_path / "bad.toml"
    config.write_bytes(content)
    for command in (("config",), ("run", "hi")):
        result = cli(*command, "--config", str(config), expect=2)
        assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
        assert str(config) in result.stderr


def _merged(cli: Run, workspace: Path, *args: str) -> str:
    """stdout and stderr of ``turnmemory ARGS`` through one pipe, as a terminal shows them."""
    done = subprocess.run(
        [sys.executable, "-m", "turnmemory.cli", *args],
        cwd=workspace,
        env=cli.env,  # type: ignore[attr-defined]
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=60,
        check=False,
    )
    return done.stdout


def test_tool_lines_start_on_their_own_line(cli: Run, server: FakeProviderServer, workspace: Path) -> None:
    (workspace / "app.py").write_text("x = 1\n")
    server.push(
        Reply(text="Let me look at app.py.", tool_calls=[ToolCall("read_file", {"path": "app.py"})]),
        Reply(text="Now the notes.", tool_calls=[ToolCall("glob", {"pattern": "*.md"})]),
        Reply(text="All read."),
    )
    screen = _merged(
        cli,
        workspace,
        "run",
        "--provider",
        "openai_chat",
        "--base-url",
        server.base_url("openai_chat"),
        "look",
    )
    lines = screen.splitlines()
    assert "Let me look at app.py." in lines
    tool_lines = [line for line in lines if " -> " in line]
    assert [line.split(" -> ")[0] for line in tool_lines] == ["read_file app.py", "glob *.md"]
    assert "Now the notes." in lines and "All read." in lines


def test_json_keeps_the_exact_prose_and_gives_the_segments(
    cli: Run, server: FakeProviderServer, workspace: Path
) -> None:
    (workspace / "app.py").write_text("x = 1\n")
    server.push(
        Reply(text="Reading ", tool_calls=[ToolCall("read_file", {"path": "app.py"})]),
        Reply(text="then done ✓."),
    )
    common = ["--provider", "openai_chat", "--base-url", server.base_url("openai_chat")]
    result = json.loads(cli("run", *common, "--format", "json", "read it").stdout)
    assert result["text"] == "Reading then done ✓."
    assert result["segments"] == [
        {"type": "text", "text": "Reading "},
        {"type": "tool", "tool": "read_file", "status": "success", "target": "app.py"},
        {"type": "text", "text": "then done ✓."},
    ]
    assert "".join(s["text"] for s in result["segments"] if s["type"] == "text") == result["text"]


@pytest.mark.parametrize("provider", ["anthropic", "openai_chat", "openai_responses", "gemini", "bedrock"])
def test_a_reply_cut_at_max_tokens_is_not_reported_as_done(
    cli: Run, server: FakeProviderServer, provider: str
) -> None:
    server.push(
        Reply(text="The answer is", stop="max_tokens"), Reply(text="The answer is", stop="max_tokens")
    )
    common = ["--provider", provider, "--base-url", server.base_url(provider)]
    if provider == "bedrock":
        common += ["--model", "anthropic.claude-sonnet-4-5"]
    keys = {"GEMINI_API_KEY": "test-key", "AWS_REGION": "us-east-1"}
    text = cli("run", *common, "answer", expect=1, extra_env=keys)
    assert "cut at the model's output limit (max_tokens)" in text.stderr
    result = json.loads(cli("run", *common, "--format", "json", "answer", expect=1, extra_env=keys).stdout)
    assert result["status"] == "max_tokens" and result["text"] == "The answer is"


@pytest.mark.parametrize("command", ["run", "chat"])
def test_timeouts_are_flags_of_both_front_ends(cli: Run, command: str) -> None:
    extra = ("hi",) if command == "run" else ()
    for flag in ("--timeout", "--deadline"):
        bad = cli(command, flag, "-3", *extra, expect=2)
        assert f"{flag} must be a positive number of seconds" in bad.stderr
        assert len(bad.stderr.strip().splitlines()) == 1
