"""The sandbox setting (flag, environment, config file), and what happens where bubblewrap cannot run:
one line saying so, and bash back under the permission rules. None of this needs bubblewrap."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.agent._support import body_text

from turnmemory.agent.bash._sandbox import open_sandbox, sandbox_unavailable
from turnmemory.agent.config import AgentConfig, ConfigError, load_config
from turnmemory.testing import FakeProviderServer, Reply, ToolCall

Run = Callable[..., subprocess.CompletedProcess[str]]
KEYS = {"ANTHROPIC_API_KEY": "test-key"}


def _config(tmp_path: Path, text: str, name: str = "config.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_the_flag_beats_the_environment_beats_the_file_beats_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _config(tmp_path, '[sandbox]\nmode = "read-only"\nreadable = ["~/.pyenv", "/opt/tools"]\n')
    assert load_config(env=KEYS, config_path=_config(tmp_path, "", "empty.toml")).sandbox == "workspace-write"
    from_file = load_config(env=KEYS, config_path=path)
    assert (from_file.sandbox, from_file.sandbox_readable) == ("read-only", ("~/.pyenv", "/opt/tools"))
    from_env = load_config(env={**KEYS, "TURNMEMORY_SANDBOX": "off"}, config_path=path)
    assert from_env.sandbox == "off"
    from_flag = load_config(env={**KEYS, "TURNMEMORY_SANDBOX": "off"}, config_path=path, sandbox="read-only")
    assert from_flag.sandbox == "read-only"
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    switched = from_flag.switched("openai_chat")
    assert (switched.sandbox, switched.sandbox_readable) == ("read-only", ("~/.pyenv", "/opt/tools"))


@pytest.mark.parametrize(
    ("text", "flag", "message"),
    [
        (
            "",
            "workspace",
            "--sandbox must be one of workspace-write, read-only, off, got 'workspace'",
        ),
        (
            '[sandbox]\nmode = "none"\n',
            None,
            "[sandbox] mode must be one of workspace-write, read-only, off, got 'none'",
        ),
        ('sandbox = "off"\n', None, "[sandbox] must be a table"),
        ("[sandbox]\nnetwork = true\n", None, "unknown key 'network' in [sandbox]"),
        ('[sandbox]\nreadable = "~/.pyenv"\n', None, "[sandbox] readable must be a list of absolute paths"),
        ('[sandbox]\nreadable = ["tools"]\n', None, "[sandbox] readable must be a list of absolute paths"),
        (
            '[sandbox]\nmode = ""\n',
            None,
            "[sandbox] mode must be one of workspace-write, read-only, off, got ''",
        ),
    ],
)
def test_a_bad_sandbox_setting_is_one_line(tmp_path: Path, text: str, flag: str | None, message: str) -> None:
    with pytest.raises(ConfigError) as error:
        load_config(env=KEYS, config_path=_config(tmp_path, text), sandbox=flag)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_a_bad_sandbox_flag_is_a_usage_error(cli: Run) -> None:
    done = cli("run", "--sandbox", "loose", "hello", expect=2)
    assert done.stderr == (
        "turnmemory: --sandbox must be one of workspace-write, read-only, off, got 'loose'\n"
    )


def test_off_needs_no_sandbox_and_a_missing_bwrap_is_named(tmp_path: Path) -> None:
    assert open_sandbox("off", str(tmp_path)) == (None, None)
    assert sandbox_unavailable(str(tmp_path / "no" / "bwrap")) == "bubblewrap (bwrap) is not installed"
    assert AgentConfig(provider="anthropic", model="m").sandbox == "workspace-write"


def test_headless_without_bubblewrap_says_so_and_falls_back_to_the_rules(
    server: FakeProviderServer, cli: Run, workspace: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "secret").write_text("OTHER-PROJECT-SECRET-0b7c")
    bin_dir = tmp_path / "bin"  # a PATH with bash and cat but no bwrap
    bin_dir.mkdir()
    for program in ("bash", "cat"):
        found = shutil.which(program)
        assert found is not None
        (bin_dir / program).symlink_to(found)
    server.push(Reply(tool_calls=[ToolCall("bash", {"command": "cat ../other/secret"})]), Reply(text="No."))
    url = server.base_url("anthropic")
    done = cli("run", "--base-url", url, "go", extra_env={"PATH": str(bin_dir)})
    assert (
        "turnmemory: no bash sandbox: bubblewrap (bwrap) is not installed; "
        "bash commands go by the permission rules and prompts\n"
    ) in done.stderr
    results = body_text(server.requests[1].body)
    assert "OTHER-PROJECT-SECRET" not in results
    assert "not allowed without asking: bash: cat ../other/secret" in results

    server.push(Reply(tool_calls=[ToolCall("bash", {"command": "cat ../other/secret"})]), Reply(text="Yes."))
    allowed = cli("run", "--base-url", url, "--allow", "bash", "go", extra_env={"PATH": str(bin_dir)})
    assert "no bash sandbox" in allowed.stderr
    assert "OTHER-PROJECT-SECRET" in body_text(server.requests[-1].body), (
        "the rules decide, as with --sandbox off"
    )
