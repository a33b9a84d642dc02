"""Configuration: precedence of flags, environment and the config file; one-line errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from turnmemory.agent.config import ConfigError, credentials, load_config
from turnmemory.agent.permissions import Rule

KEYS = {"ANTHROPIC_API_KEY": "env-anthropic", "OPENAI_API_KEY": "env-openai"}


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def test_defaults_need_only_a_key(tmp_path: Path) -> None:
    config = load_config(env={"ANTHROPIC_API_KEY": "sk-key-9d2"}, config_path=write(tmp_path, ""))
    assert (config.provider, config.model, config.api_key, config.base_url) == (
        "anthropic",
        "claude-sonnet-4-6",
        "sk-key-9d2",
        None,
    )
    assert config.allow == () and config.mcp == {}
    assert "sk-key-9d2" not in repr(config), "keys stay out of reprs"


def test_flags_beat_environment_beat_the_file(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
provider = "openai_chat"
model = "file-model"
base_url = "http://file"
[providers.openai_chat]
api_key = "file-key"
[permissions]
allow = ["bash:git *"]
[mcp.servers.time]
command = "uvx"
""",
    )
    from_file = load_config(config_path=path, env={})
    assert (from_file.provider, from_file.model, from_file.base_url, from_file.api_key) == (
        "openai_chat",
        "file-model",
        "http://file",
        "file-key",
    )
    assert from_file.allow == (Rule("bash", "git *"),)
    assert from_file.mcp == {"servers": {"time": {"command": "uvx"}}}
    env = {"TURNMEMORY_MODEL": "env-model", "TURNMEMORY_BASE_URL": "http://env", "OPENAI_API_KEY": "env-key"}
    from_env = load_config(config_path=path, env=env)
    assert (from_env.model, from_env.base_url, from_env.api_key) == ("env-model", "http://env", "env-key")
    from_flags = load_config(
        config_path=path, env=env, model="flag-model", base_url="http://flag", allow=["edit"]
    )
    assert (from_flags.model, from_flags.base_url) == ("flag-model", "http://flag")
    assert from_flags.allow == (Rule("bash", "git *"), Rule("edit"))


def test_the_top_level_model_belongs_to_the_top_level_provider(tmp_path: Path) -> None:
    path = write(tmp_path, 'provider = "openai_chat"\nmodel = "gpt-x"\n[providers.gemini]\nmodel = "gem-y"\n')
    env = {**KEYS, "GEMINI_API_KEY": "g"}
    assert load_config(config_path=path, env=env, provider="anthropic").model == "claude-sonnet-4-6"
    assert load_config(config_path=path, env=env, provider="gemini").model == "gem-y"
    assert load_config(config_path=path, env=env).model == "gpt-x"


def test_the_config_file_comes_from_the_environment(tmp_path: Path) -> None:
    path = write(tmp_path, 'model = "from-env-file"\n')
    assert load_config(env={**KEYS, "TURNMEMORY_CONFIG": str(path)}).model == "from-env-file"


@pytest.mark.parametrize(
    ("provider", "env", "message"),
    [
        (
            "bedrock",
            {"AWS_REGION": "us-east-1"},
            "missing model for bedrock: pass --model, set TURNMEMORY_MODEL",
        ),
        ("mistral", {}, "--provider must be one of anthropic, openai_chat"),
    ],
)
def test_missing_settings_are_one_line_errors(
    provider: str, env: dict[str, str], message: str, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(provider=provider, env={"XDG_CONFIG_HOME": str(tmp_path), **env})
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("provider", "env", "message"),
    [
        (
            "anthropic",
            {},
            "missing API key for anthropic: set ANTHROPIC_API_KEY or [providers.anthropic] api_key",
        ),
        ("gemini", {}, "missing API key for gemini: set GEMINI_API_KEY or GOOGLE_API_KEY"),
        (
            "bedrock",
            {"AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b", "TURNMEMORY_MODEL": "m"},
            "missing AWS region for bedrock: set AWS_REGION or AWS_DEFAULT_REGION or [providers.bedrock] region",
        ),
    ],
)
def test_missing_credentials_stop_only_the_opening_of_a_client(
    provider: str, env: dict[str, str], message: str, tmp_path: Path
) -> None:
    config = load_config(provider=provider, env={"XDG_CONFIG_HOME": str(tmp_path), **env})
    with pytest.raises(ConfigError) as caught:
        credentials(config)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_key_from_the_config_file_opens_a_client(tmp_path: Path) -> None:
    path = write(tmp_path, '[providers.gemini]\napi_key = "file-key-5b1"\n')
    config = load_config(provider="gemini", config_path=path, env={})
    assert credentials(config) == "file-key-5b1"
    assert credentials(load_config(provider="gemini", config_path=path, env={"GOOGLE_API_KEY": "g"})) == "g"


def test_bedrock_uses_the_aws_chain_and_a_region(tmp_path: Path) -> None:
    env = {"AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b", "AWS_DEFAULT_REGION": "eu-west-1"}
    config = load_config(
        provider="bedrock", model="anthropic.claude", env=env, config_path=write(tmp_path, "")
    )
    assert (config.api_key, config.region) == (None, "eu-west-1")


def test_openai_compatible_servers_need_no_key(tmp_path: Path) -> None:
    config = load_config(
        provider="openai_chat", base_url="http://localhost:11434/v1", env={}, config_path=write(tmp_path, "")
    )
    assert config.api_key is None
    assert credentials(config), "the SDK is given a stand-in key, the server ignores it"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("provider = [", "invalid TOML"),
        ('modle = "x"', "unknown key 'modle'"),
        ("[providers.claude]\nmodel = 'x'", "unknown key 'claude' in [providers]"),
        ("[providers.anthropic]\nkey = 'x'", "unknown key 'key' in [providers.anthropic]"),
        ("[permissions]\nallow = ['shell']", "unknown permission rule 'shell'"),
        ("[permissions]\nallow = 'bash'", "allow must be a list"),
        ("model = 3", "model must be a non-empty string"),
    ],
)
def test_bad_config_files_are_one_line_errors(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(config_path=write(tmp_path, text), env=KEYS)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_an_explicit_config_file_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(config_path=tmp_path / "missing.toml", env=KEYS)


def test_switching_provider_resolves_its_own_settings(tmp_path: Path) -> None:
    path = write(tmp_path, '[providers.openai_chat]\nmodel = "gpt-file"\napi_key = "file-key"\n')
    env = {"ANTHROPIC_API_KEY": "a", "TURNMEMORY_MODEL": "ignored-for-another-provider"}
    config = load_config(config_path=path, env=env, allow=["bash"], timeout=7)
    switched = config.switched("openai_chat")
    assert (switched.provider, switched.model, switched.api_key) == ("openai_chat", "gpt-file", "file-key")
    assert (switched.allow, switched.timeout) == ((Rule("bash"),), 7.0)
    assert config.switched(None, "claude-opus").model == "claude-opus"


@pytest.mark.parametrize(
    ("file", "flags", "expected"),
    [
        ("", {}, ("every_turn", "memory", "every_turn")),
        ('boundary = "when_it_pays"\n', {}, ("when_it_pays", "memory", "when_it_pays")),
        ('boundary = "when_it_pays"\n', {"tool_history": "full"}, ("when_it_pays", "full", "never")),
        ('tool_history = "full"\n', {"boundary": "every_turn"}, ("every_turn", "full", "never")),
    ],
)
def test_boundary_and_tool_history_from_flags_then_the_file(
    tmp_path: Path, file: str, flags: dict[str, str], expected: tuple[str, str, str]
) -> None:
    path = tmp_path / "config.toml"
    path.write_text(file)
    config = load_config(config_path=path, env={"ANTHROPIC_API_KEY": "k"}, **flags)
    assert (config.boundary, config.tool_history, config.client_boundary) == expected


@pytest.mark.parametrize(
    ("file", "flags", "message"),
    [
        ('boundary = "sometimes"\n', {}, "boundary must be one of every_turn, when_it_pays, got 'sometimes'"),
        ("", {"tool_history": "all"}, "--tool-history must be one of memory, full, got 'all'"),
        ('boundary = "never"\n', {}, "boundary must be one of every_turn, when_it_pays"),
    ],
)
def test_a_bad_boundary_or_tool_history_is_one_clear_line(
    tmp_path: Path, file: str, flags: dict[str, str], message: str
) -> None:
    path = tmp_path / "config.toml"
    path.write_text(file)
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_config(config_path=path, env={"ANTHROPIC_API_KEY": "k"}, **flags)
