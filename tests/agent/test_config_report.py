"""``turnmemory config`` tells the truth: a key that chat and run find is not reported missing, the JSON
holds values (not display strings), and ``--version`` answers without the extras."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from turnmemory.agent import command
from turnmemory.agent.config import SETTINGS, ConfigError, credentials, load_config

KEYED = ("anthropic", "openai_chat", "openai_responses", "gemini")
CLEAN = {
    name: value
    for name, value in os.environ.items()
    if not name.startswith(("TURNMEMORY_", "AWS_")) and not name.endswith("_API_KEY")
}


def _config(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    """``turnmemory config ARGS`` in this process: its exit status and output."""
    app = typer.Typer()
    command.register(app)
    runner = CliRunner()
    done = runner.invoke(
        app,
        ["config", *args],
        env={
            **{name: None for name in os.environ if name not in CLEAN},  # type: ignore[misc]
            "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
            "TURNMEMORY_DATA_DIR": str(tmp_path / "data"),
            **(env or {}),
        },
    )
    return done.exit_code, done.stdout + done.stderr


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("provider", KEYED)
def test_a_key_in_the_config_file_is_found(tmp_path: Path, provider: str) -> None:
    secret = f"sk-file-{provider}-6c1f"
    path = _write(tmp_path, f'provider = "{provider}"\n[providers.{provider}]\napi_key = "{secret}"\n')
    status, shown = _config(tmp_path, "--config", str(path))
    shown = " ".join(shown.split())  # a long source continues on the next line
    assert status == 0, shown
    assert "MISSING" not in shown and secret not in shown
    assert "set (hidden)" in shown and f"[providers.{provider}] api_key" in shown
    assert credentials(load_config(config_path=path, env={})) == secret, "chat and run find it too"


@pytest.mark.parametrize("provider", ["openai_chat", "openai_responses"])
@pytest.mark.parametrize("place", ["file", "flag", "env"])
def test_a_keyless_local_server_needs_no_key(tmp_path: Path, provider: str, place: str) -> None:
    url = "http://localhost:11434/v1"
    text = f'provider = "{provider}"\n[providers.{provider}]\nmodel = "qwen3-coder"\n'
    path = _write(tmp_path, text + (f'base_url = "{url}"\n' if place == "file" else ""))
    args = ["--config", str(path), *(["--base-url", url] if place == "flag" else [])]
    status, shown = _config(tmp_path, *args, env={"TURNMEMORY_BASE_URL": url} if place == "env" else {})
    assert status == 0, shown
    assert "MISSING" not in shown and "needs none" in shown


@pytest.mark.parametrize(
    ("provider", "env", "missing"),
    [
        ("anthropic", {}, "ANTHROPIC_API_KEY"),
        ("gemini", {}, "GEMINI_API_KEY or GOOGLE_API_KEY"),
        ("openai_chat", {}, "OPENAI_API_KEY"),
        (
            "bedrock",
            {"TURNMEMORY_MODEL": "m", "AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b"},
            "AWS_REGION",
        ),
    ],
)
def test_config_fails_exactly_where_a_client_cannot_open(
    tmp_path: Path, provider: str, env: dict[str, str], missing: str
) -> None:
    status, shown = _config(tmp_path, "--provider", provider, env=env)
    assert status == 1 and f"MISSING: set {missing}" in shown, shown
    assert "session database" in shown, "the rest is still shown"
    status, document = _config(tmp_path, "--provider", provider, "--format", "json", env=env)
    problems = [entry["problem"] for entry in json.loads(document).values() if "problem" in entry]
    with pytest.raises(ConfigError) as raised:
        credentials(load_config(provider=provider, env=env, config_path=_write(tmp_path, "")))
    assert status == 1 and problems == [str(raised.value)]


def test_json_gives_the_values_chat_uses(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        'provider = "openai_chat"\ntimeout = 42\ncontext_window = 64000\ncompaction = "drop"\n'
        '[providers.openai_chat]\napi_key = "sk-4a1"\nsingle_calls = true\n'
        "[providers.openai_chat.prices]\ninput = 2.5\noutput = 10\n"
        '[permissions]\nallow = ["bash:git *", "edit"]\n[sandbox]\nreadable = ["/opt/tools"]\n',
    )
    status, text = _config(tmp_path, "--config", str(path), "--format", "json", "--allow", "web")
    assert status == 0, text
    document: dict[str, Any] = json.loads(text)
    config = load_config(config_path=path, env={}, allow=["web"])
    for setting in SETTINGS:
        value = getattr(config, setting.name)
        name = setting.label or setting.name
        if name in document and value is not None:
            assert document[name]["value"] == setting.kind.plain(value), name
    assert document["timeout"]["value"] == 42.0 and document["context_window"]["value"] == 64000
    assert document["context_reserve"]["value"] == 8192, "a model default as a number"
    assert document["allow"] == {
        "value": ["bash:git *", "edit", "web"],
        "source": "config file (config.toml): [permissions] allow + --allow",
    }
    assert document["prices"]["value"] == {"input": 2.5, "output": 10.0}
    assert document["api key"]["value"] == "hidden" and "sk-4a1" not in text


# -- --version and the install hint -----------------------------------------------------------------

_WITHOUT_TYPER = (
    "import sys; sys.modules['typer'] = None; from turnmemory.cli import main; main(sys.argv[1:])"
)
"""The command line as a library-only install runs it: ``import typer`` fails."""


def _bare(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _WITHOUT_TYPER, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_version_works_without_the_extras(tmp_path: Path) -> None:
    done = _bare("--version", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.startswith("turnmemory ") and not done.stderr


def test_the_install_hint_names_the_checkout_it_was_installed_from(tmp_path: Path) -> None:
    checkout = Path(__file__).resolve().parents[2]
    origin = json.loads(_direct_url() or "{}")
    if not origin.get("url", "").startswith("file://"):
        pytest.skip("turnmemory is not installed from a checkout here")
    editable = "-e " if origin.get("dir_info", {}).get("editable") else ""
    inside = _bare("chat", cwd=checkout)
    assert inside.returncode == 2
    assert (
        inside.stderr
        == f"turnmemory: the command line needs the 'agent' extra: pip install {editable}'.[all]'\n"
    )
    outside = _bare("chat", cwd=tmp_path)
    assert f"pip install {editable}'{checkout}[all]'" in outside.stderr and "Traceback" not in outside.stderr


def _direct_url() -> str | None:
    from importlib.metadata import distribution

    return distribution("turnmemory").read_text("direct_url.json")
