"""The command line says what it does: help that agrees with the README and with what happens, a
refused key that names where it came from, and the ways into ``chat`` a newcomer tries."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest
from tests.agent._support import MODELS, Run, spawn_chat

from turnmemory.agent.bash._sandbox import sandbox_unavailable
from turnmemory.agent.config import AgentConfig, key_hint
from turnmemory.testing import Failure, FakeProviderServer, Reply, ToolCall

README = Path(__file__).resolve().parents[2] / "README.md"


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_run_help_and_the_readme_say_what_headless_runs_do(
    cli: Run, server: FakeProviderServer, workspace: Path
) -> None:
    helped = _flat(cli("run", "-h").stdout)
    assert "what no --allow rule grants is denied" not in helped
    assert "bash commands the sandbox contains run" in helped
    assert "denied unless an --allow rule grants it" in helped
    readme = _flat(README.read_text())
    assert "Headless runs never wait for input: reads in the workspace and contained commands run" in readme
    assert "whatever would ask is denied unless an `--allow` rule" in readme
    if sandbox_unavailable() is not None:
        pytest.skip(f"no bash sandbox here ({sandbox_unavailable()}): the behaviour half needs one")
    server.push(
        Reply(
            text="Working.",
            tool_calls=[
                ToolCall("bash", {"command": "echo contained > made.txt"}),
                ToolCall("write_file", {"path": "written.txt", "content": "x"}),
            ],
        ),
        Reply(text="Done."),
    )
    done = cli("run", "--provider", "openai_chat", "--base-url", server.base_url("openai_chat"), "go")
    assert (workspace / "made.txt").read_text() == "contained\n", "a contained command ran without a rule"
    assert not (workspace / "written.txt").exists(), "a write was denied without a rule"
    assert "bash echo contained" in done.stderr and "write_file written.txt -> error" in done.stderr


@pytest.mark.parametrize(
    ("provider", "failure", "where"),
    [
        ("anthropic", Failure(status=401, message="invalid x-api-key"), "$ANTHROPIC_API_KEY"),
        ("openai_chat", Failure(status=401, message="Incorrect API key provided"), "$OPENAI_API_KEY"),
        ("openai_responses", Failure(status=401), "$OPENAI_API_KEY"),
        (
            "gemini",
            Failure(
                status=400, message="API key not valid. Please pass a valid API key.", kind="INVALID_ARGUMENT"
            ),
            "$GEMINI_API_KEY",
        ),
        (
            "bedrock",
            Failure(status=403, message="The security token included in the request is invalid."),
            "AWS_ACCESS_KEY_ID",
        ),
        ("anthropic", Failure(status=403, kind="permission_error"), "$ANTHROPIC_API_KEY"),
    ],
)
def test_a_refused_key_names_where_it_came_from(
    cli: Run, server: FakeProviderServer, provider: str, failure: Failure, where: str
) -> None:
    server.push(failure)
    done = cli(
        "run",
        "--provider",
        provider,
        "--model",
        MODELS[provider],
        "--base-url",
        server.base_url(provider),
        "hello",
        expect=1,
        extra_env={
            "GEMINI_API_KEY": "test-key",
            "AWS_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "id",
            "AWS_SECRET_ACCESS_KEY": "s",
        },
    )
    lines = done.stderr.splitlines()
    assert lines[-2].startswith("turnmemory: turn error: HTTP"), lines
    hint = lines[-1]
    assert re.match(r"turnmemory: (the key in use comes from|AWS refused|no key is set)", hint), lines
    assert where in hint and "[REDACTED]" not in hint, hint
    assert "test-key" not in done.stderr


def test_a_key_from_the_config_file_is_named_there(
    cli: Run, server: FakeProviderServer, tmp_path: Path
) -> None:
    config = tmp_path / "keys.toml"
    config.write_text('[providers.anthropic]\napi_key = "file-key-7c1d"\n')
    server.push(Failure(status=401, message="invalid x-api-key"))
    env = {key: value for key, value in cli.env.items() if key != "ANTHROPIC_API_KEY"}  # type: ignore[attr-defined]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "turnmemory.cli",
            "run",
            "--config",
            str(config),
            "--base-url",
            server.base_url("anthropic"),
            "hi",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert f"[providers.anthropic] api_key in {config}" in done.stderr
    assert "file-key-7c1d" not in done.stderr


@pytest.mark.parametrize(
    ("api_key", "env", "said"),
    [
        ("env-key", {"OPENAI_API_KEY": "env-key"}, "comes from $OPENAI_API_KEY: check it"),
        ("file-key", {"OPENAI_API_KEY": "other"}, "comes from [providers.openai_chat] api_key in /c.toml"),
        (None, {}, "no key is set for openai_chat: set $OPENAI_API_KEY or [providers.openai_chat]"),
    ],
)
def test_the_hint_names_the_source_of_the_key_in_use(
    api_key: str | None, env: dict[str, str], said: str
) -> None:
    config = AgentConfig(provider="openai_chat", model="m", api_key=api_key, path=Path("/c.toml"))
    hint = key_hint(config, "HTTP 401: invalid_api_key: Incorrect API key provided", env)
    assert hint is not None and said in hint
    assert api_key is None or api_key not in hint.replace("api_key", "")


@pytest.mark.parametrize(
    "error",
    ["HTTP 500: overloaded", "HTTP 429: rate_limit_error: slow down", "HTTP 400: bad request", "timed out"],
)
def test_other_errors_get_no_key_hint(error: str) -> None:
    config = AgentConfig(provider="anthropic", model="m", api_key="k")
    assert key_hint(config, error, {"ANTHROPIC_API_KEY": "k"}) is None
    assert key_hint(config, "HTTP 401: " + error, {"ANTHROPIC_API_KEY": "k"}) is not None


def test_chat_continue_resumes_the_latest_session(
    cli: Run, server: FakeProviderServer, workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    server.push(
        Reply(text="The first answer."),
        Reply(text="Picked up."),
        Failure(status=401, message="invalid x-api-key"),
    )
    cli("run", "--base-url", server.base_url("anthropic"), "first question")
    child = spawn_chat(server, workspace, data_dir, tmp_path, "--continue")
    try:
        child.expect_exact("› first question")
        child.expect_exact("The first answer.")
        child.expect_exact("/help for commands")
        child.expect_exact("›")
        child.sendline("and then?")
        child.expect_exact("Picked up.")
        child.expect_exact("›")
        child.sendline("and now?")  # the key is refused: the REPL says where it came from
        child.expect_exact("turn error: HTTP 401")
        child.expect_exact("the key in use comes from $ANTHROPIC_API_KEY: check it")
        child.expect_exact("›")
        child.sendline("/exit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert "The first answer." in str(server.requests[1].body), "the second turn carried the first"
    refused = cli("chat", "--continue", "abc", expect=2)
    assert refused.stderr == (
        "turnmemory: --continue takes no ID; to resume session 'abc' use: turnmemory chat --resume ID\n"
    )


def test_chat_help_shows_its_argument_once_bracketed(cli: Run) -> None:
    text = cli("chat", "-h").stdout
    assert "[[ID]]" not in text and "[ID]" in text
    assert "--continue" in text


def test_top_level_help_lists_commands_in_the_order_a_user_meets_them(cli: Run) -> None:
    text = cli("-h").stdout
    listed = re.findall(r"^\s{2}(\w+)\s{2,}", text.split("Commands:")[1], re.M)
    agent = [name for name in listed if name in ("chat", "run", "sessions", "show", "config")]
    assert agent == ["chat", "run", "sessions", "show", "config"]
    assert listed[:2] == ["try", "chat"], "the key-free way in first, then the agent"
    assert listed.index("analyze") > listed.index("config")


@pytest.mark.parametrize(
    "args",
    [
        ("run", "--session", "", "hello"),
        ("run", "--session", "  ", "hello"),
        ("show", ""),
    ],
)
def test_an_empty_session_id_is_refused_alike(
    cli: Run, server: FakeProviderServer, args: tuple[str, ...]
) -> None:
    done = (
        cli(*args, "--base-url", server.base_url("anthropic"), expect=2)
        if args[0] == "run"
        else cli(*args, expect=2)
    )
    assert done.stderr == "turnmemory: empty session id\n"
    assert server.requests == [], "no session started, nothing sent"


def test_chat_from_a_pipe_points_to_run(cli: Run) -> None:
    for stdin in ("hello\n", ""):
        done = subprocess.run(
            [sys.executable, "-m", "turnmemory.cli", "chat"],
            input=stdin,
            env=cli.env,  # type: ignore[attr-defined]
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 2
        assert done.stderr == (
            "turnmemory: chat needs a terminal; to run a prompt from a pipe or a file use: turnmemory run -\n"
        )
        assert done.stdout == ""
    # stdin a terminal, stdout a pipe: the same line, not prompt_toolkit's warnings
    command = shlex.join([sys.executable, "-m", "turnmemory.cli", "chat"])
    output, status = pexpect.run(
        shlex.join(["bash", "-c", f"set -o pipefail; {command} | cat"]),
        env=cli.env,  # type: ignore[attr-defined]
        withexitstatus=True,
        encoding="utf-8",
        timeout=60,
    )
    assert status == 2
    assert "chat needs a terminal" in output and "Warning" not in output
